// tidal traces: derive small committed inputs from the public traces.
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "tidal/core/status.h"
#include "tidal/sim/traces/genai_profiles.h"
#include "tidal/sim/traces/traces.h"

namespace tidal::cli {
namespace {

struct GenaiOptions {
  std::string memory, duty, out;
  double step_s = 60;
  int points = 60;
};

std::string Base(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

void RunGenaiProfiles(const GenaiOptions& o) {
  if (o.memory.empty() || o.duty.empty())
    throw InputError{"traces genai-profiles needs --memory FILE and --duty FILE"};
  if (!(o.step_s > 0 && o.step_s <= 86'400)) throw InputError{"--step: expected (0, 86400] s"};
  if (o.points < 1 || o.points > 100'000) throw InputError{"--points: expected 1..100000"};
  const auto pods = sim::traces::LoadGenaiUsage(sim::traces::Csv::ReadFile(o.memory),
                                                sim::traces::Csv::ReadFile(o.duty));
  sim::traces::GenaiProfileOptions options;
  options.step_s = o.step_s;
  options.points = o.points;
  const auto profiles = sim::traces::DeriveMemoryProfiles(pods, options);
  // The command as a user would type it from the trace folder: no local paths.
  const std::string command = "tidal traces genai-profiles --memory " + Base(o.memory) +
                              " --duty " + Base(o.duty) + " --step " +
                              std::to_string(static_cast<int>(o.step_s)) + " --points " +
                              std::to_string(o.points);
  const std::string text = sim::traces::RenderMemoryProfilesYaml(
      profiles, "Alibaba cluster-trace-v2026-GenAI, " + Base(o.memory), command);
  if (o.out.empty()) {
    std::cout << text;
  } else {
    std::ofstream f(o.out);
    if (!(f << text)) throw InputError{o.out + ": cannot write the file"};
  }
  std::cerr << profiles.size() << " profiles of " << pods.size() << " pods\n";
}

}  // namespace

void AddTraces(CLI::App& app) {
  auto* cmd = app.add_subcommand("traces", "derive small inputs from the public traces");
  cmd->require_subcommand(1);
  auto o = std::make_shared<GenaiOptions>();
  auto* g = cmd->add_subcommand(
      "genai-profiles",
      "GPU-memory profiles for workloads (memoryProfiles:) from the Alibaba GenAI series");
  g->add_option("--memory", o->memory, "pod_gpu_memory_used_bytes_anon.csv")->required();
  g->add_option("--duty", o->duty, "pod_gpu_duty_cycle_anon.csv")->required();
  g->add_option("--step", o->step_s, "seconds between profile values (default 60)");
  g->add_option("--points", o->points, "values kept per pod (default 60)");
  g->add_option("-o,--out", o->out, "output file (default: standard output)");
  g->callback([o]() { RunGenaiProfiles(*o); });
}

}  // namespace tidal::cli
