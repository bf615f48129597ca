#include "policy/plugins/random/random.h"

#include "tidal/policy/yaml_util.h"

namespace tidal {

namespace {

// FNV-1a, then a splitmix64 finaliser: cheap, well mixed, the same everywhere.
std::uint64_t Mix(std::uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t Finish(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t RandomScore::PodHash(const PodDemand& pod) const {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ Finish(args_.seed);
  // The bytes of pod.Key() ("namespace/name") without building the string.
  h = Mix(h, pod.namespace_name);
  h = Mix(h, "/");
  h = Mix(h, pod.name);
  h = Mix(h, "/");
  h = Mix(h, pod.uid);
  return Mix(h, "@");
}

namespace {
// 53 random bits as a real score in [0, 100): ties are practically impossible.
double ToScore(std::uint64_t h) {
  return static_cast<double>(Finish(h) >> 11) * (100.0 / 9007199254740992.0);
}
}  // namespace

double RandomScore::ScoreOne(const CycleState& cycle, const NodeState& node,
                             const NodeScratch&) const {
  return ToScore(Mix(PodHash(*cycle.pod), node.name));
}

void RandomScore::ScoreBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                             std::span<const NodeScratch>, ConstStatusColumn status,
                             std::span<double> scores) const {
  const std::uint64_t pod = PodHash(*cycle.pod);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (status[i].ok()) scores[i] = ToScore(Mix(pod, nodes[i]->name));
}

std::unique_ptr<Plugin> NewRandomScore(const YAML::Node& args, const std::string& path,
                                       ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<RandomScore, RandomArgs>(args, path, errors);
}

}  // namespace tidal
