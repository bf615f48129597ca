#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "tidal/core/file.h"
#include "tidal/policy/config.h"

namespace tidal::cli {

void AddCheckConfig(CLI::App& app) {
  auto* cmd = app.add_subcommand("check-config",
                                 "validate a policy config: print every error with its field "
                                 "path (exit 1), or the effective config (exit 0)");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "the policy config (YAML)")->required();
  cmd->callback([file]() {
    std::string text;
    if (const Status read = ReadRegularFile(*file, kMaxConfigFileBytes, &text); !read.ok()) {
      std::cerr << read.reason() << "\n";
      throw CLI::RuntimeError(1);
    }
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      std::cerr << *file << ": not valid YAML: " << e.what() << "\n";
      throw CLI::RuntimeError(1);
    }
    ConfigErrors errors;
    PolicyConfig config = ParsePolicyConfig(root, errors);
    if (!errors.empty()) {
      for (const auto& e : errors.items()) std::cerr << e << "\n";
      throw CLI::RuntimeError(1);
    }
    std::cout << DumpPolicyConfig(config);
  });
}

}  // namespace tidal::cli
