#pragma once
// HTTP(S) to the Kubernetes API server. `Transport` is what the informers, the
// binder and the evictor use; `KubeClient` implements it with cpp-httplib over
// TLS with the endpoint's CA verified, a bearer token (re-read when its file
// changes: projected service-account tokens rotate) or a client certificate.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tidal/kube/config.h"

namespace tidal::kube {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PATCH, DELETE
  std::string path;            // with the query string
  std::string body;
  std::string content_type = "application/json";
};

struct HttpResponse {
  int status = 0;  // 0: no response (see error)
  std::string body;
  std::string error;  // transport failure: connection refused, TLS, timeout
  bool ok() const { return status >= 200 && status < 300; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual HttpResponse Do(const HttpRequest& request) = 0;
  // A GET whose body is handed to `on_data` as it arrives (a watch), until the
  // server ends it, `on_data` returns false, or CancelStreams(). The response's
  // body is only filled for a non-2xx status.
  virtual HttpResponse Stream(const std::string& path,
                              const std::function<bool(std::string_view)>& on_data) = 0;
  // Ends every Stream in progress (shutdown).
  virtual void CancelStreams() = 0;
  virtual std::string Describe() const = 0;
};

struct ClientOptions {
  int connect_timeout_ms = 5'000;
  int request_timeout_ms = 10'000;  // read/write of plain requests
  // A watch is idle between events: the server sends bookmarks about every
  // minute, and ends the watch after timeoutSeconds; longer silence is a dead link.
  int stream_read_timeout_ms = 120'000;
};

class KubeClient : public Transport {
 public:
  // Throws InputError when the endpoint's certificates do not parse.
  explicit KubeClient(Endpoint endpoint, ClientOptions options = {});
  ~KubeClient() override;
  HttpResponse Do(const HttpRequest& request) override;
  HttpResponse Stream(const std::string& path,
                      const std::function<bool(std::string_view)>& on_data) override;
  void CancelStreams() override;
  std::string Describe() const override { return endpoint_.BaseUrl(); }

 private:
  struct Impl;
  std::string Token();
  Endpoint endpoint_;
  ClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidal::kube
