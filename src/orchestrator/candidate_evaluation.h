// Judging one kernel file for a task: the cheap checks first on the daemon's CPU (the launch plan
// parses and agrees with the task, NVRTC compiles it), so that broken candidates never occupy a
// GPU; then the evaluator (the sandbox worker on a GPU, or a test double). Every verdict, local or
// from the GPU, is recorded in the memory store with its kernel before it is returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "common/verdict.h"
#include "memory_store/records.h"
#include "sandbox/compiler.h"
#include "sandbox/evaluator.h"
#include "sandbox/task_spec.h"
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
  double best_noise = 0;  // the relative noise of that median
  // A would-be new best is sanitized only when it beats best_us by more than this ratio and by
  // three times the two medians' combined noise: a noise-level gain is not worth the tools' 30 s.
  double sanitize_above = 1.01;
  // Screening (SearchSettings::screen): the rest of the gate only below profile_below_us().
  bool screen = false;
  bool screen_time_first = false;  // SearchSettings::screen_time_first, with screen only
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
  // A new best waiting for the sanitizer lane (CandidateEvaluator::set_sanitizer_lane): stored
  // with verdict "sanitizing", never 'ok', until settle_provisional() records the pass.
  bool provisional = false;
  bool noise_level = false;  // a new best within the noise: not sanitized
  std::optional<EvalRequest> sanitize_request;
  memory::KernelRecord kernel_record;          // as stored, for the record after the pass
  memory::EvaluationRecord evaluation_record;  // as stored, for the record after the pass
};

// Whether a kernel at `candidate_us` (noise `candidate_noise`) beats the best at `best_us`
// (noise `best_noise`) by more than the measurement noise: by the ratio `above` and by three
// combined standard errors.
bool beats_beyond_noise(double candidate_us, double candidate_noise, double best_us,
                        double best_noise, double above);

// The median below which a candidate is profiled: one that may beat `best_us` (noise
// `best_noise`) beyond the noise. Necessary for beats_beyond_noise() whatever the candidate's own
// noise, so every kernel that is sanitized as a new best is also profiled; 0 (no best yet): every
// candidate. A noise-level "new best" keeps the counters of the best it ties with unasked.
double profile_below_us(double best_us, double best_noise, double above);

// "kernels 80.1, kernels.compile 66.0, ..., verify.setup 12.0": every named step of the worker's
// evaluation (result.phases: dotted names are parts of a step, daemon.* the daemon's side),
// verification's own phases, what the worker's total leaves unnamed (worker.unnamed) and what the
// exchange costs beyond the worker (daemon.transport). The run log's phase line carries it.
std::string phase_steps(const EvalResult& result);

// "12 samples (baseline 30), stopped: above the bar" (the baseline's part where it was timed, the
// reason where the worker said it; "none" without a time): how the candidate's timing ended, in
// the run log's phase line, which bench/daemon_throughput.py reads (its TIMING pattern).
std::string timing_text(const EvalResult& result);

class CandidateEvaluator {
 public:
  CandidateEvaluator(Evaluator& evaluator, RunRecorder& recorder, const CompileCache* cache)
      : evaluator_(evaluator), recorder_(recorder), cache_(cache) {}

  CandidateOutcome judge(const CandidateInput& input);
  // With a lane, a would-be new best is not sanitized in judge(): it comes back provisional and
  // the caller hands outcome.sanitize_request to the lane, then calls settle_provisional().
  void set_sanitizer_lane(bool on) { sanitizer_lane_ = on; }
  // Stores the sanitizer's verdict on a provisional best: 'ok' (the pass found nothing) or
  // 'sanitizer' with the finding. Returns whether it passed.
  bool settle_provisional(const CandidateOutcome& outcome, const SanitizerOutcome& sanitized);

 private:
  enum class SanitizeStep { kNotNeeded, kNoiseLevel, kProvisional, kSanitized };
  // Parses and compiles the candidate here first (where the GPU is known): a rejection or a
  // gate failure, or nullopt when the candidate goes on to the GPU.
  std::optional<CandidateOutcome> compile_gate(const CandidateInput& input);
  // What becomes of a verified would-be new best: sanitized now (a finding turns `result` into
  // the sanitizer's verdict), left to the lane, or not sanitized (no new best, or noise level).
  SanitizeStep sanitize_new_best(const CandidateInput& input, const EvalRequest& request,
                                 EvalResult& result);
  // The worker's verdict, device and detail into `outcome`.
  void take_verdict(const CandidateInput& input, const EvalResult& result,
                    CandidateOutcome& outcome);
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
  bool sanitizer_lane_ = false;
};

// The GPU described by a worker's device object ("name", "cc", "arch", "driver", "sms").
GpuIdentity gpu_from_device(const nlohmann::json& device);

// One readable line for a mismatch: "out[4096] at n=4097 (sweep, round 0): expected 1.5, got 0".
std::string describe_mismatch(const Mismatch& mismatch);

}  // namespace kopt::orchestrator
