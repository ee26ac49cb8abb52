#include "sandbox/nvml.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <mutex>

#include "common/strings.h"

namespace kopt {
namespace {

// NVML's C types, declared here because the CUDA toolkit ships no nvml.h. These layouts are
// NVML's stable ABI (nvml.h of CUDA 11.x-13.x).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2/v3)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1;

struct NvmlLibrary {
  NvmlReturn (*init)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*running_processes)(NvmlDevice, unsigned*, NvmlProcessInfo*) = nullptr;
  NvmlReturn (*clock_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
};

Result<NvmlLibrary> load_once() {
  void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return make_error("NVML (libnvidia-ml.so.1) could not be loaded: " + std::string(dlerror()));
  NvmlLibrary lib;
  std::string missing;
  auto resolve = [&](auto& fn, std::initializer_list<const char*> names) {
    void* sym = nullptr;
    for (const char* name : names)
      if (!sym) sym = dlsym(handle, name);
    if (!sym) missing += std::string(" ") + *names.begin();
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  resolve(lib.init, {"nvmlInit_v2", "nvmlInit"});
  resolve(lib.error_string, {"nvmlErrorString"});
  resolve(lib.handle_by_pci, {"nvmlDeviceGetHandleByPciBusId_v2"});
  resolve(lib.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2"});
  resolve(lib.running_processes,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(lib.clock_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(lib.clock_info, {"nvmlDeviceGetClockInfo"});
  resolve(lib.max_clock_info, {"nvmlDeviceGetMaxClockInfo"});
  resolve(lib.utilization, {"nvmlDeviceGetUtilizationRates"});
  if (!missing.empty()) return make_error("libnvidia-ml.so.1 lacks:" + missing);
  NvmlReturn rc = lib.init();
  if (rc != kNvmlSuccess)
    return make_error(std::string("nvmlInit failed: ") + lib.error_string(rc));
  return lib;
}

const Result<NvmlLibrary>& library() {
  static std::once_flag once;
  static Result<NvmlLibrary>* loaded = nullptr;
  std::call_once(once, [] { loaded = new Result<NvmlLibrary>(load_once()); });
  return *loaded;
}

std::string process_name(unsigned pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

Result<GpuActivity> activity_of(const NvmlLibrary& lib, NvmlDevice device) {
  GpuActivity activity;
  std::vector<NvmlProcessInfo> infos(16);
  unsigned count = unsigned(infos.size());
  NvmlReturn rc = lib.running_processes(device, &count, infos.data());
  if (rc == kNvmlInsufficientSize) {
    infos.resize(count + 8);
    count = unsigned(infos.size());
    rc = lib.running_processes(device, &count, infos.data());
  }
  if (rc != kNvmlSuccess)
    return make_error(std::string("nvmlDeviceGetComputeRunningProcesses: ") + lib.error_string(rc));
  for (unsigned i = 0; i < count; ++i)
    activity.processes.push_back(
        {infos[i].pid, infos[i].used_gpu_memory, process_name(infos[i].pid)});
  unsigned long long reasons = 0;
  if (lib.clock_reasons(device, &reasons) == kNvmlSuccess) activity.clock_event_reasons = reasons;
  (void)lib.clock_info(device, kNvmlClockSm, &activity.sm_clock_mhz);
  (void)lib.max_clock_info(device, kNvmlClockSm, &activity.max_sm_clock_mhz);
  NvmlUtilization use{};
  if (lib.utilization(device, &use) == kNvmlSuccess) activity.utilization_percent = use.gpu;
  return activity;
}

}  // namespace

Status load_nvml() {
  if (!library()) return make_error(library().error());
  return ok_status();
}

Result<GpuActivity> gpu_activity(const std::string& pci_bus_id) {
  if (!library()) return make_error(library().error());
  const NvmlLibrary& lib = *library();
  NvmlDevice device = nullptr;
  NvmlReturn rc = lib.handle_by_pci(pci_bus_id.c_str(), &device);
  if (rc != kNvmlSuccess)
    return make_error("NVML does not know the GPU at " + pci_bus_id + ": " + lib.error_string(rc));
  return activity_of(lib, device);
}

Result<GpuActivity> gpu_activity_by_index(unsigned index) {
  if (!library()) return make_error(library().error());
  const NvmlLibrary& lib = *library();
  NvmlDevice device = nullptr;
  NvmlReturn rc = lib.handle_by_index(index, &device);
  if (rc != kNvmlSuccess)
    return make_error("NVML has no GPU " + std::to_string(index) + ": " + lib.error_string(rc));
  return activity_of(lib, device);
}

std::vector<GpuProcess> other_processes(const GpuActivity& activity, unsigned self) {
  std::vector<GpuProcess> others;
  bool self_seen = false;
  for (const auto& p : activity.processes) {
    if (p.pid == self) {
      self_seen = true;
    } else {
      others.push_back(p);
    }
  }
  // PIDs from another namespace: one of the entries is the caller itself, which cannot be told
  // apart; drop one so that a GPU holding only the caller counts as free.
  if (!self_seen && !others.empty()) others.pop_back();
  return others;
}

bool clocks_held_down(uint64_t reasons) {
  constexpr uint64_t kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40, kPowerBrake = 0x80;
  return (reasons & (kHwSlowdown | kSwThermal | kHwThermal | kPowerBrake)) != 0;
}

std::string describe_clock_events(uint64_t reasons) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::vector<std::string> set;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) set.push_back(name);
  return set.empty() ? "none" : join(set, ", ");
}

std::string describe_process(const GpuProcess& process) {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", double(process.used_bytes) / (1u << 30));
  return "pid " + std::to_string(process.pid) + " (" +
         (process.name.empty() ? std::string("not visible here") : process.name) + ", " + memory +
         ")";
}

}  // namespace kopt
