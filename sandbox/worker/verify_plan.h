// What an evaluation verifies, in order: the sweep, the stress rounds (at their shapes, the small
// sweep shapes and a drawn shape each), the input families (sandbox/input_families.h), the drawn
// shapes, the shapes at the candidate's own thresholds (sandbox/source_thresholds.h), the
// co-run rounds for a kernel that communicates between blocks, the holdouts, and the round past
// 2^31 elements where the GPU holds it. A plan, not a loop: no GPU,
// so tests check what a task and a kernel get (tasks/README.md, "Verification rounds").
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/gpu_turn.h"
#include "sandbox/kernel_file.h"
#include "sandbox/protocol.h"
#include "sandbox/task_spec.h"

namespace kopt::worker {

// One shape to verify.
struct VerifyStep {
  std::string phase;  // sweep | stress | drawn | threshold | holdout | wide
  ShapeBinding sizes;
  int rounds = 1;
  uint64_t seed = 0;
  const StressRound* stress = nullptr;
  const TaskSpec* variant = nullptr;  // drawn constants or a family's tolerance; null: the task
  bool pooled = true;                 // may draw kept input sets (sandbox/worker/input_pool.h)
  double corun_share = 0;  // > 0: beside an occupier of this share of the SMs (co_runner.h)
};

struct VerifyPlan {
  std::vector<VerifyStep> steps;
  std::deque<StressRound> rounds;  // the family rounds the steps point to
  std::deque<TaskSpec> variants;   // the task variants the steps point to
  std::vector<std::string> notes;  // what was left out and why ("the round past 2^31 ...")
  int family_rounds = 0, threshold_shapes = 0, drawn_stress = 0;
  int corun_rounds = 0;     // steps beside a co-running kernel (add_co_runs in verify_plan.cc)
  std::string corun_signs;  // why: the candidate's signs of inter-block communication
  bool wide = false;
};

// What the plan needs besides the task: the candidate (its literals guide shapes) and the GPU's
// free memory (the round past 2^31 elements needs it).
struct PlanInputs {
  const KernelFile* candidate = nullptr;
  std::map<std::string, int64_t> tunables;
  int64_t free_bytes = 0;
  // The GPU's whole memory, where the evaluation checks the free memory again when the wide round
  // comes (after its turn: WideRoundTurn); 0: the plan decides by free_bytes.
  int64_t total_bytes = 0;
};

// The shares of the SMs a co-running occupier holds in the co-run rounds at the timed shape, one
// round each; the larger shape gets one of them, rotating with the seed.
inline constexpr double kCoRunShares[] = {0.25, 0.5, 0.75};

// Families that also run at the timed shape and the smallest holdout, per evaluation (rotating
// with the seed): the big shapes cost most, so a few each time, all of them over evaluations.
inline constexpr int kFamiliesAtBigShapes = 2;
// Their time budget: a big shape takes families only within these (the reference's work).
inline constexpr int64_t kFamilyBigShapeBytes = int64_t(1) << 30;
inline constexpr int64_t kFamilyBigShapeFlops = int64_t(1) << 34;

// The whole plan; an error only for a task whose declared draws cannot be drawn.
Result<VerifyPlan> plan_verification(const TaskSpec& task, const EvalOptions& options,
                                     uint64_t seed, const PlanInputs& inputs);

// The task's constants, each drawn from its declared range (the others kept).
std::map<std::string, double> draw_constants(const TaskSpec& task, uint64_t seed);

// Why the task's round past 2^31 elements cannot run with `free_bytes` of GPU memory free (it
// needs the round's bytes and a quarter GiB), or nullopt when it can.
std::optional<std::string> wide_round_skipped(const TaskSpec& task, int64_t free_bytes);

// Rounds past 2^31 elements take most of a GPU's memory. Workers sharing one GPU (the mutation
// bench runs several at once) take turns through an exclusive lock on the GPU's ".wide-round"
// file of the turn folder (sandbox/gpu_turn.h, TurnLock), held from the free-memory check to the
// round's end, instead of each finding the memory taken and skipping the round. A lone worker per
// GPU (the daemon's) never waits. Without the folder (an unwritable temp folder) there are no
// turns, and the free-memory check still decides.
class WideRoundTurn {
 public:
  explicit WideRoundTurn(const std::string& gpu_id);

 private:
  TurnLock lock_;
};

// Bytes the round at `shape` holds on the GPU: the kept inputs and their copies, the reference's
// outputs, the candidate's and its first run's.
Result<int64_t> round_bytes(const TaskSpec& task, const ShapeBinding& shape);

}  // namespace kopt::worker
