// Hardware counters of one run of a launch plan, as a performance engineer used to Nsight Compute
// reads them: where the DRAM bytes went, how well the caches did, how busy the SMs were, and why
// warps waited. Pure data (no CUDA, no CUPTI): it travels in the sandbox protocol, the memory and
// the prompts. Measured by sandbox/worker/range_profiler.h from the metrics of profile_metrics.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

// One warp state's share of all warp cycles (issuing included), in percent.
struct StallShare {
  std::string reason;  // "long_scoreboard", as in the counter smsp__warps_issue_stalled_<reason>
  double percent = 0;
};

// Summed over the plan's kernels (counts) or weighted by each kernel's duration (percentages).
// A value of -1 means "not measured" (tensor_percent where the plan issues no tensor instruction).
struct KernelProfile {
  int kernels = 0;         // kernel launches in one run of the plan
  double duration_us = 0;  // under the profiler, kernels back to back (no gaps)
  double dram_read_bytes = 0;
  double dram_write_bytes = 0;
  double dram_percent = 0;         // DRAM throughput, % of peak sustained over the elapsed time
  double l2_hit_percent = 0;       // L2 sector hit rate
  double l1_hit_percent = 0;       // L1/TEX sector hit rate
  double sm_percent = 0;           // SM throughput: the busiest SM unit, % of its peak
  double occupancy_percent = 0;    // achieved: active warps / max warps per SM, over active cycles
  double tensor_percent = -1;      // tensor pipes' active cycles, % of peak; -1: no tensor work
  double instructions = 0;         // warp instructions executed
  double shared_wavefronts = 0;    // shared-memory data wavefronts (ld, st, atomics)
  double bank_conflicts = 0;       // wavefronts beyond the first of each shared request
  std::vector<StallShare> stalls;  // every non-zero warp state, largest first
  int passes = 0;                  // replay passes the metric set needed
  double profile_ms = 0;           // host time of the whole profile pass

  double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
  // Share of shared-memory wavefronts that were bank-conflict replays (0 with no shared traffic).
  double bank_conflict_percent() const;
  // The largest stall reasons, "selected" (issuing, not a stall) left out.
  std::vector<StallShare> top_stalls(size_t count) const;
};

nlohmann::json to_json(const KernelProfile& profile);
// Errors name the JSON path under `path` ("$.profile.stalls[2].percent").
Result<KernelProfile> kernel_profile_from_json(const nlohmann::json& j,
                                               const std::string& path = "$");
// A profile as the memory stores it (evaluations.profile_json): "" and "{}" mean "not
// profiled", and so does text that does not read as a profile (nothing to show or match).
std::optional<KernelProfile> stored_kernel_profile(const std::string& profile_json);

// One line of "where the time goes" for a prompt or a table: "DRAM 61% of peak (805 MB),
// L2 hit 12%, L1 hit 0%, SM 18%, achieved occupancy 50%, top stalls: long scoreboard 48%, ...".
std::string describe_profile(const KernelProfile& profile);

// "long scoreboard" for "long_scoreboard".
std::string stall_display_name(const std::string& reason);

}  // namespace kopt
