// NVML (libnvidia-ml.so.1), loaded at run time like libcuda: which processes hold compute on a
// GPU, and whether its clocks are being held down. kopt uses it to refuse numbers taken on a
// shared or throttled GPU; nothing here is needed to evaluate a kernel, so a machine without NVML
// only loses the check (and says so).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

struct GpuProcess {
  unsigned pid = 0;
  uint64_t used_bytes = 0;
  std::string name;  // from /proc/PID/comm; empty when the PID is not visible here
};

// What NVML says about one GPU right now.
struct GpuActivity {
  std::vector<GpuProcess> processes;  // every process holding a compute context on it
  uint64_t clock_event_reasons = 0;   // nvmlClocksEventReasons bit mask
  unsigned sm_clock_mhz = 0;
  unsigned max_sm_clock_mhz = 0;
  unsigned utilization_percent = 0;  // share of the last sample period a kernel ran
};

// Loads libnvidia-ml.so.1 once; the error says why it is not usable.
Status load_nvml();

// The GPU with this PCI bus id ("0000:3B:00.0", as cuDeviceGetPCIBusId writes it).
Result<GpuActivity> gpu_activity(const std::string& pci_bus_id);
// The GPU with this NVML index (kopt doctor, which has no CUDA context).
Result<GpuActivity> gpu_activity_by_index(unsigned index);

// The processes other than `self` (usually the calling worker). NVML reports host PIDs; inside a
// container whose PID namespace hides them, no entry matches `self`, and then every process but
// one is counted as another (the worker itself is one of them).
std::vector<GpuProcess> other_processes(const GpuActivity& activity, unsigned self);

// Clock-event reasons that slow kernels down behind kopt's back: hardware slowdown, thermal
// slowdown, power brake. (A software power cap under load and idle clocks are normal.)
bool clocks_held_down(uint64_t reasons);
// "hw_slowdown, sw_thermal" for the bits set in `reasons`; "none" when none is.
std::string describe_clock_events(uint64_t reasons);
// "pid 4242 (python3, 1.2 GiB)" for logs.
std::string describe_process(const GpuProcess& process);

}  // namespace kopt
