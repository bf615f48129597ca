// tidal-fake-kubelet: the kubelet's side of the device plugin API for the e2e
// tests (tests/e2e/scenarios/device_plugin.py), built from fake_kubelet.h.
//
//   tidal-fake-kubelet --dir DIR [--timeout SECONDS]
//
// Serves Registration on DIR/kubelet.sock, waits for a plugin to register, then
// does what the device manager does with it: GetDevicePluginOptions, and
// ListAndWatch kept open. Then reads commands from stdin, one a line:
//
//   allocate N   GetPreferredAllocation for N devices out of the healthy ones
//                not yet allocated, then Allocate of the preferred devices
//   quit         (or end of input)
//
// and writes one JSON object a line to stdout, each with "event": "serving",
// "registered", "options", "list" (every list ListAndWatch streams),
// "allocation" (per command, with "error" when a call failed), "error" (fatal,
// then exit 1). No time in it decides a result: --timeout bounds each wait.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deviceplugin/fake_kubelet.h"

namespace tidal::deviceplugin::fake {
namespace {

using json = nlohmann::json;

// stdout is written from the main thread and the watch's thread.
class Output {
 public:
  void Emit(const json& j) {
    std::lock_guard<std::mutex> lock(mu_);
    std::cout << j.dump() << '\n' << std::flush;
  }

 private:
  std::mutex mu_;
};

json ErrorOf(const char* call, const grpc::Status& s) {
  return {
      {"call", call}, {"code", static_cast<int>(s.error_code())}, {"message", s.error_message()}};
}

// One container's admission: what the device manager asks, in its order.
json AllocateDevices(v1beta1::DevicePlugin::Stub& stub, const DeviceList& latest,
                     std::set<std::string>* allocated, int size) {
  std::vector<std::string> available;
  for (const auto& [id, health] : latest)
    if (health == "Healthy" && !allocated->count(id)) available.push_back(id);
  json out{{"event", "allocation"}, {"request", size}, {"available", available}};
  std::vector<std::string> preferred;
  if (grpc::Status s = Prefer(stub, available, size, &preferred); !s.ok()) {
    // The kubelet fails the pod's admission here (UnexpectedAdmissionError).
    out["error"] = ErrorOf("GetPreferredAllocation", s);
    return out;
  }
  out["preferred"] = preferred;
  v1beta1::ContainerAllocateResponse r;
  if (grpc::Status s = Allocate(stub, preferred, &r); !s.ok()) {
    out["error"] = ErrorOf("Allocate", s);
    return out;
  }
  for (const auto& id : preferred) allocated->insert(id);
  out["devices"] = preferred;
  out["envs"] = json::object();
  for (const auto& [k, v] : r.envs()) out["envs"][k] = v;
  out["cdi_devices"] = json::array();
  for (const auto& d : r.cdi_devices()) out["cdi_devices"].push_back(d.name());
  return out;
}

int Run(const std::string& dir, std::chrono::seconds timeout) {
  Output out;
  Kubelet kubelet(dir + "/kubelet.sock");
  if (!kubelet.serving()) {
    out.Emit({{"event", "error"}, {"message", "cannot serve on " + dir + "/kubelet.sock"}});
    return 1;
  }
  out.Emit({{"event", "serving"}, {"socket", dir + "/kubelet.sock"}});
  if (!kubelet.WaitForRequests(1, timeout)) {
    out.Emit({{"event", "error"}, {"message", "no plugin registered"}});
    return 1;
  }
  const v1beta1::RegisterRequest reg = kubelet.requests()[0];
  out.Emit({{"event", "registered"},
            {"version", reg.version()},
            {"endpoint", reg.endpoint()},
            {"resource", reg.resource_name()},
            {"preferred_allocation", reg.options().get_preferred_allocation_available()}});

  auto stub = Dial(dir + "/" + reg.endpoint());
  v1beta1::DevicePluginOptions opts;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (grpc::Status s = stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts); !s.ok()) {
    out.Emit({{"event", "error"}, {"error", ErrorOf("GetDevicePluginOptions", s)}});
    return 1;
  }
  out.Emit({{"event", "options"},
            {"pre_start_required", opts.pre_start_required()},
            {"preferred_allocation", opts.get_preferred_allocation_available()}});

  Watch watch(*stub, [&out](const DeviceList& list) {
    out.Emit({{"event", "list"}, {"devices", list}});
  });
  // The device manager allocates from what it was told: wait for the first list.
  if (watch.List(1, timeout).empty()) {
    out.Emit({{"event", "error"}, {"message", "no device list: " + watch.ended()}});
    return 1;
  }
  std::set<std::string> allocated;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string verb;
    words >> verb;
    int size = 0;
    if (verb == "quit") break;
    if (verb == "allocate" && (words >> size) && size > 0) {
      out.Emit(AllocateDevices(*stub, watch.Latest(), &allocated, size));
    } else if (!verb.empty()) {
      out.Emit({{"event", "error"}, {"message", "unknown command: " + line}});
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tidal::deviceplugin::fake

int main(int argc, char** argv) {
  std::string dir;
  long timeout_s = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--timeout") {
      timeout_s = std::strtol(argv[i + 1], nullptr, 10);
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty() || argc % 2 == 0 || timeout_s <= 0) {
    std::fprintf(stderr, "usage: %s --dir DIR [--timeout SECONDS]\n", argv[0]);
    return 2;
  }
  return tidal::deviceplugin::fake::Run(dir, std::chrono::seconds(timeout_s));
}
