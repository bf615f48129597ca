#include "tidal/deviceplugin/pod_api.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "tidal/kube/objects.h"

namespace tidal::deviceplugin {
namespace {

std::string Describe(const kube::HttpResponse& r) {
  if (r.status == 0) return "no answer: " + r.error;
  kube::ApiStatus st;
  if (!r.body.empty() && kube::DecodeApiStatus(r.body, &st).ok() && !st.message.empty())
    return fmt::format("HTTP {}: {}", r.status, st.message);
  return fmt::format("HTTP {}", r.status);
}

std::string PodPath(const NodePod& pod) {
  return "/api/v1/namespaces/" + kube::UrlEncode(pod.namespace_name) + "/pods/" +
         kube::UrlEncode(pod.name);
}

}  // namespace

std::string Rfc3339(TimeMs ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

KubePodApi::KubePodApi(kube::Transport& api, const Clock& clock, KubePodApiOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {
  if (options_.node_selector && options_.field_selector.empty())
    options_.field_selector = "spec.nodeName=" + options_.node;
}

Status KubePodApi::ListNodePods(std::vector<NodePod>* out) {
  out->clear();
  std::string token;
  int skipped = 0;
  // Bounded by max_pods: a huge or endless paging answer is an error, not memory.
  while (static_cast<int>(out->size()) <= options_.max_pods) {
    kube::HttpRequest req;
    req.path = fmt::format("/api/v1/pods?limit={}", options_.page_size);
    if (!options_.field_selector.empty())
      req.path += "&fieldSelector=" + kube::UrlEncode(options_.field_selector);
    if (!token.empty()) req.path += "&continue=" + kube::UrlEncode(token);
    const kube::HttpResponse r = api_.Do(req);
    if (!r.ok()) return Status::Error("list pods: " + Describe(r));
    if (Status s = DecodeNodePodList(r.body, options_.resource, out, &token, &skipped); !s.ok())
      return Status::Error("list pods: " + s.reason());
    if (token.empty()) return Status::Ok();
  }
  return Status::Error(fmt::format("list pods: more than {} pods", options_.max_pods));
}

Status KubePodApi::Annotate(const NodePod& pod, const std::string& key, const std::string& value) {
  kube::HttpRequest req;
  req.method = "PATCH";
  req.path = PodPath(pod);
  req.content_type = "application/merge-patch+json";
  // The UID as a precondition: a pod deleted and re-created under the same name
  // in between is not annotated in its predecessor's name.
  nlohmann::json patch{{"metadata", {{"uid", pod.uid}, {"annotations", {{key, value}}}}}};
  req.body = patch.dump();
  const kube::HttpResponse r = api_.Do(req);
  if (!r.ok()) return Status::Error(fmt::format("annotate pod {}: {}", pod.Key(), Describe(r)));
  return Status::Ok();
}

Status KubePodApi::Warn(const NodePod& pod, const std::string& reason, const std::string& message) {
  const std::string now = Rfc3339(clock_.NowMs());
  nlohmann::json ev{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", pod.name + "."}, {"namespace", pod.namespace_name}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", pod.namespace_name},
        {"name", pod.name},
        {"uid", pod.uid}}},
      {"reason", reason},
      {"message", message.substr(0, 1024)},
      {"type", "Warning"},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"source", {{"component", "tidal-device-plugin"}, {"host", options_.node}}}};
  kube::HttpRequest req;
  req.method = "POST";
  req.path = "/api/v1/namespaces/" + kube::UrlEncode(pod.namespace_name) + "/events";
  req.body = ev.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const kube::HttpResponse r = api_.Do(req);
  if (!r.ok()) return Status::Error(fmt::format("event on pod {}: {}", pod.Key(), Describe(r)));
  return Status::Ok();
}

}  // namespace tidal::deviceplugin
