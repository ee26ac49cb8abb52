#include "src/orchestrator/stall_detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "common/enum_names.h"
#include "common/strings.h"

namespace kopt::orchestrator {

constexpr EnumNames<CallOutcome, 8> kOutcomeNames = {
    {"new kernels", "new kernels that do not compile", "repeats", "cut at the token limit",
     "refusals", "tool calls", "empty", "errors"}};
static_assert(names_each_enumerator(kOutcomeNames, CallOutcome::kError));

const char* call_outcome_name(CallOutcome outcome) {
  return enum_name(kOutcomeNames, outcome, "?");
}

int StallDetector::new_kernels() const {
  return static_cast<int>(std::count(recent_.begin(), recent_.end(), CallOutcome::kNewKernel));
}

StallDetector::Advice StallDetector::record(CallOutcome outcome) {
  recent_.push_back(outcome);
  while (static_cast<int>(recent_.size()) > settings_.window) recent_.pop_front();
  ++since_backoff_;
  dry_ = outcome == CallOutcome::kNewKernel ? 0 : dry_ + 1;
  if (dry_ >= settings_.park_dry_calls) return Advice::kPark;
  if (calls() < std::min(settings_.min_calls, settings_.window)) return Advice::kGoOn;
  double share = static_cast<double>(new_kernels()) / calls();
  if (calls() >= settings_.window && share <= settings_.park_new_share) return Advice::kPark;
  if (share >= settings_.min_new_share) {
    backoffs_ = 0;
    return Advice::kGoOn;
  }
  if (backoffs_ > 0 && since_backoff_ < std::max(1, settings_.min_calls / 2)) {
    return Advice::kGoOn;
  }
  since_backoff_ = 0;
  ++backoffs_;
  return Advice::kBackOff;
}

std::chrono::milliseconds StallDetector::next_delay() const {
  auto delay = settings_.backoff_initial;
  for (int i = 1; i < backoffs_ && delay < settings_.backoff_max; ++i) delay *= 2;
  return std::min(delay, settings_.backoff_max);
}

std::string StallDetector::describe() const {
  int shown = dry_ >= settings_.park_dry_calls ? std::min(dry_, calls()) : calls();
  std::map<CallOutcome, int> counts;
  for (auto it = recent_.end() - shown; it != recent_.end(); ++it) ++counts[*it];
  std::vector<std::pair<int, CallOutcome>> ranked;
  for (const auto& [outcome, n] : counts) {
    if (outcome != CallOutcome::kNewKernel) ranked.emplace_back(n, outcome);
  }
  std::sort(ranked.rbegin(), ranked.rend());
  if (!ranked.empty() && ranked.front().first * 2 > shown) {
    return fmt::format("{} of the last {} coder answers were {}", ranked.front().first, shown,
                       call_outcome_name(ranked.front().second));
  }
  std::vector<std::string> parts;
  for (const auto& [n, outcome] : ranked) {
    parts.push_back(fmt::format("{} {}", n, call_outcome_name(outcome)));
  }
  return fmt::format("{} new kernels in the last {} coder answers ({})",
                     counts[CallOutcome::kNewKernel], shown, join(parts, ", "));
}

}  // namespace kopt::orchestrator
