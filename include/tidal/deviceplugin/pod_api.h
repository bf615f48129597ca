#pragma once
// The three API calls the allocator makes, behind an interface so that its
// rules are tested without HTTP: list this node's pods, annotate one, and post a
// Warning event on one. KubePodApi does them over kube::Transport.
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/deviceplugin/pods.h"
#include "tidal/kube/client.h"

namespace tidal::deviceplugin {

class PodApi {
 public:
  virtual ~PodApi() = default;
  virtual Status ListNodePods(std::vector<NodePod>* out) = 0;
  virtual Status Annotate(const NodePod& pod, const std::string& key, const std::string& value) = 0;
  virtual Status Warn(const NodePod& pod, const std::string& reason,
                      const std::string& message) = 0;
};

struct KubePodApiOptions {
  std::string node;
  std::string resource = "nvidia.com/gpu";
  // Narrows the list to this node on the server: each node's plugin reads only
  // its own pods. "" lists every pod (and the node is still checked here).
  std::string field_selector;  // default set by the constructor: spec.nodeName=<node>
  bool node_selector = true;
  int page_size = 500;
  int max_pods = 20'000;  // a bigger answer is cut off (with an error), never kept whole
};

class KubePodApi final : public PodApi {
 public:
  KubePodApi(kube::Transport& api, const Clock& clock, KubePodApiOptions options);
  Status ListNodePods(std::vector<NodePod>* out) override;
  Status Annotate(const NodePod& pod, const std::string& key, const std::string& value) override;
  Status Warn(const NodePod& pod, const std::string& reason, const std::string& message) override;

 private:
  kube::Transport& api_;
  const Clock& clock_;
  KubePodApiOptions options_;
};

// RFC 3339 UTC with seconds, as the API server writes times.
std::string Rfc3339(TimeMs ms);

}  // namespace tidal::deviceplugin
