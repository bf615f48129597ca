#include "tidal/extender/wire.h"

#include <fmt/format.h>
#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
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

#if !defined(__SSE2__)
// Whether a byte of the 8 in `w` needs escaping: below 0x20, '"' or '\\' (exact as a
// whole, the bit tricks of "determine if a word has a byte less than n").
bool NeedsEscape8(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return (below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) != 0;
}
#endif

// Whether `text` needs no escaping (node names and reasons usually do not): 16
// bytes at a time with SSE2, which every x86-64 has, else 8 in a word.
#if defined(__SSE2__)
inline bool NeedsEscape16(__m128i v) {
  // Unsigned v <= 0x1f exactly when min(v, 0x1f) == v.
  const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
  const __m128i special =
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  return _mm_movemask_epi8(_mm_or_si128(control, special)) != 0;
}

inline bool IsPlainJson(std::string_view text) {
  const std::size_t n = text.size();
  const char* p = text.data();
  if (n >= 16) {
    for (std::size_t i = 0; i + 16 <= n; i += 16)
      if (NeedsEscape16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)))) return false;
    // The last 16 bytes, overlapping the blocks before: no byte-by-byte tail.
    return !NeedsEscape16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16)));
  }
  // Shorter (most node names): two overlapping words, or one padded with spaces.
  std::uint64_t lo = 0x2020202020202020ULL, hi = lo;
  if (n >= 8) {
    std::memcpy(&lo, p, 8);
    std::memcpy(&hi, p + n - 8, 8);
  } else if (n > 0) {  // an empty view may have no data
    std::memcpy(&lo, p, n);
  }
  return !NeedsEscape16(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
}
#else
inline bool IsPlainJson(std::string_view text) {
  const std::size_t n = text.size();
  const char* p = text.data();
  std::uint64_t w;
  if (n < 8) {
    w = 0x2020202020202020ULL;         // spaces: plain
    if (n > 0) std::memcpy(&w, p, n);  // an empty view may have no data
    return !NeedsEscape8(w);
  }
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::memcpy(&w, p + i, 8);
    if (NeedsEscape8(w)) return false;
  }
  std::memcpy(&w, p + n - 8, 8);  // overlapping the words before
  return !NeedsEscape8(w);
}
#endif

// The escape of a byte that needs one ("\n", "\u0001"), into `p`; returns its end.
char* WriteEscape(char* p, unsigned char c) {
  *p++ = '\\';
  switch (c) {
    case '"':
      *p++ = '"';
      break;
    case '\\':
      *p++ = '\\';
      break;
    case '\n':
      *p++ = 'n';
      break;
    case '\r':
      *p++ = 'r';
      break;
    case '\t':
      *p++ = 't';
      break;
    default:
      static constexpr char kHex[] = "0123456789abcdef";
      p = std::copy_n("u00", 3, p);
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
  }
  return p;
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// The size of `text` with its escapes, quotes included: the slow path.
std::size_t EscapedSize(std::string_view text) {
  std::size_t size = 2;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    size += !NeedsEscape(c)                                                  ? 1
            : (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t') ? 2
                                                                             : 6;
  }
  return size;
}

// The size of `text` as a JSON string literal, quotes included.
inline std::size_t JsonStringSize(std::string_view text) {
  return IsPlainJson(text) ? text.size() + 2 : EscapedSize(text);
}

// Writes `text` as a JSON string literal of `size` bytes (JsonStringSize) at `p`.
inline char* WriteJsonString(char* p, std::string_view text, std::size_t size) {
  *p++ = '"';
  if (size == text.size() + 2) {
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  } else {
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      if (NeedsEscape(c)) {
        p = WriteEscape(p, c);
      } else {
        *p++ = ch;
      }
    }
  }
  *p++ = '"';
  return p;
}

template <std::size_t N>
char* WriteLiteral(char* p, const char (&text)[N]) {
  std::memcpy(p, text, N - 1);
  return p + N - 1;
}

}  // namespace

void AppendJsonString(std::string_view text, std::string* out) {
  const std::size_t size = JsonStringSize(text);
  const std::size_t at = out->size();
  out->resize(at + size);
  WriteJsonString(out->data() + at, text, size);
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
  out->resize(total);
  char* p = out->data();
  std::size_t k = 0;
  const auto string = [&](std::string_view text) { p = WriteJsonString(p, text, sizes[k++]); };
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
    *p++ = ']';
  } else {
    p = WriteLiteral(p, "null");
  }
  const auto map = [&](const auto& entries) {
    *p++ = '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i) *p++ = ',';
      string(entries[i].first);
      *p++ = ':';
      string(entries[i].second);
    }
    *p++ = '}';
  };
  p = WriteLiteral(p, ",\"FailedNodes\":");
  map(r.failed);
  p = WriteLiteral(p, ",\"FailedAndUnresolvableNodes\":");
  map(r.unresolvable);
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

void EncodeBindingResult(std::string_view error, std::string* out) {
  out->clear();
  *out += "{\"Error\":";
  AppendJsonString(error, out);
  out->push_back('}');
}

}  // namespace tidal::extender
