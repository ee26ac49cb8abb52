// A cold L2 before every timed sample, for whatever is timed (a candidate's plan in
// timing_loop.cc, a cuBLASLt call in cublaslt_baseline.cc): a memset of twice the L2's size,
// queued on the sample's stream. Memsets are no kernels to CUPTI, so it never enters a sample's
// span. Lines a kernel loaded with an evict_last hint partly survive such a memset (measured on
// Hopper: bench/results/h200-2026-11-26-l2-residency/), so persisting lines are made normal first.
#pragma once

#include "common/result.h"
#include "sandbox/worker/device.h"

namespace kopt::worker {

class ColdL2 {
 public:
  static Result<ColdL2> create(Device& device);
  // Queues the flush on `stream`, writing `value` (a different one per sample); false with
  // `failure` filled when a driver call fails.
  bool queue(CUstream stream, unsigned value, CudaFailure* failure);

 private:
  ColdL2(Device& device, DeviceMemory buffer) : device_(&device), buffer_(std::move(buffer)) {}
  Device* device_;
  DeviceMemory buffer_;
};

}  // namespace kopt::worker
