#include "tidal/kube/objects.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "tidal/kubetypes/pod.h"
#include "tidal/kubetypes/quantity.h"

namespace tidal::kube {
namespace {

using simdjson::SUCCESS;
using simdjson::dom::element;
using simdjson::dom::object;

bool Field(element e, std::string_view key, element* out) {
  object obj;
  if (e.get_object().get(obj) != SUCCESS) return false;
  if (obj.at_key(key).get(*out) != SUCCESS) return false;
  return !out->is_null();
}

// An optional string field: absent or null → "", another type → error.
Status StringField(element e, std::string_view key, const std::string& path, std::string* out) {
  element v;
  if (!Field(e, key, &v)) {
    out->clear();
    return Status::Ok();
  }
  std::string_view text;
  if (v.get_string().get(text) != SUCCESS)
    return Status::Error(fmt::format("{}.{}: expected a string", path, key));
  *out = std::string(text);
  return Status::Ok();
}

Status Parse(simdjson::dom::parser& parser, std::string_view json, const char* what, element* out) {
  if (parser.parse(json.data(), json.size()).get(*out) != SUCCESS)
    return Status::Error(fmt::format("{}: not valid JSON", what));
  if (!out->is_object()) return Status::Error(fmt::format("{}: expected a JSON object", what));
  return Status::Ok();
}

Status Metadata(element item, const std::string& what, element* metadata, std::string* name,
                std::string* resource_version) {
  if (!Field(item, "metadata", metadata) || !metadata->is_object())
    return Status::Error(what + ".metadata: expected an object");
  if (Status s = StringField(*metadata, "name", what + ".metadata", name); !s.ok()) return s;
  if (name->empty()) return Status::Error(what + ".metadata.name: expected a non-empty string");
  return StringField(*metadata, "resourceVersion", what + ".metadata", resource_version);
}

}  // namespace

Status DecodeNode(std::string_view json, KubeNode* out) {
  simdjson::dom::parser parser;
  element item, metadata;
  if (Status s = Parse(parser, json, "Node", &item); !s.ok()) return s;
  KubeNode n;
  if (Status s = Metadata(item, "Node", &metadata, &n.name, &n.resource_version); !s.ok()) return s;
  element labels;
  if (Field(metadata, "labels", &labels)) {
    object obj;
    if (labels.get_object().get(obj) != SUCCESS)
      return Status::Error("Node " + n.name + ": metadata.labels: expected an object");
    for (auto field : obj) {
      std::string_view v;
      if (field.value.get_string().get(v) != SUCCESS)
        return Status::Error(
            fmt::format("Node {}: metadata.labels.{}: expected a string", n.name, field.key));
      n.labels.emplace(std::string(field.key), std::string(v));
    }
  }
  element spec, unschedulable;
  if (Field(item, "spec", &spec) && Field(spec, "unschedulable", &unschedulable)) {
    bool b = false;
    if (unschedulable.get_bool().get(b) != SUCCESS)
      return Status::Error("Node " + n.name + ": spec.unschedulable: expected true or false");
    n.unschedulable = b;
  }
  element status, allocatable;
  if (Field(item, "status", &status) && Field(status, "allocatable", &allocatable)) {
    object obj;
    if (allocatable.get_object().get(obj) != SUCCESS)
      return Status::Error("Node " + n.name + ": status.allocatable: expected an object");
    for (auto field : obj) {
      std::string_view q;
      const std::string fpath = fmt::format("Node {}: status.allocatable.{}", n.name, field.key);
      if (field.value.get_string().get(q) != SUCCESS)
        return Status::Error(fpath + ": expected a quantity string");
      std::string error;
      if (field.key == "nvidia.com/gpu") {
        bool rounded = false;
        const auto v = ParseQuantityRounded(q, fpath, &error, &rounded);
        if (!v || rounded || *v < 0 || *v > kMaxGpusPerNode)
          return Status::Error(error.empty() ? fpath + ": expected a whole number of GPUs 0.." +
                                                   std::to_string(kMaxGpusPerNode)
                                             : error);
        n.allocatable_gpus = static_cast<int>(*v);
      } else if (field.key == "cpu") {
        const auto v = ParseQuantityMilli(q, fpath, &error);
        if (!v) return Status::Error(error);
        n.cpu_milli_allocatable = *v;
      } else if (field.key == "memory") {
        const auto v = ParseQuantity(q, fpath, &error);
        if (!v) return Status::Error(error);
        n.memory_allocatable = *v;
      }
    }
  }
  *out = std::move(n);
  return Status::Ok();
}

Status DecodePod(std::string_view json, KubePod* out) {
  simdjson::dom::parser parser;
  element item, metadata;
  if (Status s = Parse(parser, json, "Pod", &item); !s.ok()) return s;
  KubePod p;
  if (Status s = Metadata(item, "Pod", &metadata, &p.name, &p.resource_version); !s.ok()) return s;
  const std::string where = "Pod " + p.name;
  if (Status s = StringField(metadata, "namespace", where + ": metadata", &p.namespace_name);
      !s.ok())
    return s;
  if (p.namespace_name.empty()) p.namespace_name = "default";
  if (Status s = StringField(metadata, "uid", where + ": metadata", &p.uid); !s.ok()) return s;
  element deletion;
  p.deleting = Field(metadata, "deletionTimestamp", &deletion);
  element spec, status;
  if (Field(item, "spec", &spec)) {
    if (Status s = StringField(spec, "nodeName", where + ": spec", &p.node_name); !s.ok()) return s;
    if (Status s = StringField(spec, "schedulerName", where + ": spec", &p.scheduler_name); !s.ok())
      return s;
  }
  if (Field(item, "status", &status)) {
    if (Status s = StringField(status, "phase", where + ": status", &p.phase); !s.ok()) return s;
  }
  // The GPU count as kube-scheduler counts it (limits, else requests; init containers).
  RawPod raw;
  if (Status s = DecodePodJson(json, &raw); !s.ok()) return s;
  const PodDemand demand = ToPodDemand(raw);
  p.gpus = demand.gpu_count;
  p.annotations = std::move(raw.annotations);
  *out = std::move(p);
  return Status::Ok();
}

Status DecodeList(std::string_view json, ListPage* out) {
  simdjson::dom::parser parser;
  element root, metadata, items;
  if (Status s = Parse(parser, json, "list", &root); !s.ok()) return s;
  ListPage page;
  if (Field(root, "metadata", &metadata)) {
    if (Status s =
            StringField(metadata, "resourceVersion", "list.metadata", &page.resource_version);
        !s.ok())
      return s;
    if (Status s = StringField(metadata, "continue", "list.metadata", &page.continue_token);
        !s.ok())
      return s;
  }
  if (Field(root, "items", &items)) {
    simdjson::dom::array arr;
    if (items.get_array().get(arr) != SUCCESS)
      return Status::Error("list.items: expected an array");
    page.items.reserve(arr.size());
    for (element item : arr) {
      if (!item.is_object())
        return Status::Error(fmt::format("list.items[{}]: expected an object", page.items.size()));
      page.items.push_back(simdjson::minify(item));
    }
  }
  *out = std::move(page);
  return Status::Ok();
}

Status DecodeApiStatus(std::string_view json, ApiStatus* out) {
  simdjson::dom::parser parser;
  element root, code;
  if (Status s = Parse(parser, json, "Status", &root); !s.ok()) return s;
  ApiStatus st;
  if (Field(root, "code", &code)) {
    std::int64_t c = 0;
    if (code.get_int64().get(c) != SUCCESS || c < 0 || c > 999)
      return Status::Error("Status.code: expected an HTTP status number");
    st.code = static_cast<int>(c);
  }
  if (Status s = StringField(root, "reason", "Status", &st.reason); !s.ok()) return s;
  if (Status s = StringField(root, "message", "Status", &st.message); !s.ok()) return s;
  *out = std::move(st);
  return Status::Ok();
}

Status DecodeWatchEvent(std::string_view line, WatchEvent* out) {
  simdjson::dom::parser parser;
  element root, object_el, metadata;
  if (Status s = Parse(parser, line, "watch event", &root); !s.ok()) return s;
  std::string type;
  if (Status s = StringField(root, "type", "watch event", &type); !s.ok()) return s;
  WatchEvent ev;
  if (type == "ADDED")
    ev.type = WatchEvent::Type::kAdded;
  else if (type == "MODIFIED")
    ev.type = WatchEvent::Type::kModified;
  else if (type == "DELETED")
    ev.type = WatchEvent::Type::kDeleted;
  else if (type == "BOOKMARK")
    ev.type = WatchEvent::Type::kBookmark;
  else if (type == "ERROR")
    ev.type = WatchEvent::Type::kError;
  else
    return Status::Error("watch event.type: \"" + type.substr(0, 40) +
                         "\" (expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)");
  if (!Field(root, "object", &object_el) || !object_el.is_object())
    return Status::Error("watch event.object: expected an object");
  if (Field(object_el, "metadata", &metadata)) {
    if (Status s = StringField(metadata, "resourceVersion", "watch event.object.metadata",
                               &ev.resource_version);
        !s.ok())
      return s;
  }
  ev.object = simdjson::minify(object_el);
  *out = std::move(ev);
  return Status::Ok();
}

namespace {
void AppendString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      *out += fmt::format("\\u{:04x}", c);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}
}  // namespace

std::string EncodeBinding(std::string_view ns, std::string_view name, std::string_view uid,
                          std::string_view node,
                          const std::vector<std::pair<std::string, std::string>>& annotations) {
  std::string out = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)";
  AppendString(name, &out);
  out += R"(,"namespace":)";
  AppendString(ns, &out);
  if (!uid.empty()) {
    out += R"(,"uid":)";
    AppendString(uid, &out);
  }
  if (!annotations.empty()) {
    out += R"(,"annotations":{)";
    for (std::size_t i = 0; i < annotations.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendString(annotations[i].first, &out);
      out.push_back(':');
      AppendString(annotations[i].second, &out);
    }
    out.push_back('}');
  }
  out += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)";
  AppendString(node, &out);
  out += "}}";
  return out;
}

std::string EncodeAnnotationPatch(std::string_view key, std::string_view value) {
  std::string out = R"({"metadata":{"annotations":{)";
  AppendString(key, &out);
  out.push_back(':');
  AppendString(value, &out);
  out += "}}}";
  return out;
}

std::string EncodeEviction(std::string_view ns, std::string_view name) {
  std::string out = R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":)";
  AppendString(name, &out);
  out += R"(,"namespace":)";
  AppendString(ns, &out);
  out += "}}";
  return out;
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace tidal::kube
