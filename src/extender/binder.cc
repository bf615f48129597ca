#include "tidal/extender/binder.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "tidal/kube/objects.h"

namespace tidal::extender {

std::string FormatGpuIndices(GpuSet gpus) {
  std::string out;
  for (int g : gpus.Indices()) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(g);
  }
  return out;
}

Binder::Binder(Extender& extender, kube::Transport& api, InFlight* inflight,
               std::function<void()> republish, const Clock& clock, Sleep sleep,
               std::shared_ptr<spdlog::logger> log, ExtenderMetrics* metrics, BinderOptions options)
    : extender_(extender),
      api_(api),
      inflight_(inflight),
      republish_(std::move(republish)),
      clock_(clock),
      sleep_(std::move(sleep)),
      log_(std::move(log)),
      metrics_(metrics),
      options_(std::move(options)) {}

kube::HttpResponse Binder::Call(const kube::HttpRequest& request, int* retries) {
  TimeMs backoff = options_.first_backoff_ms;
  kube::HttpResponse r;
  for (int attempt = 1;; ++attempt) {
    r = api_.Do(request);
    const bool retryable = r.status == 0 || r.status == 409 || r.status == 429 || r.status >= 500;
    if (r.ok() || !retryable || attempt >= options_.attempts) return r;
    ++*retries;
    metrics_->bind_retries
        .With({r.status == 0     ? "transport"
               : r.status >= 500 ? "5xx"
                                 : std::to_string(r.status)})
        .Add(1);
    sleep_(backoff);
    backoff *= 2;
  }
}

Reply Binder::Fail(const std::string& outcome, const std::string& error) {
  metrics_->binds.With({outcome}).Add(1);
  log_->warn("bind: {}", error);
  Reply reply;
  std::string text = "tidal: " + error;
  SpellOutPercentSigns(&text);
  EncodeBindingResult(text, &reply.body);
  return reply;
}

namespace {
std::string Describe(const kube::HttpResponse& r) {
  if (r.status == 0) return r.error;
  kube::ApiStatus st;
  std::string text = "HTTP " + std::to_string(r.status);
  if (kube::DecodeApiStatus(r.body, &st).ok() && !st.message.empty()) text += ": " + st.message;
  return text;
}
}  // namespace

Reply Binder::Bind(std::string_view body) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string outcome = "error";
  Reply reply = BindTimed(body, &outcome);
  metrics_->bind_duration.With({outcome}, BindLatencyBuckets())
      .Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return reply;
}

Status Binder::PlaceAndReserve(const PodDemand& pod, const BindingArgs& args,
                               Extender::Placement* placement) {
  // Two binds at once must not take the same GPUs: the placement and its
  // reservation are one step, and the reservation is published before the next
  // placement reads the view. Nothing under this lock waits on I/O or grows
  // with the cluster (PublishReservations makes only this node again).
  std::lock_guard<std::mutex> lock(place_mu_);
  if (Status s = extender_.Place(pod, args.node, placement); !s.ok()) return s;
  if (!inflight_ || !options_.reservations) return Status::Ok();
  Reservation r;
  r.pod = pod.Key();
  r.node = args.node;
  r.gpus = placement->gpus;
  r.gpu_count = pod.gpu_count;
  r.memory_per_gpu = placement->memory_per_gpu;
  r.uses_nvlink = placement->uses_nvlink;
  r.placed_at_ms = clock_.NowMs();
  r.requested_counted = false;
  inflight_->Add(std::move(r));
  if (republish_) republish_();
  return Status::Ok();
}

Reply Binder::BindTimed(std::string_view body, std::string* outcome) {
  BindingArgs args;
  if (Status s = DecodeBindingArgs(body, &args); !s.ok()) return Fail("error", s.reason());
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  std::optional<Extender::RecentFilter> recent = extender_.RecentPod(args.pod_uid, key, args.node);
  if (!recent) {
    *outcome = "unknown_pod";
    return Fail(*outcome, key + ": not seen in a filter request, cannot place its GPUs");
  }
  // kube-scheduler binds only to a node every filter passed: any other node (one
  // we rejected, one not in the request, one that does not exist) is not its
  // choice, and no Binding is attempted with our token.
  if (!recent->passed) {
    *outcome = "not_offered";
    return Fail(*outcome, key + " on " + args.node + ": not among the " +
                              std::to_string(recent->passed_count) +
                              " nodes its last filter passed, not binding");
  }
  std::optional<PodDemand> pod = std::move(recent->pod);
  pod->namespace_name = args.pod_namespace;
  pod->name = args.pod_name;
  Extender::Placement placement;
  if (Status s = PlaceAndReserve(*pod, args, &placement); !s.ok()) {
    *outcome = "unfit";
    return Fail(*outcome, key + " on " + args.node + ": " + s.reason());
  }
  auto drop = [&] {
    if (inflight_ && options_.reservations && inflight_->Remove(key) && republish_) republish_();
  };

  // One write: the API server sets spec.nodeName and copies the Binding's
  // annotations onto the pod together, so the pod is never seen bound without
  // its GPUs (by our pod watch, or by a device plugin admitting it).
  int retries = 0;
  const std::string pod_path = "/api/v1/namespaces/" + kube::UrlEncode(args.pod_namespace) +
                               "/pods/" + kube::UrlEncode(args.pod_name);
  const std::string gpus = FormatGpuIndices(placement.gpus);
  std::vector<std::pair<std::string, std::string>> annotations;
  if (!gpus.empty()) annotations.emplace_back(options_.gpu_annotation, gpus);
  kube::HttpResponse r = Call(
      {"POST", pod_path + "/binding",
       kube::EncodeBinding(args.pod_namespace, args.pod_name, args.pod_uid, args.node, annotations),
       "application/json"},
      &retries);
  if (!r.ok() && r.status == 409 && retries > 0) {
    // An earlier attempt may have bound it and lost the answer: then it is done.
    const kube::HttpResponse got = api_.Do({"GET", pod_path, "", ""});
    kube::KubePod current;
    if (got.ok() && kube::DecodePod(got.body, &current).ok() && current.node_name == args.node)
      r = got;
  }
  if (!r.ok()) {
    drop();
    return Fail("error", key + ": binding to " + args.node + ": " + Describe(r));
  }
  *outcome = "bound";
  metrics_->binds.With({"bound"}).Add(1);
  if (inflight_) metrics_->reservations_in_flight.Set(static_cast<double>(inflight_->in_flight()));
  log_->debug("bind {} → {} GPUs [{}] ({} retries)", key, args.node, gpus, retries);
  Reply reply;
  EncodeBindingResult("", &reply.body);
  return reply;
}

}  // namespace tidal::extender
