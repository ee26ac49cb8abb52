// Several evaluators behind one: typically one SandboxEvaluator per GPU, or k per GPU
// (daemon.workers_per_gpu: co-workers taking turns, sandbox/gpu_turn.h). Each request runs on
// whichever member is free, so N caller threads keep N workers busy; a member that fails (its
// worker cannot start) affects only the requests it was given.
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
  // `gpu_of_member[i]`: the GPU member i runs on (0..GPUs-1), for the GPUs' busy share; empty:
  // each member a GPU of its own.
  explicit EvaluatorPool(std::vector<std::unique_ptr<Evaluator>> members,
                         std::vector<int> gpu_of_member = {});

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
  // candidates always waiting (a fast LLM), idle time is the daemon's own overhead. A GPU counts
  // as busy while at least one of its members evaluates (with one member per GPU, the same).
  struct Utilization {
    double busy_seconds = 0;      // summed over members
    double gpu_busy_seconds = 0;  // summed over GPUs: some member of it evaluating
    double span_seconds = 0;      // first start to last end
    int members = 0;
    int gpus = 0;
    int evaluations = 0;
    // The GPUs' idle share: no member of the GPU in an evaluation.
    double idle_fraction() const { return idle(gpu_busy_seconds, gpus); }
    // The members' idle share (with k members per GPU: how often a co-worker waited for work).
    double member_idle_fraction() const { return idle(busy_seconds, members); }

   private:
    double idle(double busy, int count) const {
      double capacity = span_seconds * count;
      return capacity > 0 ? std::max(0.0, 1.0 - busy / capacity) : 0.0;
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
    size_t index() const { return index_; }

   private:
    EvaluatorPool& pool_;
    size_t index_ = 0;
  };

  // The busy time of the GPU of `member` from its first member's start to its last one's end.
  void account_start(size_t member, std::chrono::steady_clock::time_point started);
  void account_end(size_t member, std::chrono::steady_clock::time_point started,
                   std::chrono::steady_clock::time_point ended);

  std::vector<std::unique_ptr<Evaluator>> members_;
  std::vector<int> gpu_of_member_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;     // indices of idle members
  std::vector<int> gpu_leased_;  // per GPU: members leased now (under mutex_)
  using Clock = std::chrono::steady_clock;
  mutable std::mutex usage_mutex_;
  std::optional<Clock::time_point> first_start_;
  Clock::time_point last_end_;
  double busy_seconds_ = 0;
  int evaluations_ = 0;
  // Per GPU: members evaluating now, since when the first of them did, and the busy sum.
  std::vector<int> gpu_active_;
  std::vector<Clock::time_point> gpu_since_;
  double gpu_busy_seconds_ = 0;
};

}  // namespace kopt
