#pragma once
// A small blocking HTTP/1.1 client (one GET, one connection) on the same
// Boost.Beast stack as the server, for the node agent's kubelet pod list: one
// deadline over the whole exchange, the body bounded while it arrives, TLS
// verified against a CA file unless skipping is asked for explicitly. https is
// served by a module loaded on its first use (tidal-https.so, which links
// OpenSSL), so a process that never fetches over TLS does not map OpenSSL.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tidal/core/status.h"

namespace tidal::http {

struct GetOptions {
  int timeout_ms = 5000;  // connect, TLS handshake, request and response together
  std::size_t max_body_bytes = 16u << 20;
  std::size_t max_header_bytes = 64u << 10;
  std::string ca_file;  // https: the CA that signed the server's certificate
  bool insecure_skip_verify = false;
  // https: the TLS module; empty: kTlsModuleName in ../lib/tidal/ beside the
  // executable (an installation), else beside it (a build tree).
  std::string tls_module;
};

inline constexpr const char* kTlsModuleName = "tidal-https.so";

struct GetResult {
  int status = 0;
  std::string body;
};

// GET `url` (http://host:port/path or https://...). Errors name the URL and what
// failed ("timed out", "body larger than N bytes", a TLS verification failure).
Status Get(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
           const GetOptions& options, GetResult* out);

}  // namespace tidal::http
