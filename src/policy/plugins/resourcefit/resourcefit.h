#pragma once
// resourcefit: kube-scheduler's NodeResourcesFit filter on requests (CPU, memory,
// advertised nvidia.com/gpu). The extender never needs it (kube-scheduler runs it
// first); the simulator does, to model the stock scheduler honestly. No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class ResourceFit final : public FilterEachNode<ResourceFit> {
 public:
  std::string_view Name() const override { return "resourcefit"; }
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewResourceFit(const YAML::Node& args, const std::string& path,
                                       ConfigErrors& errors);

}  // namespace tidal
