// What the busy-GPU probe's launches say, apart from running them (gpu_quiet_check.cc runs them):
// the probe's length in SM cycles, and whether that length is over its best on this GPU.
//
// Why cycles: the probe is a fixed amount of FMA work, so its cycle count does not change when a
// warm or power-capped GPU lowers its clock, while another context's work (time-slicing, which
// NVML may not list) delays it in wall time at the clock it runs at. The clock is measured inside
// the probe kernel (%clock64 over %globaltimer, summed over its blocks): NVML sampled before and
// after the probe read a cold GPU's ramping clock too low, so the best taken on a cold H200 was
// 10-15% under what a warm one can reach, and every later check called the GPU busy (session 8:
// 334 us against a best of 289 us "at the maximum clock" with no other process on the GPU).
// Measured on an H200 (2026-11-28): 323 us at 1976 MHz cold and 322-326 us at 1978 MHz after
// 20 s of full FMA load; beside another process's kernels, 2480-2700 us per launch at the same
// 1978 MHz inside the kernel: the launch waits for the other context's time slice.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt::worker {

// One launch of the FMA probe: its time by events and the SM clock inside it.
struct FmaRep {
  double ms = 0;
  double sm_mhz = 0;  // 0: the kernel ran no measurable time (never on a working GPU)
};

struct ProbeReading {
  double us = 0;          // median time of the timed launches
  double sm_mhz = 0;      // median SM clock inside them
  double kilocycles = 0;  // us x sm_mhz / 1000: what is compared with the best
};

// The launches after the first (which warms up). Medians taken apart: a launch whose clock reads
// oddly (preempted mid-kernel) moves neither the clock nor the time of the rest.
Result<ProbeReading> read_probe(const std::vector<FmaRep>& reps);

// Why the probe is too slow to call the GPU ours alone: more than `tolerance` over
// `best_kilocycles` (0: no best yet, never too slow). nullopt: within it.
std::optional<std::string> probe_over_best(const ProbeReading& reading, double best_kilocycles,
                                           double tolerance);

}  // namespace kopt::worker
