// A kubeconfig: an Endpoint with a host and a port in range, or an InputError
// naming the file; never a crash, never another exception.
#include <string>

#include "check.h"
#include "tidal/core/status.h"
#include "tidal/kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(tidal::fuzz::AsText(data, size));
  try {
    const tidal::kube::Endpoint e = tidal::kube::ParseKubeconfig(text, "fuzz/kubeconfig");
    TIDAL_FUZZ_CHECK(!e.host.empty() && e.port >= 1 && e.port <= 65535, "a host and a port");
    TIDAL_FUZZ_CHECK(e.client_cert_pem.empty() == e.client_key_pem.empty(),
                     "a client certificate comes with its key");
  } catch (const tidal::InputError& err) {
    TIDAL_FUZZ_CHECK(err.message.find("fuzz/kubeconfig") != std::string::npos,
                     "errors name the file");
  }
  return 0;
}
