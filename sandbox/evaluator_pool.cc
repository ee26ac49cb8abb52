#include "sandbox/evaluator_pool.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/strings.h"

namespace kopt {

EvaluatorPool::EvaluatorPool(std::vector<std::unique_ptr<Evaluator>> members,
                             std::vector<int> gpu_of_member)
    : members_(std::move(members)), gpu_of_member_(std::move(gpu_of_member)) {
  if (members_.empty()) throw std::invalid_argument("an evaluator pool needs a member");
  if (gpu_of_member_.empty()) {
    for (size_t i = 0; i < members_.size(); ++i) gpu_of_member_.push_back(int(i));
  }
  if (gpu_of_member_.size() != members_.size() ||
      *std::min_element(gpu_of_member_.begin(), gpu_of_member_.end()) < 0)
    throw std::invalid_argument("an evaluator pool needs one GPU index (>= 0) per member");
  int gpus = *std::max_element(gpu_of_member_.begin(), gpu_of_member_.end()) + 1;
  gpu_active_.assign(size_t(gpus), 0);
  gpu_leased_.assign(size_t(gpus), 0);
  gpu_since_.resize(size_t(gpus));
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
  // The free member on the GPU with the fewest members leased (two jobs on two GPUs with two
  // workers each take one worker of each GPU); among equals the one freed last (a warm worker).
  auto leased_on = [&](size_t member) { return pool_.gpu_leased_[pool_.gpu_of_member_[member]]; };
  auto pick = pool_.free_.end() - 1;
  for (auto it = pool_.free_.begin(); it != pool_.free_.end(); ++it)
    if (leased_on(*it) < leased_on(*pick)) pick = it;
  index_ = *pick;
  pool_.free_.erase(pick);
  ++pool_.gpu_leased_[pool_.gpu_of_member_[index_]];
}

EvaluatorPool::Lease::~Lease() {
  {
    std::lock_guard lock(pool_.mutex_);
    pool_.free_.push_back(index_);
    --pool_.gpu_leased_[pool_.gpu_of_member_[index_]];
  }
  pool_.freed_.notify_one();
}

SanitizerOutcome EvaluatorPool::sanitize(const EvalRequest& request) {
  Lease lease(*this);
  return lease.member().sanitize(request);
}

void EvaluatorPool::account_start(size_t member, Clock::time_point started) {
  std::lock_guard lock(usage_mutex_);
  if (!first_start_) first_start_ = started;
  size_t gpu = size_t(gpu_of_member_[member]);
  if (gpu_active_[gpu]++ == 0) gpu_since_[gpu] = started;
}

void EvaluatorPool::account_end(size_t member, Clock::time_point started, Clock::time_point ended) {
  std::lock_guard lock(usage_mutex_);
  busy_seconds_ += std::chrono::duration<double>(ended - started).count();
  last_end_ = std::max(last_end_, ended);
  ++evaluations_;
  size_t gpu = size_t(gpu_of_member_[member]);
  if (--gpu_active_[gpu] == 0)
    gpu_busy_seconds_ += std::chrono::duration<double>(ended - gpu_since_[gpu]).count();
}

Result<EvalResult> EvaluatorPool::evaluate(const EvalRequest& request) {
  auto asked = Clock::now();
  Lease lease(*this);
  auto started = Clock::now();
  account_start(lease.index(), started);
  struct Account {
    EvaluatorPool* pool;
    size_t member;
    Clock::time_point started;
    ~Account() { pool->account_end(member, started, Clock::now()); }
  } account{this, lease.index(), started};
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
  u.gpus = int(gpu_active_.size());
  u.evaluations = evaluations_;
  u.busy_seconds = busy_seconds_;
  u.gpu_busy_seconds = gpu_busy_seconds_;
  // A GPU whose workers overlap without a gap is still in its first busy stretch: counted up to
  // the last end, as the span is (else K co-workers kept busy read as a GPU idle 100%).
  for (size_t gpu = 0; gpu < gpu_active_.size(); ++gpu) {
    if (gpu_active_[gpu] > 0 && last_end_ > gpu_since_[gpu])
      u.gpu_busy_seconds += std::chrono::duration<double>(last_end_ - gpu_since_[gpu]).count();
  }
  if (first_start_ && evaluations_ > 0)
    u.span_seconds = std::chrono::duration<double>(last_end_ - *first_start_).count();
  return u;
}

std::string EvaluatorPool::name() const {
  // Co-workers of one GPU share a command: "2 x kopt-sandbox --device 0 --share-gpu".
  std::vector<std::pair<std::string, int>> runs;
  for (const auto& m : members_) {
    std::string name = m->name();
    if (!runs.empty() && runs.back().first == name)
      ++runs.back().second;
    else
      runs.emplace_back(std::move(name), 1);
  }
  std::vector<std::string> names;
  for (const auto& [name, count] : runs)
    names.push_back(count == 1 ? name : std::to_string(count) + " x " + name);
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
