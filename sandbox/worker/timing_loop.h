// Timing at the task's default shape, in the manner of nvbench's cold measurement: warm up, then
// samples until the noise criterion or a cap is met. Each sample starts with a cold L2 (a memset
// of at least twice its size) and reads a different buffer set, so neither cached lines nor
// address-keyed caches help. Candidate and baseline samples alternate, on their own streams, so
// drift cancels in the ratio. Every output written while timing is checked afterwards.
#pragma once

#include <optional>

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"
#include "sandbox/worker/verifier.h"

namespace kopt::worker {

struct TimedOutcome {
  Verdict verdict = Verdict::kOk;
  std::string detail;
  std::optional<Mismatch> mismatch;
  TimingSummary candidate;
  std::optional<TimingSummary> baseline;
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
  Result<TimedOutcome> run(const LoadedKernel& candidate, const LoadedKernel* baseline,
                           const ShapeBinding& sizes, uint64_t seed);

 private:
  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& reference_;
  const EvalOptions& options_;
  InputPool* pool_ = nullptr;
  std::string pool_key_;
};

}  // namespace kopt::worker
