// The metrics kopt's profile pass asks CUPTI for, and how one run's per-kernel values become a
// KernelProfile. Names are Nsight Compute's (PerfWorks) so every number can be checked with
// `ncu --metrics <name>` (bench/profile_fidelity.py does). Pure: no CUPTI here.
#pragma once

#include <string>
#include <vector>

#include "sandbox/kernel_profile.h"

namespace kopt {

// Every metric of the pass, in the order profile values are reported.
const std::vector<std::string>& profile_metric_names();

// One kernel's values, in the order of profile_metric_names().
using RangeValues = std::vector<double>;

// Counts are summed over the plan's kernels; rates are weighted by each kernel's duration, as a
// plan's average over its run. Stall counters become shares of all warp cycles.
KernelProfile summarize_ranges(const std::vector<RangeValues>& ranges);

}  // namespace kopt
