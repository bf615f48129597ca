// tidal explain: node by node, why a pod would or would not land there.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "tidal/core/file.h"
#include "tidal/core/text.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/kubetypes/pod_yaml.h"
#include "tidal/kubetypes/quantity.h"
#include "tidal/policy/config.h"
#include "tidal/policy/runner.h"
#include "tidal/policy/snapshot_file.h"

namespace tidal::cli {
namespace {

struct ExplainOptions {
  std::string pod_file;
  std::string nodes_file;
  std::string config_file;
  std::string output = "table";
};

std::string ReadFile(const std::string& path) {
  return ReadRegularFileOrThrow(path, kMaxConfigFileBytes);
}

// Scores and loads to two decimals; the GPU memory fraction to four (a percent
// to two). RoundDecimals gives the double nearest the short decimal, so the
// JSON shows 0.1901, where dividing a rounded percent by 100 gave
// 0.19010000000000002.
double Round2(double v) { return RoundDecimals(v, 2); }

// Best first: feasible nodes by final score (stable), then the rest in input order.
std::vector<std::size_t> Order(const Evaluation& ev) {
  std::vector<std::size_t> order(ev.nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = ev.nodes[a];
    const auto& y = ev.nodes[b];
    if (x.feasible() != y.feasible()) return x.feasible();
    return x.feasible() && x.score > y.score;
  });
  return order;
}

std::vector<std::string> Reasons(const Evaluation& ev, std::size_t i) {
  const NodeResult& r = ev.nodes[i];
  std::vector<std::string> out;
  if (const std::span<const Status> all = ev.Reasons(i); !all.empty()) {
    for (const auto& s : all) out.push_back(s.reason());
  } else if (!r.status.ok()) {
    out.push_back(r.status.reason());
  }
  return out;
}

double IoLoad(const NodeState& n) { return StorageIoLoad(n.load.await_ms); }

// Per score plugin: left out of the pod's weighted mean (SkipsScore), shown as such.
using Skipped = std::vector<char>;

void PrintJson(const PodDemand& pod, const Evaluation& ev, const Skipped& skipped) {
  nlohmann::ordered_json j;
  j["pod"] = pod.Key();
  j["best"] = ev.best >= 0 ? nlohmann::ordered_json(ev.nodes[ev.best].node->name) : nullptr;
  j["memoryNeedPerGpu"] = ev.pod_status.ok() ? FormatBytes(ev.cycle.memory_need_per_gpu) : "";
  j["usesNvlink"] = ev.cycle.uses_nvlink;
  j["skippedScores"] = nlohmann::ordered_json::array();
  for (std::size_t p = 0; p < ev.score_names.size(); ++p)
    if (skipped[p]) j["skippedScores"].push_back(ev.score_names[p]);
  j["nodes"] = nlohmann::ordered_json::array();
  for (std::size_t i : Order(ev)) {
    const NodeResult& r = ev.nodes[i];
    nlohmann::ordered_json n;
    n["name"] = r.node->name;
    n["feasible"] = r.feasible();
    n["verdict"] = std::string(CodeName(r.status.code()));
    n["reasons"] = Reasons(ev, i);
    nlohmann::ordered_json scores = nlohmann::ordered_json::object();
    if (r.feasible())
      for (std::size_t p = 0; p < ev.score_names.size(); ++p)
        if (!skipped[p]) scores[ev.score_names[p]] = Round2(ev.PluginScore(i, p));
    n["scores"] = scores;
    n["score"] = r.feasible() ? Round2(r.score) : 0.0;
    n["gpus"] = r.placed ? r.gpus.Indices() : std::vector<int>{};
    n["load"] = {{"gpuMemory", RoundDecimals(r.node->load.gpu_memory, 4)},
                 {"nvlink", Round2(r.node->load.nvlink)},
                 {"storageAwaitMs", Round2(r.node->load.await_ms)},
                 {"ioLoad", Round2(IoLoad(*r.node))},
                 {"metricsKnown", r.node->metrics_known}};
    j["nodes"].push_back(n);
  }
  std::cout << j.dump(2) << "\n";
}

void PrintTable(const PodDemand& pod, const Evaluation& ev, const Skipped& skipped) {
  std::cout << fmt::format("pod {}: {} GPU(s), {} per GPU{}, NVLink {}\n", pod.Key(), pod.gpu_count,
                           ev.pod_status.ok() ? FormatBytes(ev.cycle.memory_need_per_gpu) : "?",
                           pod.gpu_memory_declared ? " (declared)" : " (estimated)",
                           ev.cycle.nvlink_required ? "required"
                           : ev.cycle.uses_nvlink   ? "detected"
                                                    : "no");
  if (!ev.pod_status.ok()) std::cout << "unresolvable: " << ev.pod_status.reason() << "\n";
  const auto& t = ev.cycle.thresholds;
  if (ev.pod_status.ok())
    std::cout << fmt::format(
        "thresholds: GPU memory {:.0f}%→{:.0f}%, NVLink {:.2f}→{:.2f}, await {:.1f}→{:.1f} ms\n",
        t.gpu_memory.warn * 100, t.gpu_memory.reject * 100, t.nvlink.warn, t.nvlink.reject,
        t.await_ms.warn, t.await_ms.reject);
  std::string header = fmt::format("{:<16} {:<12} {:>6} {:>6} {:>8} {:>5}", "NODE", "VERDICT",
                                   "GPUMEM", "NVLINK", "AWAIT", "IO");
  for (const auto& name : ev.score_names) header += fmt::format(" {:>10}", name);
  header += fmt::format(" {:>7}  {:<10} {}", "SCORE", "GPUS", "REASONS");
  std::cout << header << "\n";
  for (std::size_t i : Order(ev)) {
    const NodeResult& r = ev.nodes[i];
    const NodeState& n = *r.node;
    std::string line =
        fmt::format("{:<16} {:<12} {:>5.0f}% {:>6.2f} {:>8.2f} {:>5.2f}", n.name,
                    std::string(CodeName(r.status.code())) + (n.metrics_known ? "" : "?"),
                    n.load.gpu_memory * 100, n.load.nvlink, n.load.await_ms, IoLoad(n));
    for (std::size_t p = 0; p < ev.score_names.size(); ++p)
      line += !r.feasible() ? fmt::format(" {:>10}", "-")
              : skipped[p]  ? fmt::format(" {:>10}", "skip")
                            : fmt::format(" {:>10.2f}", ev.PluginScore(i, p));
    std::string gpus;
    for (int g : r.gpus.Indices()) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    line += r.feasible() ? fmt::format(" {:>7.2f}", r.score) : fmt::format(" {:>7}", "-");
    line += fmt::format("  {:<10} ", gpus.empty() ? "-" : gpus);
    std::string reasons;
    for (const auto& s : Reasons(ev, i)) reasons += (reasons.empty() ? "" : "; ") + s;
    if (!n.metrics_known) reasons += (reasons.empty() ? "" : "; ") + std::string("metrics unknown");
    line += reasons;
    std::cout << line << "\n";
  }
  std::cout << "best: "
            << (ev.best >= 0 ? ev.nodes[ev.best].node->name : "none (pod stays Pending)") << "\n";
}

// The exit code: 0 when a node fits, kExitNoFit when none does (the pod would
// stay Pending), so scripts need not parse the output.
int RunExplain(const ExplainOptions& o) {
  if (o.output != "table" && o.output != "json")
    throw InputError{"--output: \"" + o.output + "\" (expected table or json)"};
  PolicyConfig config =
      o.config_file.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(o.config_file);
  RawPod raw;
  Status s = DecodePodText(ReadFile(o.pod_file), &raw);
  if (!s.ok()) throw InputError{o.pod_file + ": " + s.reason()};
  const PodDemand pod = ToPodDemand(raw);
  const std::vector<NodeState> nodes =
      LoadNodeSnapshotFile(o.nodes_file, config.nvlink.slots_per_gpu);
  Runner runner(std::move(config));
  RunOptions options;
  options.all_reasons = true;
  const Evaluation ev = runner.Evaluate(pod, nodes, options);
  Skipped skipped(ev.score_names.size(), 0);
  if (ev.pod_status.ok())
    for (std::size_t p = 0; p < skipped.size(); ++p) skipped[p] = runner.SkipsScore(p, ev.cycle);
  if (o.output == "json")
    PrintJson(pod, ev, skipped);
  else
    PrintTable(pod, ev, skipped);
  return ev.best >= 0 ? kExitOk : kExitNoFit;
}

}  // namespace

void AddExplain(CLI::App& app) {
  auto o = std::make_shared<ExplainOptions>();
  auto* cmd = app.add_subcommand("explain",
                                 "show, node by node, why a pod would or would not land there; "
                                 "exit 0 when a node fits, 3 when none does");
  cmd->add_option("--pod", o->pod_file, "a Kubernetes Pod (JSON or YAML)")->required();
  cmd->add_option("--nodes", o->nodes_file, "a node snapshot (JSON or YAML)")->required();
  cmd->add_option("--config", o->config_file, "policy config (YAML); defaults from docs/design.md");
  cmd->add_option("--output", o->output, "table or json");
  cmd->callback([o]() {
    if (const int rc = RunExplain(*o); rc != kExitOk) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tidal::cli
