// Noticing a model that has stopped producing anything new. A stalling model still answers, so
// no error ever repeats five times in a row: it alternates repeats of kernels already judged,
// answers cut at the token limit, refusals and tool calls. What stays low is the share of coder
// calls that give a new kernel that compiles. The detector keeps the last `window` coder calls
// (per task, and one for the model across tasks) and says when to back off (exponential delay,
// hotter sampling, other memory examples) and when to give up (park) with a reason in words.
#pragma once

#include <chrono>
#include <deque>
#include <string>

namespace kopt::orchestrator {

struct StallSettings {
  int window = 20;              // coder calls remembered
  int min_calls = 10;           // calls seen before anything is judged a stall
  double min_new_share = 0.3;   // below: back off
  double park_new_share = 0.1;  // at or below, over a full window: park
  int park_dry_calls = 12;      // this many calls in a row without a new kernel: park
  std::chrono::milliseconds backoff_initial{30'000};
  std::chrono::milliseconds backoff_max{900'000};
  double temperature_step = 0.2;  // added on each back-off, up to the agent's max_temperature
  int planner_stale_answers = 3;  // planner answers in a row with only tried plans: park
};

// What one coder call produced.
enum class CallOutcome {
  kNewKernel,     // a kernel never seen for this task, that compiles
  kBrokenKernel,  // new, but does not compile (or its launch plan is invalid)
  kRepeat,        // a kernel already judged (or a near-copy of one)
  kTruncated,     // cut at the token limit
  kRefused,       // the model declined
  kToolCall,      // a tool call instead of text
  kEmpty,         // no text
  kError,         // anything else (no code block, a transport failure)
};

const char* call_outcome_name(CallOutcome outcome);

class StallDetector {
 public:
  explicit StallDetector(StallSettings settings = {}) : settings_(settings) {}

  enum class Advice { kGoOn, kBackOff, kPark };

  // Records one call and says what to do now. kBackOff comes at most once every
  // min_calls / 2 calls, so one stall does not multiply the delay on every answer.
  Advice record(CallOutcome outcome);

  int calls() const { return static_cast<int>(recent_.size()); }
  int new_kernels() const;
  // The delay of the next back-off: backoff_initial doubled for each back-off since the
  // share last recovered, at most backoff_max.
  std::chrono::milliseconds next_delay() const;
  int backoffs() const { return backoffs_; }
  int dry_calls() const { return dry_; }  // since the last new kernel
  // Over the window, or over the dry run when that is what parks: "18 of the last 20 coder
  // answers were repeats" when one kind dominates, else "2 new kernels in the last 20 coder
  // answers (12 repeats, 4 cut at the token limit, 2 refusals)".
  std::string describe() const;

 private:
  StallSettings settings_;
  std::deque<CallOutcome> recent_;
  int since_backoff_ = 0;
  int backoffs_ = 0;  // since the share last recovered
  int dry_ = 0;
};

}  // namespace kopt::orchestrator
