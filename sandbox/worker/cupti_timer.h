// GPU time of kernels from CUPTI activity records (CONCURRENT_KERNEL, which unlike KIND_KERNEL
// does not serialize kernels). Records carry the stream, so interleaved candidate and baseline
// samples on their own streams are told apart without guessing.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt::worker {

struct KernelRecord {
  uint32_t stream_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string name;
};

class CuptiKernelTimer {
 public:
  // Enables collection for the process; call once before the timed work.
  static Status enable();
  // The CUPTI id of a stream (records name streams by this id).
  static Result<uint32_t> stream_id(CUcontext context, CUstream stream);
  // Stops kernel tracing (records so far are kept for collect()) while a profile pass runs,
  // and starts it again; both do nothing where tracing was never enabled.
  static Status pause();
  static Status resume();
  // Flushes CUPTI's buffers and returns every kernel record since the last call.
  static Result<std::vector<KernelRecord>> collect();
  // Number of records CUPTI reported as dropped (must be 0 for a valid measurement).
  static uint64_t dropped();
};

// The per-sample spans (microseconds, first start to last end) of one stream's records, each
// sample being `launches` consecutive kernels; an error when they do not split evenly or the
// kernel names change between samples. `who` leads the messages ("candidate", "cuBLASLt").
Result<std::vector<double>> split_into_samples(std::vector<KernelRecord> records, size_t launches,
                                               const std::string& who);

}  // namespace kopt::worker
