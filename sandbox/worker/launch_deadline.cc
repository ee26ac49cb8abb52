#include "sandbox/worker/launch_deadline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace kopt::worker {
namespace {

using Clock = std::chrono::steady_clock;

std::string milliseconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  return buf;
}

}  // namespace

RunLimit candidate_run_limit(const EvalOptions& options, double trusted_seconds,
                             const std::string& what) {
  RunLimit limit;
  double scaled = options.hang_factor * trusted_seconds;
  limit.seconds = std::max(options.hang_floor_seconds, scaled);
  bool capped = options.hang_ceiling_seconds > 0 && limit.seconds > options.hang_ceiling_seconds;
  if (capped) limit.seconds = options.hang_ceiling_seconds;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.1f s: %gx %s's %s, at least %.1f s", limit.seconds,
                options.hang_factor, what.c_str(), milliseconds_text(trusted_seconds).c_str(),
                options.hang_floor_seconds);
  limit.basis = buf;
  if (capped) {
    std::snprintf(buf, sizeof buf, ", at most %.1f s", options.hang_ceiling_seconds);
    limit.basis += buf;
  }
  return limit;
}

std::optional<PlanFailure> wait_for_stream(Device& device, CUstream stream, const RunLimit& limit,
                                           const std::string& what, double* elapsed_seconds) {
  const CudaDriver& d = device.driver();
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(limit.seconds));
  // Spin briefly (most verification runs take microseconds), then sleep in growing steps so a
  // long kernel costs no CPU; the step stays under a millisecond so hangs are seen promptly.
  auto sleep_step = std::chrono::microseconds(20);
  while (true) {
    CUresult rc = d.cuStreamQuery(stream);
    auto now = Clock::now();
    if (elapsed_seconds) *elapsed_seconds = std::chrono::duration<double>(now - start).count();
    if (rc == CUDA_SUCCESS) return std::nullopt;
    if (rc != CUDA_ERROR_NOT_READY) {
      CudaFailure failure;
      device.check(rc, "cuStreamQuery", &failure);
      return PlanFailure{failure.sticky ? Verdict::kCrash : Verdict::kLaunchError,
                         "while running " + what + ": " + failure.message, failure.sticky};
    }
    if (now >= deadline) {
      device.abandon();
      return PlanFailure{Verdict::kTimeout,
                         what + " was still running after its limit of " + limit.basis +
                             "; the worker gave up its GPU context to stop it",
                         true};
    }
    if (now - start > std::chrono::milliseconds(2)) {
      std::this_thread::sleep_for(sleep_step);
      sleep_step = std::min(sleep_step * 2, std::chrono::microseconds(500));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace kopt::worker
