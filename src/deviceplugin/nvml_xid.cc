// XID events from NVML's event API, loaded with dlopen (as the agent's NVML
// source is, so the plugin starts on machines without a driver). The event
// declarations are ours, like include/tidal/gpu/nvml_api.h's, from the NVML reference.
#include <dlfcn.h>

#include <vector>

#include "tidal/deviceplugin/health.h"
#include "tidal/gpu/nvml_api.h"

namespace tidal::deviceplugin {
namespace {

typedef struct nvmlEventSet_st* nvmlEventSet_t;
struct NvmlEventData {
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kXidCriticalError = 0x8ULL;
constexpr nvmlReturn_t kNvmlTimeout = 10;

struct EventTable {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*wait)(nvmlEventSet_t, NvmlEventData*, unsigned) = nullptr;
  nvmlReturn_t (*set_free)(nvmlEventSet_t) = nullptr;
};

template <typename F>
bool Resolve(void* lib, F* fn, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* p = dlsym(lib, n)) {
      *fn = reinterpret_cast<F>(p);
      return true;
    }
  return false;
}

class NvmlXidSource final : public XidSource {
 public:
  NvmlXidSource(void* lib, EventTable t, nvmlEventSet_t set, std::vector<nvmlDevice_t> devices)
      : lib_(lib), t_(t), set_(set), devices_(std::move(devices)) {}
  ~NvmlXidSource() override {
    t_.set_free(set_);
    t_.shutdown();
    dlclose(lib_);
  }
  bool Wait(int timeout_ms, XidEvent* out) override {
    NvmlEventData d{};
    const nvmlReturn_t r = t_.wait(set_, &d, static_cast<unsigned>(timeout_ms));
    if (r == kNvmlTimeout || (r == NVML_SUCCESS && d.event_type != kXidCriticalError)) return false;
    // A failed wait (a GPU lost meanwhile) is left to polling, which finds it.
    if (r != NVML_SUCCESS) return false;
    out->gpu = -1;  // an event naming no known GPU concerns them all
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] && devices_[i] == d.device) out->gpu = static_cast<int>(i);
    out->xid = d.event_data;
    return true;
  }

 private:
  void* lib_;
  EventTable t_;
  nvmlEventSet_t set_;
  std::vector<nvmlDevice_t> devices_;  // by NVML index
};

}  // namespace

std::unique_ptr<XidSource> OpenNvmlXid(const std::string& library, std::string* why) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    *why = "cannot load " + library + ": " + (e ? e : "unknown error");
    return nullptr;
  }
  EventTable t;
  if (!Resolve(lib, &t.init, {"nvmlInit_v2", "nvmlInit"}) ||
      !Resolve(lib, &t.shutdown, {"nvmlShutdown"}) ||
      !Resolve(lib, &t.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}) ||
      !Resolve(lib, &t.handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}) ||
      !Resolve(lib, &t.set_create, {"nvmlEventSetCreate"}) ||
      !Resolve(lib, &t.register_events, {"nvmlDeviceRegisterEvents"}) ||
      !Resolve(lib, &t.wait, {"nvmlEventSetWait_v2"}) ||
      !Resolve(lib, &t.set_free, {"nvmlEventSetFree"})) {
    *why = library + ": no NVML event API";
    dlclose(lib);
    return nullptr;
  }
  nvmlEventSet_t set = nullptr;
  unsigned count = 0;
  if (t.init() != NVML_SUCCESS || t.count(&count) != NVML_SUCCESS ||
      t.set_create(&set) != NVML_SUCCESS) {
    *why = library + ": NVML events could not be set up";
    dlclose(lib);
    return nullptr;
  }
  std::vector<nvmlDevice_t> devices(count, nullptr);
  int registered = 0;
  for (unsigned i = 0; i < count; ++i) {
    // A GPU without XID events (old or virtual) is watched by polling alone.
    if (t.handle(i, &devices[i]) == NVML_SUCCESS &&
        t.register_events(devices[i], kXidCriticalError, set) == NVML_SUCCESS)
      ++registered;
  }
  if (registered == 0) {
    *why = library + ": no GPU supports XID events";
    t.set_free(set);
    t.shutdown();
    dlclose(lib);
    return nullptr;
  }
  return std::make_unique<NvmlXidSource>(lib, t, set, std::move(devices));
}

}  // namespace tidal::deviceplugin
