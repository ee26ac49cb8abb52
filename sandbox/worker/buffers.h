// Device buffers for one shape: every buffer a candidate can write sits between two guard zones
// of random bytes (memory_patterns.h), so a write past either end is detected after the run.
//
// Every allocation is a whole number of allocation granules (2 MiB) and the tail guard runs to its
// end: the driver maps device memory in granules, so a rounded-up allocation left mapped bytes
// past a short guard that belonged to nobody, were never checked, and kept a candidate's state
// across runs. Now every mapped byte of a buffer's allocation is payload or guard.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/dtype.h"
#include "sandbox/worker/device.h"

namespace kopt::worker {

inline constexpr size_t kGuardBytes = 64 * 1024;  // the head zone; the least tail zone
inline constexpr size_t kAllocationGranule = size_t(2) << 20;

// The allocation of a payload: the head zone, the payload, at least kGuardBytes of tail zone,
// rounded up to whole granules.
inline size_t guarded_allocation_bytes(size_t payload) {
  size_t need = kGuardBytes + payload + kGuardBytes;
  return (need + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
}

struct BufferRef {
  CUdeviceptr ptr = 0;
  DType dtype = DType::kF32;
  int64_t elements = 0;
  size_t bytes() const { return size_t(elements) * dtype_size(dtype); }
};

// Where a buffer's guard zones are: [base, base + head_bytes) and [base + tail_start, base + end),
// each byte holding guard_byte(seed, its offset from base). 64-bit fields: the guard scan kernel
// takes them as its unsigned 64-bit arguments (SupportKernels::scan_guards).
struct GuardZones {
  CUdeviceptr base = 0;
  uint64_t head_bytes = 0;
  uint64_t tail_start = 0;
  uint64_t end = 0;
  uint64_t seed = 0;
};

// "a write 3 byte(s) past the end", from a scan's distances (0: intact); empty when intact.
std::string describe_guard_damage(uint64_t head_distance, uint64_t tail_offset);

// Writes a buffer's guard pattern (all of its allocation) on the worker's stream: the support
// kernels register one at load; without one the pattern is made on the host and copied.
using GuardPainter = std::function<Status(CUdeviceptr base, size_t bytes, uint64_t seed)>;
void set_guard_painter(GuardPainter painter);

// Under compute-sanitizer (EvalOptions::exact_allocations): buffers created from here on are each
// their own allocation of exactly the payload's bytes, with no zones. memcheck checks accesses
// against each allocation's requested size, so a read or write past a buffer's end that the zones
// of one allocation would absorb (a vectorised over-read adds the zone's bytes and nothing
// checks reads) is its finding; the zones' integrity checks are skipped there, memcheck takes
// their role. cuMemAlloc's bases are 256-byte aligned, as the payload behind a zone was.
void set_exact_allocations(bool exact);
bool exact_allocations();

class GuardedBuffer {
 public:
  static Result<GuardedBuffer> create(Device& device, DType dtype, int64_t elements);
  BufferRef ref() const { return {memory_.ptr() + head_bytes_, dtype_, elements_}; }
  // False for an exact allocation (set_exact_allocations): nothing to scan.
  bool has_guards() const { return head_bytes_ != 0; }
  // Re-arms both guard zones with a new random seed (the payload is overwritten too).
  Status arm_guards();
  // Device addresses of the two zones, for a scan of many buffers on the GPU at once.
  GuardZones guard_zones() const;
  // The allocation's size: what the buffer takes of the GPU's memory.
  size_t allocated_bytes() const { return memory_.bytes(); }

 private:
  Device* device_ = nullptr;
  DeviceMemory memory_;
  DType dtype_ = DType::kF32;
  int64_t elements_ = 0;
  uint64_t seed_ = 0;
  size_t head_bytes_ = kGuardBytes;  // 0: an exact allocation
};

// Named buffers a launch plan binds to (inputs, outputs, scratch).
using BufferMap = std::map<std::string, BufferRef>;

// Fills a buffer's bytes on the worker's stream (poison, zero).
Status fill_bytes(Device& device, const BufferRef& buffer, unsigned char value);
Status copy_buffer(Device& device, const BufferRef& from, const BufferRef& to);

}  // namespace kopt::worker
