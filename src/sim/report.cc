#include "tidal/sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tidal/core/status.h"
#include "tidal/metrics/golden.h"

namespace tidal::sim {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const std::size_t i =
      static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[i];
}

namespace {

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::string Num(double v, int decimals) {
  if (!std::isfinite(v)) return "null";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    bool zero = s.find_first_not_of("-0.") == std::string::npos;
    if (zero) s = s.substr(1);
  }
  return s;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

int StartsOn(const PolicyResult& p, const std::string& node) {
  const auto it = p.starts_per_node.find(node);
  return it == p.starts_per_node.end() ? 0 : it->second;
}

// Wide enough for the longest policy name (load-aware+stock-dp), so columns align.
std::size_t ColumnWidth(const RunReport& r) {
  std::size_t w = 14;
  for (const auto& p : r.policies) w = std::max(w, p.name.size());
  return w;
}

// Per node, each policy's GPU-memory utilisation and pods started.
std::string PerNodeTables(const RunReport& r, std::size_t w) {
  std::string out;
  if (r.policies.empty()) return out;
  out += "\nGPU memory utilisation per node, mean / peak\n";
  std::string h = fmt::format("{:<22}", "");
  for (const auto& p : r.policies) h += fmt::format(" {:>{}}", p.name, w);
  out += h + "\n";
  for (const auto& node : r.policies[0].nodes) {
    std::string line = fmt::format("{:<22}", node);
    for (const auto& p : r.policies)
      line += fmt::format(" {:>{}}",
                          fmt::format("{:.0f}% / {:.0f}%", 100 * p.gpu_mem_util_mean.at(node),
                                      100 * p.gpu_mem_util_peak.at(node)),
                          w);
    out += line + "\n";
  }
  out += "\nPods started per node (restarts included)\n";
  out += h + "\n";
  for (const auto& node : r.policies[0].nodes) {
    std::string line = fmt::format("{:<22}", node);
    for (const auto& p : r.policies) line += fmt::format(" {:>{}}", StartsOn(p, node), w);
    out += line + "\n";
  }
  return out;
}

// Each rebalancing policy's moves, in order.
std::string RebalancingMoves(const RunReport& r) {
  std::string out;
  for (const auto& p : r.policies) {
    if (!p.rebalance || p.moves.empty()) continue;
    out += fmt::format("\nRebalancing moves ({})\n", p.name);
    for (const auto& m : p.moves)
      out += fmt::format(
          "  t={:>7.0f} s  {}  {} -> {}  gain {:.0f} GPU·s > cost {:.0f} GPU·s (slowdown {:.2f}× "
          "-> "
          "{:.2f}× over {:.0f} min)  ({})\n",
          m.t_s, m.pod, m.from, m.to, m.gain_gpu_s, m.cost_gpu_s, m.slowdown_from, m.slowdown_to,
          m.remaining_s / 60, m.trigger);
  }
  return out;
}

}  // namespace

std::string RenderTable(const RunReport& r) {
  std::string out = fmt::format("scenario {} on {}, seed {}\n\n", r.scenario, r.cluster, r.seed);
  struct Row {
    const char* label;
    std::function<std::string(const PolicyResult&)> cell;
  };
  const std::vector<Row> rows = {
      {"wait mean (s)", [](const PolicyResult& p) { return Num(Mean(p.waits_s), 1); }},
      {"wait p50 (s)", [](const PolicyResult& p) { return Num(Percentile(p.waits_s, 50), 1); }},
      {"wait p99 (s)", [](const PolicyResult& p) { return Num(Percentile(p.waits_s, 99), 1); }},
      {"JCT mean (s)", [](const PolicyResult& p) { return Num(Mean(p.jcts_s), 1); }},
      {"JCT p99 (s)", [](const PolicyResult& p) { return Num(Percentile(p.jcts_s, 99), 1); }},
      {"makespan (s)", [](const PolicyResult& p) { return Num(p.makespan_s, 0); }},
      {"completed",
       [](const PolicyResult& p) { return fmt::format("{}/{}", p.completed, p.tasks); }},
      {"OOM kills", [](const PolicyResult& p) { return std::to_string(p.oom_kills); }},
      {"migration rate",
       [](const PolicyResult& p) {
         return Num(100 * MigrationRate(p.oom_kills + p.evictions, p.starts), 2) + "%";
       }},
      {"LSCS max", [](const PolicyResult& p) { return Num(100 * p.lscs_max, 1) + "%"; }},
      {"LSCS settle (s)",
       [](const PolicyResult& p) {
         return p.lscs_settle_s < 0 ? std::string("never") : Num(p.lscs_settle_s, 0);
       }},
      {"NVLink variance max", [](const PolicyResult& p) { return Num(p.nvlink_variance_max, 4); }},
      {"GPU overcommit max",
       [](const PolicyResult& p) { return Num(100 * p.max_gpu_overcommit, 0) + "%"; }},
      {"pods per GPU max",
       [](const PolicyResult& p) { return std::to_string(p.max_pods_per_gpu); }},
      {"tasks per hour", [](const PolicyResult& p) { return Num(p.tasks_per_hour, 1); }},
  };
  // Rebalancing rows only when a policy rebalances (the other reports stay as they were).
  std::vector<Row> all = rows;
  if (std::any_of(r.policies.begin(), r.policies.end(),
                  [](const PolicyResult& p) { return p.rebalance; })) {
    all.insert(all.begin() + 8, {"evictions (moves)", [](const PolicyResult& p) {
                                   return std::to_string(p.evictions);
                                 }});
    all.insert(all.begin() + 9, {"work lost moving (s)",
                                 [](const PolicyResult& p) { return Num(p.work_lost_s, 0); }});
  }
  const std::size_t w = ColumnWidth(r);
  std::string header = fmt::format("{:<22}", "");
  for (const auto& p : r.policies) header += fmt::format(" {:>{}}", p.name, w);
  out += header + "\n";
  for (const auto& row : all) {
    std::string line = fmt::format("{:<22}", row.label);
    for (const auto& p : r.policies) line += fmt::format(" {:>{}}", row.cell(p), w);
    out += line + "\n";
  }
  out += PerNodeTables(r, w);
  out += RebalancingMoves(r);
  return out;
}

namespace {

// {"node": value, …} over the policy's nodes, in order.
template <class Value>
std::string NodeMapJson(const PolicyResult& p, Value value) {
  std::string out = "{";
  bool first = true;
  for (const auto& node : p.nodes) {
    out += (first ? "" : ", ") + Quote(node) + ": " + value(node);
    first = false;
  }
  return out + "}";
}

// One policy's object of summary.json, on one line.
std::string PolicyJson(const PolicyResult& p) {
  std::string out = "{";
  out += "\"name\": " + Quote(p.name);
  out += ", \"wait_mean_s\": " + Num(Mean(p.waits_s), 3);
  out += ", \"wait_p50_s\": " + Num(Percentile(p.waits_s, 50), 3);
  out += ", \"wait_p99_s\": " + Num(Percentile(p.waits_s, 99), 3);
  out += ", \"jct_mean_s\": " + Num(Mean(p.jcts_s), 3);
  out += ", \"jct_p99_s\": " + Num(Percentile(p.jcts_s, 99), 3);
  out += ", \"makespan_s\": " + Num(p.makespan_s, 3);
  out += ", \"tasks\": " + std::to_string(p.tasks);
  out += ", \"completed\": " + std::to_string(p.completed);
  out += ", \"pending_at_end\": " + std::to_string(p.pending_at_end);
  out += ", \"running_at_end\": " + std::to_string(p.running_at_end);
  out += ", \"starts\": " + std::to_string(p.starts);
  out += ", \"oom_kills\": " + std::to_string(p.oom_kills);
  if (p.rebalance) {
    out += ", \"evictions\": " + std::to_string(p.evictions);
    out += ", \"work_lost_s\": " + Num(p.work_lost_s, 3);
  }
  out += ", \"migration_rate\": " + Num(MigrationRate(p.oom_kills + p.evictions, p.starts), 6);
  out += ", \"lscs_max\": " + Num(p.lscs_max, 6);
  out += ", \"lscs_settle_s\": " +
         (p.lscs_settle_s < 0 ? std::string("null") : Num(p.lscs_settle_s, 3));
  out += ", \"nvlink_variance_max\": " + Num(p.nvlink_variance_max, 6);
  out += ", \"gpu_overcommit_max\": " + Num(p.max_gpu_overcommit, 6);
  out += ", \"gpu_mem_util_peak\": " +
         NodeMapJson(p, [&](const std::string& n) { return Num(p.gpu_mem_util_peak.at(n), 6); });
  out += ", \"gpu_mem_util_mean\": " +
         NodeMapJson(p, [&](const std::string& n) { return Num(p.gpu_mem_util_mean.at(n), 6); });
  out += ", \"starts_per_node\": " +
         NodeMapJson(p, [&](const std::string& n) { return std::to_string(StartsOn(p, n)); });
  out += ", \"max_pods_per_gpu\": " + std::to_string(p.max_pods_per_gpu);
  out += ", \"tasks_per_hour\": " + Num(p.tasks_per_hour, 3);
  out += ", \"events\": " + std::to_string(p.events);
  return out + "}";
}

}  // namespace

std::string RenderJson(const RunReport& r) {
  std::string out = "{\n";
  out += "  \"scenario\": " + Quote(r.scenario) + ",\n";
  out += "  \"cluster\": " + Quote(r.cluster) + ",\n";
  out += "  \"seed\": " + std::to_string(r.seed) + ",\n";
  out += "  \"policies\": [";
  for (std::size_t i = 0; i < r.policies.size(); ++i)
    out += (i ? ",\n    " : "\n    ") + PolicyJson(r.policies[i]);
  out += "\n  ]\n}\n";
  return out;
}

void WriteCsv(const RunReport& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError{dir + ": cannot create the output directory: " + ec.message()};
  auto open = [&](const std::string& name) {
    std::ofstream f(dir + "/" + name);
    if (!f) throw InputError{dir + "/" + name + ": cannot write"};
    return f;
  };
  {
    auto f = open("memory.csv");
    f << "policy,t_s,node,gpu_memory_utilization\n";
    for (const auto& p : r.policies)
      for (const auto& pt : p.series)
        for (std::size_t n = 0; n < pt.node_memory.size(); ++n)
          f << p.name << "," << Num(pt.t_s, 0) << "," << p.nodes[n] << ","
            << Num(pt.node_memory[n], 4) << "\n";
  }
  {
    auto f = open("lscs.csv");
    f << "policy,t_s,lscs,pending,running\n";
    for (const auto& p : r.policies)
      for (const auto& pt : p.series)
        f << p.name << "," << Num(pt.t_s, 0) << "," << Num(pt.lscs, 5) << "," << pt.pending << ","
          << pt.running << "\n";
  }
  {
    auto f = open("waits.csv");
    f << "policy,wait_s\n";
    for (const auto& p : r.policies)
      for (double w : p.waits_s) f << p.name << "," << Num(w, 3) << "\n";
  }
  open("summary.json") << RenderJson(r);
}

}  // namespace tidal::sim
