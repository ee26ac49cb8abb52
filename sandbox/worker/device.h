// The worker's GPU: one device, its primary context, and facts about it. Also move-only owners
// for device memory, streams and modules. Every driver call's failure carries the call's name and
// the CUresult; a sticky error marks the context as lost so the worker reports and exits.
#pragma once

#include <cuda.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "sandbox/cuda_driver.h"

namespace kopt::worker {

struct DeviceInfo {
  std::string name;
  int ordinal = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_shared_per_block_optin = 0;
  int max_shared_per_block = 48 * 1024;
  int driver_version = 0;
  std::string pci_bus_id;    // "0000:3B:00.0": how NVML finds the same GPU
  std::string arch() const;  // "sm_90a" for Hopper and later, else "sm_XY"
  nlohmann::json to_json() const;
};

// Thrown-free error for a failed driver call; `sticky` when the context is unusable.
struct CudaFailure {
  std::string message;
  CUresult code = CUDA_SUCCESS;
  bool sticky = false;
};

// The name every worker of a GPU gives its turns (sandbox/gpu_turn.h): its PCI bus id, the
// ordinal where there is none.
std::string gpu_turn_name(const std::string& pci_bus_id, int ordinal);
// The same for GPU `ordinal`, read without creating a context, so that a yielding worker can
// register and take its turn before its context exists.
Result<std::string> gpu_turn_id(int ordinal);

class Device {
 public:
  static Result<Device*> open(int ordinal);  // process-wide, one per worker
  const CudaDriver& driver() const { return *driver_; }
  const DeviceInfo& info() const { return info_; }
  CUcontext context() const { return context_; }
  CUstream stream() const { return stream_; }

  // Checks a driver call; on failure records whether the context is now lost.
  bool check(CUresult result, const char* call, CudaFailure* failure);
  bool context_lost() const { return context_lost_; }
  // A kernel is still running and will not stop (it missed its deadline): the context is given
  // up. From here on no owner frees device memory or unloads modules (those calls would wait for
  // the kernel forever); the worker answers and exits, and the driver tears the context down.
  void abandon() {
    context_lost_ = true;
    abandoned_flag() = true;
  }
  static bool abandoned() { return abandoned_flag(); }
  // Gives the primary context back now instead of at exit (its teardown is GPU work a yielding
  // worker brackets with a unit, worker_main.cc); owners left alive skip their driver calls from
  // here on, as after abandon(). False where the context was abandoned: a kernel that will not
  // stop would hold the call forever, and the driver tears it down at exit.
  bool release_context();

 private:
  const CudaDriver* driver_ = nullptr;
  DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  bool context_lost_ = false;
  static bool& abandoned_flag() {
    static bool flag = false;
    return flag;
  }
};

// The device's free and total memory in bytes; both 0 when the driver cannot say.
struct MemoryInfo {
  size_t free_bytes = 0, total_bytes = 0;
};
MemoryInfo memory_info(Device& device);

// A driver handle and its one owner, which frees it on destruction or when given another.
// `Kind` says which: its handle type, the call that frees it (a Kind whose handle is left alone
// once the context was abandoned says so in its `destroy`) and, for handles of the worker's
// context made by `create`, the driver call that creates one (named in the error).
template <typename Kind>
class DriverOwned {
 public:
  using Handle = typename Kind::Handle;
  DriverOwned() = default;
  DriverOwned(const CudaDriver* driver, Handle handle) : driver_(driver), handle_(handle) {}
  static Result<DriverOwned> create(Device& device) {
    Handle handle{};
    CudaFailure failure;
    if (!device.check(Kind::create(device.driver(), &handle), Kind::kCreateCall, &failure))
      return make_error(failure.message);
    return DriverOwned(&device.driver(), handle);
  }
  DriverOwned(DriverOwned&& o) noexcept { *this = std::move(o); }
  DriverOwned& operator=(DriverOwned&& o) noexcept {
    if (this != &o) {
      release();
      driver_ = o.driver_;
      handle_ = std::exchange(o.handle_, Handle{});
    }
    return *this;
  }
  DriverOwned(const DriverOwned&) = delete;
  DriverOwned& operator=(const DriverOwned&) = delete;
  ~DriverOwned() { release(); }
  Handle get() const { return handle_; }

 private:
  void release() {
    if (handle_ && driver_) Kind::destroy(*driver_, handle_);
  }
  const CudaDriver* driver_ = nullptr;
  Handle handle_{};
};

// Device memory and loaded modules are left alone once the context was abandoned
// (Device::abandon: a kernel that will not stop), on destruction and on move alike.
struct MemoryKind {
  using Handle = CUdeviceptr;
  static void destroy(const CudaDriver& d, CUdeviceptr p) {
    if (!Device::abandoned()) d.cuMemFree(p);
  }
};

// Device memory, freed on destruction.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const CudaDriver* driver, CUdeviceptr ptr, size_t bytes)
      : memory_(driver, ptr), bytes_(bytes) {}
  CUdeviceptr ptr() const { return memory_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  DriverOwned<MemoryKind> memory_;
  size_t bytes_ = 0;
};

Result<DeviceMemory> allocate(Device& device, size_t bytes);

struct StreamKind {
  using Handle = CUstream;
  static constexpr const char* kCreateCall = "cuStreamCreate";
  static CUresult create(const CudaDriver& d, CUstream* s) {
    return d.cuStreamCreate(s, CU_STREAM_DEFAULT);
  }
  static void destroy(const CudaDriver& d, CUstream s) { d.cuStreamDestroy(s); }
};

// An event is left alone once the context was abandoned (Device::abandon: a kernel that will not
// stop), like device memory and modules; the driver tears the context down.
struct EventKind {
  using Handle = CUevent;
  static constexpr const char* kCreateCall = "cuEventCreate";
  static CUresult create(const CudaDriver& d, CUevent* e) {
    return d.cuEventCreate(e, CU_EVENT_DEFAULT);
  }
  static void destroy(const CudaDriver& d, CUevent e) {
    if (!Device::abandoned()) d.cuEventDestroy(e);
  }
};

// A stream of the worker's context.
using Stream = DriverOwned<StreamKind>;
// A CUDA event (not destroyed once the context was abandoned).
using Event = DriverOwned<EventKind>;

// Copies between the host and the device in the worker's stream order, then waits for the stream
// (the host buffer may be local): the launches before the copy need no syncs of their own.
Status copy_to_host(Device& device, void* host, CUdeviceptr from, size_t bytes);
Status copy_to_device(Device& device, CUdeviceptr to, const void* host, size_t bytes);

// Times `reps` runs of `launch(rep)` on `stream`, each between two events, and returns each
// run's milliseconds. A launch that fails ends the timing with its error.
Result<std::vector<float>> time_with_events(Device& device, CUstream stream, int reps,
                                            const std::function<Status(int rep)>& launch);

struct ModuleKind {
  using Handle = CUmodule;
  static void destroy(const CudaDriver& d, CUmodule m) {
    if (!Device::abandoned()) d.cuModuleUnload(m);
  }
};

// A loaded CUBIN, unloaded on destruction.
using Module = DriverOwned<ModuleKind>;

}  // namespace kopt::worker
