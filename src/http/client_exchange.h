#pragma once
// One GET's exchange on a Beast stream, shared by the plain client (client.cc)
// and the TLS module (client_tls.cc). Errors are strings (empty: none), so the
// module needs nothing of tidal::core.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidal/http/client.h"

namespace tidal::http::exchange {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Url {
  bool tls = false;
  std::string host, port, target;
};

inline bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// scheme://host[:port][/path]; host may be a bracketed IPv6 literal.
inline std::optional<Url> ParseUrl(std::string_view rest) {
  Url u;
  if (rest.starts_with("https://")) {
    u.tls = true;
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view host = authority, port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') return std::nullopt;
    if (!after.empty()) port = after.substr(1);
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return std::nullopt;
  }
  if (host.empty() || (!port.empty() && !AllDigits(port))) return std::nullopt;
  u.host = std::string(host);
  u.port = port.empty() ? (u.tls ? "443" : "80") : std::string(port);
  return u;
}

// Runs one asynchronous step to completion or to the exchange's deadline; past
// it, `cancel` closes what is open and the step reports timed_out.
class Deadline {
 public:
  explicit Deadline(int timeout_ms)
      : at_(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)) {}

  template <class Start, class Cancel>
  beast::error_code Step(Start&& start, Cancel&& cancel) {
    beast::error_code result;
    bool done = false;
    start([&](beast::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    ioc_.restart();
    ioc_.run_until(at_);
    if (done) return result;
    cancel();
    ioc_.restart();
    ioc_.run();  // the cancelled step completes with operation_aborted
    return net::error::timed_out;
  }

  net::io_context& ioc() { return ioc_; }

 private:
  net::io_context ioc_;
  std::chrono::steady_clock::time_point at_;
};

inline std::string Failed(const std::string& url, const std::string& what,
                          const beast::error_code& ec) {
  return url + ": " + what + ": " +
         (ec == net::error::timed_out ? std::string("timed out") : ec.message());
}

template <class Stream>
std::string Exchange(Stream& stream, Deadline& deadline, const std::function<void()>& cancel,
                     const std::string& url, const Url& u, const Headers& headers,
                     const GetOptions& options, GetResult* out) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, u.target, 11};
  request.set(bhttp::field::host, u.host);
  request.set(bhttp::field::user_agent, "tidal");
  request.set(bhttp::field::connection, "close");
  for (const auto& [name, value] : headers) request.set(name, value);
  if (auto ec = deadline.Step([&](auto h) { bhttp::async_write(stream, request, h); }, cancel))
    return Failed(url, "sending the request", ec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(options.max_body_bytes);
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  const std::string too_large =
      url + ": body larger than " + std::to_string(options.max_body_bytes) + " bytes";
  // The header first, so a Content-Length over the limit is refused before any
  // body byte is buffered; the body's size is checked again once read, whatever
  // the framing (the parser's own limit is not relied on alone).
  auto ec =
      deadline.Step([&](auto h) { bhttp::async_read_header(stream, buffer, parser, h); }, cancel);
  if (ec == bhttp::error::header_limit)
    return url + ": response headers larger than " + std::to_string(options.max_header_bytes) +
           " bytes";
  if (ec == bhttp::error::body_limit) return too_large;
  if (ec) return Failed(url, "reading the response", ec);
  if (const auto length = parser.content_length(); length && *length > options.max_body_bytes)
    return too_large;
  if (!parser.is_done())
    ec = deadline.Step([&](auto h) { bhttp::async_read(stream, buffer, parser, h); }, cancel);
  if (ec == bhttp::error::body_limit) return too_large;
  if (ec) return Failed(url, "reading the response", ec);
  if (parser.get().body().size() > options.max_body_bytes) return too_large;
  out->status = static_cast<int>(parser.get().result_int());
  out->body = std::move(parser.get().body());
  return {};
}

inline std::string Connect(Deadline& deadline, tcp::socket& socket, const std::string& url,
                           const Url& u) {
  tcp::resolver resolver(deadline.ioc());
  tcp::resolver::results_type endpoints;
  auto ec = deadline.Step(
      [&](auto h) {
        resolver.async_resolve(u.host, u.port,
                               [&, h](beast::error_code e, tcp::resolver::results_type r) mutable {
                                 endpoints = std::move(r);
                                 h(e);
                               });
      },
      [&] { resolver.cancel(); });
  if (ec) return Failed(url, "resolving " + u.host, ec);
  ec = deadline.Step([&](auto h) { net::async_connect(socket, endpoints, h); },
                     [&] { socket.close(); });
  if (ec) return Failed(url, "connecting", ec);
  return {};
}

// The TLS module's one entry point (client_tls.cc), looked up by this name: an
// https GET of `url` (already parsed as `u`). Returns the error, empty on success.
inline constexpr const char* kTlsGetSymbol = "tidal_http_tls_get_v1";
using TlsGetFn = void (*)(const std::string& url, const Url& u, const Headers& headers,
                          const GetOptions& options, GetResult* out, std::string* error);

}  // namespace tidal::http::exchange
