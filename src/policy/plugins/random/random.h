#pragma once
// random: the FGD paper's Random baseline. Each (pod, node) pair gets a score
// drawn from a hash of the seed, the pod's key and uid and the node's name, so the
// best node is uniform among the feasible ones and yet the plugin stays a pure
// function of its inputs (the same pod on the same node always scores the same).
#include <memory>

#include "policy/plugins/random/random_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class RandomScore final : public ScorePlugin {
 public:
  explicit RandomScore(RandomArgs args) : args_(args) {}
  std::string_view Name() const override { return "random"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // The pod's part of the hash once per batch, not once per node.
  void ScoreBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                  std::span<const NodeScratch> scratch, ConstStatusColumn status,
                  std::span<double> scores) const override;

 private:
  std::uint64_t PodHash(const PodDemand& pod) const;
  RandomArgs args_;
};

std::unique_ptr<Plugin> NewRandomScore(const YAML::Node& args, const std::string& path,
                                       ConfigErrors& errors);

}  // namespace tidal
