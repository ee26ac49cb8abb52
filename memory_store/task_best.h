// The one definition of a task's best kernel, read by `kopt status`, `kopt memory wins`, the
// report and the export alike: among the task's verified evaluations (verdict ok, a measured
// median), the highest speedup over the baseline timed beside it in the same evaluation
// (interleaved, so drift cancels in that ratio); ties go to the lower median, then to the
// earlier evaluation, so the answer never flips between calls.
#pragma once

#include "memory_store/records.h"

namespace kopt::memory {

// ORDER BY of that rule over `evaluations e`.
inline constexpr const char* kBestEvaluationOrder = "e.speedup DESC, e.median_us, e.id";

// True when `a` is a better best than `b` by that rule.
inline bool better_best(const EvaluationRecord& a, const EvaluationRecord& b) {
  if (a.speedup != b.speedup) return a.speedup > b.speedup;
  if (a.median_us != b.median_us) return a.median_us < b.median_us;
  return a.id < b.id;
}

}  // namespace kopt::memory
