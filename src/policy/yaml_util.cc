#include "tidal/policy/yaml_util.h"

#include <charconv>

#include "tidal/core/text.h"
#include "tidal/kubetypes/quantity.h"

namespace tidal::yamlutil {
namespace {

std::optional<double> ToDouble(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::string Fmt(double v) { return FormatShortest(v); }

bool IsMap(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  if (!node || node.IsNull()) return false;
  if (!node.IsMap()) {
    errors.Add(path, "expected a mapping");
    return false;
  }
  return true;
}

void CheckKeys(const YAML::Node& node, const std::string& path,
               std::initializer_list<const char*> known, ConfigErrors& errors) {
  if (!node || !node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      errors.Add(Join(path, key), "unknown field (expected one of: " + list + ")");
    }
  }
}

void ReadDouble(const YAML::Node& node, const std::string& path, const char* key, double* out,
                ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  auto d = v.IsScalar() ? ToDouble(v.Scalar()) : std::nullopt;
  if (!d) {
    errors.Add(Join(path, key), "\"" + (v.IsScalar() ? v.Scalar() : std::string("<non-scalar>")) +
                                    "\" is not a finite number");
    return;
  }
  *out = *d;
}

void ReadInt(const YAML::Node& node, const std::string& path, const char* key, int* out,
             ConfigErrors& errors) {
  double d = *out;
  ConfigErrors local;
  ReadDouble(node, path, key, &d, local);
  if (!local.empty() || d != std::floor(d) || std::fabs(d) > 1e9) {
    if (node[key]) errors.Add(Join(path, key), "expected an integer");
    return;
  }
  *out = static_cast<int>(d);
}

void ReadBool(const YAML::Node& node, const std::string& path, const char* key, bool* out,
              ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  if (v.IsScalar() && (v.Scalar() == "true" || v.Scalar() == "false")) {
    *out = v.Scalar() == "true";
    return;
  }
  errors.Add(Join(path, key), "expected true or false");
}

bool CheckUtf8(const std::string& text, const std::string& path, ConfigErrors& errors) {
  if (IsValidUtf8(text)) return true;
  errors.Add(path, QuoteInput(text) + " is not valid UTF-8 text");
  return false;
}

void ReadString(const YAML::Node& node, const std::string& path, const char* key, std::string* out,
                ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  if (!v.IsScalar()) {
    errors.Add(Join(path, key), "expected a string");
    return;
  }
  if (!CheckUtf8(v.Scalar(), Join(path, key), errors)) return;
  *out = v.Scalar();
}

void ReadDuration(const YAML::Node& node, const std::string& path, const char* key, TimeMs* out,
                  ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  auto d = v.IsScalar() ? ParseDurationMs(v.Scalar()) : std::nullopt;
  if (!d || *d < 0) {
    errors.Add(Join(path, key), "\"" + (v.IsScalar() ? v.Scalar() : std::string()) +
                                    "\" is not a duration (expected e.g. 20s, 500ms, 2m)");
    return;
  }
  *out = *d;
}

void ReadBytes(const YAML::Node& node, const std::string& path, const char* key, Bytes* out,
               ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  std::string err;
  auto q = v.IsScalar() ? ParseQuantity(v.Scalar(), Join(path, key), &err) : std::nullopt;
  if (!q || *q < 0) {
    errors.Add(Join(path, key), "expected a non-negative byte quantity such as 16Gi");
    return;
  }
  *out = *q;
}

void ReadLabels(const YAML::Node& node, const std::string& path, Labels* out,
                ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  for (const auto& kv : node) {
    if (!kv.second.IsScalar()) {
      errors.Add(Join(path, kv.first.Scalar()), "expected a label value");
      continue;
    }
    if (!CheckUtf8(kv.first.Scalar(), path, errors) ||
        !CheckUtf8(kv.second.Scalar(), Join(path, kv.first.Scalar()), errors))
      continue;
    (*out)[kv.first.Scalar()] = kv.second.Scalar();
  }
}

void ReadWeights(const YAML::Node& node, const std::string& path, DimensionWeights* out,
                 ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"gpuMemory", "nvlink", "io"}, errors);
  ReadDouble(node, path, "gpuMemory", &out->gpu_memory, errors);
  ReadDouble(node, path, "nvlink", &out->nvlink, errors);
  ReadDouble(node, path, "io", &out->io, errors);
}

void ValidateWeights(const DimensionWeights& w, const std::string& path, ConfigErrors& errors) {
  for (auto [v, key] :
       {std::pair{w.gpu_memory, "gpuMemory"}, std::pair{w.nvlink, "nvlink"}, std::pair{w.io, "io"}})
    if (!(v >= 0 && v <= 1)) errors.Add(Join(path, key), Fmt(v) + " is outside [0, 1]");
  const double sum = w.gpu_memory + w.nvlink + w.io;
  if (std::fabs(sum - 1) > 1e-6) errors.Add(path, "weights sum to " + Fmt(sum) + ", expected 1");
}

}  // namespace tidal::yamlutil
