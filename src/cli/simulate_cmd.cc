// tidal simulate: replay a workload on a cluster under every policy, side by side.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "tidal/core/status.h"
#include "tidal/policy/config.h"
#include "tidal/sim/fgd_experiment.h"
#include "tidal/sim/prediction.h"
#include "tidal/sim/replay.h"
#include "tidal/sim/report.h"
#include "tidal/sim/simulator.h"
#include "tidal/sim/traces/traces.h"

extern char** environ;

namespace tidal::cli {
namespace {

struct SimulateOptions {
  std::string cluster = "builtin:seed-8xA10";
  std::string workload = "builtin:seed";
  std::string policies = "k8s-default,best-fit,load-aware+stock-dp,load-aware,oracle";
  std::string config;
  std::uint64_t seed = 42;
  std::string out;
  std::string output = "table";
  // --experiment fgd-inflation
  std::string experiment;
  std::string nodes, pods, expected;
  std::string seeds = "42";
  double fgd_popularity = 95;
  std::optional<double> fgd_scarcity;
  double learn_half_life = 0;  // fgd-learned: pods; 0: no decay
  bool offline = false;        // fgd-inflation: the clairvoyant reference too
  bool lp_bound = false;       // fgd-inflation: the packing LP's bound, solved by glpsol
  int fgd_score_step = 1;
  std::string tie_break = "name";
  double cpu_only_pct = -1;  // < 0: the list as it is
  // --experiment philly
  std::string jobs, vcs;
  // --experiment prediction
  std::string genai;
  bool policies_set = false;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// RunProgram's answer when the program could not be started (not on PATH).
constexpr int kNotStarted = -2;

// Runs `args` (args[0] found on PATH) without a shell and waits: its exit code,
// -1 when it did not exit, kNotStarted; `quiet` sends its output to /dev/null.
int RunProgram(std::vector<std::string> args, bool quiet) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return kNotStarted;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs the plotting script; plots are a convenience, so a missing python3 or
// matplotlib is reported, not fatal.
void Plot(const std::string& dir) {
  const char* env = std::getenv("TIDAL_PLOT_SCRIPT");
  const std::string script = env ? env : TIDAL_PLOT_SCRIPT;
  // Debian's python3 is where python3-matplotlib installs; another python3 on
  // PATH (a virtualenv, pyenv) may lack it. TIDAL_PYTHON overrides.
  const char* py_env = std::getenv("TIDAL_PYTHON");
  std::string python =
      py_env ? py_env : (access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
  const int code = RunProgram({python, script, dir}, /*quiet=*/false);
  if (code == kNotStarted)
    std::cerr << "simulate: python3 not found; CSV series are in " << dir << ", plots skipped\n";
  else if (code != 0)
    std::cerr << "simulate: plotting failed (needs python3-matplotlib); CSV series are in " << dir
              << "\n";
}

// The unallocated GPU % no placement of the seed's pods can go below: its
// packing LP solved by glpsol (glpk-utils), in a temporary directory.
// Runs glpsol on `lp` (CPLEX LP text) with `output` (-o for the report, -w for the
// solution) and returns that file's text; throws InputError naming `what` when
// glpsol is missing or fails (the LP is kept to look at).
std::string RunGlpsol(const std::string& lp, const char* output, const std::string& what) {
  const std::string base = std::filesystem::temp_directory_path() / "tidal-lp-XXXXXX";
  std::vector<char> dir_buf(base.begin(), base.end());
  dir_buf.push_back('\0');
  if (!mkdtemp(dir_buf.data())) throw InputError{what + ": cannot create " + base};
  const std::string dir = dir_buf.data(), model = dir + "/model.lp", result = dir + "/result.txt";
  std::ofstream(model) << lp;
  const int code = RunProgram({"glpsol", "--lp", model, output, result}, /*quiet=*/true);
  std::stringstream text;
  text << std::ifstream(result).rdbuf();
  if (code == kNotStarted) {
    std::filesystem::remove_all(dir);
    throw InputError{what + ": glpsol not found on PATH (apt-get install glpk-utils)"};
  }
  if (code != 0) throw InputError{fmt::format("{}: glpsol failed ({} kept)", what, model)};
  std::filesystem::remove_all(dir);
  return text.str();
}

double SolveLpBound(const sim::PackingLp& lp, std::uint64_t seed) {
  const std::string what = fmt::format("--lp-bound, seed {}", seed);
  const std::optional<double> optimum = sim::GlpsolOptimum(RunGlpsol(lp.text, "-o", what));
  if (!optimum) throw InputError{what + ": glpsol found no optimum"};
  return sim::LpUnallocatedPct(lp, *optimum);
}

// "42-51" or "42,45": the seeds, in order.
std::vector<std::uint64_t> ParseSeeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const auto& part : Split(text)) {
    const auto dash = part.find('-');
    try {
      std::size_t used = 0;
      if (dash == std::string::npos) {
        out.push_back(std::stoull(part, &used));
        if (used != part.size()) throw std::invalid_argument(part);
        continue;
      }
      const std::string lo_s = part.substr(0, dash), hi_s = part.substr(dash + 1);
      const std::uint64_t lo = std::stoull(lo_s, &used);
      if (used != lo_s.size()) throw std::invalid_argument(part);
      const std::uint64_t hi = std::stoull(hi_s, &used);
      if (used != hi_s.size() || hi < lo || hi - lo > 10000) throw std::invalid_argument(part);
      for (std::uint64_t s = lo; s <= hi; ++s) out.push_back(s);
    } catch (const std::exception&) {
      throw InputError{"--seeds: \"" + part +
                       "\" (expected N, N-M or a comma-separated list of them)"};
    }
  }
  if (out.empty()) throw InputError{"--seeds: expected N, N-M or a comma-separated list of them"};
  return out;
}

std::string Stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const auto dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// One line on stderr per finished run, so that a long experiment shows it is
// alive (ten seeds of the openb list take minutes): on a terminal one line
// rewritten in place, in a log or a pipe a line each.
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), tty_(isatty(STDERR_FILENO) != 0) {}
  void Done(const std::string& run, double seconds) {
    ++done_;
    const std::string line =
        fmt::format("[{}/{}] {} done in {:.1f} s", done_, total_, run, seconds);
    if (!tty_) {
      std::cerr << line + "\n";  // one write: whole lines beside other output
      return;
    }
    // Spaces over what is left of a longer previous line; a newline after the last.
    const std::size_t pad = width_ > line.size() ? width_ - line.size() : 0;
    width_ = line.size();
    std::cerr << "\r" << line << std::string(pad, ' ') << (done_ == total_ ? "\n" : "")
              << std::flush;
  }

 private:
  std::size_t total_, done_ = 0, width_ = 0;
  bool tty_;
};

void RunFgdInflation(const SimulateOptions& o) {
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  if (o.nodes.empty() || o.pods.empty())
    throw InputError{
        "--experiment fgd-inflation needs --nodes FILE and --pods FILE (openb CSV lists)"};
  const auto seeds = ParseSeeds(o.seeds);
  auto nodes = sim::traces::LoadOpenbNodes(sim::traces::Csv::ReadFile(o.nodes));
  auto pods = sim::traces::LoadOpenbPods(sim::traces::Csv::ReadFile(o.pods));
  if (o.cpu_only_pct >= 0) pods = sim::WithCpuOnlyShare(std::move(pods), o.cpu_only_pct);
  std::vector<std::string> policies = o.policies_set ? Split(o.policies) : sim::FgdPolicyNames();
  if (policies.empty()) throw InputError{"--policies: expected a comma-separated list"};
  // The paper's figures sit beside the pod lists (openb/fgd_expected/) unless given.
  std::string expected = o.expected;
  if (expected.empty()) {
    const std::string dir =
        o.pods.find('/') == std::string::npos ? "." : o.pods.substr(0, o.pods.find_last_of('/'));
    const std::string guess = dir + "/fgd_expected/fgd_summary.csv";
    if (access(guess.c_str(), R_OK) == 0) expected = guess;
  }
  std::vector<sim::traces::FgdExpected> paper;
  if (!expected.empty()) paper = sim::traces::LoadFgdSummary(sim::traces::Csv::ReadFile(expected));
  if (!(o.fgd_popularity > 0 && o.fgd_popularity <= 100))
    throw InputError{"--fgd-popularity: expected a percentage in (0, 100]"};
  sim::FgdOptions options;
  options.popularity_pct = o.fgd_popularity;
  if (o.fgd_scarcity && !(*o.fgd_scarcity >= 0 && *o.fgd_scarcity <= 4))
    throw InputError{"--fgd-scarcity: expected an exponent in [0, 4] (0: no scarcity weighting)"};
  options.scarcity_exponent = o.fgd_scarcity;
  if (!(o.learn_half_life >= 0 && std::isfinite(o.learn_half_life)))
    throw InputError{"--learn-half-life: expected a number of pods >= 0 (0: no decay)"};
  options.learn_half_life_pods = o.learn_half_life;
  if (o.fgd_score_step < 1 || o.fgd_score_step > 50)
    throw InputError{"--fgd-score-step: expected a whole number in 1..50"};
  options.fgd_score_step = o.fgd_score_step;
  if (o.tie_break == "name")
    options.tie_break = sim::FgdTieBreak::kLowestName;
  else if (o.tie_break == "random")
    options.tie_break = sim::FgdTieBreak::kRandom;
  else
    throw InputError{"--tie-break: \"" + o.tie_break + "\" (expected name or random)"};
  if (std::find(policies.begin(), policies.end(), "fgd-fill") != policies.end())
    options.solve_lp = [](const std::string& lp, std::size_t columns) {
      return sim::GlpsolColumns(RunGlpsol(lp, "-w", "policy fgd-fill's fill plan"), columns);
    };
  const sim::FgdExperiment experiment(std::move(nodes), std::move(pods), options);
  sim::FgdReport report;
  report.workload = Stem(o.pods);
  if (o.cpu_only_pct >= 0)
    report.workload += fmt::format("+cpu{:03d}", std::lround(o.cpu_only_pct * 10));
  report.capacity_milli = experiment.capacity_milli();
  report.seeds = seeds;
  std::uint64_t pods_placed = 0, evaluations = 0, rescored = 0, walked = 0;
  double wall = 0;
  Progress progress(policies.size() * seeds.size());
  for (const auto& name : policies) {
    sim::FgdPolicyResult result;
    result.name = name;
    for (std::uint64_t seed : seeds) {
      const auto start = std::chrono::steady_clock::now();
      result.runs.push_back(experiment.Run(name, seed));
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      wall += t;
      pods_placed += static_cast<std::uint64_t>(result.runs.back().pods);
      evaluations += result.runs.back().node_evaluations;
      rescored += result.runs.back().nodes_rescored;
      walked += result.runs.back().changes_walked;
      progress.Done(name + " seed " + std::to_string(seed), t);
    }
    report.policies.push_back(std::move(result));
  }
  if (o.offline)
    for (const auto order : {sim::FgdOfflineOrder::kGpuFirst, sim::FgdOfflineOrder::kGpuPlusCpu})
      for (const char* name : {"best-fit-milli", "fgd"}) {
        sim::FgdOfflineResult r;
        r.name = std::string(name) +
                 (order == sim::FgdOfflineOrder::kGpuFirst ? ", GPU first" : ", GPU+CPU share");
        for (std::uint64_t seed : seeds)
          r.unalloc.push_back(experiment.OfflineUnallocPct(name, order, seed));
        report.offline.push_back(std::move(r));
      }
  if (o.lp_bound) {
    sim::FgdOfflineResult r;
    r.name = "LP relaxation, lower bound";
    for (std::uint64_t seed : seeds)
      r.unalloc.push_back(SolveLpBound(experiment.PackingLpFor(seed), seed));
    report.offline.push_back(std::move(r));
  }
  std::cout << (o.output == "json" ? sim::RenderFgdJson(report)
                                   : sim::RenderFgdTable(report, paper));
  if (o.output == "table")
    std::cout << "\n"
              << policies.size() * seeds.size() << " runs, " << pods_placed << " pods, "
              << evaluations << " node scorings in " << wall << " s ("
              << wall / static_cast<double>(policies.size() * seeds.size()) << " s per run; "
              << rescored << " nodes re-scored, " << walked << " changes walked)\n";
}

void RunPredictionExperiment(const SimulateOptions& o) {
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  if (o.genai.empty())
    throw InputError{
        "--experiment prediction needs --genai DIR (the alibaba_genai_2026 trace folder)"};
  const PolicyConfig config =
      o.config.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(o.config);
  const auto pods = sim::traces::LoadGenaiUsage(
      sim::traces::Csv::ReadFile(o.genai + "/pod_gpu_memory_used_bytes_anon.csv"),
      sim::traces::Csv::ReadFile(o.genai + "/pod_gpu_duty_cycle_anon.csv"));
  const sim::PredictionReport r = sim::RunPrediction(pods, config);
  std::cout << (o.output == "json" ? sim::RenderPredictionJson(r) : sim::RenderPredictionTable(r));
}

void RunPhilly(const SimulateOptions& o) {
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  if (o.jobs.empty()) throw InputError{"--experiment philly needs --jobs FILE (philly.csv)"};
  // The VC table sits beside the job list unless given.
  std::string vcs = o.vcs;
  if (vcs.empty())
    vcs =
        (o.jobs.find('/') == std::string::npos ? "." : o.jobs.substr(0, o.jobs.find_last_of('/'))) +
        "/philly_vc.csv";
  const auto jobs =
      sim::FromPhilly(sim::traces::LoadPhillyJobs(sim::traces::Csv::ReadFile(o.jobs)));
  const auto table = sim::FromPhilly(sim::traces::LoadPhillyVcs(sim::traces::Csv::ReadFile(vcs)));
  std::vector<std::string> policies = o.policies_set ? Split(o.policies) : sim::ReplayPolicyNames();
  if (policies.empty()) throw InputError{"--policies: expected a comma-separated list"};
  sim::ReplayOptions options;
  options.seed = o.seed;
  std::vector<sim::ReplayResult> results;
  std::vector<double> events_per_s, walls;
  Progress progress(policies.size());
  for (const auto& name : policies) {
    const auto start = std::chrono::steady_clock::now();
    results.push_back(sim::Replay(table, jobs, name, options));
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    walls.push_back(t);
    events_per_s.push_back(static_cast<double>(results.back().events) / std::max(t, 1e-9));
    progress.Done(name, t);
  }
  std::cout << (o.output == "json" ? sim::RenderReplayJson(results, events_per_s)
                                   : sim::RenderReplayTable(results, events_per_s));
  if (o.output == "table") {
    std::cout << "\nwall time per policy (s):";
    for (std::size_t i = 0; i < policies.size(); ++i)
      std::cout << " " << policies[i] << " " << walls[i];
    std::cout << "\n";
  }
}

// The four kinds of run; each reads only some of the options.
enum RunKind : unsigned { kPlain = 1, kFgd = 2, kPhilly = 4, kPrediction = 8 };

RunKind KindOf(const std::string& experiment) {
  if (experiment.empty()) return kPlain;
  if (experiment == "fgd-inflation") return kFgd;
  if (experiment == "philly") return kPhilly;
  if (experiment == "prediction") return kPrediction;
  throw InputError{"--experiment: \"" + experiment +
                   "\" (expected fgd-inflation, philly or prediction)"};
}

std::string KindName(unsigned kind) {
  switch (kind) {
    case kPlain:
      return "without --experiment";
    case kFgd:
      return "with --experiment fgd-inflation";
    case kPhilly:
      return "with --experiment philly";
    default:
      return "with --experiment prediction";
  }
}

struct FlagScope {
  const char* flag;
  unsigned kinds;    // the runs that read it
  const char* hint;  // what the other runs take instead, if anything
};

// --output and --experiment apply to every run.
constexpr FlagScope kFlagScopes[] = {
    {"--cluster", kPlain, ""},
    {"--workload", kPlain, ""},
    {"--out", kPlain, ""},
    {"--policies", kPlain | kFgd | kPhilly, ""},
    {"--config", kPlain | kPrediction, ""},
    {"--seed", kPlain | kPhilly, " (fgd-inflation takes --seeds)"},
    {"--seeds", kFgd, " (the others take one --seed)"},
    {"--nodes", kFgd, ""},
    {"--pods", kFgd, ""},
    {"--expected", kFgd, ""},
    {"--fgd-popularity", kFgd, ""},
    {"--fgd-scarcity", kFgd, ""},
    {"--learn-half-life", kFgd, ""},
    {"--offline", kFgd, ""},
    {"--lp-bound", kFgd, ""},
    {"--fgd-score-step", kFgd, ""},
    {"--tie-break", kFgd, ""},
    {"--cpu-only-pct", kFgd, ""},
    {"--jobs", kPhilly, ""},
    {"--vcs", kPhilly, ""},
    {"--genai", kPrediction, ""},
};

// Refuses an option this run would not read: a silently ignored --seeds 42-51
// looks like ten seeds and is one.
void CheckFlagsApply(const CLI::App& cmd, const std::string& experiment) {
  const RunKind kind = KindOf(experiment);
  for (const FlagScope& f : kFlagScopes) {
    if (cmd.count(f.flag) == 0 || (f.kinds & kind) != 0) continue;
    std::string where;
    for (unsigned k : {kPlain, kFgd, kPhilly, kPrediction})
      if ((f.kinds & k) != 0) where += (where.empty() ? "" : " or ") + KindName(k);
    throw InputError{std::string(f.flag) + ": used only " + where + ", so " + KindName(kind) +
                     " it would be ignored" + f.hint};
  }
}

void RunSimulate(const SimulateOptions& o) {
  if (!o.experiment.empty()) {
    if (o.experiment == "fgd-inflation")
      RunFgdInflation(o);
    else if (o.experiment == "philly")
      RunPhilly(o);
    else if (o.experiment == "prediction")
      RunPredictionExperiment(o);
    else
      throw InputError{"--experiment: \"" + o.experiment +
                       "\" (expected fgd-inflation, philly or prediction)"};
    return;
  }
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  const PolicyConfig config =
      o.config.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(o.config);
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
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty && elapsed > 1.0)
      std::cerr << "\rsimulated " << (i + 1) << "/" << policies.size() << " policies ("
                << policies[i].name << ")   " << (i + 1 == policies.size() ? "\n" : "")
                << std::flush;
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::uint64_t events = 0;
  for (const auto& p : report.policies) events += p.events;
  std::cout << (o.output == "json" ? sim::RenderJson(report) : sim::RenderTable(report));
  if (o.output == "table")
    std::cout << "\n"
              << events << " events in " << wall << " s ("
              << static_cast<std::uint64_t>(events / std::max(wall, 1e-9)) << " events/s)\n";
  if (!o.out.empty()) {
    sim::WriteCsv(report, o.out);
    Plot(o.out);
    if (o.output == "table") std::cout << "\nseries and plots written to " << o.out << "/\n";
  }
}

}  // namespace

void AddSimulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand(
      "simulate", "replay a workload against Tidal's policies and the baselines (by default " +
                      o->workload + " on " + o->cluster + " under " + o->policies +
                      "); an option the chosen run does not read is refused (exit 2)");
  cmd->add_option("--cluster", o->cluster,
                  "cluster file (YAML) or builtin:seed-8xA10 / builtin:seed-8xA10-golden");
  cmd->add_option("--workload", o->workload, "workload file (YAML) or builtin:seed");
  std::string trace_policies;
  for (const auto& name : sim::ReplayPolicyNames())
    trace_policies += (trace_policies.empty() ? "" : ", ") + name;
  cmd->add_option("--policies", o->policies,
                  "comma-separated. Without --experiment: k8s-default, best-fit, load-aware, "
                  "load-aware-frag, load-aware-noreserve, load-aware-forecast, load-aware-learn, "
                  "load-aware-predict, load-aware+rebalance, oracle; all but the first two "
                  "assume Tidal's device plugin, and with +stock-dp (load-aware+stock-dp) "
                  "NVIDIA's, which gives the least-shared GPUs instead (default " +
                      o->policies +
                      "). With --experiment fgd-inflation or philly: " + trace_policies +
                      " (default all of these; fgd-inflation also fgd-learned, FGD with its "
                      "target workload learned from the arriving pods, fgd-lookahead, FGD "
                      "seeing the next pod in the queue, load-aware-frag-ahead, Tidal's "
                      "load-aware-frag with the look-ahead, load-aware-frag-learned, what "
                      "tidal serve runs with fgd's tasks: learned: its target workload learned "
                      "as serve learns it, load-aware-frag-learned-ahead, that seeing the "
                      "next pod, and, not by default, fgd-fill: FGD placing each share first "
                      "where a plan of how the listed shares fill GPUs puts it (their "
                      "cutting-stock LP, solved by glpsol: apt-get install glpk-utils))")
      ->each([o](const std::string&) { o->policies_set = true; });
  cmd->add_option("--config", o->config,
                  "Tidal policy config for load-aware and oracle (and --experiment prediction)");
  cmd->add_option("--seed", o->seed,
                  "random seed: arrivals, durations, memory peaks, ties (default 42); also for "
                  "--experiment philly");
  cmd->add_option("--out", o->out, "directory for CSV series and PNG plots");
  cmd->add_option("--output", o->output, "table or json");
  cmd->add_option("--experiment", o->experiment,
                  "fgd-inflation: the FGD paper's openb experiment (needs --nodes and --pods); "
                  "philly: time-based replay of the Philly jobs (needs --jobs); "
                  "prediction: forecast and learned-memory errors on real usage (needs --genai)");
  cmd->add_option(
      "--genai", o->genai,
      "prediction: the Alibaba GenAI 2026 trace folder (pod_gpu_memory_used_bytes_anon.csv "
      "and pod_gpu_duty_cycle_anon.csv)");
  cmd->add_option("--jobs", o->jobs, "philly: the job list (philly.csv)");
  cmd->add_option("--vcs", o->vcs, "philly: the VC sizes (default: philly_vc.csv beside --jobs)");
  cmd->add_option("--tie-break", o->tie_break,
                  "fgd-inflation: equal scores go to the smallest node name (name, as the FGD "
                  "authors' scheduler, after their simulator prefixed the names with a seeded "
                  "permutation) or a random one (random, stock kube-scheduler)");
  cmd->add_option("--nodes", o->nodes, "fgd-inflation: openb node list (CSV)");
  cmd->add_option("--pods", o->pods, "fgd-inflation: openb pod list (CSV, any variant)");
  cmd->add_option("--fgd-popularity", o->fgd_popularity,
                  "fgd-inflation: FGD's target workload is the task types covering this % of pods "
                  "(default 95, as the FGD authors' simulator)");
  cmd->add_option(
      "--fgd-scarcity", o->fgd_scarcity,
      "fgd-inflation, the learning policies (fgd-learned, load-aware-frag-learned[-ahead]): "
      "each learned task type's weight divided by (the nodes it fits on)^this at each "
      "relearning (0: by popularity only, as FGD; default 0 for fgd-learned and "
      "0.5, as tidal serve, for load-aware-frag-learned[-ahead])");
  cmd->add_option("--fgd-score-step", o->fgd_score_step,
                  "fgd-inflation: the FGD policies' scores rounded down to a multiple of this "
                  "(default 1, the paper's FGD; more leaves more ties to the tie order)");
  cmd->add_option("--learn-half-life", o->learn_half_life,
                  "fgd-inflation, policy fgd-learned: a pod seen this many pods before the newest "
                  "counts half as much in the learned target workload (default 0: no decay)");
  cmd->add_option("--seeds", o->seeds, "fgd-inflation: seeds, e.g. 42-51 (default 42)");
  cmd->add_flag("--offline", o->offline,
                "fgd-inflation: also a clairvoyant reference: each seed's pods up to 100 % "
                "arrived, all known in advance, placed largest first (by GPU, or by GPU+CPU "
                "share) by best-fit-milli and by fgd");
  cmd->add_flag("--lp-bound", o->lp_bound,
                "fgd-inflation: also the unallocated GPU % no placement of each seed's pods up to "
                "100 % arrived can go below: the LP relaxation of packing them, solved by glpsol "
                "(apt-get install glpk-utils)");
  cmd->add_option("--cpu-only-pct", o->cpu_only_pct,
                  "fgd-inflation: make CPU-only pods this % of the list (the FGD paper's Fig. 14 "
                  "variants, e.g. 20: clones of the list's CPU-only pods added, or some removed)");
  cmd->add_option("--expected", o->expected,
                  "fgd-inflation: the paper's fgd_summary.csv (default: fgd_expected/ beside "
                  "--pods, if present)");
  cmd->callback([o, cmd]() {
    CheckFlagsApply(*cmd, o->experiment);
    RunSimulate(*o);
  });
}

}  // namespace tidal::cli
