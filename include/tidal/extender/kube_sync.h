#pragma once
// What the extender learns from the API server's Node and Pod watches: node
// labels and allocatable resources, the GPUs that bound pods request per node
// (pods placed by any binder), and the end of pods it reserved for. Feeds the
// NodeCatalog and the reservations; `changed` is called after each update (the
// refresher republishes within half a second anyway).
#include <spdlog/logger.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "tidal/extender/inflight.h"
#include "tidal/extender/peak_tracker.h"
#include "tidal/extender/view.h"
#include "tidal/kube/informer.h"

namespace tidal::extender {

class KubeSync {
 public:
  // `peaks` (optional) learns per-workload GPU memory from the pods it sees run.
  // `nvlink`: the policy's rule for which pods use NVLink (NvlinkPods).
  KubeSync(NodeCatalog& catalog, InFlight* inflight, std::shared_ptr<spdlog::logger> log,
           PodPeakTracker* peaks = nullptr, NvlinkDetection nvlink = {});

  // Called (from the pod watch, with the sync's lock held: keep it short) for each
  // bound pod that carries tidal.io/gpus-allocated, the mark Tidal's device
  // plugin leaves on a pod it gave the GPUs the scheduler named. Set before the
  // informers start.
  void OnGpuChoiceCarriedOut(std::function<void()> f) { on_carried_out_ = std::move(f); }

  kube::InformerHandler& node_handler() { return nodes_; }
  kube::InformerHandler& pod_handler() { return pods_; }

  std::size_t node_count() const;
  std::size_t active_pod_count() const;
  std::uint64_t decode_errors() const;
  // Active (bound, not finished, not being deleted) pods with GPUs that use
  // NVLink by the agent's rule (PodUsesNvlink), per node: the competition index
  // without the agent (PodCompetitionSource). nullopt until the pods are listed:
  // an empty count then would read as no competition.
  std::optional<NvlinkPodCounts> NvlinkPods() const;

 private:
  struct PodRecord {
    std::string node;
    int gpus = 0;
    GpuSet gpus_named;  // its tidal.io/gpus annotation
    bool active = false;
    bool nvlink = false;  // uses NVLink (PodUsesNvlink)
  };
  class NodeHandler : public kube::InformerHandler {
   public:
    explicit NodeHandler(KubeSync& s) : s_(s) {}
    void Replace(const std::vector<std::string>& objects) override;
    void Apply(const kube::WatchEvent& event) override;

   private:
    KubeSync& s_;
  };
  class PodHandler : public kube::InformerHandler {
   public:
    explicit PodHandler(KubeSync& s) : s_(s) {}
    void Replace(const std::vector<std::string>& objects) override;
    void Apply(const kube::WatchEvent& event) override;

   private:
    KubeSync& s_;
  };

  NodeInfo InfoFor(const std::string& node) const;                  // with mu_ held
  void PutNode(const std::string& node);                            // with mu_ held
  void UpsertPod(const kube::KubePod& pod, std::string_view json);  // with mu_ held
  void RemovePod(const std::string& key);                           // with mu_ held
  void Count(const PodRecord& rec, int sign);                       // with mu_ held

  NodeCatalog& catalog_;
  InFlight* inflight_;
  std::shared_ptr<spdlog::logger> log_;
  PodPeakTracker* peaks_;
  NvlinkDetection nvlink_;
  std::function<void()> on_carried_out_;
  NodeHandler nodes_{*this};
  PodHandler pods_{*this};
  mutable std::mutex mu_;
  std::unordered_map<std::string, NodeInfo> node_infos_;  // gpus_requested left 0
  std::unordered_map<std::string, PodRecord> pods_by_key_;
  std::unordered_map<std::string, int> gpus_by_node_;
  std::unordered_map<std::string, std::array<std::uint16_t, kMaxGpusPerNode>> pods_on_gpu_;
  NvlinkPodCounts nvlink_pods_;  // nodes with none are erased
  bool pods_listed_ = false;
  std::uint64_t decode_errors_ = 0;
};

}  // namespace tidal::extender
