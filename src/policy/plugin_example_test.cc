// The example of plugin.h, compiled and run: if the interface changes, the
// example a plugin author reads first changes with it.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "testing/builders.h"
#include "tidal/policy/plugin.h"
#include "tidal/policy/runner.h"

namespace tidal {
namespace {

using namespace tidal::testing;

// Rejects nodes with fewer free GPUs than the pod asks for.
class FreeGpus final : public FilterEachNode<FreeGpus> {
 public:
  std::string_view Name() const override { return "freegpus"; }
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& /*scratch*/) const {
    const int free = node.allocatable_gpus - node.gpus_requested;
    if (free >= cycle.pod->gpu_count) return Status::Fits();
    return Status::Unfit("free GPUs " + std::to_string(free) + " below the pod's " +
                         std::to_string(cycle.pod->gpu_count));
  }
};

TEST(PluginExample, FreeGpusThroughTheRunner) {
  struct Case {
    const char* name;
    int requested;  // GPUs already requested on the 4-GPU node
    int pod_gpus;
    bool fits;
    const char* reason;
  };
  const Case cases[] = {
      {"room_for_the_pod", 1, 2, true, ""},
      {"exactly_enough", 2, 2, true, ""},
      {"one_short", 3, 2, false, "freegpus: free GPUs 1 below the pod's 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Runner::WeightedPlugin> plugins;
    plugins.push_back({std::make_unique<FreeGpus>(), 1});
    Runner runner(DefaultPolicyConfig(), std::move(plugins));
    const std::vector<NodeState> nodes = {
        NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(4, c.requested).Build()};
    const Evaluation ev = runner.Evaluate(PodBuilder().Gpus(c.pod_gpus).Build(), nodes);
    EXPECT_EQ(ev.nodes[0].status.ok(), c.fits);
    EXPECT_EQ(ev.nodes[0].status.reason(), c.reason);
  }
}

}  // namespace
}  // namespace tidal
