// A launch plan and a task's formulas evaluated on the CPU at every shape the task names (its
// default sizes, the correctness sweep, the holdout, the stress rounds' own shapes), so that a
// plan that cannot launch at some shape (a block of 4096 threads, a grid of n/0, a grid that is 0
// at a small sweep shape) fails `kopt eval --compile-only` and `kopt tasks check --compile-only`
// instead of a GPU evaluation. The worker checks the same limits again at launch time
// (sandbox/worker/plan_launcher.cc), where the device's own limits are known.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt {

// CUDA's launch limits on every GPU kopt supports (compute capability 7.0 and later).
inline constexpr int64_t kMaxBlockThreads = 1024;  // per block, and per x or y dimension
inline constexpr int64_t kMaxBlockZ = 64;
inline constexpr int64_t kMaxGridX = 2147483647;  // 2^31 - 1
inline constexpr int64_t kMaxGridYZ = 65535;
// A scratch buffer larger than this many elements is a mistake, not a plan (as in the worker).
inline constexpr int64_t kMaxScratchElements = int64_t(1) << 36;

// One shape of a task with where it comes from ("default sizes", "$.shapes[2]").
struct NamedShape {
  std::string name;
  ShapeBinding sizes;  // every size bound
};

// The default sizes, then the sweep, the holdout and the stress rounds' own shapes.
std::vector<NamedShape> task_shapes(const TaskSpec& task);

// The tunable choices a kernel file is checked with: the defaults, then each other value of
// each tunable with the rest at their defaults.
std::vector<std::map<std::string, int64_t>> tunable_variants(const KernelFile& file);

// The task's flops and bytes at every shape: an error (division by zero, overflow) or a
// negative value is a problem. Every problem, one per line, names task.json and the JSON path.
Status check_task_formulas(const TaskSpec& task);

// Every expression of the plan (grid, block, shared_bytes, scratch counts, integer arguments)
// at every shape of the task, with the tunables at `chosen` (defaults for the rest): errors,
// dimensions outside CUDA's limits, negative sizes. Every problem, one per line, names the kernel
// file, its plan's line and the JSON path, with the first shape where it occurs.
Status check_plan_at_shapes(const KernelFile& file, const TaskSpec& task,
                            const std::map<std::string, int64_t>& chosen);

// check_plan_at_shapes for every tunable variant; the problems of each variant once.
Status check_plan_variants(const KernelFile& file, const TaskSpec& task);

}  // namespace kopt
