// The sanitizer's own lane (issue 35): compute-sanitizer runs on threads and worker processes of
// their own, beside candidate evaluation, instead of holding a GPU job slot for the 30 s its four
// tools take. A kernel waiting here is a provisional best: it may seed children, but it is not
// exported, shown as a win or stored as a pair until its pass ends (orchestrator.h). Identical
// sources are sanitized once: a second submission gets the first one's outcome.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/evaluator.h"
#include "sandbox/protocol.h"
#include "sandbox/sanitizer_report.h"
#include "sandbox/sanitizer_runner.h"

namespace kopt::orchestrator {

// Where a pass runs (KOPT_SANITIZER_LANE): kYield (default, unset or "yield"): its own worker
// beside the GPU's timing worker, computing only between timing turns (sandbox/gpu_turn.h);
// kHold ("hold"): it takes its GPU from the pool like an evaluation; kConcurrent ("concurrent"):
// beside, not yielding (for measuring; timing then finds the GPU busy). Anything else: kYield.
enum class SanitizerLaneMode { kYield, kHold, kConcurrent };
SanitizerLaneMode sanitizer_lane_mode(const char* variable);
std::string describe_sanitizer_lane_mode(SanitizerLaneMode mode);
// The lane's copies of the GPUs' worker options, as `mode` runs them: yielding workers are told
// so (kopt-sandbox --yield-to-timing), the others run as given.
std::vector<SandboxOptions> lane_worker_options(std::vector<SandboxOptions> workers,
                                                SanitizerLaneMode mode);
// The tools' options for a pass run beside a timer (kYield, kConcurrent): everything but the
// round past 2^31 elements, which the gate has verified exactly. Under a tool that round runs
// for seconds holding the GPU's wide-round turn (sandbox/worker/verify_plan.h), and a timer's
// gate waited for it at every would-be best of such a task (a transpose best waited 8-13 s,
// twice in a 160 s night). kHold passes hold their GPU, and `kopt export` and
// `kopt eval --sanitize` run the whole plan, that round included.
SanitizerOptions lane_sanitizer_options(SanitizerLaneMode mode);

class SanitizerLane {
 public:
  // Runs the tools on the candidate of a request; `lane` (0 .. lanes-1) picks the GPU.
  using Runner = std::function<SanitizerOutcome(const EvalRequest& request, int lane)>;
  using Done = std::function<void(const SanitizerOutcome& outcome)>;
  // Asked (without the lane's lock) when a queued source's turn comes: false skips it (a newer,
  // faster best of its task superseded it, so its 30 s would buy nothing); its `done` is not
  // called and a later submit() queues it again.
  using Wanted = std::function<bool()>;

  SanitizerLane(Runner runner, int lanes);
  ~SanitizerLane();  // stop(), then joins
  SanitizerLane(const SanitizerLane&) = delete;
  SanitizerLane& operator=(const SanitizerLane&) = delete;

  // Queues the candidate of `request` (its source is the key); `done` is called on a lane thread
  // once its outcome is known, or at once when this source was sanitized before. Never blocks.
  void submit(const EvalRequest& request, Done done, Wanted wanted = nullptr);
  // No new run starts; queued sources are dropped (their `done` is never called). Runs in
  // progress finish on their threads.
  void stop();
  // Waits until nothing is queued or running, or `seconds` passed; returns whether idle.
  bool wait_idle(double seconds);

  int runs() const;             // tool passes started (each distinct source once)
  int skipped() const;          // queued sources skipped as superseded
  int pending() const;          // queued or running sources
  double busy_seconds() const;  // summed over the lane's runs

 private:
  struct Entry {
    EvalRequest request;
    std::vector<Done> waiting;
    Wanted wanted;
  };
  void work(int lane);

  Runner runner_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::string> queue_;                 // source keys, oldest first
  std::map<std::string, Entry> pending_;          // queued or running, by source key
  std::map<std::string, SanitizerOutcome> done_;  // finished, by source key
  int running_ = 0;
  int runs_ = 0;
  int skipped_ = 0;
  double busy_seconds_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kopt::orchestrator
