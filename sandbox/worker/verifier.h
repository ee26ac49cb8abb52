// The correctness gate for one shape: rounds of fresh random inputs; per round the reference runs
// once and the candidate twice, with outputs poisoned differently before each run. Checks, in the
// order a verdict is chosen: the run itself, guard zones (out_of_bounds), input checksums
// (modified_input), outputs against the reference (incorrect: NaN/Inf, all zeros, tolerance,
// max-error cap), and the second run against the first (nondeterministic).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/co_runner.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/launch_deadline.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

struct CheckOutcome {
  Verdict verdict = Verdict::kOk;
  std::string detail;
  std::optional<Mismatch> mismatch;
};

// Describes `sizes` as "rows=7 cols=4097".
std::string describe_shape(const ShapeBinding& sizes);

// Names element `flat` of `output` at `sizes` by its coordinates: "out[3, 17]".
std::string describe_element(const TensorSpec& output, const ShapeBinding& sizes, int64_t flat);

// A stress round's failure, led by what the coder must know: "incorrect on stress round 'std 40'
// at shape rows=7 cols=4097: got nan at out[3, 17] (expected 0.0123); ..."
std::string describe_stress_failure(const TaskSpec& task, const StressRound& stress,
                                    const ShapeBinding& sizes, const CheckOutcome& outcome);

// Compares one output against its expected values under the task's tolerance;
// `expected_masked`: the reference's kept outputs, masked (SupportKernels::mask).
Result<CheckOutcome> check_output(SupportKernels& support, const TaskSpec& task,
                                  const TensorSpec& output, const BufferRef& actual,
                                  const BufferRef& expected, Verdict failure_verdict,
                                  bool expected_masked = false);

// What is wrong with each buffer's guard zones ("" when intact), scanned on the GPU in one pass.
Result<std::vector<std::string>> damaged_guards(SupportKernels& support,
                                                const std::vector<const GuardedBuffer*>& buffers);

// Whether a phase's shapes are kept from the model ("holdout", "drawn"): their verdicts name no
// size, and a mismatch is told by its values alone (describe_hidden_mismatch).
// Also "threshold" (sandbox/source_thresholds.h) and "corun_drawn" (verify_plan.h).
bool shape_is_hidden(const std::string& phase);
std::string describe_hidden_mismatch(const Mismatch& m, Verdict verdict);

// Fills every input of the task for one round, with `stress`'s overrides where given.
Status fill_inputs(SupportKernels& support, const TaskSpec& task, const ShapeBinding& sizes,
                   const BufferMap& inputs, uint64_t seed, const StressRound* stress = nullptr);

// Queues a resolved plan on `stream` (its scratch zeroed or poisoned first) without waiting.
std::optional<PlanFailure> launch_plan(Device& device, const LoadedKernel& kernel,
                                       const ResolvedPlan& plan, const BufferMap& buffers,
                                       const TaskSpec& task, CUstream stream);

// Runs a resolved plan to completion on `stream`; zeroes or poisons its scratch first. A run still
// going at `limit` is a timeout (and the context is abandoned). `elapsed_seconds` gets the wall
// time from the first launch to completion.
std::optional<PlanFailure> run_plan(Device& device, const LoadedKernel& kernel,
                                    const ResolvedPlan& plan, const BufferMap& buffers,
                                    const TaskSpec& task, CUstream stream,
                                    const RunLimit& limit = {}, double* elapsed_seconds = nullptr);

// Where verification's time goes, summed over the shapes verified: host wall time between the
// sync points of each round.
struct VerifyPhases {
  double setup_ms = 0;      // buffers allocated and armed, plans resolved
  double inputs_ms = 0;     // random inputs generated and checksummed
  double reference_ms = 0;  // the trusted reference run (outputs poisoned first)
  double candidate_ms = 0;  // the candidate's runs, two per round
  double checks_ms = 0;     // poison, guard zones, input checksums, output comparisons
  int rounds = 0;           // rounds started, over all shapes
  int pooled_rounds = 0;    // of which on a kept input set (sandbox/worker/input_pool.h)
  int stress_rounds = 0;    // of which on a stress round's inputs
  int sets_made = 0;        // kept input sets made (inputs and reference time counted above)
  nlohmann::json to_json() const;
};

class ShapeVerification;

class Verifier {
 public:
  Verifier(Device& device, SupportKernels& support, const TaskSpec& task,
           const LoadedKernel& reference, const LoadedKernel& candidate,
           const EvalOptions& options = {})
      : device_(device),
        support_(support),
        task_(task),
        reference_(reference),
        candidate_(candidate),
        options_(options) {}

  // Rounds come from `pool`'s sets under `key` (the task and its reference) where the shape fits.
  void use_pool(InputPool* pool, std::string key) {
    pool_ = pool;
    pool_key_ = std::move(key);
  }
  // The next verify_shape calls judge against `variant` (the task with drawn constants or an
  // input family's tolerance; it must outlive them), nullptr: the task itself.
  void use_task_variant(const TaskSpec* variant) { step_task_ = variant; }
  // The next verify_shape calls run the candidate beside `co_run`'s occupier (co_runner.h);
  // nullopt: alone.
  void use_co_run(std::optional<CoRun> co_run) { co_run_ = co_run; }
  // Errors mean the task or the worker is broken; the candidate's faults are verdicts. With
  // `stress`, the inputs get its overrides (kept sets of their own) and a failure names it.
  Result<CheckOutcome> verify_shape(const ShapeBinding& sizes, int rounds, uint64_t seed,
                                    const std::string& phase, const StressRound* stress = nullptr);
  const VerifyPhases& phases() const { return phases_; }
  // The candidate's slowest run at `sizes` in the rounds verified so far (seconds; 0 = none).
  double candidate_seconds(const ShapeBinding& sizes) const;

 private:
  friend class ShapeVerification;  // verify_shape's steps (verifier.cc)
  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& reference_;
  const LoadedKernel& candidate_;
  EvalOptions options_;
  VerifyPhases phases_;
  InputPool* pool_ = nullptr;
  std::string pool_key_;
  std::map<ShapeBinding, double> candidate_seconds_;
  const TaskSpec* step_task_ = nullptr;
  std::optional<CoRun> co_run_;
};

}  // namespace kopt::worker
