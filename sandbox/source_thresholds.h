// Shapes guided by the candidate's own source. A kernel that is right only up to a size it
// hard-coded (a 64-bit expert mask, a 32-split combine, a shared array of 4096 floats, a top-k
// kept in 16 registers) is right at every shape the task lists when the limit sits just above
// them. So every integer literal of the kernel (its #define values included), every value of its
// tunables and every number in its launch plan is a threshold t, and the gate verifies shapes on
// both sides of it, t-1, t, t+1 and 2t+1, for each size t could bound: a size the task draws
// whose range holds t+1. Literals that look like bounds come first (compared with, an array's
// size, a #define used so); the count and the bytes are bounded. Pure functions, no GPU: the
// worker plans these rounds for every candidate (sandbox/worker/verify_plan.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/kernel_file.h"
#include "sandbox/shape_draw.h"

namespace kopt {

struct SourceThreshold {
  int64_t value = 0;
  // 3: compared with, an array's size or a divisor (directly or through a #define); 2: a
  // tunable's value or a #define's; 1: any other literal (the plan's numbers included).
  int priority = 1;
  std::string origin;  // "line 12", "#define CHUNK", "tunable BLOCK", "plan"
  // The identifiers the literal is compared with or clamped with (`i < cols` -> cols,
  // `min(top_k, 16)` -> top_k): a size of that name is tried first (threshold_shapes).
  std::vector<std::string> bounds;
};

// The thresholds of `kernel` (its source, its plan, and `tunables`, the values it runs with),
// one per value with its highest priority, highest priority first, then largest value first.
// Values below 2 are left out (every size crosses them).
std::vector<SourceThreshold> source_thresholds(const KernelFile& kernel,
                                               const std::map<std::string, int64_t>& tunables);

struct ThresholdShapeLimits {
  int max_shapes = 8;                     // rounds per evaluation
  int64_t max_bytes = int64_t(64) << 20;  // inputs plus outputs of one shape
  // A crossing value whose shape cannot fit max_bytes even with the other sizes at their minimum
  // (a cap `min(n, 67108864)` of a one-size task: n = 2^26 + 1 is 768 MiB of axpy) is still
  // verified within reach_bytes, at most max_reach_shapes times (they cost time: a 768 MiB round
  // is about 2 ms of traffic at 3 TB/s, a few passes of it). 0: never.
  int64_t reach_bytes = 0;
  int max_reach_shapes = 2;
};

// Shapes on both sides of each threshold for the sizes it could bound, within `limits`: each
// starts from a shape drawn from the task's ranges (`seed`), takes the threshold's value for one
// size (rounded to the size's multiple), shrinks the other drawn sizes toward their minimum
// until the shape fits, and keeps the task's constraints. The crossing values of the thresholds
// that bound a size by name (SourceThreshold::bounds) come first, for that size; then the crossing
// values (t+1, 2t+1) of every threshold, then the values at and below it. `named`, where given,
// receives how many of the shapes lead with those named crossings (the plan's stress rounds run
// at each of them).
std::vector<ShapeBinding> threshold_shapes(const TaskSpec& task,
                                           const std::vector<SourceThreshold>& thresholds,
                                           uint64_t seed, const ThresholdShapeLimits& limits = {},
                                           size_t* named = nullptr);

}  // namespace kopt
