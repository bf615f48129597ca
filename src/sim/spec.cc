#include "tidal/sim/spec.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tidal/core/file.h"
#include "tidal/core/status.h"
#include "tidal/kubetypes/quantity.h"
#include "tidal/policy/config.h"
#include "tidal/policy/yaml_util.h"

namespace tidal::sim {

using namespace yamlutil;

namespace {

// An optional duration that must be above zero when given: left unset when absent.
void ReadPositiveDuration(const YAML::Node& n, const std::string& path, const char* key,
                          std::optional<TimeMs>* out, ConfigErrors& errors) {
  if (!n[key]) return;
  TimeMs d = -1;  // stays -1 when ReadDuration reported a bad value
  ReadDuration(n, path, key, &d, errors);
  if (d > 0)
    *out = d;
  else if (d == 0)
    errors.Add(Join(path, key), "must be a duration > 0");
}

// [lo, hi] of byte quantities, durations or numbers, or one value for both.
enum class Unit { kBytes, kSeconds, kNumber };

std::optional<double> Scalar(const YAML::Node& n, Unit unit) {
  if (!n.IsScalar()) return std::nullopt;
  const std::string& s = n.Scalar();
  std::string err;
  switch (unit) {
    case Unit::kBytes: {
      auto q = ParseQuantity(s, "", &err);
      return q ? std::optional<double>(static_cast<double>(*q)) : std::nullopt;
    }
    case Unit::kSeconds: {
      auto d = ParseDurationMs(s);
      return d ? std::optional<double>(static_cast<double>(*d) / 1000.0) : std::nullopt;
    }
    case Unit::kNumber:
      try {
        std::size_t used = 0;
        const double v = std::stod(s, &used);
        if (used == s.size()) return v;
      } catch (...) {
      }
      return std::nullopt;
  }
  return std::nullopt;
}

void ReadRange(const YAML::Node& node, const std::string& path, const char* key, Unit unit,
               Range* out, ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  const std::string p = Join(path, key);
  std::optional<double> lo, hi;
  if (v.IsSequence() && v.size() == 2) {
    lo = Scalar(v[0], unit);
    hi = Scalar(v[1], unit);
  } else if (v.IsScalar()) {
    lo = hi = Scalar(v, unit);
  }
  if (!lo || !hi || *lo < 0 || *hi < *lo) {
    errors.Add(p, "expected a value or [low, high] with 0 <= low <= high");
    return;
  }
  *out = {*lo, *hi};
}

// CPU cores (a node's capacity or a task's request) as millicores. The range check
// comes before the conversion: a double beyond int64 makes the cast undefined.
void ReadCpu(const YAML::Node& node, const std::string& path, const char* key, std::int64_t* milli,
             ConfigErrors& errors) {
  constexpr double kMaxCores = 1e6;
  double cores = static_cast<double>(*milli) / 1000;
  ConfigErrors local;
  ReadDouble(node, path, key, &cores, local);
  if (!local.empty()) {
    errors.Merge(local);
    return;
  }
  if (!(cores >= 0 && cores <= kMaxCores)) {
    errors.Add(Join(path, key), Fmt(cores) + " is outside [0, 1000000] cores");
    return;
  }
  *milli = static_cast<std::int64_t>(cores * 1000);
}

std::vector<std::vector<int>> Topology(const YAML::Node& t, int gpus, const std::string& path,
                                       ConfigErrors& errors) {
  std::vector<std::vector<int>> links(gpus, std::vector<int>(gpus, 0));
  if (!t || t.IsNull() || (t.IsScalar() && t.Scalar() == "pcie")) return links;
  if (!t.IsMap()) {
    errors.Add(
        path,
        "expected pcie, {nvlink: all, links: N} or {nvlink: pairs, pairs: [[a, b, links], ...]}");
    return links;
  }
  CheckKeys(t, path, {"nvlink", "links", "pairs", "slotsPerGpu"}, errors);
  std::string kind;
  ReadString(t, path, "nvlink", &kind, errors);
  if (kind == "all") {
    int n = 12;
    ReadInt(t, path, "links", &n, errors);
    if (n < 1) errors.Add(Join(path, "links"), "must be >= 1");
    for (int i = 0; i < gpus; ++i)
      for (int j = 0; j < gpus; ++j)
        if (i != j) links[i][j] = n;
  } else if (kind == "pairs") {
    const YAML::Node pairs = t["pairs"];
    if (!pairs || !pairs.IsSequence()) {
      errors.Add(Join(path, "pairs"), "expected a list of [gpu, gpu, links]");
      return links;
    }
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const std::string pp = Join(path, "pairs") + "[" + std::to_string(k) + "]";
      try {
        const int a = pairs[k][0].as<int>(), b = pairs[k][1].as<int>(), n = pairs[k][2].as<int>();
        if (a < 0 || b < 0 || a >= gpus || b >= gpus || a == b || n < 1) throw 0;
        links[a][b] = links[b][a] = n;
      } catch (...) {
        errors.Add(pp, "expected [gpu, gpu, links] with two different GPUs of this node");
      }
    }
  } else {
    errors.Add(Join(path, "nvlink"), "\"" + kind + "\" (expected all or pairs)");
  }
  return links;
}

// gpu: {model, memory, count, replicas}; the count clamped to what a node may have.
void ReadGpus(const YAML::Node& g, const std::string& gp, NodeSpec* base, ConfigErrors& errors) {
  if (IsMap(g, gp, errors)) {
    CheckKeys(g, gp, {"model", "memory", "count", "replicas"}, errors);
    ReadString(g, gp, "model", &base->gpu_model, errors);
    ReadBytes(g, gp, "memory", &base->gpu_memory, errors);
    ReadInt(g, gp, "count", &base->gpu_count, errors);
    ReadInt(g, gp, "replicas", &base->replicas_per_gpu, errors);
    if (base->gpu_count < 0 || base->gpu_count > kMaxGpusPerNode)
      errors.Add(Join(gp, "count"), "must be in [0, 64]");
    if (base->replicas_per_gpu < 1 || base->replicas_per_gpu > 16)
      errors.Add(Join(gp, "replicas"), "must be in [1, 16]");
  }
  base->gpu_count = std::clamp(base->gpu_count, 0, kMaxGpusPerNode);
}

// topology: the links between the node's GPUs, and the NVLink jobs each serves.
void ReadTopology(const YAML::Node& t, const std::string& tp, NodeSpec* base,
                  ConfigErrors& errors) {
  base->links = Topology(t, base->gpu_count, tp, errors);
  if (t && t.IsMap()) {
    ReadInt(t, tp, "slotsPerGpu", &base->nvlink_slots_per_gpu, errors);
    if (base->nvlink_slots_per_gpu < 1) errors.Add(Join(tp, "slotsPerGpu"), "must be >= 1");
  }
}

// disk: {name, baseAwaitMs, degrade: {at, baseAwaitMs}}.
void ReadDisk(const YAML::Node& d, const std::string& dp, DiskSpec* disk, ConfigErrors& errors) {
  if (!IsMap(d, dp, errors)) return;
  CheckKeys(d, dp, {"name", "baseAwaitMs", "degrade"}, errors);
  ReadString(d, dp, "name", &disk->name, errors);
  ReadDouble(d, dp, "baseAwaitMs", &disk->base_await_ms, errors);
  if (!(disk->base_await_ms > 0)) errors.Add(Join(dp, "baseAwaitMs"), "must be > 0");
  const std::string degp = Join(dp, "degrade");
  if (!IsMap(d["degrade"], degp, errors)) return;
  const YAML::Node g = d["degrade"];
  CheckKeys(g, degp, {"at", "baseAwaitMs"}, errors);
  disk->degrade_at_ms = 0;
  ReadDuration(g, degp, "at", &disk->degrade_at_ms, errors);
  ReadDouble(g, degp, "baseAwaitMs", &disk->degraded_await_ms, errors);
  if (!(disk->degraded_await_ms > 0))
    errors.Add(Join(degp, "baseAwaitMs"), "required, must be > 0");
  if (disk->degrade_at_ms < 0) errors.Add(Join(degp, "at"), "must be >= 0");
}

}  // namespace

ClusterSpec LoadClusterSpec(const YAML::Node& root, const std::string& origin) {
  ConfigErrors errors;
  ClusterSpec c;
  if (!root || !root.IsMap() || !root["nodes"] || !root["nodes"].IsSequence())
    throw InputError{origin + ": expected a mapping with a list under \"nodes\""};
  CheckKeys(root, "", {"name", "nodes"}, errors);
  ReadString(root, "", "name", &c.name, errors);
  const YAML::Node nodes = root["nodes"];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = "nodes[" + std::to_string(i) + "]";
    const YAML::Node n = nodes[i];
    if (!n.IsMap()) {
      errors.Add(path, "expected a mapping");
      continue;
    }
    CheckKeys(n, path,
              {"name", "namePrefix", "count", "cpu", "memory", "gpu", "topology", "disk", "labels"},
              errors);
    NodeSpec base;
    int count = 1;
    std::string name, prefix;
    ReadString(n, path, "name", &name, errors);
    ReadString(n, path, "namePrefix", &prefix, errors);
    ReadInt(n, path, "count", &count, errors);
    if (name.empty() == prefix.empty()) errors.Add(path, "give exactly one of name or namePrefix");
    if (count < 1 || (!name.empty() && count != 1))
      errors.Add(Join(path, "count"), "must be >= 1 (1 with name)");
    base.cpu_milli = 32'000;
    ReadCpu(n, path, "cpu", &base.cpu_milli, errors);
    ReadBytes(n, path, "memory", &base.memory, errors);
    ReadLabels(n["labels"], Join(path, "labels"), &base.labels, errors);
    ReadGpus(n["gpu"], Join(path, "gpu"), &base, errors);
    ReadTopology(n["topology"], Join(path, "topology"), &base, errors);
    ReadDisk(n["disk"], Join(path, "disk"), &base.disk, errors);
    // A cluster file names at most kMaxClusterNodes nodes: a typo in `count` must be
    // an error, not gigabytes of node specs (found by fuzz_sim_cluster).
    if (count > 0 && static_cast<std::size_t>(count) > kMaxClusterNodes - c.nodes.size()) {
      errors.Add(Join(path, "count"), std::to_string(count) + " takes the cluster over " +
                                          std::to_string(kMaxClusterNodes) + " nodes");
      continue;
    }
    for (int k = 0; k < count; ++k) {
      NodeSpec s = base;
      s.name = name.empty() ? prefix + (k + 1 < 10 ? "0" : "") + std::to_string(k + 1) : name;
      c.nodes.push_back(std::move(s));
    }
  }
  if (c.nodes.empty()) errors.Add("nodes", "at least one node is needed");
  if (!errors.empty()) throw InputError{origin + ":\n" + errors.Joined()};
  return c;
}

double MemoryProfile::At(double t_s) const {
  if (share.empty()) return 1;
  if (share.size() == 1 || !(step_s > 0) || !(t_s > 0)) return share.front();
  const double period = step_s * static_cast<double>(share.size());
  const double x = std::fmod(t_s, period) / step_s;
  const auto i = static_cast<std::size_t>(x);
  const double a = share[i], b = share[(i + 1) % share.size()];
  return a + (b - a) * (x - static_cast<double>(i));
}

std::vector<MemoryProfile> LoadMemoryProfiles(const YAML::Node& node, const std::string& origin) {
  ConfigErrors errors;
  std::vector<MemoryProfile> out;
  if (!node || !node.IsMap() || !node["profiles"] || !node["profiles"].IsSequence())
    throw InputError{origin + ": expected a mapping with a list under \"profiles\""};
  CheckKeys(node, "", {"source", "command", "stepSeconds", "profiles"}, errors);
  double step = 60;
  ReadDouble(node, "", "stepSeconds", &step, errors);
  if (!(step > 0 && step <= 86'400)) errors.Add("stepSeconds", "must be in (0, 86400]");
  const YAML::Node list = node["profiles"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "profiles[" + std::to_string(i) + "]";
    const YAML::Node p = list[i];
    if (!IsMap(p, path, errors)) continue;
    CheckKeys(p, path, {"name", "share"}, errors);
    MemoryProfile m;
    m.step_s = step;
    ReadString(p, path, "name", &m.name, errors);
    const YAML::Node sh = p["share"];
    if (!sh || !sh.IsSequence() || sh.size() == 0 || sh.size() > 100'000) {
      errors.Add(Join(path, "share"), "expected a list of 1 to 100000 numbers");
      continue;
    }
    for (std::size_t k = 0; k < sh.size(); ++k) {
      double v = -1;
      try {
        v = sh[k].as<double>();
      } catch (const YAML::Exception&) {
      }
      if (!(v >= 0 && v <= 1)) {
        errors.Add(Join(path, "share[" + std::to_string(k) + "]"), "expected a number in [0, 1]");
        break;
      }
      m.share.push_back(v);
    }
    out.push_back(std::move(m));
  }
  if (out.empty() && errors.empty()) errors.Add("profiles", "must not be empty");
  if (!errors.empty()) throw InputError{origin + ":\n" + errors.Joined()};
  return out;
}

namespace {
YAML::Node LoadYamlFile(const std::string& path);

// memoryProfiles: a file beside the workload (or, for a built-in, the embedded
// copy), or inline.
std::vector<MemoryProfile> ReadWorkloadProfiles(const YAML::Node& mp, const std::string& origin) {
  if (!mp.IsScalar()) return LoadMemoryProfiles(mp, origin + ": memoryProfiles");
  const std::string file = mp.as<std::string>();
  if (origin.rfind("builtin:", 0) == 0) {
    const char* text = BuiltinProfilesYaml(file);
    if (!text) throw InputError{origin + ": no built-in memory profiles \"" + file + "\""};
    return LoadMemoryProfiles(YAML::Load(text), origin + ":" + file);
  }
  const auto slash = origin.find_last_of('/');
  const std::string path = file.starts_with('/') || slash == std::string::npos
                               ? file
                               : origin.substr(0, slash + 1) + file;
  // Named by the workload, so errors name the workload first; only a regular
  // file of sane size is read (not a device or FIFO the text happens to name).
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (!regular || std::filesystem::file_size(path, ec) > (std::uintmax_t{64} << 20))
    throw InputError{origin + ": memoryProfiles: " + path +
                     ": expected a regular YAML file of at most 64 MiB"};
  try {
    return LoadMemoryProfiles(LoadYamlFile(path), path);
  } catch (const InputError& e) {
    throw InputError{origin + ": memoryProfiles: " + e.message};
  }
}

// arrival: {kind: burst | poisson, start, window, meanGap}.
void ReadArrival(const YAML::Node& a, const std::string& ap, TaskClass* t, ConfigErrors& errors) {
  if (!IsMap(a, ap, errors)) return;
  CheckKeys(a, ap, {"kind", "start", "window", "meanGap"}, errors);
  ReadString(a, ap, "kind", &t->arrival, errors);
  if (t->arrival != "burst" && t->arrival != "poisson")
    errors.Add(Join(ap, "kind"), "\"" + t->arrival + "\" (expected burst or poisson)");
  ReadDuration(a, ap, "start", &t->arrival_start_ms, errors);
  ReadDuration(a, ap, "window", &t->arrival_window_ms, errors);
  ReadDuration(a, ap, "meanGap", &t->mean_gap_ms, errors);
}

// memory: {context, peak, rampSeconds, profiles} (required).
void ReadClassMemory(const YAML::Node& m, const std::string& mp, bool have_profiles, TaskClass* t,
                     ConfigErrors& errors) {
  if (IsMap(m, mp, errors)) {
    CheckKeys(m, mp, {"context", "peak", "rampSeconds", "profiles"}, errors);
    ReadBool(m, mp, "profiles", &t->memory_profiles, errors);
    if (t->memory_profiles && !have_profiles)
      errors.Add(Join(mp, "profiles"), "true, but the workload has no memoryProfiles");
    ReadBytes(m, mp, "context", &t->memory_context, errors);
    ReadRange(m, mp, "peak", Unit::kBytes, &t->memory_peak, errors);
    ReadRange(m, mp, "rampSeconds", Unit::kNumber, &t->ramp_seconds, errors);
  } else {
    errors.Add(mp, "required (context, peak)");
  }
  if (t->memory_peak.lo < static_cast<double>(t->memory_context))
    errors.Add(Join(mp, "peak"), "must be at least the context");
}

// io: {intensity, bound}, each a share in [0, 1].
void ReadIo(const YAML::Node& io, const std::string& iop, TaskClass* t, ConfigErrors& errors) {
  if (!IsMap(io, iop, errors)) return;
  CheckKeys(io, iop, {"intensity", "bound"}, errors);
  ReadDouble(io, iop, "intensity", &t->io_intensity, errors);
  ReadDouble(io, iop, "bound", &t->io_bound, errors);
  if (!(t->io_intensity >= 0 && t->io_intensity <= 1))
    errors.Add(Join(iop, "intensity"), "must be in [0, 1]");
  if (!(t->io_bound >= 0 && t->io_bound <= 1)) errors.Add(Join(iop, "bound"), "must be in [0, 1]");
}

// One task class of a workload file.
TaskClass ReadTaskClass(const YAML::Node& n, const std::string& path, bool have_profiles,
                        ConfigErrors& errors) {
  CheckKeys(n, path,
            {"name", "count", "arrival", "gpus", "loadType", "image", "declaredMemory", "memory",
             "nvlink", "nvlinkRequired", "computeDuty", "io", "duration", "requests", "startup",
             "migratable", "checkpoint", "expectedDuration", "declaredIoShare"},
            errors);
  TaskClass t;
  ReadString(n, path, "name", &t.name, errors);
  if (t.name.empty()) errors.Add(Join(path, "name"), "required");
  ReadInt(n, path, "count", &t.count, errors);
  if (t.count < 0 || t.count > 1'000'000)
    errors.Add(Join(path, "count"), "must be in [0, 1000000]");
  ReadArrival(n["arrival"], Join(path, "arrival"), &t, errors);
  ReadInt(n, path, "gpus", &t.gpus, errors);
  if (t.gpus < 0 || t.gpus > kMaxGpusPerNode) errors.Add(Join(path, "gpus"), "must be in [0, 64]");
  std::string lt;
  ReadString(n, path, "loadType", &lt, errors);
  if (auto parsed = ParseLoadType(lt))
    t.load_type = *parsed;
  else
    errors.Add(Join(path, "loadType"),
               "\"" + lt + "\" (expected GPU_HEAVY, IO_HEAVY, NVLINK_HEAVY or INFERENCE)");
  ReadString(n, path, "image", &t.image, errors);
  if (n["declaredMemory"]) {
    Bytes b = 0;
    ReadBytes(n, path, "declaredMemory", &b, errors);
    t.declared_memory = b;
  }
  ReadClassMemory(n["memory"], Join(path, "memory"), have_profiles, &t, errors);
  ReadBool(n, path, "nvlink", &t.uses_nvlink, errors);
  ReadBool(n, path, "nvlinkRequired", &t.nvlink_required, errors);
  ReadDouble(n, path, "computeDuty", &t.compute_duty, errors);
  if (!(t.compute_duty > 0 && t.compute_duty <= 1))
    errors.Add(Join(path, "computeDuty"), "must be in (0, 1]");
  ReadIo(n["io"], Join(path, "io"), &t, errors);
  ReadRange(n, path, "duration", Unit::kSeconds, &t.duration_seconds, errors);
  if (!(t.duration_seconds.lo > 0)) errors.Add(Join(path, "duration"), "must be > 0");
  const std::string rp = Join(path, "requests");
  if (IsMap(n["requests"], rp, errors)) {
    CheckKeys(n["requests"], rp, {"cpu", "memory"}, errors);
    ReadCpu(n["requests"], rp, "cpu", &t.cpu_milli, errors);
    ReadBytes(n["requests"], rp, "memory", &t.memory_request, errors);
  }
  ReadDuration(n, path, "startup", &t.startup_ms, errors);
  ReadBool(n, path, "migratable", &t.migratable, errors);
  ReadPositiveDuration(n, path, "checkpoint", &t.checkpoint_ms, errors);
  ReadPositiveDuration(n, path, "expectedDuration", &t.expected_duration_ms, errors);
  if (n["declaredIoShare"]) {
    const std::size_t before = errors.items().size();  // not a number: reported once
    double v = 0;
    ReadDouble(n, path, "declaredIoShare", &v, errors);
    if (errors.items().size() == before) {
      if (v >= 0 && v <= 1)
        t.declared_io_share = v;
      else
        errors.Add(Join(path, "declaredIoShare"), "must be in [0, 1]");
    }
  }
  return t;
}

}  // namespace

WorkloadSpec LoadWorkloadSpec(const YAML::Node& root, const std::string& origin) {
  ConfigErrors errors;
  WorkloadSpec w;
  if (!root || !root.IsMap() || !root["classes"] || !root["classes"].IsSequence())
    throw InputError{origin + ": expected a mapping with a list under \"classes\""};
  CheckKeys(root, "", {"name", "classes", "memoryProfiles"}, errors);
  ReadString(root, "", "name", &w.name, errors);
  if (const YAML::Node mp = root["memoryProfiles"]; mp)
    w.profiles = ReadWorkloadProfiles(mp, origin);
  const YAML::Node classes = root["classes"];
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const std::string path = "classes[" + std::to_string(i) + "]";
    const YAML::Node n = classes[i];
    if (!n.IsMap()) {
      errors.Add(path, "expected a mapping");
      continue;
    }
    w.classes.push_back(ReadTaskClass(n, path, !w.profiles.empty(), errors));
  }
  if (!errors.empty()) throw InputError{origin + ":\n" + errors.Joined()};
  return w;
}

namespace {

YAML::Node LoadYamlFile(const std::string& path) {
  const std::string text = ReadRegularFileOrThrow(path, kMaxDataFileBytes);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError{path + ": not valid YAML: " + e.what()};
  }
}

}  // namespace

ClusterSpec LoadClusterFile(const std::string& path) {
  return LoadClusterSpec(LoadYamlFile(path), path);
}

WorkloadSpec LoadWorkload(const std::string& ref) {
  if (ref.rfind("builtin:", 0) == 0) {
    const char* text = BuiltinWorkloadYaml(ref.substr(8));
    if (!text)
      throw InputError{ref +
                       ": no such built-in workload (expected builtin:seed or builtin:seed-genai)"};
    return LoadWorkloadSpec(YAML::Load(text), ref);
  }
  return LoadWorkloadSpec(LoadYamlFile(ref), ref);
}

ClusterSpec LoadCluster(const std::string& ref) {
  if (ref.rfind("builtin:", 0) == 0) {
    const char* text = BuiltinClusterYaml(ref.substr(8));
    if (!text)
      throw InputError{
          ref +
          ": no such built-in cluster (expected builtin:seed-8xA10 or builtin:seed-8xA10-golden)"};
    return LoadClusterSpec(YAML::Load(text), ref);
  }
  return LoadClusterFile(ref);
}

}  // namespace tidal::sim
