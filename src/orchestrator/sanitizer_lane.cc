#include "src/orchestrator/sanitizer_lane.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/sha256.h"

namespace kopt::orchestrator {

namespace {

// Each mode's KOPT_SANITIZER_LANE value and how the daemon's start-up line describes it.
struct LaneModeRow {
  SanitizerLaneMode mode;
  const char* variable;
  const char* description;
};
constexpr LaneModeRow kLaneModes[] = {
    {SanitizerLaneMode::kHold, "hold",
     "each pass holding its GPU like an evaluation (KOPT_SANITIZER_LANE=hold)"},
    {SanitizerLaneMode::kConcurrent, "concurrent",
     "beside the timing workers, not yielding (KOPT_SANITIZER_LANE=concurrent)"},
    {SanitizerLaneMode::kYield, "yield", "beside the timing workers, yielding to each timing turn"},
};

}  // namespace

SanitizerLaneMode sanitizer_lane_mode(const char* variable) {
  std::string value = variable ? variable : "";
  // Yielding is the default (an unset or unknown value): the busy calls beside a yielding pass
  // (2 of 11 on two H200s, docs/gpu-runs/2026-11-28-h100-session6/call2) came from a tool's fresh
  // worker whose context appeared before it registered; since it registers and opens the GPU
  // within a turn, SanitizerYieldsOnGpu passes (docs/gpu-runs/2026-11-28-h200-session7/call3).
  // A timing that still meets the lane is called busy and judged again, never a wrong number.
  for (const LaneModeRow& row : kLaneModes)
    if (value == row.variable) return row.mode;
  return SanitizerLaneMode::kYield;
}

std::string describe_sanitizer_lane_mode(SanitizerLaneMode mode) {
  for (const LaneModeRow& row : kLaneModes)
    if (row.mode == mode) return row.description;
  return kLaneModes[0].description;
}

std::vector<SandboxOptions> lane_worker_options(std::vector<SandboxOptions> workers,
                                                SanitizerLaneMode mode) {
  if (mode == SanitizerLaneMode::kYield)
    for (SandboxOptions& o : workers) o.extra_args.push_back("--yield-to-timing");
  return workers;
}

SanitizerOptions lane_sanitizer_options(SanitizerLaneMode mode) {
  SanitizerOptions options;
  options.wide_round = mode == SanitizerLaneMode::kHold;
  return options;
}

SanitizerLane::SanitizerLane(Runner runner, int lanes) : runner_(std::move(runner)) {
  for (int i = 0; i < std::max(1, lanes); ++i) threads_.emplace_back([this, i] { work(i); });
}

SanitizerLane::~SanitizerLane() {
  stop();
  for (std::thread& t : threads_) t.join();
}

void SanitizerLane::submit(const EvalRequest& request, Done done, Wanted wanted) {
  // The task's files are part of the key: the same kernel text judged for two tasks is two runs.
  std::string key = sha256_hex(request.task_json + "\n" + request.candidate.source);
  std::unique_lock lock(mutex_);
  if (auto it = done_.find(key); it != done_.end()) {
    SanitizerOutcome outcome = it->second;
    lock.unlock();
    done(outcome);  // sanitized before: the same source gets the same outcome, no second pass
    return;
  }
  if (stopped_) return;
  auto [it, fresh] = pending_.try_emplace(key, Entry{request, {}, std::move(wanted)});
  it->second.waiting.push_back(std::move(done));
  if (!fresh) return;
  queue_.push_back(key);
  wake_.notify_one();
}

void SanitizerLane::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  for (const std::string& key : queue_) pending_.erase(key);
  queue_.clear();
  wake_.notify_all();
  idle_.notify_all();
}

bool SanitizerLane::wait_idle(double seconds) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(seconds),
                        [this] { return pending_.empty(); });
}

int SanitizerLane::runs() const {
  std::lock_guard lock(mutex_);
  return runs_;
}

int SanitizerLane::skipped() const {
  std::lock_guard lock(mutex_);
  return skipped_;
}

int SanitizerLane::pending() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(pending_.size());
}

double SanitizerLane::busy_seconds() const {
  std::lock_guard lock(mutex_);
  return busy_seconds_;
}

void SanitizerLane::work(int lane) {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) return;
    std::string key = queue_.front();
    queue_.pop_front();
    EvalRequest request = pending_.at(key).request;
    Wanted wanted = pending_.at(key).wanted;
    ++running_;
    lock.unlock();
    // Asked without the lane's lock: the caller's answer may take its own locks.
    if (wanted && !wanted()) {
      lock.lock();
      --running_;
      ++skipped_;
      pending_.erase(key);
      if (pending_.empty()) idle_.notify_all();
      continue;
    }
    lock.lock();
    ++runs_;
    lock.unlock();
    auto started = std::chrono::steady_clock::now();
    SanitizerOutcome outcome;
    try {
      outcome = runner_(request, lane);
    } catch (const std::exception& e) {
      // A pass that could not run says so; the kernel stays provisional (never a win).
      outcome.note = std::string("the sanitizer lane failed: ") + e.what();
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    lock.lock();
    --running_;
    busy_seconds_ += seconds;
    done_[key] = outcome;
    std::vector<Done> waiting = std::move(pending_.at(key).waiting);
    pending_.erase(key);
    lock.unlock();
    for (Done& d : waiting) d(outcome);
    lock.lock();
    if (pending_.empty()) idle_.notify_all();
  }
}

}  // namespace kopt::orchestrator
