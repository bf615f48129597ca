#include "tidal/extender/wire.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <cstring>

#include "tidal/core/quantity.h"
#include "tidal/core/text.h"

namespace tidal::extender {
namespace {

using simdjson::SUCCESS;
using simdjson::dom::element;
using simdjson::dom::object;

// The member `key` (case-insensitive, as Go's decoder matches), absent or null → false.
bool Member(object obj, std::string_view key, element* out) {
  if (obj.at_key_case_insensitive(key).get(*out) != SUCCESS) return false;
  return !out->is_null();
}

// Kubernetes objects use their own exact camelCase keys.
bool Field(element e, std::string_view key, element* out) {
  object obj;
  if (e.get_object().get(obj) != SUCCESS) return false;
  if (obj.at_key(key).get(*out) != SUCCESS) return false;
  return !out->is_null();
}

// Paths in messages are built only for an error: a 5 000-node payload has some
// 50 000 fields, and formatting a path for each was most of the decoding time.
Status DecodeNode(element item, std::size_t index, bool keep_json, WireNode* node) {
  const auto path = [index] { return fmt::format("Nodes.items[{}]", index); };
  element metadata, name;
  std::string_view text;
  if (!Field(item, "metadata", &metadata) || !Field(metadata, "name", &name) ||
      name.get_string().get(text) != SUCCESS || text.empty())
    return Status::Error(path() + ".metadata.name: expected a non-empty string");
  node->name = std::string(text);
  element labels;
  if (Field(metadata, "labels", &labels)) {
    object obj;
    if (labels.get_object().get(obj) != SUCCESS)
      return Status::Error(path() + ".metadata.labels: expected an object");
    for (auto field : obj) {
      std::string_view v;
      if (field.value.get_string().get(v) != SUCCESS)
        return Status::Error(
            fmt::format("{}.metadata.labels.{}: expected a string", path(), field.key));
      // The API server writes map keys sorted: appending at the end is the usual case.
      node->labels.emplace_hint(node->labels.end(), std::string(field.key), std::string(v));
    }
  }
  element status, allocatable;
  if (Field(item, "status", &status) && Field(status, "allocatable", &allocatable)) {
    object obj;
    if (allocatable.get_object().get(obj) != SUCCESS)
      return Status::Error(path() + ".status.allocatable: expected an object");
    for (auto field : obj) {
      std::string_view q;
      const auto fpath = [&] { return fmt::format("{}.status.allocatable.{}", path(), field.key); };
      if (field.value.get_string().get(q) != SUCCESS)
        return Status::Error(fpath() + ": expected a quantity string");
      std::string error;
      if (field.key == "nvidia.com/gpu") {
        bool rounded = false;
        const auto v = ParseQuantityRounded(q, "", &error, &rounded);
        if (!v || rounded || *v < 0 || *v > kMaxGpusPerNode) {
          if (!v) ParseQuantityRounded(q, fpath(), &error, &rounded);  // the message, named
          return Status::Error(!v ? error
                                  : fpath() + ": expected a whole number of GPUs 0.." +
                                        std::to_string(kMaxGpusPerNode));
        }
        node->allocatable_gpus = static_cast<int>(*v);
      } else if (field.key == "cpu") {
        const auto v = ParseQuantityMilli(q, "", &error);
        if (!v) {
          ParseQuantityMilli(q, fpath(), &error);
          return Status::Error(error);
        }
        node->cpu_milli_allocatable = *v;
      } else if (field.key == "memory") {
        const auto v = ParseQuantity(q, "", &error);
        if (!v) {
          ParseQuantity(q, fpath(), &error);
          return Status::Error(error);
        }
        node->memory_allocatable = *v;
      }
    }
  }
  if (keep_json) node->json = simdjson::minify(item);
  return Status::Fits();
}

}  // namespace

namespace {

// Whether a byte of the 8 in `w` needs escaping: below 0x20, '"' or '\\' (exact as a
// whole, the bit tricks of "determine if a word has a byte less than n").
bool NeedsEscape8(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return (below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) != 0;
}

}  // namespace

void AppendJsonString(std::string_view text, std::string* out) {
  // Fast path, 8 bytes at a time: nothing to escape (node names, reasons) is one copy.
  const std::size_t n = text.size();
  bool plain = true;
  std::uint64_t w;
  if (n >= 8) {
    for (std::size_t i = 0; plain && i + 8 <= n; i += 8) {
      std::memcpy(&w, text.data() + i, 8);
      plain = !NeedsEscape8(w);
    }
    // The last 8 bytes, overlapping the words before: no byte-by-byte tail.
    std::memcpy(&w, text.data() + n - 8, 8);
    plain = plain && !NeedsEscape8(w);
  } else {
    w = 0x2020202020202020ULL;                   // spaces: plain
    if (n > 0) std::memcpy(&w, text.data(), n);  // an empty view may have no data
    plain = !NeedsEscape8(w);
  }
  if (plain) {
    const std::size_t at = out->size();
    out->resize(at + text.size() + 2);
    char* p = out->data() + at;
    *p = '"';
    std::memcpy(p + 1, text.data(), text.size());
    p[text.size() + 1] = '"';
    return;
  }
  out->push_back('"');
  // Runs without anything to escape (all of a node name) are copied in one go.
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        *out += fmt::format("\\u{:04x}", c);
    }
  }
  out->append(text.data() + run, text.size() - run);
  out->push_back('"');
}

struct ArgsDecoder::Impl {
  simdjson::dom::parser parser;
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
};

ArgsDecoder::ArgsDecoder() : impl_(std::make_unique<Impl>()) {}
ArgsDecoder::~ArgsDecoder() = default;

Status DecodeExtenderArgs(std::string_view body, const DecodeOptions& options, ExtenderArgs* out) {
  ArgsDecoder decoder;
  return decoder.Decode(body, options, out);
}

Status ArgsDecoder::Decode(std::string_view body, const DecodeOptions& options, ExtenderArgs* out) {
  out->pod = RawPod{};
  out->has_nodes = out->has_node_names = false;
  out->nodes.clear();
  out->node_names.clear();
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse a padded copy.
  if (impl_->capacity < body.size() + simdjson::SIMDJSON_PADDING) {
    impl_->capacity = body.size() + simdjson::SIMDJSON_PADDING;
    impl_->buffer = std::make_unique<char[]>(impl_->capacity);
  }
  std::memcpy(impl_->buffer.get(), body.data(), body.size());
  std::memset(impl_->buffer.get() + body.size(), 0, simdjson::SIMDJSON_PADDING);
  simdjson::dom::parser& parser = impl_->parser;
  element root;
  if (const auto err = parser.parse(impl_->buffer.get(), body.size(), false).get(root);
      err != SUCCESS)
    return Status::Error(std::string("request body is not JSON: ") + simdjson::error_message(err));
  object args;
  if (root.get_object().get(args) != SUCCESS)
    return Status::Error("request body: expected an ExtenderArgs object");
  element pod;
  if (!Member(args, "Pod", &pod) || !pod.is_object())
    return Status::Error("Pod: expected the Pod object being scheduled");
  Status s = DecodePodJson(simdjson::minify(pod), &out->pod);
  if (!s.ok()) return Status::Error("Pod: " + s.reason());

  element nodes;
  if (Member(args, "Nodes", &nodes)) {
    element items;
    simdjson::dom::array list;
    if (!nodes.is_object()) return Status::Error("Nodes: expected a NodeList object");
    // A NodeList without items (or items: null) is an empty list. Only iterate an
    // array that was found: a default dom::array has no document behind it.
    const bool has_items = Field(nodes, "items", &items);
    if (has_items && items.get_array().get(list) != SUCCESS)
      return Status::Error("Nodes.items: expected an array");
    out->has_nodes = true;
    if (has_items) {
      out->nodes.reserve(list.size());
      std::size_t i = 0;
      for (element item : list) {
        out->nodes.emplace_back();
        s = DecodeNode(item, i++, options.keep_node_json, &out->nodes.back());
        if (!s.ok()) return s;
      }
    }
  }
  element names;
  if (Member(args, "NodeNames", &names)) {
    simdjson::dom::array list;
    if (names.get_array().get(list) != SUCCESS)
      return Status::Error("NodeNames: expected an array of node names");
    out->has_node_names = true;
    out->node_names.reserve(list.size());
    std::size_t i = 0;
    for (element e : list) {
      std::string_view name;
      if (e.get_string().get(name) != SUCCESS || name.empty())
        return Status::Error(fmt::format("NodeNames[{}]: expected a non-empty string", i));
      out->node_names.emplace_back(name);
      ++i;
    }
  }
  if (!out->has_nodes && !out->has_node_names)
    return Status::Error("neither Nodes nor NodeNames is set: nothing to filter");
  return Status::Fits();
}

Status DecodeBindingArgs(std::string_view body, BindingArgs* out) {
  *out = BindingArgs{};
  simdjson::dom::parser parser;
  element root;
  const simdjson::padded_string padded(body);
  object args;
  if (parser.parse(padded).get(root) != SUCCESS || root.get_object().get(args) != SUCCESS)
    return Status::Error("request body: expected an ExtenderBindingArgs JSON object");
  const std::pair<const char*, std::string*> fields[] = {{"PodName", &out->pod_name},
                                                         {"PodNamespace", &out->pod_namespace},
                                                         {"PodUID", &out->pod_uid},
                                                         {"Node", &out->node}};
  for (const auto& [key, dst] : fields) {
    element e;
    std::string_view v;
    if (Member(args, key, &e) && e.get_string().get(v) != SUCCESS)
      return Status::Error(std::string(key) + ": expected a string");
    *dst = std::string(v);
  }
  if (out->pod_name.empty() || out->node.empty())
    return Status::Error("PodName and Node are required");
  if (out->pod_namespace.empty()) out->pod_namespace = "default";
  return Status::Fits();
}

void EncodeFilterResult(const FilterResult& r, std::string* out) {
  out->clear();
  std::size_t size = 128;
  for (const auto* n : r.nodes) size += n->json.size() + 1;
  for (const auto& n : r.node_names) size += n.size() + 3;
  for (const auto& [n, why] : r.failed) size += n.size() + why.size() + 6;
  for (const auto& [n, why] : r.unresolvable) size += n.size() + why.size() + 6;
  out->reserve(size);
  *out += "{\"Nodes\":";
  if (r.with_nodes) {
    *out += "{\"metadata\":{},\"items\":[";
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      if (i) out->push_back(',');
      *out += r.nodes[i]->json;
    }
    *out += "]}";
  } else {
    *out += "null";
  }
  *out += ",\"NodeNames\":";
  if (r.with_node_names) {
    out->push_back('[');
    for (std::size_t i = 0; i < r.node_names.size(); ++i) {
      if (i) out->push_back(',');
      AppendJsonString(r.node_names[i], out);
    }
    out->push_back(']');
  } else {
    *out += "null";
  }
  auto map = [&](const char* key, const auto& entries) {
    *out += ",\"";
    *out += key;
    *out += "\":{";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i) out->push_back(',');
      AppendJsonString(entries[i].first, out);
      out->push_back(':');
      AppendJsonString(entries[i].second, out);
    }
    out->push_back('}');
  };
  map("FailedNodes", r.failed);
  map("FailedAndUnresolvableNodes", r.unresolvable);
  *out += ",\"Error\":";
  AppendJsonString(r.error, out);
  out->push_back('}');
}

void EncodeHostPriorityList(const std::vector<HostPriority>& list, std::string* out) {
  out->clear();
  out->reserve(list.size() * 32 + 2);
  out->push_back('[');
  char buf[24];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i) out->push_back(',');
    *out += "{\"Host\":";
    AppendJsonString(list[i].host, out);
    *out += ",\"Score\":";
    const auto res = std::to_chars(buf, buf + sizeof buf, list[i].score);
    out->append(buf, res.ptr);
    out->push_back('}');
  }
  out->push_back(']');
}

void EncodeBindingResult(std::string_view error, std::string* out) {
  out->clear();
  *out += "{\"Error\":";
  AppendJsonString(error, out);
  out->push_back('}');
}

}  // namespace tidal::extender
