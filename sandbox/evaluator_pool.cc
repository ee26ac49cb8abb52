#include "sandbox/evaluator_pool.h"

#include <cmath>
#include <stdexcept>

#include "common/strings.h"

namespace kopt {

EvaluatorPool::EvaluatorPool(std::vector<std::unique_ptr<Evaluator>> members)
    : members_(std::move(members)) {
  if (members_.empty()) throw std::invalid_argument("an evaluator pool needs a member");
  // Reversed so that the first member is taken first when all are idle.
  for (size_t i = members_.size(); i-- > 0;) free_.push_back(i);
}

std::unique_ptr<EvaluatorPool> EvaluatorPool::for_devices(const SandboxOptions& base,
                                                          const std::vector<int>& devices) {
  std::vector<std::unique_ptr<Evaluator>> members;
  for (int device : devices) {
    SandboxOptions options = base;
    options.device = device;
    members.push_back(std::make_unique<SandboxEvaluator>(std::move(options)));
  }
  return std::make_unique<EvaluatorPool>(std::move(members));
}

EvaluatorPool::Lease::Lease(EvaluatorPool& pool) : pool_(pool) {
  std::unique_lock lock(pool_.mutex_);
  pool_.freed_.wait(lock, [&] { return !pool_.free_.empty(); });
  index_ = pool_.free_.back();
  pool_.free_.pop_back();
}

EvaluatorPool::Lease::~Lease() {
  {
    std::lock_guard lock(pool_.mutex_);
    pool_.free_.push_back(index_);
  }
  pool_.freed_.notify_one();
}

SanitizerOutcome EvaluatorPool::sanitize(const EvalRequest& request) {
  Lease lease(*this);
  return lease.member().sanitize(request);
}

Result<EvalResult> EvaluatorPool::evaluate(const EvalRequest& request) {
  auto asked = Clock::now();
  Lease lease(*this);
  auto started = Clock::now();
  {
    std::lock_guard lock(usage_mutex_);
    if (!first_start_) first_start_ = started;
  }
  struct Account {
    EvaluatorPool* pool;
    Clock::time_point started;
    ~Account() {
      auto ended = Clock::now();
      std::lock_guard lock(pool->usage_mutex_);
      pool->busy_seconds_ += std::chrono::duration<double>(ended - started).count();
      pool->last_end_ = std::max(pool->last_end_, ended);
      ++pool->evaluations_;
    }
  } account{this, started};
  auto result = lease.member().evaluate(request);
  // How long this request waited for a free GPU: the queue, apart from the GPU's own work.
  if (result)
    result->phases["daemon.gpu_wait"] =
        std::round(std::chrono::duration<double, std::milli>(started - asked).count() * 10) / 10;
  return result;
}

EvaluatorPool::Utilization EvaluatorPool::utilization() const {
  std::lock_guard lock(usage_mutex_);
  Utilization u;
  u.members = int(members_.size());
  u.evaluations = evaluations_;
  u.busy_seconds = busy_seconds_;
  if (first_start_ && evaluations_ > 0)
    u.span_seconds = std::chrono::duration<double>(last_end_ - *first_start_).count();
  return u;
}

std::string EvaluatorPool::name() const {
  std::vector<std::string> names;
  for (const auto& m : members_) names.push_back(m->name());
  return "pool of " + std::to_string(members_.size()) + ": " + join(names, "; ");
}

std::vector<std::string> EvaluatorPool::waiting() const {
  std::vector<std::string> all;
  for (const auto& member : members_) {
    for (auto& line : member->waiting()) all.push_back(std::move(line));
  }
  return all;
}

void EvaluatorPool::cancel_pauses() {
  for (auto& member : members_) member->cancel_pauses();
}

}  // namespace kopt
