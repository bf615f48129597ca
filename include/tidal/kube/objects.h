#pragma once
// The Kubernetes objects Tidal reads and writes, decoded with simdjson: Nodes
// and Pods (from lists and watch events), Status (errors, 410 Gone), and the
// Binding, annotation patch and Eviction bodies it sends. Malformed input gives
// a Status naming the field; nothing is half-decoded.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/kubetypes/node.h"

namespace tidal::kube {

// A pod holds its node's resources while bound (spec.nodeName) and neither
// Succeeded nor Failed (status.phase): the one rule for every pod count.
inline bool PodHoldsResources(std::string_view node_name, std::string_view phase) {
  return !node_name.empty() && phase != "Succeeded" && phase != "Failed";
}

struct KubePod {
  std::string namespace_name, name, uid;
  std::string resource_version;
  std::string node_name;  // spec.nodeName; empty: not bound
  std::string phase;      // status.phase
  std::string scheduler_name;
  bool deleting = false;  // metadata.deletionTimestamp set
  int gpus = 0;           // nvidia.com/gpu as kube-scheduler counts it
  std::map<std::string, std::string> annotations;
  std::string Key() const { return namespace_name + "/" + name; }
  bool Active() const { return PodHoldsResources(node_name, phase); }
};

Status DecodeNode(std::string_view json, KubeNode* out);
Status DecodePod(std::string_view json, KubePod* out);

// A NodeList or PodList page: the items as JSON text (decoded by the caller),
// metadata.resourceVersion and metadata.continue.
struct ListPage {
  std::vector<std::string> items;
  std::string resource_version;
  std::string continue_token;
};
Status DecodeList(std::string_view json, ListPage* out);

// metav1.Status, as the API server sends with errors and in watch ERROR events.
struct ApiStatus {
  int code = 0;
  std::string reason;  // "Expired", "Gone", "Conflict", "NotFound", …
  std::string message;
};
Status DecodeApiStatus(std::string_view json, ApiStatus* out);

// One line of a watch stream: {"type": ..., "object": {...}}.
struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  std::string object;            // the object's JSON text
  std::string resource_version;  // object.metadata.resourceVersion
};
Status DecodeWatchEvent(std::string_view line, WatchEvent* out);

// Bodies Tidal sends.
// A Binding; the API server copies its `annotations` onto the pod in the same
// write as spec.nodeName, so that whoever sees the pod bound sees them too.
std::string EncodeBinding(std::string_view ns, std::string_view name, std::string_view uid,
                          std::string_view node,
                          const std::vector<std::pair<std::string, std::string>>& annotations = {});
// A JSON merge patch setting metadata.annotations[key] = value.
std::string EncodeAnnotationPatch(std::string_view key, std::string_view value);
std::string EncodeEviction(std::string_view ns, std::string_view name);

// Percent-encodes a path segment or query value.
std::string UrlEncode(std::string_view text);

}  // namespace tidal::kube
