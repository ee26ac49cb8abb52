// Several evaluators behind one: typically one SandboxEvaluator per GPU. Each request runs on
// whichever member is free, so N caller threads keep N GPUs busy; a member that fails (its worker
// cannot start) affects only the requests it was given.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "sandbox/evaluator.h"

namespace kopt {

class EvaluatorPool final : public Evaluator {
 public:
  explicit EvaluatorPool(std::vector<std::unique_ptr<Evaluator>> members);

  // One SandboxEvaluator per device, each `base` with its own device index.
  static std::unique_ptr<EvaluatorPool> for_devices(const SandboxOptions& base,
                                                    const std::vector<int>& devices);

  // Blocks until a member is free, then evaluates on it. Thread-safe.
  Result<EvalResult> evaluate(const EvalRequest& request) override;
  std::string name() const override;
  void cancel_pauses() override;

  size_t size() const { return members_.size(); }
  Evaluator& member(size_t index) { return *members_[index]; }

 private:
  std::vector<std::unique_ptr<Evaluator>> members_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;  // indices of idle members
};

}  // namespace kopt
