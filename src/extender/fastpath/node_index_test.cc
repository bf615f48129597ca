#include "extender/fastpath/node_index.h"

#include <gtest/gtest.h>

#include <string>

namespace tidal::extender {
namespace {

NodeState Named(const std::string& name, int allocatable_gpus) {
  NodeState n;
  n.name = name;
  n.allocatable_gpus = allocatable_gpus;
  return n;
}

// Names of every length the hash reads differently (under 4, 4-7, 8, over 8 and
// not a multiple of 8, long), with near-misses that share a prefix or a suffix.
TEST(NodeIndex, FindsEveryNameAndNothingElse) {
  auto nodes = std::make_shared<NodeMap>();
  std::vector<std::string> names = {"a",
                                    "ab",
                                    "abc",
                                    "abcd",
                                    "abcdefg",
                                    "abcdefgh",
                                    "abcdefghi",
                                    "gpu-node-1",
                                    "gpu-node-10",
                                    "gpu-node-100",
                                    "ip-10-0-12-34.us-east-2.compute.internal",
                                    "ノード"};
  for (int i = 0; i < 3000; ++i) names.push_back("gpu-node-x" + std::to_string(i));
  for (std::size_t i = 0; i < names.size(); ++i)
    nodes->emplace(names[i], Named(names[i], static_cast<int>(i)));
  auto view = std::make_shared<ClusterView>();
  view->nodes = nodes;
  ViewStore store;
  store.Publish(view);
  const auto published = store.Load();
  ASSERT_TRUE(published->index);
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    const NodeState* n = published->Find(names[i]);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->allocatable_gpus, static_cast<int>(i));
  }
  const struct {
    const char* name;
    std::string_view key;
  } misses[] = {
      {"empty", ""},
      {"prefix of a name", "gpu-node-"},
      {"one character more", "gpu-node-1000000"},
      {"same length, other last byte", "abcdefgi"},
      {"same last eight bytes", "xgpu-node-10"},
      {"embedded NUL", std::string_view("ab\0", 3)},
  };
  for (const auto& tc : misses) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(published->Find(tc.key), nullptr);
  }
}

TEST(NodeIndex, ReservedNodesComeFirst) {
  auto nodes = std::make_shared<NodeMap>();
  nodes->emplace("n1", Named("n1", 1));
  nodes->emplace("n2", Named("n2", 2));
  auto reserved = std::make_shared<ReservedMap>();
  reserved->emplace("n1", std::make_shared<const NodeState>(Named("n1", 11)));
  auto view = std::make_shared<ClusterView>();
  view->nodes = nodes;
  view->reserved = reserved;
  ViewStore store;
  store.Publish(view);
  EXPECT_EQ(store.Load()->Find("n1")->allocatable_gpus, 11);
  EXPECT_EQ(store.Load()->Find("n2")->allocatable_gpus, 2);
  EXPECT_EQ(store.Load()->FindInMaps("n1")->allocatable_gpus, 11);
}

// A bind publishes new reservations only: the nodes' index is kept (not rebuilt
// over every node), the reserved nodes get a new one.
TEST(NodeIndex, NewReservationsKeepTheNodesIndex) {
  auto nodes = std::make_shared<NodeMap>();
  nodes->emplace("n1", Named("n1", 1));
  nodes->emplace("n2", Named("n2", 2));
  auto view = std::make_shared<ClusterView>();
  view->nodes = nodes;
  ViewStore store;
  store.Publish(view);
  const NodeIndex* before = store.Load()->index.get();
  ASSERT_NE(before, nullptr);
  auto next = std::make_shared<ClusterView>(*store.Load());
  auto reserved = std::make_shared<ReservedMap>();
  reserved->emplace("n2", std::make_shared<const NodeState>(Named("n2", 12)));
  next->reserved = reserved;
  store.Publish(next);
  EXPECT_EQ(store.Load()->index.get(), before);
  EXPECT_EQ(store.Load()->Find("n2")->allocatable_gpus, 12);
  EXPECT_EQ(store.Load()->Find("n1")->allocatable_gpus, 1);
}

// A view copied from a published one and given other maps must not read the old
// index (it would point into maps the view no longer holds).
TEST(NodeIndex, CopiedViewWithOtherMapsIgnoresTheOldIndex) {
  auto first = std::make_shared<ClusterView>();
  auto nodes = std::make_shared<NodeMap>();
  nodes->emplace("old", Named("old", 1));
  first->nodes = nodes;
  ViewStore store;
  store.Publish(first);
  auto copy = std::make_shared<ClusterView>(*store.Load());
  auto other = std::make_shared<NodeMap>();
  other->emplace("new", Named("new", 2));
  copy->nodes = other;
  EXPECT_EQ(copy->Find("old"), nullptr);
  ASSERT_NE(copy->Find("new"), nullptr);
  EXPECT_EQ(copy->Find("new")->allocatable_gpus, 2);
  store.Publish(copy);
  EXPECT_EQ(store.Load()->Find("old"), nullptr);
  EXPECT_EQ(store.Load()->Find("new")->allocatable_gpus, 2);
}

}  // namespace
}  // namespace tidal::extender
