#pragma once
// An event-driven HTTP/1.1 server for `tidal serve` and `tidal-agent`, on
// Boost.Beast and Asio. A connection holds a thread only while a request is being
// handled: idle keep-alive connections and slow clients cost a socket, never a
// worker. Every limit applies before the bytes are buffered (docs/hardening.md):
//   - headers: at most max_header_bytes, within header_timeout_ms of the
//     request's first byte, else 431 or a closed connection;
//   - body: the decoded bytes (chunked included) at most max_body_bytes, else
//     413 answered before the body is read, and the connection closed; a
//     Content-Encoding other than identity is refused with 415 (no body is
//     ever decompressed);
//   - connections: at most max_connections; at the limit the connection idle
//     longest is closed to make room, and with none idle the new one is refused.
// Pipelined requests are answered in order. Stop() returns within a few
// milliseconds whatever the clients do.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidal/core/status.h"

namespace tidal::http {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // decoded (chunked is undone); never compressed
  // The first value of a header, matched without regard to case ("" if absent).
  std::string_view Header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  void Set(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
};

using Handler = std::function<void(const Request&, Response&)>;

// What a handler threw, for a 500's body, a log line and a counter's label.
struct Thrown {
  const char* reason;  // "bad_alloc", "exception" or "unknown": a fixed label set
  std::string what;
};
Thrown Classify(std::exception_ptr thrown);
// Answers a request whose handler threw: sets the response (a 500 by default).
using ExceptionHandler = std::function<void(const Request&, Response&, std::exception_ptr)>;

struct Limits {
  std::size_t max_body_bytes = 1 << 20;     // decoded bytes; 413 above
  std::size_t max_header_bytes = 16 << 10;  // request line and headers; 431 above
  int header_timeout_ms = 5000;             // first byte of a request to its last header byte
  int body_timeout_ms = 30000;              // the whole body: a 64 MiB body needs ≥ 2.2 MB/s
  int write_timeout_ms = 5000;              // the whole response
  int idle_timeout_ms = 30000;              // keep-alive: between two requests
  std::size_t max_connections = 4096;       // open at once, idle or not
  int backlog = 1024;                       // listen(2); the kernel caps it at somaxconn
  int threads = 2;                          // handlers that can run at once
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  Limits limits;
  // Both set: HTTPS. With a client CA as well, a client must present a
  // certificate that CA signed (kube-scheduler's extender tlsConfig certFile).
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  ExceptionHandler on_exception;  // empty: a plain 500 saying what was thrown
};

// Requests refused or connections closed by a limit, since start (for /metrics).
struct Counters {
  std::uint64_t body_too_large = 0;        // 413
  std::uint64_t headers_too_large = 0;     // 431
  std::uint64_t unsupported_encoding = 0;  // 415
  std::uint64_t header_timeouts = 0;       // closed: headers not complete in time
  std::uint64_t body_timeouts = 0;         // closed: body not complete in time
  std::uint64_t refused_at_limit = 0;      // new connection refused: all busy
  std::uint64_t idle_closed_for_room = 0;  // idle connection closed for a new one
  std::uint64_t tls_handshake_failures = 0;
  std::uint64_t open_connections = 0;  // a gauge
};

class Server {
 public:
  explicit Server(Options options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Exact path and method (before Start). Another method on a known path: 405.
  void Route(std::string method, std::string path, Handler handler);
  // Binds and listens (an address in use is an error naming it), then serves on
  // background threads.
  Status Start();
  // Closes the listener and every connection; a handler running finishes first.
  void Stop();
  int port() const;
  Counters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The exposition lines of `c` as counters and a gauge named prefix_..., e.g.
// tidal_extender_http_refused_total{reason="body_too_large"}.
std::string CountersText(std::string_view prefix, const Counters& c);

}  // namespace tidal::http
