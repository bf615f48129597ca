#pragma once
// One document model over both parsers (simdjson in pod.cc, yaml-cpp in
// pod_yaml.cc), so a Pod decodes with the same rules and the same JSON paths in
// every message whichever text it came in. Private to kubetypes.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/core/text.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::pod_reader {

enum class Kind { kAbsent, kNull, kObject, kArray, kString, kNumber, kBool };

inline bool IsNullish(Kind k) { return k == Kind::kAbsent || k == Kind::kNull; }

// Decoding, with JSON paths in every message. V is a value of either model:
// kind(), Get(key), ForEachMember(path, f), ForEachElement(f), Text().

inline Status TypeError(const std::string& path, std::string_view expected) {
  return Status::Error(path + ": expected " + std::string(expected));
}

inline std::string MemberPath(const std::string& path, std::string_view key) {
  return path + "[" + QuoteInput(key) + "]";
}

inline std::string IndexPath(const std::string& path, std::size_t i) {
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

// Each element of an array of objects (null and absent: none), with its path.
template <class V, class F>
Status ForEachObject(const V& v, const std::string& path, F f) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  if (k != Kind::kArray) return TypeError(path, "an array");
  return v.ForEachElement([&](std::size_t i, const V& entry) -> Status {
    const std::string p = IndexPath(path, i);
    if (entry.kind() != Kind::kObject) return TypeError(p, "an object");
    return f(p, entry);
  });
}

template <class V>
Status ReadEnv(const V& v, const std::string& path, std::map<std::string, std::string>* out) {
  return ForEachObject(v, path, [&](const std::string& p, const V& entry) -> Status {
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

// An integer (spec.priority is an int32); null and absent leave `out` as it is.
template <class V>
Status ReadInt(const V& v, const std::string& path, std::int64_t* out) {
  const Kind k = v.kind();
  if (IsNullish(k)) return {};
  // A YAML scalar may come as text.
  const std::optional<std::string> text =
      k == Kind::kNumber || k == Kind::kString ? v.Text() : std::nullopt;
  std::int64_t value = 0;
  if (!text) return TypeError(path, "an integer");
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return TypeError(path, "an integer");
  *out = value;
  return {};
}

// Whether status.conditions holds PodScheduled False for Unschedulable.
template <class V>
Status ReadUnschedulable(const V& v, const std::string& path, bool* out) {
  return ForEachObject(v, path, [&](const std::string& p, const V& entry) -> Status {
    std::string type, status, reason;
    if (Status s = ReadString(entry.Get("type"), p + ".type", &type); !s.ok()) return s;
    if (Status s = ReadString(entry.Get("status"), p + ".status", &status); !s.ok()) return s;
    if (Status s = ReadString(entry.Get("reason"), p + ".reason", &reason); !s.ok()) return s;
    if (type == "PodScheduled" && status == "False" && reason == "Unschedulable") *out = true;
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
    if (Status s = ReadString(metadata.Get("creationTimestamp"), "metadata.creationTimestamp",
                              &out->created);
        !s.ok())
      return s;
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
    if (Status s =
            ReadString(spec.Get("schedulerName"), "spec.schedulerName", &out->scheduler_name);
        !s.ok())
      return s;
    if (Status s = ReadInt(spec.Get("priority"), "spec.priority", &out->priority); !s.ok())
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
  if (!present) return {};
  if (Status s = ReadString(status.Get("phase"), "status.phase", &out->phase); !s.ok()) return s;
  return ReadUnschedulable(status.Get("conditions"), "status.conditions", &out->unschedulable);
}

}  // namespace tidal::pod_reader
