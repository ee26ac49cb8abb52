// The baseline's recent timing samples, kept by the worker per (task, baseline, shape) across
// evaluations. Every candidate of a task is timed against the same baseline kernel, so taking the
// full set of baseline samples again for each one doubles the timing of slow tasks (five more
// runs of a 98 ms GEMM) for a number the worker measured seconds ago. With a history, an
// evaluation still interleaves a few fresh baseline samples with the candidate's: when they agree
// with the history (the clock, the power state and the neighbours did not change), the baseline's
// summary is taken over history and fresh samples together; when they do not, the history is
// dropped and the baseline is sampled in full, as without one.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "sandbox/timing_stats.h"

namespace kopt::worker {

class BaselineHistory {
 public:
  using Clock = std::chrono::steady_clock;

  // Samples older than max_age are forgotten; at most max_samples of the newest are kept.
  explicit BaselineHistory(std::chrono::seconds max_age = std::chrono::seconds(300),
                           size_t max_samples = 40)
      : max_age_(max_age), max_samples_(max_samples) {}

  // The samples still young enough, oldest first (none for an unknown key).
  std::vector<TimingSample> recent(const std::string& key, Clock::time_point now = Clock::now());
  // The slowest single run of the baseline seen under `key` (seconds; 0 = unknown): the basis of
  // the candidate's hang limit when the baseline's warm-up run is skipped.
  double run_seconds(const std::string& key) const;

  // Appends an evaluation's fresh samples (and its slowest run) under `key`.
  void add(const std::string& key, const std::vector<TimingSample>& samples, double run_seconds,
           Clock::time_point now = Clock::now());
  // Drops `key`'s history: fresh samples disagreed with it.
  void forget(const std::string& key) { entries_.erase(key); }

 private:
  struct Entry {
    std::vector<std::pair<Clock::time_point, TimingSample>> samples;
    double run_seconds = 0;
  };
  std::chrono::seconds max_age_;
  size_t max_samples_;
  std::map<std::string, Entry> entries_;
};

// Whether `fresh` baseline samples agree with `history`: the median of the fresh ones is within
// max(drift, 3 standard errors of a mean of that many samples, from the history's spread) of the
// history's median. Pure arithmetic, tested without a GPU.
bool fresh_samples_agree(const std::vector<TimingSample>& history,
                         const std::vector<TimingSample>& fresh, double drift,
                         double max_clock_drop);

}  // namespace kopt::worker
