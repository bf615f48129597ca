#include "tidal/extender/wire.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>

#include "tidal/core/fast_text.h"
#include "tidal/core/text.h"
#include "tidal/kubetypes/quantity.h"

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

namespace od = simdjson::ondemand;

Status NotJson(simdjson::error_code err) {
  return Status::Error(std::string("request body is not JSON: ") + simdjson::error_message(err));
}

// A simdjson error that is about the input's shape rather than its syntax.
bool WrongType(simdjson::error_code err) {
  return err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_ERROR;
}

// The next member of an object being iterated, and its key (unescaped).
inline simdjson::error_code NextField(simdjson::simdjson_result<od::field>&& member, od::field* f,
                                      std::string_view* key) {
  if (const auto err = std::move(member).get(*f)) return err;
  return f->unescaped_key().get(*key);
}

// The type of `v` without consuming it; errors are syntax errors.
simdjson::error_code TypeOf(od::value& v, od::json_type* t) { return v.type().get(*t); }

// Paths in messages are built only for an error: a 5 000-node payload has some
// 50 000 fields, and formatting a path for each was most of the decoding time.
// Kubernetes objects use their own exact camelCase keys; fields not read here
// (images, conditions, ...) are skipped without being decoded.
Status DecodeMetadata(od::value& v, const std::function<std::string()>& path, WireNode* node,
                      Labels* spare, bool* has_name) {
  od::object obj;
  if (const auto err = v.get_object().get(obj))
    return WrongType(err) ? Status::Error(path() + ".metadata.name: expected a non-empty string")
                          : NotJson(err);
  for (auto field : obj) {
    od::field f;
    std::string_view key;
    if (const auto err = NextField(std::move(field), &f, &key)) return NotJson(err);
    od::value& value = f.value();
    if (key == "name") {
      std::string_view name;
      if (const auto err = value.get_string().get(name)) {
        if (!WrongType(err)) return NotJson(err);
        return Status::Error(path() + ".metadata.name: expected a non-empty string");
      }
      node->name.assign(name);
      *has_name = !name.empty();
    } else if (key == "labels") {
      od::json_type t;
      if (const auto err = TypeOf(value, &t)) return NotJson(err);
      if (t == od::json_type::null) continue;
      od::object labels;
      if (const auto err = value.get_object().get(labels))
        return WrongType(err) ? Status::Error(path() + ".metadata.labels: expected an object")
                              : NotJson(err);
      node->labels.clear();  // a repeated "labels": the last one counts, as in Go
      for (auto label : labels) {
        od::field lf;
        std::string_view name, text;
        if (const auto err = NextField(std::move(label), &lf, &name)) return NotJson(err);
        if (const auto err = lf.value().get_string().get(text)) {
          if (!WrongType(err)) return NotJson(err);
          return Status::Error(
              fmt::format("{}.metadata.labels.{}: expected a string", path(), name));
        }
        // The API server writes map keys sorted: appending at the end is the usual case.
        // A warm context reuses the last request's map nodes and their strings.
        if (spare->empty()) {
          node->labels.emplace_hint(node->labels.end(), std::string(name), std::string(text));
        } else {
          auto reused = spare->extract(spare->begin());
          reused.key().assign(name);
          reused.mapped().assign(text);
          node->labels.insert(node->labels.end(), std::move(reused));
        }
      }
    }
  }
  return Status::Ok();
}

Status DecodeAllocatable(od::value& v, const std::function<std::string()>& path, WireNode* node) {
  od::object obj;
  if (const auto err = v.get_object().get(obj))
    return WrongType(err) ? Status::Error(path() + ".status.allocatable: expected an object")
                          : NotJson(err);
  for (auto field : obj) {
    od::field f;
    std::string_view key, q;
    if (const auto err = NextField(std::move(field), &f, &key)) return NotJson(err);
    const auto fpath = [&] { return fmt::format("{}.status.allocatable.{}", path(), key); };
    if (const auto err = f.value().get_string().get(q)) {
      if (!WrongType(err)) return NotJson(err);
      return Status::Error(fpath() + ": expected a quantity string");
    }
    std::string error;
    if (key == "nvidia.com/gpu") {
      bool rounded = false;
      const auto n = ParseQuantityRounded(q, "", &error, &rounded);
      if (!n || rounded || *n < 0 || *n > kMaxGpusPerNode) {
        if (!n) ParseQuantityRounded(q, fpath(), &error, &rounded);  // the message, named
        return Status::Error(!n ? error
                                : fpath() + ": expected a whole number of GPUs 0.." +
                                      std::to_string(kMaxGpusPerNode));
      }
      node->allocatable_gpus = static_cast<int>(*n);
    } else if (key == "cpu") {
      const auto n = ParseQuantityMilli(q, "", &error);
      if (!n) {
        ParseQuantityMilli(q, fpath(), &error);
        return Status::Error(error);
      }
      node->cpu_milli_allocatable = *n;
    } else if (key == "memory") {
      const auto n = ParseQuantity(q, "", &error);
      if (!n) {
        ParseQuantity(q, fpath(), &error);
        return Status::Error(error);
      }
      node->memory_allocatable = *n;
    }
  }
  return Status::Ok();
}

// `doc` is the document `item` is in: where it is before and after the node gives
// the node's own bytes, echoed for survivors. On-demand skips the fields it does
// not read without checking them, so with `validator` set (echo) those bytes are
// parsed in full first: the reply must be JSON whatever the request held.
Status DecodeNode(od::document& doc, od::value item, std::size_t index,
                  simdjson::dom::parser* validator, WireNode* node) {
  const bool keep_json = validator != nullptr;
  const std::function<std::string()> path = [index] {
    return fmt::format("Nodes.items[{}]", index);
  };
  const char* begin = nullptr;
  if (keep_json) {
    if (const auto err = doc.current_location().get(begin)) return NotJson(err);
  }
  od::object obj;
  if (const auto err = item.get_object().get(obj))
    return WrongType(err) ? Status::Error(path() + ": expected a Node object") : NotJson(err);
  bool has_name = false;
  Labels spare;  // the map nodes of the last request's node at this index
  spare.swap(node->labels);
  for (auto field : obj) {
    od::field f;
    std::string_view key;
    if (const auto err = NextField(std::move(field), &f, &key)) return NotJson(err);
    od::value& value = f.value();
    if (key == "metadata") {
      Status s = DecodeMetadata(value, path, node, &spare, &has_name);
      if (!s.ok()) return s;
      continue;
    }
    od::json_type t;
    if (key != "status") continue;
    if (const auto err = TypeOf(value, &t)) return NotJson(err);
    if (t == od::json_type::object) {
      od::object status;
      if (const auto err = value.get_object().get(status)) return NotJson(err);
      for (auto sfield : status) {
        od::field sf;
        std::string_view skey;
        if (const auto err = NextField(std::move(sfield), &sf, &skey)) return NotJson(err);
        if (skey != "allocatable") continue;
        od::json_type at;
        if (const auto err = TypeOf(sf.value(), &at)) return NotJson(err);
        if (at == od::json_type::null) continue;
        Status s = DecodeAllocatable(sf.value(), path, node);
        if (!s.ok()) return s;
      }
    }
  }
  if (!has_name) return Status::Error(path() + ".metadata.name: expected a non-empty string");
  if (keep_json) {
    // Past the object's closing brace: at the ',' or ']' after it.
    const char* end = nullptr;
    if (const auto err = doc.current_location().get(end)) return NotJson(err);
    const std::string_view raw =
        TrimJsonSpaceRight(std::string_view(begin, static_cast<std::size_t>(end - begin)));
    // The bytes after `raw` are the rest of the padded body: readable, as simdjson needs.
    simdjson::dom::element checked;
    if (const auto err = validator->parse(raw.data(), raw.size(), false).get(checked))
      return Status::Error(path() + ": not valid JSON: " + simdjson::error_message(err));
    node->json.assign(raw);
  }
  return Status::Ok();
}

}  // namespace

namespace {

template <std::size_t N>
char* WriteLiteral(char* p, const char (&text)[N]) {
  std::memcpy(p, text, N - 1);
  return p + N - 1;
}

}  // namespace

namespace {
// The end of a JSON string's contents that start at `p` (just past the opening
// quote; stage 1 has checked that the string is closed, UTF-8 and free of raw
// control bytes), and whether they hold an escape. Reads 16 bytes at a time:
// the input buffer is padded (SIMDJSON_PADDING) past its end.
const char* StringEnd(const char* p, bool* escaped) {
#if defined(__SSE2__)
  for (;; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int quote = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    const int slash = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    if ((quote | slash) == 0) continue;
    const int first = __builtin_ctz(static_cast<unsigned>(quote | slash));
    if (quote & (1 << first)) {
      *escaped = false;
      return p + first;
    }
    break;  // an escape comes first
  }
#endif
  // With escapes (or without SSE2): the first quote not escaped.
  *escaped = false;
  for (;; ++p) {
    if (*p == '\\') {
      *escaped = true;
      ++p;
    } else if (*p == '"') {
      return p;
    }
  }
}
}  // namespace

struct ArgsDecoder::Impl {
  od::parser parser;
  simdjson::dom::parser validator;  // of the nodes echoed back, and names with escapes
  std::string quoted;               // a name with escapes, to unescape
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
  Status Decode(std::string_view body, const DecodeOptions& options, ExtenderArgs* out);
};

ArgsDecoder::ArgsDecoder() : impl_(std::make_unique<Impl>()) {}
ArgsDecoder::~ArgsDecoder() = default;

Status DecodeExtenderArgs(std::string_view body, const DecodeOptions& options, ExtenderArgs* out) {
  ArgsDecoder decoder;
  const Status s = decoder.Decode(body, options, out);
  out->pod_json = {};  // it pointed into the decoder's buffer, gone with it
  return s;
}

Status ArgsDecoder::Decode(std::string_view body, const DecodeOptions& options, ExtenderArgs* out) {
  Status s = impl_->Decode(body, options, out);
  if (!s.ok()) {
    out->pod = RawPod{};
    out->has_nodes = out->has_node_names = false;
    out->nodes.clear();
    out->node_names.clear();
    out->pod_json = {};
  }
  return s;
}

// On-demand: only the fields read are decoded (a node's images and conditions, most
// of its bytes, are skipped), and a warm context reuses its strings and nodes.
Status ArgsDecoder::Impl::Decode(std::string_view body, const DecodeOptions& options,
                                 ExtenderArgs* out) {
  out->pod = RawPod{};
  out->has_nodes = out->has_node_names = false;
  std::size_t node_count = 0;
  out->node_names.clear();
  out->pod_json = {};
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse a padded copy.
  if (capacity < body.size() + simdjson::SIMDJSON_PADDING) {
    capacity = body.size() + simdjson::SIMDJSON_PADDING;
    buffer.reset(new char[capacity]);
  }
  std::memcpy(buffer.get(), body.data(), body.size());
  std::memset(buffer.get() + body.size(), 0, simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (const auto err = parser.iterate(buffer.get(), body.size(), capacity).get(doc))
    return NotJson(err);
  od::object args;
  if (const auto err = doc.get_object().get(args))
    return WrongType(err) ? Status::Error("request body: expected an ExtenderArgs object")
                          : NotJson(err);
  bool has_pod = false;
  for (auto field : args) {
    od::field f;
    std::string_view key;
    if (const auto err = NextField(std::move(field), &f, &key)) return NotJson(err);
    od::value& value = f.value();
    const bool is_pod = EqualsIgnoreCase(key, "pod"), is_nodes = EqualsIgnoreCase(key, "nodes"),
               is_names = EqualsIgnoreCase(key, "nodenames");
    if (!is_pod && !is_nodes && !is_names) continue;
    od::json_type t;
    if (const auto err = TypeOf(value, &t)) return NotJson(err);
    if (t == od::json_type::null) continue;  // null is absent
    if (is_pod) {
      od::object pod;
      std::string_view raw;
      if (t != od::json_type::object)
        return Status::Error("Pod: expected the Pod object being scheduled");
      if (const auto err = value.get_object().get(pod)) return NotJson(err);
      if (const auto err = pod.raw_json().get(raw)) return NotJson(err);
      out->pod_json = TrimJsonSpaceRight(raw);
      Status s = DecodePodJson(out->pod_json, &out->pod);
      if (!s.ok()) return Status::Error("Pod: " + s.reason());
      has_pod = true;
    } else if (is_nodes) {
      if (t != od::json_type::object) return Status::Error("Nodes: expected a NodeList object");
      od::object list;
      if (const auto err = value.get_object().get(list)) return NotJson(err);
      out->has_nodes = true;
      node_count = 0;
      for (auto lfield : list) {
        od::field lf;
        std::string_view lkey;
        if (const auto err = NextField(std::move(lfield), &lf, &lkey)) return NotJson(err);
        if (lkey != "items") continue;
        od::json_type it;
        if (const auto err = TypeOf(lf.value(), &it)) return NotJson(err);
        if (it == od::json_type::null) continue;  // a NodeList without items is empty
        if (it != od::json_type::array) return Status::Error("Nodes.items: expected an array");
        od::array items;
        if (const auto err = lf.value().get_array().get(items)) return NotJson(err);
        node_count = 0;
        for (auto item : items) {
          od::value v;
          if (const auto err = std::move(item).get(v)) return NotJson(err);
          // Reuse the node objects (and their strings' storage) of the last request.
          if (node_count == out->nodes.size()) out->nodes.emplace_back();
          WireNode& node = out->nodes[node_count];
          node.allocatable_gpus = -1;
          node.cpu_milli_allocatable = 0;
          node.memory_allocatable = 0;
          node.json.clear();
          Status s =
              DecodeNode(doc, v, node_count, options.keep_node_json ? &validator : nullptr, &node);
          if (!s.ok()) return s;
          ++node_count;
        }
      }
    } else {
      if (t != od::json_type::array)
        return Status::Error("NodeNames: expected an array of node names");
      od::array names;
      if (const auto err = value.get_array().get(names)) return NotJson(err);
      out->has_node_names = true;
      out->node_names.clear();
      for (auto e : names) {
        od::value v;
        std::string_view name;
        if (const auto err = std::move(e).get(v)) return NotJson(err);
        // A name without escapes is read where it is, not copied to be unescaped;
        // one with escapes is unescaped by a DOM parse of the string alone.
        od::raw_json_string raw;
        if (const auto err = v.get_raw_json_string().get(raw); err && !WrongType(err))
          return NotJson(err);
        if (raw.raw() != nullptr) {
          bool escaped = false;
          const char* end = StringEnd(raw.raw(), &escaped);
          name = std::string_view(raw.raw(), static_cast<std::size_t>(end - raw.raw()));
          if (escaped) {
            quoted.assign(1, '"').append(name).push_back('"');
            simdjson::dom::element unescaped;
            if (const auto err = validator.parse(quoted).get(unescaped)) return NotJson(err);
            if (const auto err = unescaped.get_string().get(name)) return NotJson(err);
          }
        }
        if (name.empty())
          return Status::Error(
              fmt::format("NodeNames[{}]: expected a non-empty string", out->node_names.size()));
        out->node_names.push_back(name);
      }
    }
  }
  // Past the object only the end may remain (current_location fails there).
  if (const char* after = nullptr; doc.current_location().get(after) == SUCCESS)
    return Status::Error("request body is not JSON: content after the ExtenderArgs object");
  out->nodes.resize(node_count);
  if (!has_pod) return Status::Error("Pod: expected the Pod object being scheduled");
  if (!out->has_nodes && !out->has_node_names)
    return Status::Error("neither Nodes nor NodeNames is set: nothing to filter");
  return Status::Ok();
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
  return Status::Ok();
}

// The replies are sized first and then written through a pointer: at 5 000 nodes a
// filter reply holds some 10 000 strings, and appending each to a std::string
// (capacity checks, a resize per string) cost more than deciding on the nodes.
void EncodeFilterResult(const FilterResult& r, std::string* out) {
  // Sizes of the JSON strings, in the order they are written: names, then the
  // (name, reason) pairs of failed, then of unresolvable.
  std::vector<std::uint32_t> sizes;
  sizes.reserve(r.node_names.size() + 2 * (r.failed.size() + r.unresolvable.size()));
  std::size_t total = 128 + JsonStringSize(r.error);
  for (const auto* n : r.nodes) total += n->json.size() + 1;
  const auto count = [&](std::string_view text) {
    const std::size_t size = JsonStringSize(text);
    sizes.push_back(static_cast<std::uint32_t>(size));
    total += size + 1;
  };
  for (const auto& n : r.node_names) count(n);
  for (const auto& [n, why] : r.failed) count(n), count(why);
  for (const auto& [n, why] : r.unresolvable) count(n), count(why);
  for (const auto* runs : {&r.node_names_json, &r.failed_json, &r.unresolvable_json})
    for (const auto run : *runs) total += run.size() + 1;
  out->resize(total);
  char* p = out->data();
  std::size_t k = 0;
  const auto string = [&](std::string_view text) { p = WriteJsonString(p, text, sizes[k++]); };
  // The encoded runs after `entries` written entries, each after a comma but the first.
  const auto runs = [&](const std::vector<std::string_view>& encoded, std::size_t entries) {
    bool first = entries == 0;
    for (const auto run : encoded) {
      if (run.empty()) continue;
      if (!first) *p++ = ',';
      first = false;
      std::memcpy(p, run.data(), run.size());
      p += run.size();
    }
  };
  p = WriteLiteral(p, "{\"Nodes\":");
  if (r.with_nodes) {
    p = WriteLiteral(p, "{\"metadata\":{},\"items\":[");
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      if (i) *p++ = ',';
      std::memcpy(p, r.nodes[i]->json.data(), r.nodes[i]->json.size());
      p += r.nodes[i]->json.size();
    }
    p = WriteLiteral(p, "]}");
  } else {
    p = WriteLiteral(p, "null");
  }
  p = WriteLiteral(p, ",\"NodeNames\":");
  if (r.with_node_names) {
    *p++ = '[';
    for (std::size_t i = 0; i < r.node_names.size(); ++i) {
      if (i) *p++ = ',';
      string(r.node_names[i]);
    }
    runs(r.node_names_json, r.node_names.size());
    *p++ = ']';
  } else {
    p = WriteLiteral(p, "null");
  }
  const auto map = [&](const auto& entries, const std::vector<std::string_view>& encoded) {
    *p++ = '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i) *p++ = ',';
      string(entries[i].first);
      *p++ = ':';
      string(entries[i].second);
    }
    runs(encoded, entries.size());
    *p++ = '}';
  };
  p = WriteLiteral(p, ",\"FailedNodes\":");
  map(r.failed, r.failed_json);
  p = WriteLiteral(p, ",\"FailedAndUnresolvableNodes\":");
  map(r.unresolvable, r.unresolvable_json);
  p = WriteLiteral(p, ",\"Error\":");
  p = WriteJsonString(p, r.error, JsonStringSize(r.error));
  *p++ = '}';
  out->resize(static_cast<std::size_t>(p - out->data()));
}

void EncodeHostPriorityList(const std::vector<HostPriority>& list, std::string* out) {
  constexpr char kHost[] = "{\"Host\":";
  constexpr char kScore[] = ",\"Score\":";
  std::vector<std::uint32_t> sizes(list.size());
  std::size_t total = 2;
  for (std::size_t i = 0; i < list.size(); ++i) {
    sizes[i] = static_cast<std::uint32_t>(JsonStringSize(list[i].host));
    total += sizes[i] + sizeof kHost + sizeof kScore + 22;
  }
  out->resize(total);
  char* p = out->data();
  *p++ = '[';
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i) *p++ = ',';
    p = WriteLiteral(p, kHost);
    p = WriteJsonString(p, list[i].host, sizes[i]);
    p = WriteLiteral(p, kScore);
    p = std::to_chars(p, p + 21, list[i].score).ptr;
    *p++ = '}';
  }
  *p++ = ']';
  out->resize(static_cast<std::size_t>(p - out->data()));
}

void EncodeHostPriorities(const StringList& names, std::span<const char> keep,
                          std::span<const std::int64_t> scores, std::string* out) {
  constexpr char kHost[] = "{\"Host\":";
  constexpr char kScore[] = ",\"Score\":";
  // Names with nothing to escape (node names have nothing) are copied as they are,
  // the output sized from all their bytes at once.
  const std::string_view bytes = names.bytes();
  if (JsonStringSize(bytes) != bytes.size() + 2) {
    std::vector<HostPriority> list;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (keep[i]) list.push_back({names[i], scores[i]});
    EncodeHostPriorityList(list, out);
    return;
  }
  // Sized for the entries kept, each with its name, two quotes, the two literals, the
  // digits of the largest score (up to 20) and `}` and `,`: resize writes every byte
  // it adds, and a bound for every name's entry is twice the bytes written.
  std::size_t kept = 0;
  std::int64_t widest = 0;
  bool negative = false;
  for (std::size_t i = 0; i < names.size(); ++i) {
    kept += keep[i] ? 1 : 0;
    widest = std::max(widest, scores[i]);
    negative |= scores[i] < 0;
  }
  char digits[24];
  const std::size_t width =
      negative ? 20
               : static_cast<std::size_t>(
                     std::to_chars(digits, digits + sizeof digits, widest).ptr - digits);
  out->resize(2 + bytes.size() + kept * (2 + sizeof kHost + sizeof kScore + width + 2));
  char* p = out->data();
  *p++ = '[';
  bool first = true;
  names.ForEach([&](std::size_t i, std::string_view name) {
    if (!keep[i]) return;
    if (!first) *p++ = ',';
    first = false;
    p = WriteLiteral(p, kHost);
    *p++ = '"';
    p = CopyText(p, name);
    *p++ = '"';
    p = WriteLiteral(p, kScore);
    const std::int64_t score = scores[i];
    if (score >= 0 && score <= 10) {  // kube-scheduler's range: one or two digits, no call
      if (score == 10) *p++ = '1';
      *p++ = static_cast<char>('0' + score % 10);
    } else {
      p = std::to_chars(p, p + 21, score).ptr;
    }
    *p++ = '}';
  });
  *p++ = ']';
  out->resize(static_cast<std::size_t>(p - out->data()));
}

std::string_view TrimJsonSpaceRight(std::string_view text) {
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

void EncodeNamesArgs(std::string_view pod_json, std::span<const std::string_view> name_runs,
                     std::string* out) {
  constexpr std::string_view kHead = R"({"Pod":)", kNames = R"(,"Nodes":null,"NodeNames":[)";
  std::size_t size = kHead.size() + pod_json.size() + kNames.size() + 2;
  for (const std::string_view run : name_runs) size += run.size() + 1;
  out->clear();
  out->reserve(size);
  out->append(kHead).append(pod_json).append(kNames);
  bool first = true;
  for (const std::string_view run : name_runs) {
    if (run.empty()) continue;
    if (!first) out->push_back(',');
    out->append(run);
    first = false;
  }
  out->append("]}");
}

void EncodeBindingResult(std::string_view error, std::string* out) {
  out->clear();
  *out += "{\"Error\":";
  AppendJsonString(error, out);
  out->push_back('}');
}

void SpellOutPercentSigns(std::string* text, std::size_t from) {
  const std::size_t first = text->find('%', from);
  if (first == std::string::npos) return;
  // Only the tail is rewritten: `text` may be a long reply with this reason last.
  const std::string tail = text->substr(first);
  text->resize(first);
  for (const char c : tail) {
    if (c != '%') {
      text->push_back(c);
      continue;
    }
    if (text->size() > from && text->back() != ' ') text->push_back(' ');
    *text += "percent";
  }
}

}  // namespace tidal::extender
