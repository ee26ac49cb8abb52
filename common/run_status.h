// How a daemon run stands or ended, as the memory stores it (runs.status) and `kopt status`
// prints it.
#pragma once

#include <optional>
#include <string>

namespace kopt {

enum class RunStatus {
  kRunning,      // started, not finished (or killed without a chance to say so)
  kFinished,     // every task done
  kBudget,       // a time or money budget ran out
  kInterrupted,  // a signal or a stop request drained it
  kFailed,       // every task failed, or the run could not start
};

std::string run_status_name(RunStatus status);
std::optional<RunStatus> parse_run_status(const std::string& name);

}  // namespace kopt
