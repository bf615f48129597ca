#pragma once
// loadaware: the reject filter and warning-band score (docs/design.md#filter-and-score).
#include <memory>

#include "policy/plugins/loadaware/loadaware_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class LoadAware final : public FilterEachNode<LoadAware>, public ScoreEachNode<LoadAware> {
 public:
  explicit LoadAware(LoadAwareArgs args) : args_(args) {}
  std::string_view Name() const override { return "loadaware"; }
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // 0..1 penalty before scaling; exposed for explain and tests.
  double Penalty(const CycleState& cycle, const NodeState& node) const;

 private:
  LoadAwareArgs args_;
};

std::unique_ptr<Plugin> NewLoadAware(const YAML::Node& args, const std::string& path,
                                     ConfigErrors& errors);

}  // namespace tidal
