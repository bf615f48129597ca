// The https half of http::Get, built as a module (tidal-https.so) that Get loads
// on the first https URL: a process that never fetches over TLS, such as the
// node agent without --kubelet-url, neither maps OpenSSL nor pays its start-up
// relocations (about 1.7 MiB resident).
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <exception>

#include "http/client_exchange.h"

namespace tidal::http::exchange {
namespace {

std::string GetTls(Deadline& deadline, const std::string& url, const Url& u, const Headers& headers,
                   const GetOptions& options, GetResult* out) {
  net::ssl::context context(net::ssl::context::tls_client);
  beast::error_code ec;
  if (options.insecure_skip_verify) {
    context.set_verify_mode(net::ssl::verify_none);
  } else if (options.ca_file.empty()) {
    return url + ": no CA to verify the server's certificate";
  } else {
    context.load_verify_file(options.ca_file, ec);
    if (ec) return url + ": CA file " + options.ca_file + ": " + ec.message();
    context.set_verify_mode(net::ssl::verify_peer);
  }
  beast::ssl_stream<tcp::socket> stream(deadline.ioc(), context);
  if (!options.insecure_skip_verify)
    stream.set_verify_callback(net::ssl::host_name_verification(u.host));
  beast::error_code parse_error;
  net::ip::make_address(u.host, parse_error);
  // SNI only for names: RFC 6066 forbids an IP literal there.
  if (parse_error && !SSL_set_tlsext_host_name(stream.native_handle(), u.host.c_str()))
    return url + ": cannot set the TLS server name";
  if (std::string e = Connect(deadline, stream.next_layer(), url, u); !e.empty()) return e;
  const std::function<void()> cancel = [&] { stream.next_layer().close(); };
  ec = deadline.Step([&](auto h) { stream.async_handshake(net::ssl::stream_base::client, h); },
                     cancel);
  if (ec) return Failed(url, "TLS handshake", ec);
  return Exchange(stream, deadline, cancel, url, u, headers, options, out);
}

}  // namespace
}  // namespace tidal::http::exchange

// The module exports this one symbol (everything else is hidden).
extern "C" __attribute__((visibility("default"))) void tidal_http_tls_get_v1(
    const std::string& url, const tidal::http::exchange::Url& u,
    const tidal::http::exchange::Headers& headers, const tidal::http::GetOptions& options,
    tidal::http::GetResult* out, std::string* error) {
  static_assert(std::is_same_v<decltype(&tidal_http_tls_get_v1), tidal::http::exchange::TlsGetFn>);
  try {
    tidal::http::exchange::Deadline deadline(options.timeout_ms);
    *error = tidal::http::exchange::GetTls(deadline, url, u, headers, options, out);
  } catch (const std::exception& e) {
    *error = url + ": " + e.what();
  }
}
