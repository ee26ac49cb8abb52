// A test double for the GPU: it reads the task and the candidate as the real worker does and
// compiles the candidate with real NVRTC (a compile error is a real compile error), but times
// nothing. Verdicts and times are scripted by comment lines in the kernel file:
//
//   // test-evaluator: time_us=85          the candidate's median time (default 100)
//   // test-evaluator: verdict=incorrect   any verdict name (common/verdict.h)
//   // test-evaluator: sol_us=40           the speed-of-light time (default 50)
//   // test-evaluator: profile_note=profiling unavailable: ERR_NVGPUCTRPERM
//                                          (the rest of the line) answered instead of a profile
//   // test-evaluator: sanitizer=racecheck a finding of that tool when it is sanitized
//   // test-evaluator: gate_verdict=incorrect  the verdict of the rest of the gate: only a kernel
//                                          that gets it (no screen, or below full_gate_below_us)
//
// Screening as the worker does it (EvalOptions::full_gate_below_us): a verified candidate whose
// time is not below the bar ends `screened` with its times; screened() counts them.
//
// sanitize() takes Options::sanitize_delay (the tools' 30 s, scaled down) and counts its calls;
// while one runs, evaluate() notes how many evaluations started (evaluations_during_sanitize),
// which is what proves that the sanitizer never holds an evaluation up.
//
// and by the tunables: a kernel with a BLOCK tunable takes (1 + 0.1 * |log2(BLOCK / 512)|) times
// its scripted time, so the tuner has a real optimum to find (BLOCK=512). The baseline in the
// request is timed the same way, so speedups are ratios of scripted times.
//
// Profiles: when the request asks for one (options.profile "cupti") and the verified candidate
// is faster than options.profile_below_us (or that is 0), as the worker's profile pass decides,
// the result carries a KernelProfile derived from the scripted times alone: a memory-bound
// kernel whose DRAM throughput is its share of the speed of light (100 * sol_us / time, at most
// 95%), 1/4 of that as SM throughput, L2 hit 12%, occupancy 75%, top stall long scoreboard 60%.
// So its numbers, and the prompt line built from them, follow from each kernel's time. A kernel
// with a profile_note gets that note instead, every time (as a worker restarted after each
// crash would say it), so the daemon's "said once per run" is what is tested.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/compiler.h"
#include "sandbox/evaluator.h"

namespace kopt::testing {

class FakeEvaluator final : public Evaluator {
 public:
  struct Options {
    std::chrono::milliseconds delay{0};   // per evaluation, like a GPU taking its time
    std::filesystem::path compile_cache;  // "" for none
    std::string gpu_name = "Fake H100 80GB HBM3";
    std::chrono::milliseconds sanitize_delay{0};
  };

  FakeEvaluator() : FakeEvaluator(Options{}) {}
  explicit FakeEvaluator(Options options);

  Result<EvalResult> evaluate(const EvalRequest& request) override;
  std::string name() const override { return "fake evaluator"; }
  SanitizerOutcome sanitize(const EvalRequest& request) override;

  int sanitized() const { return sanitized_.load(); }
  // Evaluations that started while a sanitize() call was running.
  int evaluations_during_sanitize() const { return during_sanitize_.load(); }
  // The sources sanitize() was asked about, in order.
  std::vector<std::string> sanitized_sources() const;

  int evaluations() const { return evaluations_.load(); }
  int screened() const { return screened_.load(); }
  // The most evaluations that ran at once.
  int max_concurrent() const { return max_concurrent_.load(); }
  // Origins of the candidates evaluated, in order ("candidate.cu" ...) with their tunables.
  std::vector<std::string> sources() const;

 private:
  Options options_;
  std::optional<CompileCache> cache_;
  bool screen(const EvalRequest& request, double median, EvalResult& result);

  std::atomic<int> evaluations_{0};
  std::atomic<int> screened_{0};
  std::atomic<int> running_{0};
  std::atomic<int> max_concurrent_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> sources_;
  std::vector<std::string> sanitized_sources_;
  std::atomic<int> sanitized_{0};
  std::atomic<int> sanitizing_{0};
  std::atomic<int> during_sanitize_{0};
};

// Options from the environment, for the test daemon: KOPT_FAKE_DELAY_MS.
FakeEvaluator::Options fake_evaluator_options_from_env();

}  // namespace kopt::testing
