// What limits a kernel, read from its hardware counters (kernel_profile.h) the way a performance
// engineer reads Nsight Compute: first the Speed Of Light section (is DRAM or an SM unit near its
// peak?), then Memory Workload Analysis (bank conflicts), then, when nothing is near its peak,
// Occupancy and Warp State Statistics (why the warps wait). Pure data, no CUDA: the prompts show
// the class, and retrieval matches a kernel with pairs whose slow side had the same limit.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "sandbox/kernel_profile.h"

namespace kopt {

enum class Bottleneck {
  kUnknown,              // no profile
  kDramBandwidth,        // DRAM throughput near its peak: fewer or better-packed bytes help
  kSharedBankConflicts,  // shared-memory requests replayed for bank conflicts: pad or swizzle
  kTensor,               // tensor pipes near their peak
  kCompute,              // an SM unit (ALU, FMA, LSU...) near its peak, DRAM not
  kOccupancyLatency,     // nothing near its peak and too few warps resident to hide latency
  kMemoryLatency,        // nothing near its peak, warps wait on global/local loads (L1TEX)
  kLatency,              // nothing near its peak, warps wait on barriers, math or dependencies
};

// The class of `profile`; kUnknown for an empty one (no kernels measured).
Bottleneck classify_bottleneck(const KernelProfile& profile);

// A stable name for storage and comparison: "dram_bandwidth", "memory_latency", "unknown"...
std::string bottleneck_name(Bottleneck bottleneck);

// For a prompt, after "bound by": "DRAM bandwidth", "memory latency (...)"; "" for kUnknown.
std::string bottleneck_description(Bottleneck bottleneck);

// describe_profile()'s line, then " -> bound by DRAM bandwidth" when the class is known: what a
// prompt's "where the time goes" section and `kopt memory show` print.
std::string describe_profile_and_bottleneck(const KernelProfile& profile);

// The name of the class of a stored profile (EvaluationRecord::profile_json); "unknown" for
// "{}", "" or text that is not a profile, so a damaged row only loses its feature.
std::string bottleneck_of_profile_json(const std::string& profile_json);

// bottleneck_of_profile_json() with a memory, safe to share between threads: retrieval classifies
// the slow side of each of up to 250 candidate pairs, mostly the same pairs query after query,
// and parsing a profile costs about 15 us (4 ms a query, against retrieval's 10 ms budget).
class BottleneckMemo {
 public:
  std::string operator()(const std::string& profile_json);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> classes_;  // profile text -> class name
};

}  // namespace kopt
