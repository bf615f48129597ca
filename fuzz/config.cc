// The policy config as check-config and the extender load it: YAML text, then
// ParsePolicyConfig. Bad input only adds errors with field paths; a config that
// loads dumps to YAML that loads again to the same dump.
#include "tidal/policy/config.h"

#include <string>

#include "check.h"

namespace {

bool Load(const std::string& text, YAML::Node* root) {
  try {
    *root = YAML::Load(text);
    return true;
  } catch (const YAML::Exception&) {
    return false;  // LoadPolicyConfigFile reports these as "not valid YAML"
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  YAML::Node root;
  if (!Load(std::string(tidal::fuzz::AsText(data, size)), &root)) return 0;
  tidal::ConfigErrors errors;
  const tidal::PolicyConfig config = tidal::ParsePolicyConfig(root, errors);
  if (!errors.empty()) {
    for (const std::string& e : errors.items())
      TIDAL_FUZZ_CHECK(e.find(": ") != std::string::npos, "every error is \"path: message\"");
    return 0;
  }
  const std::string dumped = tidal::DumpPolicyConfig(config);
  YAML::Node again;
  TIDAL_FUZZ_CHECK(Load(dumped, &again), "the effective config is valid YAML");
  tidal::ConfigErrors errors2;
  const tidal::PolicyConfig reloaded = tidal::ParsePolicyConfig(again, errors2);
  if (!errors2.empty())
    std::fprintf(stderr, "%s\n---\n%s\n", dumped.c_str(), errors2.Joined().c_str());
  TIDAL_FUZZ_CHECK(errors2.empty(), "the effective config loads without errors");
  TIDAL_FUZZ_CHECK(tidal::DumpPolicyConfig(reloaded) == dumped, "dump, load, dump is stable");
  return 0;
}
