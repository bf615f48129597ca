#pragma once
// fallback: what decides while the metrics source is failing (docs/design.md#fallback).
// Stage 1 scores nodes by remaining allocatable GPUs, most first (requests are
// all that is known); stage 2 also rejects every node outside the golden pool.
// The extender runs it in place of the score plugins, after the configured
// filters, which still judge every node whose own reading is fresh.
#include <memory>

#include "policy/plugins/fallback/fallback_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class Fallback final : public FilterPlugin, public ScorePlugin {
 public:
  explicit Fallback(FallbackArgs args) : args_(std::move(args)) {}
  std::string_view Name() const override { return "fallback"; }
  // Scores relative to the node with the most GPUs left in the batch.
  bool PerNode() const override { return false; }
  void FilterBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                   std::span<NodeScratch> scratch, StatusColumn status, bool all) const override;
  void ScoreBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                  std::span<const NodeScratch> scratch, ConstStatusColumn status,
                  std::span<double> scores) const override;

  static int RemainingGpus(const NodeState& node);

 private:
  bool InGoldenPool(const NodeState& node) const;
  FallbackArgs args_;
};

std::unique_ptr<Plugin> NewFallback(const YAML::Node& args, const std::string& path,
                                    ConfigErrors& errors);

}  // namespace tidal
