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

// Device memory, freed on destruction.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const CudaDriver* driver, CUdeviceptr ptr, size_t bytes)
      : driver_(driver), ptr_(ptr), bytes_(bytes) {}
  DeviceMemory(DeviceMemory&& o) noexcept { *this = std::move(o); }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  const CudaDriver* driver_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

Result<DeviceMemory> allocate(Device& device, size_t bytes);

// A stream of the worker's context, destroyed with its owner.
class Stream {
 public:
  static Result<Stream> create(Device& device);
  Stream(Stream&& o) noexcept { *this = std::move(o); }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  CUstream get() const { return stream_; }

 private:
  Stream(const CudaDriver* driver, CUstream stream) : driver_(driver), stream_(stream) {}
  const CudaDriver* driver_ = nullptr;
  CUstream stream_ = nullptr;
};

// A CUDA event, destroyed with its owner (unless the context was abandoned).
class Event {
 public:
  static Result<Event> create(Device& device);
  Event(Event&& o) noexcept { *this = std::move(o); }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  CUevent get() const { return event_; }

 private:
  Event(const CudaDriver* driver, CUevent event) : driver_(driver), event_(event) {}
  const CudaDriver* driver_ = nullptr;
  CUevent event_ = nullptr;
};

// Times `reps` runs of `launch(rep)` on `stream`, each between two events, and returns each
// run's milliseconds. A launch that fails ends the timing with its error.
Result<std::vector<float>> time_with_events(Device& device, CUstream stream, int reps,
                                            const std::function<Status(int rep)>& launch);

// A loaded CUBIN, unloaded on destruction.
class Module {
 public:
  Module() = default;
  Module(const CudaDriver* driver, CUmodule module) : driver_(driver), module_(module) {}
  Module(Module&& o) noexcept { *this = std::move(o); }
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();
  CUmodule get() const { return module_; }

 private:
  const CudaDriver* driver_ = nullptr;
  CUmodule module_ = nullptr;
};

}  // namespace kopt::worker
