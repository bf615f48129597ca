#include "tidal/deviceplugin/allocator.h"

#include <fmt/format.h>

#include <algorithm>

#include "tidal/deviceplugin/annotation.h"

namespace tidal::deviceplugin {

Allocator::Allocator(PodApi& api, std::shared_ptr<spdlog::logger> log, AllocatorOptions options)
    : api_(api), log_(std::move(log)), options_(std::move(options)) {}

Allocator::Found Allocator::FindPod(const Inventory& inv, int request, std::vector<NodePod>* pods) {
  Found f;
  if (Status s = api_.ListNodePods(pods); !s.ok()) {
    // Without the API the pod cannot be told; the stock rule still admits it.
    log_->warn("cannot tell which pod requests {} device(s): {}; least-shared GPUs", request,
               s.reason());
    return f;
  }
  f.pod = SelectPod(*pods, options_.node, request, served_);
  if (!f.pod || !f.pod->has_choice) return f;
  f.refused = ParseGpuList(f.pod->choice, &f.choice);
  if (f.refused.ok()) f.refused = CheckChoice(inv, f.choice, request);
  if (!f.refused.ok()) f.choice.clear();
  return f;
}

void Allocator::Serve(const std::string& uid) {
  if (!served_.insert(uid).second) return;
  served_order_.push_back(uid);
  if (served_order_.size() > options_.max_served) {
    served_.erase(served_order_.front());
    served_order_.erase(served_order_.begin());
  }
}

void Allocator::Refuse(const NodePod& pod, const Status& why) {
  log_->error("pod {}: refused: {}", pod.Key(), why.reason());
  if (Status s = api_.Warn(pod, "TidalGpusRefused", why.reason()); !s.ok())
    log_->warn("pod {}: {}", pod.Key(), s.reason());
  Serve(pod.uid);  // the kubelet fails the pod; never take it for the next one
}

void Allocator::Grant(const Inventory& inv, const std::vector<int>& gpus,
                      ContainerGrant* out) const {
  out->gpus = gpus;
  out->uuids.clear();
  out->cdi_devices.clear();
  for (int index : gpus) {
    const std::string& uuid = inv.ByIndex(index)->uuid;
    out->uuids.push_back(uuid);
    if (!options_.cdi_kind.empty()) out->cdi_devices.push_back(options_.cdi_kind + "=" + uuid);
  }
}

Status Allocator::Prefer(const Inventory& inv, const std::vector<std::string>& available,
                         const std::vector<std::string>& must_include, int size,
                         std::vector<std::string>* out) {
  out->clear();
  if (size <= 0) return Status::Ok();  // no pod asks for nothing: nothing to look up
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodePod> pods;
  const Found f = FindPod(inv, size, &pods);
  // Allocate refuses (and reports) the pod; the advice only needs to say so.
  if (!f.refused.ok()) return f.refused;
  const bool chosen = f.pod && !f.choice.empty();
  Status s = PreferDevices(inv, available, must_include, size, chosen ? &f.choice : nullptr, out);
  if (!s.ok() && chosen)
    log_->warn("pod {}: {}; Allocate gives it {} anyway", f.pod->Key(), s.reason(), f.pod->choice);
  if (!s.ok()) s = PreferDevices(inv, available, must_include, size, nullptr, out);
  return s;
}

Status Allocator::Allocate(const Inventory& inv, const std::vector<std::string>& device_ids,
                           ContainerGrant* out) {
  *out = ContainerGrant{};
  std::vector<int> given;
  if (Status s = GpusOfDevices(inv, device_ids, &given); !s.ok()) return s;
  const int request = static_cast<int>(device_ids.size());
  // Zero devices would match every pod that asks for none.
  if (request == 0) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodePod> pods;
  const Found f = FindPod(inv, request, &pods);
  if (!f.refused.ok()) {
    Refuse(*f.pod, f.refused);
    return f.refused;
  }
  out->from_choice = f.pod && !f.choice.empty();
  Grant(inv, out->from_choice ? f.choice : given, out);
  if (!f.pod) return Status::Ok();
  out->pod = f.pod->Key();
  if (out->from_choice && given != f.choice) {
    std::vector<int> a = given, b = f.choice;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    // The kubelet did not follow the advice (too few free replicas there): the
    // container still gets Tidal's GPUs; the kubelet's replica count is off by as much.
    if (a != b)
      log_->warn("pod {}: kubelet allocated GPUs {}, tidal.io/gpus says {}; giving {}", out->pod,
                 FormatGpuList(given), f.pod->choice, f.pod->choice);
  }
  Serve(f.pod->uid);
  if (Status s =
          api_.Annotate(*f.pod, std::string(kAnnotationGpusAllocated), FormatGpuList(out->gpus));
      !s.ok())
    log_->warn("pod {}: {}", out->pod, s.reason());
  log_->info("pod {}: GPUs {} ({}) for {} device(s)", out->pod, FormatGpuList(out->gpus),
             out->from_choice ? kAnnotationGpus : "least shared", request);
  return Status::Ok();
}

}  // namespace tidal::deviceplugin
