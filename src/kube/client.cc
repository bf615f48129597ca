#include "tidal/kube/client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "tidal/core/file.h"
#include "tidal/core/status.h"

namespace tidal::kube {
namespace {

X509_STORE* StoreFromPem(const std::string& pem, const std::string& source) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    ++added;
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    throw InputError{source + ": the CA holds no PEM certificate"};
  }
  return store;
}

}  // namespace

struct KubeClient::Impl {
  X509* client_cert = nullptr;
  EVP_PKEY* client_key = nullptr;
  std::mutex token_mu;
  std::string token;
  struct timespec token_mtime {};
  std::mutex streams_mu;
  std::set<httplib::ClientImpl*> streams;
  bool cancelled = false;
  // Kept-alive connections for Do(), one request at a time each: a new TLS
  // connection (context, CA store, handshake) per request cost the API server
  // and us more than the request (a bind is one request).
  std::mutex idle_mu;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle;
  static constexpr std::size_t kMaxIdle = 8;

  ~Impl() {
    idle.clear();
    if (client_cert) X509_free(client_cert);
    if (client_key) EVP_PKEY_free(client_key);
  }
};

KubeClient::KubeClient(Endpoint endpoint, ClientOptions options)
    : endpoint_(std::move(endpoint)), options_(options), impl_(std::make_unique<Impl>()) {
  if (!endpoint_.ca_pem.empty()) X509_STORE_free(StoreFromPem(endpoint_.ca_pem, endpoint_.source));
  if (!endpoint_.client_cert_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(endpoint_.client_cert_pem.data(),
                               static_cast<int>(endpoint_.client_cert_pem.size()));
    impl_->client_cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(endpoint_.client_key_pem.data(),
                          static_cast<int>(endpoint_.client_key_pem.size()));
    impl_->client_key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!impl_->client_cert || !impl_->client_key)
      throw InputError{endpoint_.source + ": the client certificate or key is not valid PEM"};
  }
}

KubeClient::~KubeClient() { CancelStreams(); }

std::string KubeClient::Token() {
  if (endpoint_.token_file.empty()) return endpoint_.token;
  std::lock_guard<std::mutex> lock(impl_->token_mu);
  struct stat st {};
  if (stat(endpoint_.token_file.c_str(), &st) == 0 &&
      (st.st_mtim.tv_sec != impl_->token_mtime.tv_sec ||
       st.st_mtim.tv_nsec != impl_->token_mtime.tv_nsec || impl_->token.empty())) {
    std::string t;
    if (!ReadRegularFile(endpoint_.token_file, kMaxConfigFileBytes, &t).ok()) t.clear();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (!t.empty()) {
      impl_->token = std::move(t);
      impl_->token_mtime = st.st_mtim;
    }
  }
  return impl_->token;
}

namespace {

std::unique_ptr<httplib::ClientImpl> MakeClient(const Endpoint& e, X509* cert, EVP_PKEY* key,
                                                const ClientOptions& o, int read_timeout_ms) {
  std::unique_ptr<httplib::ClientImpl> c;
  if (e.scheme == "https") {
    std::unique_ptr<httplib::SSLClient> tls =
        cert ? std::make_unique<httplib::SSLClient>(e.host, e.port, cert, key)
             : std::make_unique<httplib::SSLClient>(e.host, e.port);
    if (!e.ca_pem.empty()) tls->set_ca_cert_store(StoreFromPem(e.ca_pem, e.source));
    tls->enable_server_certificate_verification(!e.insecure_skip_verify);
    c = std::move(tls);
  } else {
    c = std::make_unique<httplib::ClientImpl>(e.host, e.port);
  }
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(o.connect_timeout_ms / 1000, (o.connect_timeout_ms % 1000) * 1000);
  c->set_read_timeout(read_timeout_ms / 1000, (read_timeout_ms % 1000) * 1000);
  c->set_write_timeout(o.request_timeout_ms / 1000, (o.request_timeout_ms % 1000) * 1000);
  return c;
}

httplib::Headers HeadersWith(const std::string& token) {
  httplib::Headers h{{"Accept", "application/json"}, {"User-Agent", "tidal/1"}};
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return h;
}

std::string ErrorText(httplib::Error e) { return httplib::to_string(e); }

}  // namespace

HttpResponse KubeClient::Do(const HttpRequest& request) {
  std::unique_ptr<httplib::ClientImpl> c;
  {
    std::lock_guard<std::mutex> lock(impl_->idle_mu);
    if (!impl_->idle.empty()) {
      c = std::move(impl_->idle.back());
      impl_->idle.pop_back();
    }
  }
  if (!c) {
    c = MakeClient(endpoint_, impl_->client_cert, impl_->client_key, options_,
                   options_.request_timeout_ms);
    c->set_keep_alive(true);
  }
  const httplib::Headers headers = HeadersWith(Token());
  if (request.method != "GET" && request.method != "POST" && request.method != "PATCH" &&
      request.method != "DELETE")
    return HttpResponse{0, "", "unsupported method " + request.method};
  httplib::Result r = [&] {
    if (request.method == "GET") return c->Get(request.path, headers);
    if (request.method == "POST")
      return c->Post(request.path, headers, request.body, request.content_type);
    if (request.method == "PATCH")
      return c->Patch(request.path, headers, request.body, request.content_type);
    return c->Delete(request.path, headers, request.body, request.content_type);
  }();
  HttpResponse out;
  if (!r) {
    out.error = request.method + " " + Describe() + request.path + ": " + ErrorText(r.error());
    return out;  // the connection is dropped with the client
  }
  out.status = r->status;
  out.body = std::move(r->body);
  std::lock_guard<std::mutex> lock(impl_->idle_mu);
  if (impl_->idle.size() < Impl::kMaxIdle) impl_->idle.push_back(std::move(c));
  return out;
}

HttpResponse KubeClient::Stream(const std::string& path,
                                const std::function<bool(std::string_view)>& on_data) {
  auto c = MakeClient(endpoint_, impl_->client_cert, impl_->client_key, options_,
                      options_.stream_read_timeout_ms);
  {
    std::lock_guard<std::mutex> lock(impl_->streams_mu);
    if (impl_->cancelled) return HttpResponse{0, "", "cancelled"};
    impl_->streams.insert(c.get());
  }
  HttpResponse out;
  int status = 0;
  auto r = c->Get(
      path, HeadersWith(Token()),
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (status < 200 || status >= 300) {
          if (out.body.size() < 64 * 1024) out.body.append(data, len);
          return true;
        }
        return on_data(std::string_view(data, len));
      });
  {
    std::lock_guard<std::mutex> lock(impl_->streams_mu);
    impl_->streams.erase(c.get());
  }
  out.status = status;
  if (!r && status == 0) out.error = "GET " + Describe() + path + ": " + ErrorText(r.error());
  return out;
}

void KubeClient::CancelStreams() {
  std::lock_guard<std::mutex> lock(impl_->streams_mu);
  impl_->cancelled = true;
  for (auto* c : impl_->streams) c->stop();
}

}  // namespace tidal::kube
