// Device buffers for one shape: every buffer a candidate can write sits between two guard zones
// filled with a canary pattern, so a write past either end is detected after the run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/dtype.h"
#include "sandbox/worker/device.h"

namespace kopt::worker {

inline constexpr size_t kGuardBytes = 64 * 1024;  // multiple of 256 keeps buffers aligned
inline constexpr unsigned char kGuardPattern = 0xA5;

struct BufferRef {
  CUdeviceptr ptr = 0;
  DType dtype = DType::kF32;
  int64_t elements = 0;
  size_t bytes() const { return size_t(elements) * dtype_size(dtype); }
};

struct GuardZones {
  CUdeviceptr head = 0;
  size_t head_bytes = 0;
  CUdeviceptr tail = 0;
  size_t tail_bytes = 0;
};

// "a write 3 byte(s) past the end", from a scan's distances (0: intact); empty when intact.
std::string describe_guard_damage(uint64_t head_distance, uint64_t tail_offset);

class GuardedBuffer {
 public:
  static Result<GuardedBuffer> create(Device& device, DType dtype, int64_t elements);
  BufferRef ref() const { return {memory_.ptr() + kGuardBytes, dtype_, elements_}; }
  // Re-arms both guard zones (after an out-of-bounds write was reported, or on reuse).
  Status arm_guards();
  // Empty when both zones still hold the pattern; otherwise says where the damage is.
  Result<std::string> damaged_guard();
  // Device addresses of the two zones, for a scan of many buffers on the GPU at once.
  GuardZones guard_zones() const;

 private:
  Device* device_ = nullptr;
  DeviceMemory memory_;
  DType dtype_ = DType::kF32;
  int64_t elements_ = 0;
};

// Named buffers a launch plan binds to (inputs, outputs, scratch).
using BufferMap = std::map<std::string, BufferRef>;

// Fills a buffer's bytes on the worker's stream (poison, zero).
Status fill_bytes(Device& device, const BufferRef& buffer, unsigned char value);
Status copy_buffer(Device& device, const BufferRef& from, const BufferRef& to);

}  // namespace kopt::worker
