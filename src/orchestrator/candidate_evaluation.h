// Judging one kernel file for a task: the cheap checks first on the daemon's CPU (the launch plan
// parses and agrees with the task, NVRTC compiles it), so that broken candidates never occupy a
// GPU; then the evaluator (the sandbox worker on a GPU, or a test double). Every verdict, local or
// from the GPU, is recorded in the memory store with its kernel before it is returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "memory_store/records.h"
#include "sandbox/compiler.h"
#include "sandbox/evaluator.h"
#include "sandbox/task_spec.h"
#include "sandbox/verdict.h"
#include "src/orchestrator/beam.h"
#include "src/orchestrator/run_recorder.h"
#include "src/orchestrator/task_state.h"

namespace kopt::orchestrator {

struct CandidateInput {
  const TaskSpec* task = nullptr;
  std::string reference_source;
  std::string baseline_source;
  std::optional<GpuIdentity> gpu;  // empty for the baseline: no local gate, no interleaving
  std::string source;
  memory::KernelOrigin origin;
  std::optional<int64_t> parent_id;
  std::string tunables_json = "{}";
  // The task's best median so far (0: none yet): a candidate faster than this is a new best,
  // and the worker profiles it (EvalOptions::profile_below_us).
  double best_us = 0;
};

struct CandidateOutcome {
  bool judged = false;  // false: no verdict (the evaluator failed); see error
  std::string error;
  bool gpu_busy = false;  // not judged because the GPU stayed shared or throttled: no fault
                          // of the candidate, and nothing was stored
  Verdict verdict = Verdict::kCrash;
  std::string detail;                // what the coder needs to repair it: the log or the mismatch
  std::optional<EvalResult> result;  // when the GPU evaluated it
  int64_t kernel_id = 0;             // as stored
  std::optional<VerifiedKernel> verified;  // for verdict ok
  std::optional<GpuIdentity> gpu;          // what the worker reported
};

class CandidateEvaluator {
 public:
  CandidateEvaluator(Evaluator& evaluator, RunRecorder& recorder, const CompileCache* cache)
      : evaluator_(evaluator), recorder_(recorder), cache_(cache) {}

  CandidateOutcome judge(const CandidateInput& input);

 private:
  // Records a verdict reached before the GPU (invalid plan, compile error).
  CandidateOutcome reject_locally(const CandidateInput& input, Verdict verdict,
                                  const std::string& detail);
  void record(const CandidateInput& input, CandidateOutcome& outcome,
              const memory::EvaluationRecord& evaluation);

  Evaluator& evaluator_;
  RunRecorder& recorder_;
  const CompileCache* cache_;
  // "profiling unavailable" (no counter permission) was passed on: a worker says it once per
  // process, and workers restart after crashes, so the daemon says it once per run.
  std::atomic<bool> profiling_unavailable_said_{false};
};

// The GPU described by a worker's device object ("name", "cc", "arch", "driver", "sms").
GpuIdentity gpu_from_device(const nlohmann::json& device);

// One readable line for a mismatch: "out[4096] at n=4097 (sweep, round 0): expected 1.5, got 0".
std::string describe_mismatch(const Mismatch& mismatch);

}  // namespace kopt::orchestrator
