// tidal simulate: replay a workload on a cluster under every policy, side by side.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "tidal/core/status.h"
#include "tidal/policy/config.h"
#include "tidal/sim/report.h"
#include "tidal/sim/simulator.h"

extern char** environ;

namespace tidal::cli {
namespace {

struct SimulateOptions {
  std::string cluster = "builtin:seed-8xA10";
  std::string workload = "builtin:seed";
  std::string policies = "k8s-default,best-fit,load-aware,oracle";
  std::string config;
  std::uint64_t seed = 42;
  std::string out;
  std::string output = "table";
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Runs the plotting script without a shell; plots are a convenience, so a
// missing python3 or matplotlib is reported, not fatal.
void Plot(const std::string& dir) {
  const char* env = std::getenv("TIDAL_PLOT_SCRIPT");
  const std::string script = env ? env : TIDAL_PLOT_SCRIPT;
  // Debian's python3 is where python3-matplotlib installs; another python3 on
  // PATH (a virtualenv, pyenv) may lack it. TIDAL_PYTHON overrides.
  const char* py_env = std::getenv("TIDAL_PYTHON");
  std::string python = py_env ? py_env : (access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
  std::vector<std::string> args = {python, script, dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    std::cerr << "simulate: python3 not found; CSV series are in " << dir << ", plots skipped\n";
    return;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::cerr << "simulate: plotting failed (needs python3-matplotlib); CSV series are in " << dir << "\n";
}

void RunSimulate(const SimulateOptions& o) {
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  const PolicyConfig config = o.config.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(o.config);
  const sim::ClusterSpec cluster = sim::LoadCluster(o.cluster);
  const sim::WorkloadSpec workload = sim::LoadWorkload(o.workload);
  std::vector<sim::PolicySpec> policies;
  for (const auto& name : Split(o.policies)) policies.push_back(sim::MakePolicy(name, config));
  if (policies.empty()) throw InputError{"--policies: expected a comma-separated list"};
  sim::SimOptions options;
  options.seed = o.seed;
  sim::RunReport report;
  report.scenario = workload.name;
  report.cluster = cluster.name;
  report.seed = o.seed;
  const bool tty = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    report.policies.push_back(sim::Simulate(cluster, workload, policies[i], options));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty && elapsed > 1.0)
      std::cerr << "\rsimulated " << (i + 1) << "/" << policies.size() << " policies (" << policies[i].name
                << ")   " << (i + 1 == policies.size() ? "\n" : "") << std::flush;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::uint64_t events = 0;
  for (const auto& p : report.policies) events += p.events;
  std::cout << (o.output == "json" ? sim::RenderJson(report) : sim::RenderTable(report));
  if (o.output == "table")
    std::cout << "\n" << events << " events in " << wall << " s (" << static_cast<std::uint64_t>(events / std::max(wall, 1e-9))
              << " events/s)\n";
  if (!o.out.empty()) {
    sim::WriteCsv(report, o.out);
    Plot(o.out);
    if (o.output == "table") std::cout << "\nseries and plots written to " << o.out << "/\n";
  }
}

}  // namespace

void AddSimulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "replay a workload against Tidal's policies and the baselines");
  cmd->add_option("--cluster", o->cluster, "cluster file (YAML) or builtin:seed-8xA10 / builtin:seed-8xA10-golden");
  cmd->add_option("--workload", o->workload, "workload file (YAML) or builtin:seed");
  cmd->add_option("--policies", o->policies,
                  "comma-separated: k8s-default, best-fit, load-aware, load-aware-noreserve, oracle");
  cmd->add_option("--config", o->config, "Tidal policy config for load-aware and oracle");
  cmd->add_option("--seed", o->seed, "random seed (arrivals, durations, memory peaks, ties)");
  cmd->add_option("--out", o->out, "directory for CSV series and PNG plots");
  cmd->add_option("--output", o->output, "table or json");
  cmd->callback([o]() { RunSimulate(*o); });
}

}  // namespace tidal::cli
