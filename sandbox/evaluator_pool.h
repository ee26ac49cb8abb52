// Several evaluators behind one: typically one SandboxEvaluator per GPU. Each request runs on
// whichever member is free, so N caller threads keep N GPUs busy; a member that fails (its worker
// cannot start) affects only the requests it was given.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
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
  std::vector<std::string> waiting() const override;
  // On whichever member is free, like evaluate().
  SanitizerOutcome sanitize(const EvalRequest& request) override;

  size_t size() const { return members_.size(); }

  // How busy the members were between the first evaluation's start and the last one's end: with
  // candidates always waiting (a fast LLM), idle time is the daemon's own overhead.
  struct Utilization {
    double busy_seconds = 0;  // summed over members
    double span_seconds = 0;  // first start to last end
    int members = 0;
    int evaluations = 0;
    double idle_fraction() const {
      double capacity = span_seconds * members;
      return capacity > 0 ? std::max(0.0, 1.0 - busy_seconds / capacity) : 0.0;
    }
  };
  Utilization utilization() const;
  Evaluator& member(size_t index) { return *members_[index]; }

 private:
  // A member taken from the free list until this goes out of scope (even when a call throws,
  // so the pool never shrinks).
  class Lease {
   public:
    explicit Lease(EvaluatorPool& pool);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Evaluator& member() const { return *pool_.members_[index_]; }

   private:
    EvaluatorPool& pool_;
    size_t index_ = 0;
  };

  std::vector<std::unique_ptr<Evaluator>> members_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;  // indices of idle members
  using Clock = std::chrono::steady_clock;
  mutable std::mutex usage_mutex_;
  std::optional<Clock::time_point> first_start_;
  Clock::time_point last_end_;
  double busy_seconds_ = 0;
  int evaluations_ = 0;
};

}  // namespace kopt
