#include "tidal/policy/pod_decode.h"

#include <simdjson.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "tidal/core/quantity.h"
#include "tidal/core/text.h"

namespace tidal {
namespace {

// ---- One document model over both parsers, so both decode with the same rules. ----

enum class Kind { kAbsent, kNull, kObject, kArray, kString, kNumber, kBool };

bool IsNullish(Kind k) { return k == Kind::kAbsent || k == Kind::kNull; }

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

class YamlValue {
 public:
  YamlValue() = default;
  explicit YamlValue(YAML::Node node) : node_(std::move(node)), present_(true) {}

  Kind kind() const {
    // IsDefined first: a missing key is a "zombie" node whose other queries throw.
    if (!present_ || !node_.IsDefined()) return Kind::kAbsent;
    if (node_.IsMap()) return Kind::kObject;
    if (node_.IsSequence()) return Kind::kArray;
    if (node_.IsScalar()) return Kind::kString;  // YAML scalars are text: 2, true, 16Gi
    return Kind::kNull;
  }

  YamlValue Get(std::string_view key) const {
    if (kind() != Kind::kObject) return {};
    return YamlValue(node_[std::string(key)]);  // const lookup: never inserts the key
  }

  template <class F>
  Status ForEachMember(const std::string& path, F&& f) const {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsDefined() || !it->first.IsScalar())
        return Status::Error(path + ": a key is not a string");
      if (Status s = f(std::string_view(it->first.Scalar()), YamlValue(it->second)); !s.ok())
        return s;
    }
    return {};
  }

  template <class F>
  Status ForEachElement(F&& f) const {
    std::size_t i = 0;
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (Status s = f(i++, YamlValue(*it)); !s.ok()) return s;
    return {};
  }

  std::optional<std::string> Text() const {
    if (kind() != Kind::kString) return std::nullopt;
    return node_.Scalar();
  }

 private:
  YAML::Node node_;
  bool present_ = false;
};

// Counts a YAML stream's documents before YAML::LoadAll runs. yaml-cpp 0.7's LoadAll loops
// forever, allocating, on a stray flow indicator such as a leading ',' (jbeder/yaml-cpp#1040):
// its parser then yields empty documents without consuming input. A document that starts
// where the previous one did is that loop, and is reported as invalid YAML instead.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    start_ = mark;
    content_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content_ = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    content_ = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnMapEnd() override {}

  const YAML::Mark& start() const { return start_; }
  bool content() const { return content_; }

 private:
  YAML::Mark start_;
  bool content_ = false;
};

// The number of non-empty documents (stopping at 2), or an error. May throw YAML exceptions.
Status CountYamlDocuments(const std::string& yaml, int* count) {
  constexpr int kMaxDocuments = 1000;  // empty "---" documents; more is not a Pod file
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentCounter counter;
  int documents = 0;
  std::optional<int> previous_pos;
  *count = 0;
  while (*count < 2 && parser.HandleNextDocument(counter)) {
    if (counter.start().pos == previous_pos || ++documents > kMaxDocuments)
      return Status::Error("invalid YAML: unexpected input at line " +
                           std::to_string(counter.start().line + 1) + ", column " +
                           std::to_string(counter.start().column + 1));
    previous_pos = counter.start().pos;
    if (counter.content()) ++*count;
  }
  return {};
}

// ---- Decoding, with JSON paths in every message. ----

Status TypeError(const std::string& path, std::string_view expected) {
  return Status::Error(path + ": expected " + std::string(expected));
}

std::string MemberPath(const std::string& path, std::string_view key) {
  return path + "[" + QuoteInput(key) + "]";
}

std::string IndexPath(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Null and absent are the same: `out` is left as it is.
template <class V>
Status ReadString(const V& v, const std::string& path, std::string* out) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  std::optional<std::string> text = k == Kind::kString ? v.Text() : std::nullopt;
  if (!text) return TypeError(path, "a string");
  *out = std::move(*text);
  return {};
}

// A map of strings (labels, annotations, resource lists). Quantities may be numbers.
template <class V>
Status ReadStringMap(const V& v, const std::string& path, bool allow_numbers,
                     std::map<std::string, std::string>* out) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  if (k != Kind::kObject) return TypeError(path, "an object");
  return v.ForEachMember(path, [&](std::string_view key, const V& value) -> Status {
    const Kind vk = value.kind();
    if (IsNullish(vk)) return {};
    std::optional<std::string> text;
    if (vk == Kind::kString || (allow_numbers && vk == Kind::kNumber)) text = value.Text();
    if (!text)
      return TypeError(MemberPath(path, key), allow_numbers ? "a string or a number" : "a string");
    (*out)[std::string(key)] = std::move(*text);
    return {};
  });
}

template <class V>
Status ReadEnv(const V& v, const std::string& path, std::map<std::string, std::string>* out) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  if (k != Kind::kArray) return TypeError(path, "an array");
  return v.ForEachElement([&](std::size_t i, const V& entry) -> Status {
    const std::string p = IndexPath(path, i);
    if (entry.kind() != Kind::kObject) return TypeError(p, "an object");
    std::string name;
    if (Status s = ReadString(entry.Get("name"), p + ".name", &name); !s.ok()) return s;
    if (name.empty()) return TypeError(p + ".name", "a non-empty string");
    // valueFrom (secrets, field refs) is resolved by the kubelet: its value is unknown here.
    if (!IsNullish(entry.Get("valueFrom").kind())) return {};
    std::string value;
    if (Status s = ReadString(entry.Get("value"), p + ".value", &value); !s.ok()) return s;
    (*out)[name] = std::move(value);  // a later duplicate wins, as in the kubelet
    return {};
  });
}

template <class V>
Status ReadContainer(const V& v, const std::string& path, RawContainer* out) {
  if (v.kind() != Kind::kObject) return TypeError(path, "an object");
  if (Status s = ReadString(v.Get("name"), path + ".name", &out->name); !s.ok()) return s;
  if (Status s = ReadString(v.Get("image"), path + ".image", &out->image); !s.ok()) return s;
  if (Status s = ReadEnv(v.Get("env"), path + ".env", &out->env); !s.ok()) return s;
  const V resources = v.Get("resources");
  const Kind rk = resources.kind();
  if (IsNullish(rk)) return {};
  if (rk != Kind::kObject) return TypeError(path + ".resources", "an object");
  if (Status s = ReadStringMap(resources.Get("requests"), path + ".resources.requests", true,
                               &out->requests);
      !s.ok())
    return s;
  return ReadStringMap(resources.Get("limits"), path + ".resources.limits", true, &out->limits);
}

template <class V>
Status ReadContainers(const V& v, const std::string& path, std::vector<RawContainer>* out) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  if (k != Kind::kArray) return TypeError(path, "an array");
  return v.ForEachElement([&](std::size_t i, const V& c) -> Status {
    RawContainer container;
    if (Status s = ReadContainer(c, IndexPath(path, i), &container); !s.ok()) return s;
    out->push_back(std::move(container));
    return {};
  });
}

// An object or nothing: *present tells which.
template <class V>
Status ReadSection(const V& v, const std::string& path, bool* present) {
  const Kind k = v.kind();
  *present = k == Kind::kObject;
  if (IsNullish(k) || *present) return {};
  return TypeError(path, "an object");
}

template <class V>
Status DecodePod(const V& root, RawPod* out) {
  if (root.kind() != Kind::kObject) return TypeError("pod", "an object");
  // A Deployment or Job decodes to a pod without containers; say so rather than place 0 GPUs.
  std::string kind;
  if (Status s = ReadString(root.Get("kind"), "kind", &kind); !s.ok()) return s;
  if (!kind.empty() && kind != "Pod")
    return Status::Error("kind: expected Pod, got " + QuoteInput(kind));

  bool present = false;
  const V metadata = root.Get("metadata");
  if (Status s = ReadSection(metadata, "metadata", &present); !s.ok()) return s;
  if (present) {
    if (Status s = ReadString(metadata.Get("name"), "metadata.name", &out->name); !s.ok()) return s;
    std::string ns;
    if (Status s = ReadString(metadata.Get("namespace"), "metadata.namespace", &ns); !s.ok())
      return s;
    if (!ns.empty()) out->namespace_name = std::move(ns);
    if (Status s = ReadString(metadata.Get("uid"), "metadata.uid", &out->uid); !s.ok()) return s;
    if (Status s = ReadStringMap(metadata.Get("labels"), "metadata.labels", false, &out->labels);
        !s.ok())
      return s;
    if (Status s = ReadStringMap(metadata.Get("annotations"), "metadata.annotations", false,
                                 &out->annotations);
        !s.ok())
      return s;
  }

  const V spec = root.Get("spec");
  if (Status s = ReadSection(spec, "spec", &present); !s.ok()) return s;
  if (present) {
    if (Status s = ReadString(spec.Get("nodeName"), "spec.nodeName", &out->node_name); !s.ok())
      return s;
    if (Status s = ReadContainers(spec.Get("containers"), "spec.containers", &out->containers);
        !s.ok())
      return s;
    if (Status s = ReadContainers(spec.Get("initContainers"), "spec.initContainers",
                                  &out->init_containers);
        !s.ok())
      return s;
  }

  const V status = root.Get("status");
  if (Status s = ReadSection(status, "status", &present); !s.ok()) return s;
  if (present) return ReadString(status.Get("phase"), "status.phase", &out->phase);
  return {};
}

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

Status DecodePodYaml(std::string_view yaml, RawPod* out) {
  *out = RawPod{};
  try {
    const std::string text(yaml);
    int count = 0;
    if (Status s = CountYamlDocuments(text, &count); !s.ok()) return s;
    if (count == 0) return Status::Error("pod: the YAML document is empty");
    if (count > 1) return Status::Error("pod: expected one YAML document, found several");
    // Safe now: the same parser run above ended.
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    const YAML::Node* doc = nullptr;
    for (const YAML::Node& d : docs)
      if (!d.IsNull()) doc = &d;  // skips a stray "---" at either end
    if (doc == nullptr) return Status::Error("pod: the YAML document is empty");
    RawPod pod;
    if (Status s = DecodePod(YamlValue(*doc), &pod); !s.ok()) return s;
    *out = std::move(pod);
    return {};
  } catch (const YAML::Exception& e) {
    return Status::Error(std::string("invalid YAML: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Error(std::string("invalid YAML: ") + e.what());
  }
}

Status DecodePodText(std::string_view text, RawPod* out) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return DecodePodJson(text, out);
  return DecodePodYaml(text, out);
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

}  // namespace tidal
