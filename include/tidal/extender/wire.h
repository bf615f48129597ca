#pragma once
// The scheduler extender wire protocol (reference README §1): decoding
// ExtenderArgs / ExtenderBindingArgs with simdjson, keys matched
// case-insensitively, `null` taken as absent; encoding the results with exactly
// the PascalCase keys kube-scheduler reads.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/fast_text.h"
#include "tidal/core/status.h"
#include "tidal/core/text.h"
#include "tidal/core/types.h"
#include "tidal/kubetypes/node.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::extender {

// A v1.Node of a `Nodes` list, with its bytes.
struct WireNode : KubeNode {
  std::string json;  // the object itself (minified), echoed back for survivors
};

struct ExtenderArgs {
  RawPod pod;
  // The Pod object's bytes as sent: a view of the ArgsDecoder's buffer, valid until
  // its next Decode (empty from DecodeExtenderArgs).
  std::string_view pod_json;
  bool has_nodes = false;  // "Nodes" non-null (nodeCacheCapable: false)
  std::vector<WireNode> nodes;
  bool has_node_names = false;  // "NodeNames" non-null (nodeCacheCapable: true)
  StringList node_names;
};

struct DecodeOptions {
  bool keep_node_json = true;  // filter needs it to echo survivors; prioritize does not
};

// Errors name the field: `Pod: ...`, `Nodes.items[3].metadata.name: expected a string`.
Status DecodeExtenderArgs(std::string_view body, const DecodeOptions& options, ExtenderArgs* out);

// The same with a parser and input buffer kept from call to call: a 14 MB
// payload then costs no allocation or page faults once warm. Not thread-safe;
// one per request context.
class ArgsDecoder {
 public:
  ArgsDecoder();
  ~ArgsDecoder();
  ArgsDecoder(const ArgsDecoder&) = delete;
  ArgsDecoder& operator=(const ArgsDecoder&) = delete;
  Status Decode(std::string_view body, const DecodeOptions& options, ExtenderArgs* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct BindingArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};
Status DecodeBindingArgs(std::string_view body, BindingArgs* out);

// ExtenderFilterResult. Survivors are written in the form(s) the request used:
// `Nodes` (the echoed objects) when it had Nodes, `NodeNames` when it had names.
struct FilterResult {
  std::vector<const WireNode*> nodes;        // survivors, when the request had Nodes
  std::vector<std::string_view> node_names;  // survivors, when it had NodeNames
  bool with_nodes = false, with_node_names = false;
  // Node name and reason; the texts are the caller's, alive until encoded.
  std::vector<std::pair<std::string_view, std::string_view>> failed;
  std::vector<std::pair<std::string_view, std::string_view>> unresolvable;
  // Runs already encoded (by the threads that decided on parts of the nodes,
  // with AppendJsonListItem and OpenJsonMember/CloseJsonMember): written after the entries
  // above, in order; empty runs are skipped.
  std::vector<std::string_view> node_names_json, failed_json, unresolvable_json;
  std::string error;
};
void EncodeFilterResult(const FilterResult& r, std::string* out);
struct HostPriority {
  std::string_view host;
  std::int64_t score = 0;  // 0..10
};
void EncodeHostPriorityList(const std::vector<HostPriority>& list, std::string* out);
// The same for names[i] with scores[i] where keep[i], in order (the filter's verdicts).
void EncodeHostPriorities(const StringList& names, std::span<const char> keep,
                          std::span<const std::int64_t> scores, std::string* out);
void EncodeBindingResult(std::string_view error, std::string* out);
// kube-scheduler hands an extender's reasons to a printf-style event call, where
// "93%" would come out as "93%!(MISSING)": every '%' of `text` from `from` on
// becomes " percent" ("93 percent"). Reasons and errors pass through it before
// they are encoded.
void SpellOutPercentSigns(std::string* text, std::size_t from = 0);

// ExtenderArgs in NodeNames mode as kube-scheduler encodes them (Go's json.Marshal:
// `{"Pod":…,"Nodes":null,"NodeNames":[…]}`, no spaces), the Pod given as its JSON
// and the names as runs encoded by AppendJsonListItem (empty runs skipped). After a
// filter, this is the prioritize request to expect.
void EncodeNamesArgs(std::string_view pod_json, std::span<const std::string_view> name_runs,
                     std::string* out);

// `text` without the JSON whitespace (space, tab, CR, LF) at its end.
std::string_view TrimJsonSpaceRight(std::string_view text);

}  // namespace tidal::extender
