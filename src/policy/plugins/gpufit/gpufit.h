#pragma once
// gpufit: per-GPU free-memory fit and NVLink clique choice (docs/design.md#gpu-placement).
#include <memory>
#include <optional>

#include "policy/plugins/gpufit/gpufit_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class GpuFit final : public FilterEachNode<GpuFit>, public ScoreEachNode<GpuFit> {
 public:
  explicit GpuFit(GpuFitArgs args) : args_(args) {}
  std::string_view Name() const override { return "gpufit"; }
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
  // Multi-GPU NVLink pods: the chosen set's links against the best a set of that
  // size could have on this node's fabric; everything else scores 100.
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // 100 for every node when the pod does not use NVLink or has one GPU; else none.
  std::optional<double> UniformScore(const CycleState& cycle) const;

 private:
  GpuFitArgs args_;
};

// The placement itself, usable without the plugin framework (bind, simulator).
// Chooses `count` GPUs with free ≥ need; with `require_nvlink` they must be
// pairwise linked. Prefers the most links, then the tightest fit, then the
// lowest indices. Returns false when no set fits.
struct GpuChoice {
  GpuSet gpus;
  int links = 0;
  Bytes slack = 0;
};
bool ChooseGpus(const NodeState& node, int count, Bytes need, bool require_nvlink,
                bool prefer_links, int exhaustive_limit, GpuChoice* out);
// The same without bounds or limit: visits every set of candidates. The reference
// that ChooseGpus's bounded search is tested against.
bool ChooseGpusExhaustive(const NodeState& node, int count, Bytes need, bool require_nvlink,
                          bool prefer_links, GpuChoice* out);

std::unique_ptr<Plugin> NewGpuFit(const YAML::Node& args, const std::string& path,
                                  ConfigErrors& errors);

}  // namespace tidal
