#include "tidal/http/client.h"

#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <system_error>

#include "http/client_exchange.h"

namespace tidal::http {
namespace {

using namespace exchange;

std::vector<std::string> TlsModuleCandidates(const GetOptions& options) {
  if (!options.tls_module.empty()) return {options.tls_module};
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path dir = exe.parent_path();
  return {(dir / ".." / "lib" / "tidal" / kTlsModuleName).lexically_normal().string(),
          (dir / kTlsModuleName).string()};
}

// Loads the module for this one call. RTLD_NODELETE keeps it (and OpenSSL,
// whose exit handlers must outlive the call) mapped once loaded, so the next
// dlopen only finds it again.
std::string GetTls(const std::string& url, const Url& u, const Headers& headers,
                   const GetOptions& options, GetResult* out) {
  const std::vector<std::string> candidates = TlsModuleCandidates(options);
  std::string tried;
  for (const std::string& path : candidates) {
    void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (module == nullptr) {
      const char* why = ::dlerror();
      tried += (tried.empty() ? " " : "; ") + (why ? std::string(why) : path);
      continue;
    }
    const auto get = reinterpret_cast<TlsGetFn>(::dlsym(module, kTlsGetSymbol));
    std::string error;
    if (get == nullptr)
      error = url + ": " + path + " is not Tidal's TLS module (no " + kTlsGetSymbol + ")";
    else
      get(url, u, headers, options, out, &error);
    ::dlclose(module);
    return error;
  }
  return url + ": https needs the TLS module " + kTlsModuleName +
         ", installed beside the executable or in ../lib/tidal/ (not loaded:" + tried + ")";
}

}  // namespace

Status Get(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
           const GetOptions& options, GetResult* out) {
  const std::optional<Url> u = ParseUrl(url);
  if (!u) return Status::Error(url + ": expected http://host[:port]/path or https://...");
  std::string error;
  try {
    if (u->tls) {
      error = GetTls(url, *u, headers, options, out);
    } else {
      Deadline deadline(options.timeout_ms);
      tcp::socket socket(deadline.ioc());
      error = Connect(deadline, socket, url, *u);
      const std::function<void()> cancel = [&] { socket.close(); };
      if (error.empty()) error = Exchange(socket, deadline, cancel, url, *u, headers, options, out);
    }
  } catch (const std::exception& e) {
    error = url + ": " + e.what();
  }
  return error.empty() ? Status() : Status::Error(error);
}

}  // namespace tidal::http
