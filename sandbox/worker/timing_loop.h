// Timing at the task's default shape, in the manner of nvbench's cold measurement: warm up, then
// samples until the noise criterion or a cap is met. Each sample starts with a cold L2 (a memset
// of at least twice its size) and reads a different buffer set, so neither cached lines nor
// address-keyed caches help. Candidate and baseline samples alternate, on their own streams, so
// drift cancels in the ratio.
//
// Every timed sample is honest: the candidate's outputs are poisoned before each sample (two
// patterns and a stale answer in turn, memory_patterns.h), outside the timed span, its guard
// zones are scanned after it, and what each sample
// wrote is checked after it: the first sample on a buffer set against the reference under the
// task's tolerance, every later one by a keyed hash of its outputs that must equal that first
// sample's, else (a kernel with atomics need not be bitwise repeatable) against the reference
// again. A kernel that skips work in some samples leaves poison there and fails.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/worker/baseline_history.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"
#include "sandbox/worker/verifier.h"

namespace kopt::worker {

// The checks' outcome of every timed sample (a verdict ends the loop early), with the timings.
struct TimedOutcome : CheckOutcome {
  TimingSummary candidate;
  std::optional<TimingSummary> baseline;
  int fresh_baseline_samples = 0;      // baseline samples taken in this evaluation
  bool baseline_from_history = false;  // the summary includes earlier evaluations' samples
  bool baseline_warm_up = false, candidate_warm_up = false;  // runs before the samples
  int hashed_samples = 0;  // samples whose outputs matched their set's first by keyed hash
  int full_checks = 0;     // samples compared against the reference under the tolerance
  int fresh_modules = 0;   // samples run in a module loaded afresh (it holds __device__ data)
  int guard_checks = 0;    // samples after which the candidate's guard zones were scanned
  int stale_poisoned = 0;  // samples whose outputs started as another set's answer
  std::string stop;        // why the candidate's sampling stopped (stop_reason_name)
  // Milliseconds of each step of the loop ("sets", "warm_up", "samples", ...): where timing's
  // time goes besides the samples (the evaluation's phases "time.loop.<step>").
  std::vector<std::pair<std::string, double>> step_ms;
  nlohmann::json facts() const;
};

class TimingLoop {
 public:
  TimingLoop(Device& device, SupportKernels& support, const TaskSpec& task,
             const LoadedKernel& reference, const EvalOptions& options)
      : device_(device), support_(support), task_(task), reference_(reference), options_(options) {}

  // Input sets come from `pool` under `key` (the task and its reference) where the shape fits.
  void use_pool(InputPool* pool, std::string key) {
    pool_ = pool;
    pool_key_ = std::move(key);
  }
  // The baseline's samples of earlier evaluations, under `key` (the task, the baseline and the
  // shape): see baseline_history.h.
  void use_baseline_history(BaselineHistory* history, std::string key) {
    history_ = history;
    history_key_ = std::move(key);
  }
  // Screening: the candidate's sampling stops once its median is above `bar_us` beyond its noise
  // (StoppingParams::screen_bar_us), the baseline's with it; its verdict then is `screened`.
  void screen_above(double bar_us) { screen_bar_us_ = bar_us; }
  // `candidate_seconds`: the candidate's slowest run at this shape in verification, which loaded
  // its module and made its first launch here already (0 = unknown: the loop warms it up first).
  Result<TimedOutcome> run(const LoadedKernel& candidate, const LoadedKernel* baseline,
                           const ShapeBinding& sizes, uint64_t seed, double candidate_seconds = 0);

 private:
  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& reference_;
  const EvalOptions& options_;
  InputPool* pool_ = nullptr;
  std::string pool_key_;
  BaselineHistory* history_ = nullptr;
  std::string history_key_;
  double screen_bar_us_ = 0;
};

}  // namespace kopt::worker
