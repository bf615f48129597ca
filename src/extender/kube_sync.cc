#include "tidal/extender/kube_sync.h"

#include <spdlog/spdlog.h>

#include "tidal/kube/objects.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/policy/cycle.h"
#include "tidal/policy/memory_learner.h"

namespace tidal::extender {
namespace {

NodeInfo ToInfo(const KubeNode& n) {
  NodeInfo info;
  info.labels = n.labels;
  info.allocatable_gpus = n.allocatable_gpus;
  info.cpu_milli_allocatable = n.cpu_milli_allocatable;
  info.memory_allocatable = n.memory_allocatable;
  // A cordoned node takes no new pods: no GPUs left to offer.
  if (n.unschedulable) info.allocatable_gpus = 0;
  return info;
}

}  // namespace

KubeSync::KubeSync(NodeCatalog& catalog, InFlight* inflight, std::shared_ptr<spdlog::logger> log,
                   PodPeakTracker* peaks, NvlinkDetection nvlink)
    : catalog_(catalog),
      inflight_(inflight),
      log_(std::move(log)),
      peaks_(peaks),
      nvlink_(std::move(nvlink)) {}

NodeInfo KubeSync::InfoFor(const std::string& node) const {
  NodeInfo info = node_infos_.at(node);
  if (const auto it = gpus_by_node_.find(node); it != gpus_by_node_.end())
    info.gpus_requested = it->second;
  if (const auto it = pods_on_gpu_.find(node); it != pods_on_gpu_.end())
    info.pods_on_gpu = it->second;
  return info;
}

void KubeSync::PutNode(const std::string& node) {
  if (node_infos_.count(node)) catalog_.Put(node, InfoFor(node));
}

namespace {
GpuSet NamedGpus(const kube::KubePod& pod) {
  GpuSet set;
  if (const auto a = pod.annotations.find(std::string(kAnnotationGpus)); a != pod.annotations.end())
    for (int g : ParseGpuAnnotation(a->second)) set.Add(g);
  return set;
}
}  // namespace

void KubeSync::Count(const PodRecord& rec, int sign) {
  if (!rec.active || rec.gpus <= 0) return;
  gpus_by_node_[rec.node] += sign * rec.gpus;
  if (rec.nvlink) {
    int& n = nvlink_pods_[rec.node];
    n = std::max(0, n + sign);
    if (n == 0) nvlink_pods_.erase(rec.node);
  }
  if (rec.gpus_named.Empty()) return;
  auto& held = pods_on_gpu_[rec.node];
  for (int g : rec.gpus_named.Indices())
    held[g] = static_cast<std::uint16_t>(std::max(0, held[g] + sign));
}

void KubeSync::UpsertPod(const kube::KubePod& pod, std::string_view json) {
  const std::string key = pod.Key();
  PodRecord next{pod.node_name, pod.gpus, NamedGpus(pod), pod.Active() && !pod.deleting};
  if (peaks_ && pod.gpus > 0 && !next.active) peaks_->Ended(key);
  if (on_carried_out_ && next.active && pod.gpus > 0 &&
      pod.annotations.count(std::string(kAnnotationGpusAllocated)))
    on_carried_out_();
  // The whole pod is decoded only for active GPU pods: a pod without GPUs uses
  // no NVLink (and a cluster's many CPU pods would cost a second decode each).
  if (pod.gpus > 0 && next.active) {
    if (RawPod raw; DecodePodJson(json, &raw).ok()) {
      const PodDemand demand = ToPodDemand(raw);
      next.nvlink = PodUsesNvlink(nvlink_, demand);
      const auto a = raw.annotations.find(std::string(kAnnotationGpus));
      if (peaks_ && a != raw.annotations.end())
        peaks_->Running(key, WorkloadKey(demand), pod.node_name, ParseGpuAnnotation(a->second));
    }
  }
  PodRecord& cur = pods_by_key_[key];
  Count(cur, -1);
  if (cur.active && cur.gpus > 0 && (cur.node != next.node || !next.active)) PutNode(cur.node);
  cur = next;
  Count(cur, +1);
  if (!cur.active) {
    // Finished, failed or being deleted.
    if (inflight_ && (!pod.node_name.empty() || pod.deleting)) inflight_->Remove(key);
    return;
  }
  // From this catalog on, the node's counts include the pod. Marked under the
  // catalog's lock: a view built from a copy that counts the pod must also see
  // the mark, or it would take the pod's device slot twice, until the next change.
  const auto counted = [&](std::uint64_t generation) {
    if (inflight_) inflight_->MarkRequestedCounted(key, generation);
  };
  if (node_infos_.count(cur.node)) {
    catalog_.Put(cur.node, InfoFor(cur.node), counted);
  } else {
    counted(catalog_.generation());
  }
}

void KubeSync::RemovePod(const std::string& key) {
  const auto it = pods_by_key_.find(key);
  if (it != pods_by_key_.end()) {
    Count(it->second, -1);
    if (it->second.active && it->second.gpus > 0) PutNode(it->second.node);
    pods_by_key_.erase(it);
  }
  if (peaks_) peaks_->Ended(key);
  if (inflight_) inflight_->Remove(key);
}

void KubeSync::NodeHandler::Replace(const std::vector<std::string>& objects) {
  std::lock_guard<std::mutex> lock(s_.mu_);
  s_.node_infos_.clear();
  for (const auto& json : objects) {
    KubeNode n;
    if (Status st = kube::DecodeNode(json, &n); !st.ok()) {
      ++s_.decode_errors_;
      s_.log_->warn("nodes: skipping a node: {}", st.reason());
      continue;
    }
    s_.node_infos_[n.name] = ToInfo(n);
  }
  std::unordered_map<std::string, NodeInfo> all;
  for (const auto& [name, info] : s_.node_infos_) all[name] = s_.InfoFor(name);
  s_.catalog_.Replace(std::move(all));
}

void KubeSync::NodeHandler::Apply(const kube::WatchEvent& event) {
  KubeNode n;
  std::lock_guard<std::mutex> lock(s_.mu_);
  if (Status st = kube::DecodeNode(event.object, &n); !st.ok()) {
    ++s_.decode_errors_;
    s_.log_->warn("nodes: skipping an event: {}", st.reason());
    return;
  }
  if (event.type == kube::WatchEvent::Type::kDeleted) {
    s_.node_infos_.erase(n.name);
    s_.catalog_.Remove(n.name);
    return;
  }
  s_.node_infos_[n.name] = ToInfo(n);
  s_.PutNode(n.name);
}

void KubeSync::PodHandler::Replace(const std::vector<std::string>& objects) {
  std::lock_guard<std::mutex> lock(s_.mu_);
  std::unordered_map<std::string, PodRecord> before = std::move(s_.pods_by_key_);
  s_.pods_by_key_.clear();
  s_.gpus_by_node_.clear();
  s_.pods_on_gpu_.clear();
  s_.nvlink_pods_.clear();
  std::unordered_map<std::string, bool> seen;
  for (const auto& json : objects) {
    kube::KubePod p;
    if (Status st = kube::DecodePod(json, &p); !st.ok()) {
      ++s_.decode_errors_;
      s_.log_->warn("pods: skipping a pod: {}", st.reason());
      continue;
    }
    seen[p.Key()] = true;
    s_.UpsertPod(p, json);
  }
  // Pods that vanished while the watch was down.
  for (const auto& [key, rec] : before) {
    if (seen.count(key)) continue;
    if (s_.inflight_) s_.inflight_->Remove(key);
    if (s_.peaks_) s_.peaks_->Ended(key);
  }
  for (const auto& [name, info] : s_.node_infos_) s_.PutNode(name);
  s_.pods_listed_ = true;
}

void KubeSync::PodHandler::Apply(const kube::WatchEvent& event) {
  kube::KubePod p;
  std::lock_guard<std::mutex> lock(s_.mu_);
  if (Status st = kube::DecodePod(event.object, &p); !st.ok()) {
    ++s_.decode_errors_;
    s_.log_->warn("pods: skipping an event: {}", st.reason());
    return;
  }
  if (event.type == kube::WatchEvent::Type::kDeleted) {
    s_.RemovePod(p.Key());
  } else {
    s_.UpsertPod(p, event.object);
  }
}

std::size_t KubeSync::node_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return node_infos_.size();
}

std::size_t KubeSync::active_pod_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [key, rec] : pods_by_key_) n += rec.active ? 1 : 0;
  return n;
}

std::optional<NvlinkPodCounts> KubeSync::NvlinkPods() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pods_listed_) return std::nullopt;
  return nvlink_pods_;
}

std::uint64_t KubeSync::decode_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decode_errors_;
}

}  // namespace tidal::extender
