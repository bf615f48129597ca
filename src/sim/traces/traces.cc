#include "tidal/sim/traces/traces.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "tidal/core/status.h"
#include "tidal/core/text.h"

namespace tidal::sim::traces {

namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 50;

std::vector<std::string> SplitModels(std::string_view spec) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t bar = spec.find('|', start);
    const std::size_t stop = bar == std::string_view::npos ? spec.size() : bar;
    if (stop > start) out.emplace_back(spec.substr(start, stop - start));
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

}  // namespace

std::vector<OpenbNode> LoadOpenbNodes(const Csv& csv) {
  const int sn = csv.Require("sn"), cpu = csv.Require("cpu_milli"), mem = csv.Require("memory_mib"),
            gpu = csv.Require("gpu"), model = csv.Require("model");
  FieldReader r(csv);
  std::vector<OpenbNode> out;
  out.reserve(csv.lines().size());
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    OpenbNode n;
    n.name = std::string(r.NonEmpty(l, sn, "a node name"));
    n.cpu_milli = r.Int(l, cpu, "milli-CPU", 1, kBig);
    n.memory_mib = r.Int(l, mem, "MiB", 1, kBig);
    n.gpus = static_cast<int>(r.Int(l, gpu, "a GPU count", 0, kMaxGpusPerNode));
    n.model = std::string(r.Text(l, model));
    if (n.gpus > 0 && n.model.empty())
      r.Fail(l, model, "empty (expected the GPU model of a node with GPUs)");
    out.push_back(std::move(n));
  }
  r.Finish();
  return out;
}

std::vector<OpenbPod> LoadOpenbPods(const Csv& csv) {
  const int name = csv.Require("name"), cpu = csv.Require("cpu_milli"),
            mem = csv.Require("memory_mib"), ngpu = csv.Require("num_gpu"),
            milli = csv.Require("gpu_milli");
  // The full lists have six more columns; the multigpu lists stop at gpu_milli.
  const int spec = csv.Find("gpu_spec"), qos = csv.Find("qos"), phase = csv.Find("pod_phase"),
            created = csv.Find("creation_time"), deleted = csv.Find("deletion_time"),
            scheduled = csv.Find("scheduled_time");
  FieldReader r(csv);
  std::vector<OpenbPod> out;
  out.reserve(csv.lines().size());
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    OpenbPod p;
    const int before = r.errors();
    p.name = std::string(r.NonEmpty(l, name, "a pod name"));
    p.cpu_milli = r.Int(l, cpu, "milli-CPU", 0, kBig);
    p.memory_mib = r.Int(l, mem, "MiB", 0, kBig);
    p.gpus = static_cast<int>(r.Int(l, ngpu, "a GPU count", 0, kMaxGpusPerNode));
    p.gpu_milli = static_cast<int>(r.Int(l, milli, "milli-GPU per GPU", 0, kMilliPerGpu));
    if (r.errors() == before) {
      if (p.gpus == 0 && p.gpu_milli != 0)
        r.Fail(l, milli, std::to_string(p.gpu_milli) + " on a pod without GPUs (expected 0)");
      else if (p.gpus > 0 && p.gpu_milli == 0)
        r.Fail(l, milli, "0 on a pod with GPUs (expected 1 to 1000)");
      else if (p.gpus > 1 && p.gpu_milli != kMilliPerGpu)
        r.Fail(l, milli,
               std::to_string(p.gpu_milli) + " on a " + std::to_string(p.gpus) +
                   "-GPU pod (only 1-GPU pods share a GPU; expected 1000)");
    }
    if (spec >= 0) p.gpu_models = SplitModels(r.Text(l, spec));
    if (qos >= 0) p.qos = std::string(r.Text(l, qos));
    if (phase >= 0) p.phase = std::string(r.Text(l, phase));
    auto time = [&](int col, std::optional<std::int64_t>* dst) {
      if (col < 0) return;
      if (r.Text(l, col).empty()) return;
      *dst = r.Int(l, col, "seconds from the start of the trace", 0, kBig);
    };
    time(created, &p.creation_s);
    time(deleted, &p.deletion_s);
    time(scheduled, &p.scheduled_s);
    out.push_back(std::move(p));
  }
  r.Finish();
  return out;
}

bool ParseDateTime(std::string_view t, std::int64_t* seconds) {
  // YYYY-MM-DD HH:MM:SS, exactly.
  if (t.size() != 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':')
    return false;
  auto num = [&](std::size_t at, std::size_t len, std::int64_t* v) {
    *v = 0;
    for (std::size_t i = at; i < at + len; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      *v = *v * 10 + (t[i] - '0');
    }
    return true;
  };
  std::int64_t y, m, d, hh, mm, ss;
  if (!num(0, 4, &y) || !num(5, 2, &m) || !num(8, 2, &d) || !num(11, 2, &hh) || !num(14, 2, &mm) ||
      !num(17, 2, &ss))
    return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1] + (m == 2 && leap ? 1 : 0) || hh > 23 ||
      mm > 59 || ss > 60)
    return false;
  // Days from 1970-01-01 by the civil-calendar algorithm (March-based years).
  const std::int64_t yy = y - (m <= 2 ? 1 : 0);
  const std::int64_t era = yy / 400;
  const std::int64_t yoe = yy - era * 400;
  const std::int64_t mp = (m + 9) % 12;
  const std::int64_t doy = (153 * mp + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  *seconds = days * 86400 + hh * 3600 + mm * 60 + ss;
  return true;
}

std::vector<PhillyJob> LoadPhillyJobs(const Csv& csv) {
  const int ts = csv.Require("timestamp"), dur = csv.Require("duration"),
            gpus = csv.Require("num_gpus"), vc = csv.Require("cluster");
  FieldReader r(csv);
  std::vector<PhillyJob> out;
  out.reserve(csv.lines().size());
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    PhillyJob j;
    j.line = l.line;
    if (!ParseDateTime(r.Text(l, ts), &j.submit_s))
      r.Fail(l, ts, QuoteInput(r.Text(l, ts)) + " is not a time (expected YYYY-MM-DD HH:MM:SS)");
    j.duration_s = r.Number(l, dur, "seconds", 0, 1e10);
    j.gpus = static_cast<int>(r.Int(l, gpus, "a GPU count", 1, 4096));
    j.vc = std::string(r.NonEmpty(l, vc, "a virtual-cluster name"));
    out.push_back(std::move(j));
  }
  r.Finish();
  std::stable_sort(out.begin(), out.end(),
                   [](const PhillyJob& a, const PhillyJob& b) { return a.submit_s < b.submit_s; });
  return out;
}

std::vector<PhillyVc> LoadPhillyVcs(const Csv& csv) {
  const int vc = csv.Require("vc"), nodes = csv.Require("node num");
  FieldReader r(csv);
  std::vector<PhillyVc> out;
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    PhillyVc v;
    v.name = std::string(r.NonEmpty(l, vc, "a virtual-cluster name"));
    v.nodes = static_cast<int>(r.Int(l, nodes, "a node count", 0, 1'000'000));
    out.push_back(std::move(v));
  }
  r.Finish();
  return out;
}

namespace {

// One series file: (container_ip, time, value) with the columns found by name.
void ReadSeries(const Csv& csv, double hi, const char* what,
                std::unordered_map<std::string, std::vector<UsageSample>>* by_pod,
                std::vector<std::string>* order) {
  const int v = csv.Require("value"), t = csv.Require("timestamp_anon"),
            ip = csv.Require("container_ip");
  FieldReader r(csv);
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    UsageSample s;
    s.t_s = r.Number(l, t, "seconds", 0, 1e13);
    s.value = r.Number(l, v, what, 0, hi);
    const std::string pod(r.NonEmpty(l, ip, "a container id"));
    auto [it, fresh] = by_pod->try_emplace(pod);
    if (fresh && order) order->push_back(pod);
    it->second.push_back(s);
  }
  r.Finish();
  for (auto& [pod, series] : *by_pod)
    std::stable_sort(series.begin(), series.end(),
                     [](const UsageSample& a, const UsageSample& b) { return a.t_s < b.t_s; });
}

}  // namespace

std::vector<PodUsage> LoadGenaiUsage(const Csv& memory, const Csv& duty) {
  std::unordered_map<std::string, std::vector<UsageSample>> mem, cyc;
  std::vector<std::string> order;
  ReadSeries(memory, 1e15, "bytes of GPU memory", &mem, &order);
  ReadSeries(duty, 100, "percent of GPU time", &cyc, nullptr);
  std::vector<PodUsage> out;
  out.reserve(order.size());
  for (const auto& pod : order) {
    PodUsage u;
    u.pod = pod;
    u.memory = std::move(mem[pod]);
    if (auto it = cyc.find(pod); it != cyc.end()) u.duty = std::move(it->second);
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<DlrmInstance> LoadDlrm(const Csv& csv) {
  const int sn = csv.Require("instance_sn"), role = csv.Require("role"),
            app = csv.Require("app_name"), cpu = csv.Require("cpu_request"),
            gpu = csv.Require("gpu_request"), rdma = csv.Require("rdma_request"),
            mem = csv.Require("memory_request"), disk = csv.Require("disk_request"),
            maxn = csv.Require("max_instance_per_node"), created = csv.Require("creation_time"),
            scheduled = csv.Require("scheduled_time"), deleted = csv.Require("deletion_time");
  FieldReader r(csv);
  std::vector<DlrmInstance> out;
  out.reserve(csv.lines().size());
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    DlrmInstance d;
    d.name = std::string(r.NonEmpty(l, sn, "an instance id"));
    const std::string_view ro = r.Text(l, role);
    if (ro == "HN")
      d.gpu_node = true;
    else if (ro != "CN")
      r.Fail(l, role, QuoteInput(ro) + " (expected HN or CN)");
    d.app = std::string(r.Text(l, app));
    d.cpu = r.Number(l, cpu, "vCPUs", 0, 1e6);
    d.gpus = static_cast<int>(r.Int(l, gpu, "whole GPUs", 0, kMaxGpusPerNode));
    d.rdma_pct = static_cast<int>(r.Int(l, rdma, "percent of a NIC", 0, 100));
    d.memory_gib = r.Number(l, mem, "GiB", 0, 1e7);
    d.disk_gib = r.Number(l, disk, "GiB", 0, 1e9);
    d.max_per_node = static_cast<int>(r.Int(l, maxn, "instances per node or -1", -1, 1'000'000));
    if (d.max_per_node == 0) r.Fail(l, maxn, "0 (expected a positive limit or -1 for none)");
    d.creation_s = r.OptionalNumber(l, created, "seconds", 0, 1e10);
    d.scheduled_s = r.OptionalNumber(l, scheduled, "seconds", 0, 1e10);
    d.deletion_s = r.OptionalNumber(l, deleted, "seconds", 0, 1e10);
    out.push_back(std::move(d));
  }
  r.Finish();
  return out;
}

std::vector<ShapeNode> LoadPaiMachines(const Csv& csv) {
  const int m = csv.Require("machine"), type = csv.Require("gpu_type"),
            cpu = csv.Require("cap_cpu"), mem = csv.Require("cap_mem"),
            gpu = csv.Require("cap_gpu");
  FieldReader r(csv);
  std::vector<ShapeNode> out;
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    ShapeNode n;
    n.name = std::string(r.NonEmpty(l, m, "a machine name"));
    const std::string_view t = r.NonEmpty(l, type, "a GPU type or CPU");
    n.gpu_model = t == "CPU" ? "" : std::string(t);
    n.cpu_milli = r.Int(l, cpu, "vCPUs", 1, 1'000'000) * 1000;
    n.memory_mib = r.Int(l, mem, "GB", 1, 1'000'000) * 1024;
    n.gpus = static_cast<int>(r.Int(l, gpu, "a GPU count", 0, kMaxGpusPerNode));
    if (n.gpu_model.empty() && n.gpus > 0)
      r.Fail(l, gpu, std::to_string(n.gpus) + " GPUs on a CPU machine (expected 0)");
    if (!n.gpu_model.empty() && n.gpus == 0)
      r.Fail(l, gpu, "0 on a " + n.gpu_model + " machine (expected GPUs)");
    out.push_back(std::move(n));
  }
  r.Finish();
  return out;
}

std::vector<ShapeNode> LoadSpotNodes(const Csv& csv) {
  const int model = csv.Require("gpu_model"), gpu = csv.Require("gpu_capacity_num"),
            cpu = csv.Require("cpu_num"), name = csv.Require("node_name");
  FieldReader r(csv);
  std::vector<ShapeNode> out;
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    ShapeNode n;
    n.gpu_model = std::string(r.NonEmpty(l, model, "a GPU model"));
    n.gpus = static_cast<int>(r.Int(l, gpu, "a GPU count", 1, kMaxGpusPerNode));
    n.cpu_milli = r.Int(l, cpu, "vCPUs", 1, 1'000'000) * 1000;
    n.name = "spot-" + std::string(r.NonEmpty(l, name, "a node id"));
    out.push_back(std::move(n));
  }
  r.Finish();
  return out;
}

std::optional<Bytes> GpuMemoryOfModel(std::string_view model) {
  static const std::map<std::string, int, std::less<>> kGiB = {
      {"P100", 16}, {"T4", 16},   {"V100", 16},           {"V100M16", 16},        {"V100M32", 32},
      {"A10", 24},  {"H800", 80}, {"A100-SXM4-80GB", 80}, {"A800-SXM4-80GB", 80},
  };
  const auto it = kGiB.find(model);
  if (it == kGiB.end()) return std::nullopt;
  return Bytes{it->second} << 30;
}

namespace {

NodeSpec MakeNode(const std::string& name, const std::string& model, int gpus,
                  std::int64_t cpu_milli, std::optional<std::int64_t> memory_mib,
                  Bytes unknown_gpu_memory) {
  NodeSpec n;
  n.name = name;
  n.gpu_model = model;
  n.gpu_count = gpus;
  n.cpu_milli = cpu_milli;
  if (memory_mib) n.memory = Bytes{*memory_mib} << 20;
  n.gpu_memory = gpus == 0 ? 0 : GpuMemoryOfModel(model).value_or(unknown_gpu_memory);
  n.links.assign(gpus, std::vector<int>(gpus, 0));
  if (!model.empty()) n.labels["nvidia.com/gpu.product"] = model;
  return n;
}

}  // namespace

ClusterSpec ToClusterSpec(const std::vector<ShapeNode>& nodes, const std::string& name,
                          Bytes unknown_gpu_memory) {
  ClusterSpec c;
  c.name = name;
  for (const auto& s : nodes)
    c.nodes.push_back(
        MakeNode(s.name, s.gpu_model, s.gpus, s.cpu_milli, s.memory_mib, unknown_gpu_memory));
  return c;
}

ClusterSpec ToClusterSpec(const std::vector<OpenbNode>& nodes, const std::string& name,
                          Bytes unknown_gpu_memory) {
  ClusterSpec c;
  c.name = name;
  for (const auto& s : nodes)
    c.nodes.push_back(
        MakeNode(s.name, s.model, s.gpus, s.cpu_milli, s.memory_mib, unknown_gpu_memory));
  return c;
}

std::vector<FgdExpected> LoadFgdSummary(const Csv& csv) {
  const int w = csv.Require("workload"), p = csv.Require("sc_policy"),
            a = csv.Require("arrived_pct"), n = csv.Require("n_seeds"),
            am = csv.Require("alloc_pct_mean"), sd = csv.Require("alloc_pct_sd"),
            um = csv.Require("unalloc_pct_mean"), fa = csv.Require("frag_amount_pct_mean"),
            fr = csv.Require("frag_ratio_pct_mean");
  FieldReader r(csv);
  std::vector<FgdExpected> out;
  for (const CsvLine& l : csv.lines()) {
    if (!r.CheckWidth(l)) continue;
    FgdExpected e;
    e.workload = std::string(r.NonEmpty(l, w, "a workload name"));
    e.policy = std::string(r.NonEmpty(l, p, "a policy name"));
    e.arrived_pct = static_cast<int>(r.Int(l, a, "percent", 0, 1000));
    e.seeds = static_cast<int>(r.Int(l, n, "a seed count", 1, 1'000'000));
    e.alloc_pct_mean = r.Number(l, am, "percent", 0, 100);
    e.alloc_pct_sd = r.Number(l, sd, "percent", 0, 100);
    e.unalloc_pct_mean = r.Number(l, um, "percent", 0, 100);
    e.frag_amount_pct_mean = r.Number(l, fa, "percent", 0, 100);
    e.frag_ratio_pct_mean = r.Number(l, fr, "percent", 0, 100);
    out.push_back(std::move(e));
  }
  r.Finish();
  return out;
}

}  // namespace tidal::sim::traces
