#include "tidal/http/server.h"

// Beast's string_view is std::string_view (set for this file only, in CMake).
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// Built twice (src/http/CMakeLists.txt): with HTTPS for tidal serve, and without
// for tidal-agent, which then neither maps OpenSSL nor pays its relocations.
#if TIDAL_HTTP_SERVER_TLS
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#endif

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

namespace tidal::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

std::string_view Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (beast::iequals(k, name)) return v;
  return {};
}

Thrown Classify(std::exception_ptr thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::bad_alloc&) {
    return {"bad_alloc", "out of memory (std::bad_alloc)"};
  } catch (const std::exception& e) {
    return {"exception", e.what()};
  } catch (...) {
  }
  return {"unknown", "not a std::exception"};
}

namespace {

// A body this large leaves the allocator holding memory it got for it: it is
// handed back once the answer is out (the 10^6-name request, docs/hardening.md).
constexpr std::size_t kTrimAfterBodyBytes = 4u << 20;
// After an error answer the unread rest of the request is drained, at most this
// much and this long, so that the client reads the answer instead of a reset.
constexpr std::size_t kDrainBytes = 1u << 20;
constexpr int kDrainMs = 1000;

struct AtomicCounters {
  std::atomic<std::uint64_t> body_too_large{0}, headers_too_large{0}, unsupported_encoding{0},
      header_timeouts{0}, body_timeouts{0}, refused_at_limit{0}, idle_closed_for_room{0},
      tls_handshake_failures{0};
};

class SessionBase;

// Open connections, and the idle ones in the order they became idle. Every
// operation is O(1) under the lock.
class Registry {
 public:
  explicit Registry(std::size_t max) : max_(max) {}
  // False when the new connection must be refused; `evict` is the idle
  // connection to close for it, if any.
  bool Admit(std::shared_ptr<SessionBase>* evict);
  void Leave(SessionBase* s);
  void SetIdle(SessionBase* s, bool idle);
  std::size_t open() const {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  mutable std::mutex mu_;
  std::size_t max_;
  std::size_t open_ = 0;
  std::list<SessionBase*> idle_;
};

struct Shared {
  Options options;
  std::map<std::string, std::map<std::string, Handler>> routes;  // path → method → handler
  AtomicCounters counters;
  Registry registry;
  std::atomic<bool> stopping{false};
  explicit Shared(Options o) : options(std::move(o)), registry(options.limits.max_connections) {}
};

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  explicit SessionBase(Shared& shared) : shared_(shared) {}
  virtual ~SessionBase() { shared_.registry.Leave(this); }
  virtual void Run() = 0;
  virtual void CloseFromOutside() = 0;  // any thread

  // Registry bookkeeping (under its lock).
  bool idle_ = false;
  std::list<SessionBase*>::iterator idle_at_{};

 protected:
  Shared& shared_;
};

bool Registry::Admit(std::shared_ptr<SessionBase>* evict) {
  std::lock_guard lock(mu_);
  if (open_ >= max_) {
    // The longest idle one whose owner is not already being destroyed.
    while (!idle_.empty()) {
      SessionBase* oldest = idle_.front();
      idle_.pop_front();
      oldest->idle_ = false;
      if (auto alive = oldest->weak_from_this().lock()) {
        *evict = std::move(alive);
        break;
      }
    }
    if (!*evict) return false;
  }
  ++open_;
  return true;
}

void Registry::Leave(SessionBase* s) {
  std::lock_guard lock(mu_);
  if (s->idle_) idle_.erase(s->idle_at_);
  s->idle_ = false;
  --open_;
}

void Registry::SetIdle(SessionBase* s, bool idle) {
  std::lock_guard lock(mu_);
  if (idle == s->idle_) return;
  if (idle) {
    idle_.push_back(s);
    s->idle_at_ = std::prev(idle_.end());
  } else {
    idle_.erase(s->idle_at_);
  }
  s->idle_ = idle;
}

Request ToRequest(bhttp::request<bhttp::string_body>&& m) {
  Request r;
  r.method = std::string(m.method_string());
  const std::string_view target(m.target().data(), m.target().size());
  r.path = std::string(target.substr(0, target.find('?')));
  r.headers.reserve(16);
  for (const auto& f : m)
    r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  r.body = std::move(m.body());
  return r;
}

// The route's answer, or 404/405; a handler that throws is answered 500.
Response Dispatch(Shared& shared, const Request& req) {
  Response res;
  const auto path = shared.routes.find(req.path);
  if (path == shared.routes.end()) {
    res.status = 404;
    res.body = "not found\n";
    return res;
  }
  const auto handler = path->second.find(req.method);
  if (handler == path->second.end()) {
    res.status = 405;
    res.body = "method not allowed\n";
    return res;
  }
  try {
    handler->second(req, res);
  } catch (...) {
    res = Response{};
    res.status = 500;
    try {
      if (shared.options.on_exception) {
        shared.options.on_exception(req, res, std::current_exception());
      } else {
        res.body = "internal error: " + Classify(std::current_exception()).what + "\n";
      }
    } catch (...) {  // under memory pressure: the status alone
      res.status = 500;
    }
  }
  return res;
}

// One connection: read a request (idle wait, header deadline, body deadline),
// answer it, and again while the client keeps the connection alive. All its
// handlers run on its strand.
template <class Stream>
class Session : public SessionBase {
 public:
  template <class... Args>
  Session(Shared& shared, Args&&... args)
      : SessionBase(shared), stream_(std::forward<Args>(args)...) {}

  void Run() override {
    net::dispatch(stream_.get_executor(), [self = Self()] { self->Start(); });
  }

  void CloseFromOutside() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Close(); });
  }

 private:
  std::shared_ptr<Session> Self() {
    return std::static_pointer_cast<Session>(this->shared_from_this());
  }
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }
  const Limits& limits() const { return shared_.options.limits; }

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      WaitForRequest();
    }
#if TIDAL_HTTP_SERVER_TLS
    else {
      Tcp().expires_after(std::chrono::milliseconds(limits().header_timeout_ms));
      stream_.async_handshake(net::ssl::stream_base::server, [self = Self()](beast::error_code ec) {
        if (ec) {
          ++self->shared_.counters.tls_handshake_failures;
          return self->Close();
        }
        self->WaitForRequest();
      });
    }
#endif
  }

  // Keep-alive: idle until a byte arrives (closed after idle_timeout_ms, or
  // sooner to make room); then the header deadline runs from that byte.
  void WaitForRequest() {
    if (shared_.stopping) return Close();
    if (buffer_.size() > 0) return ReadHeader();  // pipelined: the next one is here
    shared_.registry.SetIdle(this, true);
    Tcp().expires_after(std::chrono::milliseconds(limits().idle_timeout_ms));
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = Self()](beast::error_code ec, std::size_t n) {
                              self->shared_.registry.SetIdle(self.get(), false);
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(std::min<std::size_t>(limits().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(limits().max_body_bytes);
    Tcp().expires_after(std::chrono::milliseconds(limits().header_timeout_ms));
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = Self()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      ++shared_.counters.headers_too_large;
      return Refuse(431, "request headers too large");
    }
    if (ec == bhttp::error::body_limit) {
      // The parser checked Content-Length itself, before the header was done (so
      // content_length() is not to be asked).
      ++shared_.counters.body_too_large;
      return Refuse(413, "request body (Content-Length) is over the limit of " +
                             std::to_string(limits().max_body_bytes) + " bytes");
    }
    if (ec == beast::error::timeout) {
      ++shared_.counters.header_timeouts;
      return Close();
    }
    if (ec) return Close();  // a malformed request or a closed connection
    const auto& h = parser_->get();
    if (auto enc = h[bhttp::field::content_encoding];
        !enc.empty() && !beast::iequals(enc, "identity")) {
      ++shared_.counters.unsupported_encoding;
      return Refuse(415, "Content-Encoding is not supported: send the body uncompressed");
    }
    if (auto length = parser_->content_length(); length && *length > limits().max_body_bytes) {
      ++shared_.counters.body_too_large;
      return Refuse(413, "request body of " + std::to_string(*length) +
                             " bytes is over the limit of " +
                             std::to_string(limits().max_body_bytes));
    }
    if (beast::iequals(h[bhttp::field::expect], "100-continue")) {
      continue_ = {bhttp::status::continue_, 11};
      return bhttp::async_write(stream_, continue_,
                                [self = Self()](beast::error_code wec, std::size_t) {
                                  if (wec) return self->Close();
                                  self->ReadBody();
                                });
    }
    ReadBody();
  }

  void ReadBody() {
    Tcp().expires_after(std::chrono::milliseconds(limits().body_timeout_ms));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = Self()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      ++shared_.counters.body_too_large;
      return Refuse(413, "request body is over the limit of " +
                             std::to_string(limits().max_body_bytes) + " bytes");
    }
    if (ec == beast::error::timeout) {
      ++shared_.counters.body_timeouts;
      return Close();
    }
    if (ec) return Close();
    Tcp().expires_never();
    const bool keep_alive = parser_->get().keep_alive();
    const unsigned version = parser_->get().version();
    Request req = ToRequest(parser_->release());
    parser_.reset();
    const bool large = req.body.size() >= kTrimAfterBodyBytes;
    Response res = Dispatch(shared_, req);
    req = Request{};
    Answer(std::move(res), keep_alive && !shared_.stopping, version, large);
  }

  void Answer(Response res, bool keep_alive, unsigned version, bool trim) {
    response_ = {static_cast<bhttp::status>(res.status), version};
    response_.set(bhttp::field::content_type, res.content_type);
    response_.body() = std::move(res.body);
    response_.keep_alive(keep_alive);
    response_.prepare_payload();
    Tcp().expires_after(std::chrono::milliseconds(limits().write_timeout_ms));
    bhttp::async_write(stream_, response_,
                       [self = Self(), keep_alive, trim](beast::error_code ec, std::size_t) {
                         self->response_ = {};
                         if (trim) TrimHeap();
                         if (ec || !keep_alive) return self->Close();
                         self->WaitForRequest();
                       });
  }

  // An error answer, then the connection is closed: the rest of the request is
  // never read into memory.
  void Refuse(int status, std::string why) {
    const bool trim = parser_ && parser_->get().body().size() >= kTrimAfterBodyBytes;
    parser_.reset();
    if (trim) TrimHeap();
    response_ = {static_cast<bhttp::status>(status), 11};
    response_.set(bhttp::field::content_type, "text/plain");
    response_.body() = std::move(why) + "\n";
    response_.keep_alive(false);
    response_.prepare_payload();
    Tcp().expires_after(std::chrono::milliseconds(limits().write_timeout_ms));
    bhttp::async_write(stream_, response_, [self = Self()](beast::error_code ec, std::size_t) {
      self->response_ = {};
      if (ec) return self->Close();
      self->Drain();
    });
  }

  // Closing with unread bytes would reset the connection and could discard the
  // answer before the client reads it: stop sending, read and drop what is left
  // for a bounded time, then close.
  void Drain() {
    beast::error_code ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    buffer_.clear();
    Tcp().expires_after(std::chrono::milliseconds(kDrainMs));
    DrainSome();
  }
  void DrainSome() {
    Tcp().async_read_some(net::buffer(drain_),
                          [self = Self()](beast::error_code ec, std::size_t n) {
                            self->drained_ += n;
                            if (ec || self->drained_ >= kDrainBytes) return self->Close();
                            self->DrainSome();
                          });
  }

  void Close() {
    beast::error_code ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Tcp().close();
  }

  static void TrimHeap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }

  Stream stream_;
  beast::flat_buffer buffer_{std::size_t{1} << 20};
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  bhttp::response<bhttp::empty_body> continue_;
  std::array<char, 4096> drain_{};
  std::size_t drained_ = 0;
};

using PlainSession = Session<beast::tcp_stream>;
#if TIDAL_HTTP_SERVER_TLS
using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;
#endif

}  // namespace

struct Server::Impl {
  // Declared before the io_context so that they outlive the sessions it destroys.
  Shared shared;
#if TIDAL_HTTP_SERVER_TLS
  std::optional<net::ssl::context> tls;
#endif
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  int port = -1;

  explicit Impl(Options o)
      : shared(std::move(o)), ioc(std::max(1, shared.options.limits.threads)) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted || shared.stopping) return;
      if (!ec) Admit(std::move(s));
      Accept();
    });
  }

  void Admit(tcp::socket socket) {
    std::shared_ptr<SessionBase> evict;
    if (!shared.registry.Admit(&evict)) {
      ++shared.counters.refused_at_limit;
      beast::error_code ignored;
      socket.close(ignored);
      return;
    }
    if (evict) {
      ++shared.counters.idle_closed_for_room;
      evict->CloseFromOutside();
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::shared_ptr<SessionBase> s;
#if TIDAL_HTTP_SERVER_TLS
    if (tls) s = std::make_shared<TlsSession>(shared, std::move(socket), *tls);
#endif
    if (!s) s = std::make_shared<PlainSession>(shared, std::move(socket));
    s->Run();
  }

  Status LoadTls() {
    const Options& o = shared.options;
    if (o.tls_cert_file.empty() && o.tls_key_file.empty()) {
      if (!o.tls_client_ca_file.empty())
        return Status::Error("a client CA (" + o.tls_client_ca_file +
                             ") needs --tls-cert and --tls-key: client certificates are checked "
                             "over HTTPS only");
      return Status();
    }
    if (o.tls_cert_file.empty() || o.tls_key_file.empty())
      return Status::Error("--tls-cert and --tls-key go together");
#if !TIDAL_HTTP_SERVER_TLS
    return Status::Error("this executable serves plain HTTP only (--tls-cert " + o.tls_cert_file +
                         "): HTTPS is tidal serve's");
#else
    tls.emplace(net::ssl::context::tls_server);
    tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                     net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                     net::ssl::context::no_tlsv1_1);
    beast::error_code ec;
    tls->use_certificate_chain_file(o.tls_cert_file, ec);
    if (!ec) tls->use_private_key_file(o.tls_key_file, net::ssl::context::pem, ec);
    if (ec)
      return Status::Error("cannot load the TLS certificate " + o.tls_cert_file + " and key " +
                           o.tls_key_file + ": " + ec.message());
    if (!o.tls_client_ca_file.empty()) {
      tls->load_verify_file(o.tls_client_ca_file, ec);
      if (ec)
        return Status::Error("cannot load the client CA " + o.tls_client_ca_file + ": " +
                             ec.message());
      tls->set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
    }
    return Status();
#endif
  }

  Status Listen() {
    const Options& o = shared.options;
    const std::string where = o.host + ":" + std::to_string(o.port);
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    const auto endpoints =
        resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
    if (ec || endpoints.empty())
      return Status::Error("cannot listen on " + where + ": " +
                           (ec ? ec.message() : std::string("no address")));
    const tcp::endpoint ep = endpoints.begin()->endpoint();
    acceptor.open(ep.protocol(), ec);
    // SO_REUSEADDR (a restart need not wait for TIME_WAIT) but never
    // SO_REUSEPORT: a second server on a used port must fail, not share it.
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(std::max(128, o.limits.backlog), ec);
    if (ec) return Status::Error("cannot listen on " + where + ": " + ec.message());
    port = acceptor.local_endpoint().port();
    return Status();
  }
};

Server::Server(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { Stop(); }

void Server::Route(std::string method, std::string path, Handler handler) {
  impl_->shared.routes[std::move(path)][std::move(method)] = std::move(handler);
}

Status Server::Start() {
  Impl& im = *impl_;
  if (Status st = im.LoadTls(); !st.ok()) return st;
  if (Status st = im.Listen(); !st.ok()) return st;
  im.Accept();
  const int n = std::max(1, im.shared.options.limits.threads);
  for (int i = 0; i < n; ++i) im.threads.emplace_back([&im] { im.ioc.run(); });
  return Status();
}

void Server::Stop() {
  Impl& im = *impl_;
  if (im.shared.stopping.exchange(true)) return;
  // Running handlers finish; every connection is dropped with the io_context's
  // pending work when the Impl goes.
  im.ioc.stop();
  for (auto& t : im.threads)
    if (t.joinable()) t.join();
  beast::error_code ignored;
  im.acceptor.close(ignored);
}

int Server::port() const { return impl_->port; }

Counters Server::counters() const {
  const AtomicCounters& a = impl_->shared.counters;
  Counters c;
  c.body_too_large = a.body_too_large;
  c.headers_too_large = a.headers_too_large;
  c.unsupported_encoding = a.unsupported_encoding;
  c.header_timeouts = a.header_timeouts;
  c.body_timeouts = a.body_timeouts;
  c.refused_at_limit = a.refused_at_limit;
  c.idle_closed_for_room = a.idle_closed_for_room;
  c.tls_handshake_failures = a.tls_handshake_failures;
  c.open_connections = impl_->shared.registry.open();
  return c;
}

std::string CountersText(std::string_view prefix, const Counters& c) {
  const std::string p(prefix);
  std::string out = "# HELP " + p +
                    "_http_refused_total Requests refused and connections closed by a limit "
                    "of the HTTP server (docs/hardening.md).\n# TYPE " +
                    p + "_http_refused_total counter\n";
  const std::pair<const char*, std::uint64_t> rows[] = {
      {"body_too_large", c.body_too_large},
      {"headers_too_large", c.headers_too_large},
      {"unsupported_encoding", c.unsupported_encoding},
      {"header_timeout", c.header_timeouts},
      {"body_timeout", c.body_timeouts},
      {"connection_limit", c.refused_at_limit},
      {"idle_closed_for_room", c.idle_closed_for_room},
      {"tls_handshake", c.tls_handshake_failures},
  };
  for (const auto& [reason, n] : rows)
    out += p + "_http_refused_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  out += "# HELP " + p + "_http_connections Open HTTP connections, idle or not.\n# TYPE " + p +
         "_http_connections gauge\n" + p + "_http_connections " +
         std::to_string(c.open_connections) + "\n";
  return out;
}

}  // namespace tidal::http
