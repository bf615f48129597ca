#include "tidal/deviceplugin/devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "tidal/kubetypes/pod.h"

namespace tidal::deviceplugin {

const Gpu* Inventory::ByIndex(int index) const {
  for (const Gpu& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const Gpu* Inventory::ByUuid(std::string_view uuid) const {
  for (const Gpu& g : gpus)
    if (g.uuid == uuid) return &g;
  return nullptr;
}

std::string ReplicaId(std::string_view uuid, int replica) {
  return fmt::format("{}::{}", uuid, replica);
}

bool ParseReplicaId(std::string_view id, std::string* uuid, int* replica) {
  const std::size_t sep = id.rfind("::");
  if (sep == std::string_view::npos || sep == 0 || sep + 2 == id.size()) return false;
  const std::string_view num = id.substr(sep + 2);
  int k = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), k);
  if (ec != std::errc() || end != num.data() + num.size() || k < 0) return false;
  *uuid = std::string(id.substr(0, sep));
  *replica = k;
  return true;
}

std::vector<DeviceEntry> ListDevices(const Inventory& inv) {
  std::vector<DeviceEntry> out;
  for (const Gpu& g : inv.gpus)
    for (int k = 0; k < inv.replicas; ++k) out.push_back({ReplicaId(g.uuid, k), g.healthy});
  return out;
}

Status CheckChoice(const Inventory& inv, const std::vector<int>& gpus, int request) {
  if (static_cast<int>(gpus.size()) > request)
    return Status::Unresolvable(
        fmt::format("{} names {} GPUs but the container requests {} device{}", kAnnotationGpus,
                    gpus.size(), request, request == 1 ? "" : "s"));
  for (int index : gpus) {
    const Gpu* g = inv.ByIndex(index);
    if (!g) {
      std::vector<int> have;
      for (const Gpu& h : inv.gpus) have.push_back(h.index);
      return Status::Unresolvable(
          fmt::format("tidal.io/gpus names GPU {}, which this node does not have (GPUs: {})", index,
                      have.empty() ? "none" : fmt::format("{}", fmt::join(have, ","))));
    }
    if (!g->healthy)
      return Status::Unresolvable(fmt::format(
          "tidal.io/gpus names GPU {} ({}), which is unhealthy: {}", index, g->uuid, g->why));
  }
  return Status::Ok();
}

namespace {

// Available replicas per GPU index, lowest replica first.
std::map<int, std::vector<int>> FreeReplicas(const Inventory& inv,
                                             const std::vector<std::string>& available,
                                             const std::set<std::string>& taken) {
  std::map<int, std::vector<int>> free;
  std::string uuid;
  int k = 0;
  for (const std::string& id : available) {
    if (taken.count(id) || !ParseReplicaId(id, &uuid, &k) || k >= inv.replicas) continue;
    if (const Gpu* g = inv.ByUuid(uuid)) free[g->index].push_back(k);
  }
  for (auto& [index, ks] : free) std::sort(ks.begin(), ks.end());
  return free;
}

Status PreferChosen(const Inventory& inv, std::map<int, std::vector<int>>& free,
                    const std::vector<int>& chosen, int missing, std::vector<std::string>* out) {
  // Round robin over Tidal's GPUs: a pod given two GPUs for two devices gets one
  // replica of each, never two replicas of the first.
  std::map<int, std::size_t> next;
  for (bool progress = true; missing > 0 && progress;) {
    progress = false;
    for (int index : chosen) {
      auto& ks = free[index];
      if (missing == 0 || next[index] >= ks.size()) continue;
      out->push_back(ReplicaId(inv.ByIndex(index)->uuid, ks[next[index]++]));
      --missing;
      progress = true;
    }
  }
  if (missing > 0)
    return Status::Unfit(
        fmt::format("the kubelet has {} device{} too few free on the GPUs tidal.io/gpus names",
                    missing, missing == 1 ? "" : "s"));
  return Status::Ok();
}

void PreferLeastShared(const Inventory& inv, std::map<int, std::vector<int>>& free, int missing,
                       std::vector<std::string>* out) {
  std::map<int, int> held;  // replicas the kubelet has given out, per GPU
  for (const Gpu& g : inv.gpus)
    held[g.index] = inv.replicas - static_cast<int>(free[g.index].size());
  std::map<int, std::size_t> next;
  while (missing > 0) {
    int best = -1;
    for (const Gpu& g : inv.gpus) {
      if (next[g.index] >= free[g.index].size()) continue;
      if (best < 0 || held[g.index] < held[best]) best = g.index;  // ascending: lowest index wins
    }
    if (best < 0) return;
    out->push_back(ReplicaId(inv.ByIndex(best)->uuid, free[best][next[best]++]));
    ++held[best];
    --missing;
  }
}

}  // namespace

Status PreferDevices(const Inventory& inv, const std::vector<std::string>& available,
                     const std::vector<std::string>& must_include, int size,
                     const std::vector<int>* chosen, std::vector<std::string>* out) {
  out->clear();
  std::set<std::string> taken;
  for (const std::string& id : must_include) {
    if (static_cast<int>(out->size()) >= size) break;
    if (taken.insert(id).second) out->push_back(id);
  }
  auto free = FreeReplicas(inv, available, taken);
  const int missing = size - static_cast<int>(out->size());
  if (chosen) return PreferChosen(inv, free, *chosen, missing, out);
  PreferLeastShared(inv, free, missing, out);
  return Status::Ok();
}

Status GpusOfDevices(const Inventory& inv, const std::vector<std::string>& ids,
                     std::vector<int>* gpus) {
  gpus->clear();
  std::string uuid;
  int k = 0;
  for (const std::string& id : ids) {
    const Gpu* g = ParseReplicaId(id, &uuid, &k) ? inv.ByUuid(uuid) : nullptr;
    if (!g || k >= inv.replicas)
      return Status::Error(
          fmt::format("device {} is not one this plugin advertises", id.substr(0, 80)));
    if (std::find(gpus->begin(), gpus->end(), g->index) == gpus->end()) gpus->push_back(g->index);
  }
  return Status::Ok();
}

}  // namespace tidal::deviceplugin
