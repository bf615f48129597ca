#pragma once
// balance: ranks healthy nodes by load. Below the warning band loadaware gives
// every node 100; this plugin is what spreads (or packs) them.
#include <memory>

#include "policy/plugins/balance/balance_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class Balance final : public ScoreEachNode<Balance> {
 public:
  explicit Balance(BalanceArgs args) : args_(args) {}
  std::string_view Name() const override { return "balance"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // The node's load with this pod on it, 0..1.
  double ProjectedLoad(const CycleState& cycle, const NodeState& node) const;
  static double ProjectedMemory(const CycleState& cycle, const NodeState& node);

 private:
  BalanceArgs args_;
};

std::unique_ptr<Plugin> NewBalance(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors);

}  // namespace tidal
