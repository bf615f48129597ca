// GpuSource over NVML, loaded at run time with dlopen so that the agent builds
// and starts on machines without a GPU driver.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "tidal/agent/gpu.h"
#include "tidal/gpu/nvml_api.h"

namespace tidal::agent {
namespace {

// The resolved entry points. Optional ones may be null (older drivers).
struct NvmlTable {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;                // optional
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;                 // optional
  nvmlReturn_t (*link_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;  // optional
  nvmlReturn_t (*link_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;           // optional
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;       // optional
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;   // optional
};

template <typename F>
bool Resolve(void* lib, F* fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      *fn = reinterpret_cast<F>(p);
      return true;
    }
  }
  return false;
}

// "0000:18:00.0", "00000000:18:00.0" and lower case all become "00000000:18:00.0".
std::string NormaliseBusId(std::string_view id) {
  std::string s(id.substr(0, id.find('\0')));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::size_t colon = s.find(':');
  if (colon != std::string::npos && colon < 8 && s.find(':', colon + 1) != std::string::npos)
    s.insert(0, 8 - colon, '0');
  return s;
}

std::string CString(const char* buf, std::size_t n) { return std::string(buf, strnlen(buf, n)); }

class NvmlSource final : public GpuSource {
 public:
  NvmlSource(void* lib, NvmlTable t) : lib_(lib), t_(t) {}
  ~NvmlSource() override {
    t_.shutdown();
    dlclose(lib_);
  }
  std::string_view Name() const override { return "nvml"; }
  Status Read(GpuReadout* out) override;

 private:
  std::string Err(const char* call, nvmlReturn_t r) const {
    const char* s = t_.error_string ? t_.error_string(r) : nullptr;
    return std::string(call) + ": " + (s ? s : "error") + " (" + std::to_string(r) + ")";
  }
  void ReadDevice(nvmlDevice_t dev, GpuReading* g, std::vector<std::string>* remote_gpus,
                  int* switch_links);

  void* lib_;
  NvmlTable t_;
};

void NvmlSource::ReadDevice(nvmlDevice_t dev, GpuReading* g, std::vector<std::string>* remote,
                            int* switch_links) {
  char buf[96] = {};
  nvmlReturn_t r = t_.uuid(dev, buf, sizeof buf);
  if (r != NVML_SUCCESS) {
    g->error = Err("nvmlDeviceGetUUID", r);
    return;
  }
  g->uuid = CString(buf, sizeof buf);
  std::memset(buf, 0, sizeof buf);
  if (t_.name(dev, buf, sizeof buf) == NVML_SUCCESS) g->model = CString(buf, sizeof buf);
  nvmlPciInfo_t pci{};
  if (t_.pci(dev, &pci) == NVML_SUCCESS) g->bus_id = NormaliseBusId(CString(pci.busId, 32));

  // v2 separates reserved memory; fall back to v1 when the symbol or struct is older.
  bool have_mem = false;
  if (t_.memory_v2) {
    nvmlMemory_v2_t m{};
    m.version = TIDAL_NVML_MEMORY_V2_VERSION;
    r = t_.memory_v2(dev, &m);
    if (r == NVML_SUCCESS) {
      g->memory_total = m.total;
      g->memory_used = m.used;
      g->memory_reserved = m.reserved;
      have_mem = true;
    } else if (r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && r != NVML_ERROR_NOT_SUPPORTED) {
      g->error = Err("nvmlDeviceGetMemoryInfo_v2", r);
      return;
    }
  }
  if (!have_mem) {
    nvmlMemory_t m{};
    r = t_.memory(dev, &m);
    if (r == NVML_SUCCESS) {
      g->memory_total = m.total;
      g->memory_used = m.used;
    } else if (r != NVML_ERROR_NOT_SUPPORTED) {  // unified-memory iGPUs have no FB figures
      g->error = Err("nvmlDeviceGetMemoryInfo", r);
      return;
    }
  }

  if (t_.link_state) {
    for (unsigned link = 0; link < TIDAL_NVML_MAX_LINKS; ++link) {
      int active = 0;
      r = t_.link_state(dev, link, &active);
      if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_NOT_SUPPORTED) {
        if (link == 0) break;  // no NVLink on this GPU
        continue;              // no such link
      }
      if (r != NVML_SUCCESS) {
        g->error = Err("nvmlDeviceGetNvLinkState", r);
        return;
      }
      if (active != 1) continue;
      ++g->active_links;
      int type = -1;
      if (t_.link_remote_type && t_.link_remote_type(dev, link, &type) == NVML_SUCCESS &&
          type == TIDAL_NVML_REMOTE_SWITCH) {
        ++*switch_links;
        continue;
      }
      nvmlPciInfo_t rp{};
      if (t_.link_remote_pci && t_.link_remote_pci(dev, link, &rp) == NVML_SUCCESS)
        remote->push_back(NormaliseBusId(CString(rp.busId, 32)));
    }
  }

  if (t_.field_values && g->active_links > 0) {
    nvmlFieldValue_t v[3] = {};
    v[0].fieldId = TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_TX;
    v[0].scopeId = TIDAL_NVML_SCOPE_ALL_LINKS;
    v[1].fieldId = TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_RX;
    v[1].scopeId = TIDAL_NVML_SCOPE_ALL_LINKS;
    v[2].fieldId = TIDAL_NVML_FI_NVLINK_SPEED_MBPS_COMMON;
    r = t_.field_values(dev, 3, v);
    if (r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_UNKNOWN) {
      g->error = Err("nvmlDeviceGetFieldValues", r);
      return;
    }
    // The call succeeds when anything was filled: every entry has its own status.
    if (r == NVML_SUCCESS && v[0].nvmlReturn == NVML_SUCCESS && v[1].nvmlReturn == NVML_SUCCESS)
      g->throughput = NvlinkThroughput{v[0].value.ullVal, v[1].value.ullVal, v[0].timestamp};
    if (r == NVML_SUCCESS && v[2].nvmlReturn == NVML_SUCCESS)
      g->link_peak_bytes_per_s = static_cast<double>(v[2].value.uiVal) * 1e6;
    // NVLink 2.0 to 4.0 all run 25 GB/s per link and direction.
    if (g->link_peak_bytes_per_s <= 0) g->link_peak_bytes_per_s = 25e9;
  }

  if (t_.processes) {
    // The set changes between calls: ask for the size, then retry while it grows.
    unsigned n = 0;
    r = t_.processes(dev, &n, nullptr);
    std::vector<nvmlProcessInfo_t> infos;
    for (int tries = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && tries < 4; ++tries) {
      n += 8;
      infos.resize(n);
      r = t_.processes(dev, &n, infos.data());
    }
    if (r == NVML_SUCCESS) g->processes = static_cast<int>(n);
  }
}

Status NvmlSource::Read(GpuReadout* out) {
  out->gpus.clear();
  out->error.clear();
  unsigned count = 0;
  nvmlReturn_t r = t_.count(&count);
  if (r != NVML_SUCCESS) return Status::Error(Err("nvmlDeviceGetCount", r));
  std::vector<std::vector<std::string>> remotes(count);
  std::vector<int> switch_links(count, 0);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    r = t_.handle(i, &dev);
    if (r == NVML_ERROR_NO_PERMISSION) continue;  // not ours to see (another container's GPU)
    GpuReading g;
    g.index = static_cast<int>(i);
    if (r != NVML_SUCCESS) {
      g.error = Err("nvmlDeviceGetHandleByIndex", r);
    } else {
      ReadDevice(dev, &g, &remotes[i], &switch_links[i]);
    }
    out->gpus.push_back(std::move(g));
  }
  // Direct links count per remote GPU; links into NVSwitches connect every pair
  // of switch-attached GPUs with the GPU's number of switch links.
  for (GpuReading& g : out->gpus) {
    const auto i = static_cast<std::size_t>(g.index);
    for (const GpuReading& h : out->gpus) {
      if (h.index == g.index || !h.error.empty() || h.bus_id.empty()) continue;
      int links = static_cast<int>(std::count(remotes[i].begin(), remotes[i].end(), h.bus_id));
      if (switch_links[i] > 0 && switch_links[static_cast<std::size_t>(h.index)] > 0)
        links += switch_links[i];
      if (links > 0) g.peers.push_back({h.index, links});
    }
  }
  return Status();
}

}  // namespace

std::unique_ptr<GpuSource> OpenNvml(const std::string& library, std::string* why) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    *why = "cannot load " + library + ": " + (e ? e : "unknown error");
    return nullptr;
  }
  NvmlTable t;
  const bool required =
      Resolve(lib, &t.init, {"nvmlInit_v2", "nvmlInit"}) &&
      Resolve(lib, &t.shutdown, {"nvmlShutdown"}) &&
      Resolve(lib, &t.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}) &&
      Resolve(lib, &t.handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}) &&
      Resolve(lib, &t.uuid, {"nvmlDeviceGetUUID"}) &&
      Resolve(lib, &t.name, {"nvmlDeviceGetName"}) &&
      Resolve(lib, &t.pci, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}) &&
      Resolve(lib, &t.memory, {"nvmlDeviceGetMemoryInfo"});
  if (!required) {
    *why = library + ": not an NVML library (a required symbol is missing)";
    dlclose(lib);
    return nullptr;
  }
  Resolve(lib, &t.error_string, {"nvmlErrorString"});
  Resolve(lib, &t.memory_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  Resolve(lib, &t.link_state, {"nvmlDeviceGetNvLinkState"});
  Resolve(lib, &t.link_remote_pci,
          {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"});
  Resolve(lib, &t.link_remote_type, {"nvmlDeviceGetNvLinkRemoteDeviceType"});
  Resolve(lib, &t.field_values, {"nvmlDeviceGetFieldValues"});
  // Only _v3 pairs with our struct; older symbols take other layouts and would
  // silently corrupt the list, so without _v3 the process count is left out.
  Resolve(lib, &t.processes, {"nvmlDeviceGetComputeRunningProcesses_v3"});
  const nvmlReturn_t r = t.init();
  if (r != NVML_SUCCESS) {
    const char* s = t.error_string ? t.error_string(r) : nullptr;
    *why = "nvmlInit: " + std::string(s ? s : "error") + " (" + std::to_string(r) + ")";
    dlclose(lib);
    return nullptr;
  }
  return std::make_unique<NvmlSource>(lib, t);
}

}  // namespace tidal::agent
