#include "tidal/kubetypes/pod.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include "kubetypes/pod_reader.h"
#include "tidal/core/text.h"
#include "tidal/kubetypes/quantity.h"

namespace tidal {
namespace {

using pod_reader::DecodePod;
using pod_reader::IndexPath;
using pod_reader::Kind;
using pod_reader::MemberPath;

bool ContainsIgnoreCase(const std::string& text, const std::string& pattern) {
  auto it = std::search(text.begin(), text.end(), pattern.begin(), pattern.end(),
                        [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  return !pattern.empty() && it != text.end();
}

class JsonValue {
 public:
  JsonValue() = default;
  explicit JsonValue(simdjson::dom::element e) : element_(e), present_(true) {}

  Kind kind() const {
    if (!present_) return Kind::kAbsent;
    switch (element_.type()) {
      case simdjson::dom::element_type::OBJECT:
        return Kind::kObject;
      case simdjson::dom::element_type::ARRAY:
        return Kind::kArray;
      case simdjson::dom::element_type::STRING:
        return Kind::kString;
      case simdjson::dom::element_type::INT64:
      case simdjson::dom::element_type::UINT64:
      case simdjson::dom::element_type::DOUBLE:
        return Kind::kNumber;
      case simdjson::dom::element_type::BOOL:
        return Kind::kBool;
      case simdjson::dom::element_type::NULL_VALUE:
        break;
    }
    return Kind::kNull;
  }

  // The member `key` of an object; absent when there is none or this is not an object.
  JsonValue Get(std::string_view key) const {
    simdjson::dom::object object;
    if (!present_ || element_.get_object().get(object) != simdjson::SUCCESS) return {};
    simdjson::dom::element child;
    if (object.at_key(key).get(child) != simdjson::SUCCESS) return {};
    return JsonValue(child);
  }

  template <class F>
  Status ForEachMember(const std::string& /*path*/, F&& f) const {
    simdjson::dom::object object;
    if (element_.get_object().get(object) != simdjson::SUCCESS)
      return Status::Error("internal: not a JSON object");
    for (simdjson::dom::key_value_pair member : object)
      if (Status s = f(member.key, JsonValue(member.value)); !s.ok()) return s;
    return {};
  }

  template <class F>
  Status ForEachElement(F&& f) const {
    simdjson::dom::array array;
    if (element_.get_array().get(array) != simdjson::SUCCESS)
      return Status::Error("internal: not a JSON array");
    std::size_t i = 0;
    for (simdjson::dom::element child : array)
      if (Status s = f(i++, JsonValue(child)); !s.ok()) return s;
    return {};
  }

  // The text of a string, or of a number (quantities may be written as JSON numbers).
  std::optional<std::string> Text() const {
    switch (kind()) {
      case Kind::kString: {
        std::string_view s;
        if (element_.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
        return std::string(s);
      }
      case Kind::kNumber:
        return NumberText();
      default:
        return std::nullopt;
    }
  }

 private:
  std::optional<std::string> NumberText() const {
    std::int64_t i = 0;
    if (element_.get_int64().get(i) == simdjson::SUCCESS) return std::to_string(i);
    std::uint64_t u = 0;
    if (element_.get_uint64().get(u) == simdjson::SUCCESS) return std::to_string(u);
    double d = 0;
    if (element_.get_double().get(d) != simdjson::SUCCESS) return std::nullopt;
    // Shortest round-trip text: "0.5" stays "0.5"; large values use "1e+21", a valid quantity.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
    if (ec != std::errc()) return std::nullopt;
    return std::string(buf, end);
  }

  simdjson::dom::element element_;
  bool present_ = false;
};

// ---- Demand. ----

const std::string* Find(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? nullptr : &it->second;
}

// Saturating: any sum past int64 is rejected by the caller anyway.
std::int64_t AddSat(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  return a > kMax - b ? kMax : a + b;
}

struct ContainerDemand {
  std::int64_t gpus = 0;
  std::int64_t cpu_milli = 0;
  Bytes memory = 0;
};

class DemandBuilder {
 public:
  explicit DemandBuilder(PodDemand* d) : d_(d) {}

  // Only the first problem is kept: one reason is enough to reject the pod.
  void Invalid(std::string reason) {
    if (d_->invalid_reason.empty()) d_->invalid_reason = std::move(reason);
  }

  ContainerDemand Container(const RawContainer& c, const std::string& path) {
    ContainerDemand out;
    // Extended resources must have requests == limits; limits are what the device plugin sees.
    if (const std::string* text = Find(c.limits, kGpuResource)) {
      out.gpus = GpuCount(*text, MemberPath(path + ".resources.limits", kGpuResource));
    } else if ((text = Find(c.requests, kGpuResource))) {
      out.gpus = GpuCount(*text, MemberPath(path + ".resources.requests", kGpuResource));
    }
    // A request left out defaults to the limit, as the API server does.
    out.cpu_milli = Request(c, "cpu", path, /*milli=*/true);
    out.memory = Request(c, "memory", path, /*milli=*/false);
    return out;
  }

  std::int64_t GpuCount(const std::string& text, const std::string& field) {
    std::string error;
    bool rounded = false;
    const auto v = ParseQuantityRounded(text, field, &error, &rounded);
    if (!v) {
      Invalid(error);
    } else if (*v < 0 || rounded) {
      Invalid(field + ": " + QuoteInput(text) +
              " is not a non-negative whole number of GPUs (expected e.g. 1, 2, 4)");
    } else {
      return *v;
    }
    return 0;
  }

  std::int64_t Request(const RawContainer& c, std::string_view resource, const std::string& path,
                       bool milli) {
    std::string field;
    const std::string* text = Find(c.requests, resource);
    if (text != nullptr) {
      field = MemberPath(path + ".resources.requests", resource);
    } else if ((text = Find(c.limits, resource))) {
      field = MemberPath(path + ".resources.limits", resource);
    } else {
      return 0;
    }
    std::string error;
    const auto v =
        milli ? ParseQuantityMilli(*text, field, &error) : ParseQuantity(*text, field, &error);
    if (!v) {
      Invalid(error);
      return 0;
    }
    if (*v < 0) {
      Invalid(field + ": " + QuoteInput(*text) + " is negative");
      return 0;
    }
    return *v;
  }

  // A byte-quantity annotation; nullopt when absent or invalid.
  std::optional<Bytes> ByteAnnotation(std::string_view key, bool positive) {
    const std::string* text = Find(d_->annotations, key);
    if (text == nullptr) return std::nullopt;
    const std::string field = "annotation " + std::string(key);
    std::string error;
    const auto v = ParseQuantity(*text, field, &error);
    if (!v) {
      Invalid(error);
      return std::nullopt;
    }
    if (positive ? *v <= 0 : *v < 0) {
      Invalid(field + ": " + QuoteInput(*text) + " must be " +
              (positive ? "positive" : "non-negative") +
              " (expected a byte quantity such as 20Gi)");
      return std::nullopt;
    }
    return v;
  }

  bool BoolAnnotation(std::string_view key) {
    const std::string* text = Find(d_->annotations, key);
    if (text == nullptr) return false;
    if (EqualsIgnoreCase(*text, "true")) return true;
    if (!EqualsIgnoreCase(*text, "false"))
      Invalid("annotation " + std::string(key) + ": " + QuoteInput(*text) +
              " is not a boolean (expected \"true\" or \"false\")");
    return false;
  }

 private:
  PodDemand* d_;
};

}  // namespace

Status DecodePodJson(std::string_view json, RawPod* out) {
  *out = RawPod{};
  simdjson::dom::parser parser;
  if (json.empty()) json = "";  // a non-null pointer for the copy below
  const simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::element root;
  if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS)
    return Status::Error(std::string("invalid JSON: ") + simdjson::error_message(error));
  RawPod pod;
  if (Status s = DecodePod(JsonValue(root), &pod); !s.ok()) return s;
  *out = std::move(pod);
  return {};
}

std::optional<double> ParseRejectThreshold(std::string_view text, std::string* error) {
  const auto fail = [&]() -> std::optional<double> {
    if (error != nullptr)
      *error = std::string("annotation ") + std::string(kAnnotationRejectThreshold) + ": " +
               QuoteInput(text) + " is not a number in [0, 1] (expected e.g. \"0.80\")";
    return std::nullopt;
  };
  // Plain decimals only: strtod-style parsing would accept " 0.8", "nan", "1e-1" and "0x1".
  const std::size_t point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  const std::string_view frac =
      point == std::string_view::npos ? std::string_view() : text.substr(point + 1);
  const auto digits = [](std::string_view s) {
    return s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (whole.empty() && frac.empty()) return fail();
  if (!digits(whole) || !digits(frac)) return fail();
  // Compare with 1 exactly on the digits: "1.0000000000000000001" is over 1 though its double is 1.
  const std::size_t nonzero = whole.find_first_not_of('0');
  const std::string_view significant =
      nonzero == std::string_view::npos ? std::string_view() : whole.substr(nonzero);
  const bool frac_zero = frac.find_first_not_of('0') == std::string_view::npos;
  if (!significant.empty() && !(significant == "1" && frac_zero)) return fail();
  const std::string normal =
      std::string(whole.empty() ? "0" : whole) + "." + std::string(frac.empty() ? "0" : frac);
  double value = 0;
  const auto [end, ec] = std::from_chars(normal.data(), normal.data() + normal.size(), value);
  if (ec != std::errc() || end != normal.data() + normal.size()) return fail();
  return value;
}

PodDemand ToPodDemand(const RawPod& pod) {
  PodDemand d;
  d.namespace_name = pod.namespace_name.empty() ? "default" : pod.namespace_name;
  d.name = pod.name;
  d.uid = pod.uid;
  d.labels = pod.labels;
  d.annotations = pod.annotations;
  DemandBuilder b(&d);

  // Effective requests as kube-scheduler computes them: init containers run one at a time
  // before the app containers, so the pod needs max(Σ app, max init).
  ContainerDemand sum, init_max;
  for (std::size_t i = 0; i < pod.containers.size(); ++i) {
    const ContainerDemand c = b.Container(pod.containers[i], IndexPath("spec.containers", i));
    sum.gpus = AddSat(sum.gpus, c.gpus);
    sum.cpu_milli = AddSat(sum.cpu_milli, c.cpu_milli);
    sum.memory = AddSat(sum.memory, c.memory);
  }
  for (std::size_t i = 0; i < pod.init_containers.size(); ++i) {
    const ContainerDemand c =
        b.Container(pod.init_containers[i], IndexPath("spec.initContainers", i));
    init_max.gpus = std::max(init_max.gpus, c.gpus);
    init_max.cpu_milli = std::max(init_max.cpu_milli, c.cpu_milli);
    init_max.memory = std::max(init_max.memory, c.memory);
  }
  const std::int64_t gpus = std::max(sum.gpus, init_max.gpus);
  if (gpus > std::numeric_limits<int>::max()) {
    b.Invalid("spec.containers: the pod's " + std::string(kGpuResource) + " total " +
              std::to_string(gpus) + " is too large");
  } else {
    d.gpu_count = static_cast<int>(gpus);
  }
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  d.cpu_milli = std::max(sum.cpu_milli, init_max.cpu_milli);
  d.memory_request = std::max(sum.memory, init_max.memory);
  if (d.cpu_milli == kMax) b.Invalid("spec.containers: the pod's cpu total is too large");
  if (d.memory_request == kMax) b.Invalid("spec.containers: the pod's memory total is too large");

  if (auto v = b.ByteAnnotation(kAnnotationGpuMemory, /*positive=*/true)) {
    d.gpu_memory_per_gpu = *v;
    d.gpu_memory_declared = true;
  }
  if (auto v = b.ByteAnnotation(kAnnotationModelSize, /*positive=*/false)) d.model_size = *v;
  if (const std::string* text = Find(d.annotations, kAnnotationRejectThreshold)) {
    std::string error;
    d.gpu_reject_threshold = ParseRejectThreshold(*text, &error);
    if (!d.gpu_reject_threshold) b.Invalid(error);
  }
  d.nvlink_required = b.BoolAnnotation(kAnnotationNvlinkRequired);
  d.nvlink_auto = b.BoolAnnotation(kAnnotationAutoNvlink);

  // Env and images describe the workload: app containers only, not the short-lived init steps.
  for (std::size_t i = 0; i < pod.containers.size(); ++i) {
    const RawContainer& c = pod.containers[i];
    if (!c.image.empty()) d.images.push_back(c.image);
    if (const std::string* v = Find(c.env, kEnvNvlinkRequired))
      if (EqualsIgnoreCase(*v, "true") || *v == "1") d.nvlink_required = true;
    if (const std::string* v = Find(c.env, kEnvLoadType)) {
      const std::optional<LoadType> type = ParseLoadType(*v);
      if (!type) {
        b.Invalid(IndexPath("spec.containers", i) + " env " + std::string(kEnvLoadType) + ": " +
                  QuoteInput(*v) +
                  " is not a load type (expected GPU_HEAVY, IO_HEAVY, NVLINK_HEAVY or INFERENCE)");
      } else if (d.load_type == LoadType::kUnspecified) {
        d.load_type = *type;  // the first container that declares one
      }
    }
  }
  return d;
}

bool PodUsesNvlink(const NvlinkDetection& detection, const PodDemand& pod) {
  if (pod.nvlink_required) return true;
  if (pod.gpu_count < std::max(2, detection.min_gpus)) {
    // One GPU never talks over NVLink to itself: only an explicit request counts.
    return false;
  }
  if (pod.nvlink_auto) return true;
  for (const auto& image : pod.images)
    for (const auto& pattern : detection.image_patterns)
      if (ContainsIgnoreCase(image, pattern)) return true;
  return false;
}

}  // namespace tidal
