#include "tidal/deviceplugin/pods.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tidal/deviceplugin/annotation.h"

namespace tidal::deviceplugin {
namespace {

using json = nlohmann::json;

std::string Str(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Extended resources are whole numbers ("2"); anything else counts as none.
int Count(const json& resources, std::string_view resource) {
  if (!resources.is_object()) return 0;
  const auto it = resources.find(std::string(resource));
  if (it == resources.end()) return 0;
  std::string text;
  if (it->is_string()) {
    text = it->get<std::string>();
  } else if (it->is_number_unsigned()) {
    return static_cast<int>(std::min<std::uint64_t>(it->get<std::uint64_t>(), 1 << 20));
  }
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() && n > 0 ? std::min(n, 1 << 20) : 0;
}

// A container's devices: its limit (the kubelet allocates by limits; for
// extended resources a request must equal it).
int ContainerCount(const json& c, std::string_view resource) {
  if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) return 0;
  const json& r = c["resources"];
  const int limit = r.contains("limits") ? Count(r["limits"], resource) : 0;
  return limit > 0 ? limit : (r.contains("requests") ? Count(r["requests"], resource) : 0);
}

int PodRequest(const json& spec, std::string_view resource) {
  int sum = 0, init = 0;
  if (spec.contains("containers") && spec["containers"].is_array())
    for (const json& c : spec["containers"]) sum += ContainerCount(c, resource);
  if (spec.contains("initContainers") && spec["initContainers"].is_array())
    for (const json& c : spec["initContainers"]) init = std::max(init, ContainerCount(c, resource));
  return std::max(sum, init);
}

bool AnyStarted(const json& status) {
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    if (!status.contains(list) || !status[list].is_array()) continue;
    for (const json& cs : status[list])
      if (cs.is_object() && cs.contains("state") && cs["state"].is_object() &&
          (cs["state"].contains("running") || cs["state"].contains("terminated")))
        return true;
  }
  return false;
}

std::string BindTime(const json& status) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) return "";
  for (const json& c : status["conditions"])
    if (c.is_object() && Str(c, "type") == "PodScheduled" && Str(c, "status") == "True")
      return Str(c, "lastTransitionTime");
  return "";
}

Status FromJson(const json& pod, std::string_view resource, NodePod* out) {
  if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object())
    return Status::Error("pod: metadata: expected an object");
  const json& m = pod["metadata"];
  NodePod p;
  p.name = Str(m, "name");
  if (p.name.empty()) return Status::Error("pod: metadata.name: expected a string");
  p.namespace_name = Str(m, "namespace");
  p.uid = Str(m, "uid");
  p.created = Str(m, "creationTimestamp");
  p.deleting = m.contains("deletionTimestamp") && !m["deletionTimestamp"].is_null();
  if (m.contains("annotations") && m["annotations"].is_object()) {
    const json& a = m["annotations"];
    p.has_choice =
        a.contains(std::string(kAnnotationGpus)) && a[std::string(kAnnotationGpus)].is_string();
    if (p.has_choice) p.choice = a[std::string(kAnnotationGpus)].get<std::string>();
    p.allocated = a.contains(std::string(kAnnotationGpusAllocated));
  }
  static const json kEmpty = json::object();
  const json& spec = pod.contains("spec") && pod["spec"].is_object() ? pod["spec"] : kEmpty;
  const json& status = pod.contains("status") && pod["status"].is_object() ? pod["status"] : kEmpty;
  p.node = Str(spec, "nodeName");
  p.request = PodRequest(spec, resource);
  p.phase = Str(status, "phase");
  p.started = AnyStarted(status);
  p.bound = BindTime(status);
  if (p.bound.empty()) p.bound = p.created;
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace

Status DecodeNodePod(std::string_view text, std::string_view resource, NodePod* out) {
  const json pod = json::parse(text, nullptr, false);
  if (pod.is_discarded()) return Status::Error("pod: not JSON");
  return FromJson(pod, resource, out);
}

Status DecodeNodePodList(std::string_view text, std::string_view resource,
                         std::vector<NodePod>* pods, std::string* continue_token, int* skipped) {
  const json list = json::parse(text, nullptr, false);
  if (list.is_discarded() || !list.is_object()) return Status::Error("PodList: not a JSON object");
  if (!list.contains("items") || !(list["items"].is_array() || list["items"].is_null()))
    return Status::Error("PodList: items: expected an array");
  continue_token->clear();
  if (list.contains("metadata") && list["metadata"].is_object())
    *continue_token = Str(list["metadata"], "continue");
  if (list["items"].is_null()) return Status::Ok();
  for (const json& item : list["items"]) {
    NodePod p;
    if (FromJson(item, resource, &p).ok()) {
      pods->push_back(std::move(p));
    } else {
      ++*skipped;
    }
  }
  return Status::Ok();
}

const NodePod* SelectPod(const std::vector<NodePod>& pods, std::string_view node, int request,
                         const std::set<std::string>& served) {
  const NodePod* best = nullptr;
  // A timestamp missing (never from a real API server) sorts last.
  auto when = [](const std::string& t) { return t.empty() ? std::string("~") : t; };
  auto key = [&](const NodePod* p) {
    return std::make_tuple(when(p->bound), when(p->created), p->namespace_name, p->name);
  };
  for (const NodePod& p : pods) {
    if (p.node != node || p.phase != "Pending" || p.deleting || p.started || p.allocated ||
        p.request != request || served.count(p.uid))
      continue;
    if (!best || key(&p) < key(best)) best = &p;
  }
  return best;
}

}  // namespace tidal::deviceplugin
