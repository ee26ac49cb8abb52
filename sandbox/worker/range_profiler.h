// Hardware counters of a launch plan through CUPTI's range profiler (cupti_range_profiler.h and
// cupti_profiler_host.h, CUDA 12.6+): every kernel of one run is a range (auto range), and the
// run is replayed by the caller until every pass of the metric set is collected (user replay),
// so CUPTI never saves and restores device memory. libcupti is linked (it loads libnvperf_* and
// libcuda itself, at first use), so the worker starts without a driver or counter permission.
#pragma once

#include <cuda.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/profile_metrics.h"

namespace kopt::worker {

// Why profiling cannot work on this machine at all (as opposed to one failed pass).
struct ProfilerUnavailable {
  std::string reason;
};

class RangeProfiler {
 public:
  // Set up once per process for `context` (chip name, counter availability, config image).
  // A permission problem (ERR_NVGPUCTRPERM) comes back as `unavailable` with a clear reason.
  static Result<std::unique_ptr<RangeProfiler>> create(CUcontext context, int device_ordinal,
                                                       ProfilerUnavailable* unavailable);
  ~RangeProfiler();
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  // Replay passes the metric set needs on this chip (cuptiProfilerHostGetNumOfPasses).
  size_t passes() const { return passes_; }
  const std::string& chip() const { return chip_; }
  // Where the last profile() call's host time went, for KOPT_PROFILE_TRACE.
  struct Timing {
    double setup_ms = 0;   // enable, counter data image, config
    double passes_ms = 0;  // before_pass + run_once + start/stop, every pass
    double before_ms = 0;  // of which before_pass
    double runs_ms = 0;    // of which run_once
    double decode_ms = 0;  // decode and evaluate the metrics
  };
  const Timing& last_timing() const { return timing_; }
  // Per pass: `before_pass` (outside the profiled range: its kernels are not counted), then
  // `run_once` (one run of the plan, synchronised), each of whose `launches` kernels is one
  // range. Returns each range's values in profile_metric_names() order.
  Result<std::vector<RangeValues>> profile(const std::function<Status()>& before_pass,
                                           const std::function<Status()>& run_once,
                                           size_t launches);

 private:
  RangeProfiler() = default;
  CUcontext context_ = nullptr;
  std::string chip_;
  void* host_ = nullptr;  // CUpti_Profiler_Host_Object*
  std::vector<uint8_t> config_;
  std::vector<std::string> supported_;  // metrics of profile_metric_names() this chip has
  size_t passes_ = 0;
  bool kernel_replay_said_ = false;
  Timing timing_;
};

}  // namespace kopt::worker
