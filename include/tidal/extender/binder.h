#pragma once
// The bind verb (docs/design.md#bind): place the pod's GPUs on the node kube-scheduler
// chose, reserve them (so the next filter sees the placement before any metrics
// sample does), and create the Binding, which carries the GPU indices as the
// pod's `tidal.io/gpus` annotation. Conflicts and server errors are retried with
// backoff; on failure the reservation is dropped and the answer carries
// `Error`, so that kube-scheduler retries the pod.
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tidal/core/clock.h"
#include "tidal/extender/extender.h"
#include "tidal/extender/inflight.h"
#include "tidal/kube/client.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::extender {

struct BinderOptions {
  int attempts = 4;               // per API call, on 409, 429, 5xx and transport errors
  TimeMs first_backoff_ms = 100;  // doubled each retry: 100 + 200 + 400 ms < the 2 s httpTimeout
  std::string gpu_annotation = std::string(kAnnotationGpus);
  bool reservations = true;
};

class Binder {
 public:
  using Sleep = std::function<void(TimeMs)>;
  // `republish` makes a new reservation visible to requests
  // (Refresher::PublishReservations).
  Binder(Extender& extender, kube::Transport& api, InFlight* inflight,
         std::function<void()> republish, const Clock& clock, Sleep sleep,
         std::shared_ptr<spdlog::logger> log, ExtenderMetrics* metrics, BinderOptions options = {});

  Reply Bind(std::string_view body);

 private:
  kube::HttpResponse Call(const kube::HttpRequest& request, int* retries);
  Reply Fail(const std::string& outcome, const std::string& error);
  Reply BindTimed(std::string_view body, std::string* outcome);
  Status PlaceAndReserve(const PodDemand& pod, const BindingArgs& args,
                         Extender::Placement* placement);

  Extender& extender_;
  kube::Transport& api_;
  InFlight* inflight_;
  std::function<void()> republish_;
  const Clock& clock_;
  Sleep sleep_;
  std::shared_ptr<spdlog::logger> log_;
  ExtenderMetrics* metrics_;
  BinderOptions options_;
  std::mutex place_mu_;  // a placement and its reservation are one step
};

// "0,1,3": the annotation's value.
std::string FormatGpuIndices(GpuSet gpus);

}  // namespace tidal::extender
