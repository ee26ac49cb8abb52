// A task's counts and best in a scope (one run, or the whole memory), from one query each, so
// that `kopt status` and the report say the same numbers: candidates are the kernels judged (an
// evaluation each, the baseline's own not counted, as the daemon's live table counts them), and
// the best follows task_best.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "memory_store/records.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

struct TaskCounts {
  int64_t candidates = 0;                // evaluations, the baseline's own left out
  int64_t verified = 0;                  // of those, verdict ok
  int64_t rejected = 0;  // of those, any verdict but ok and screened (timed, slower: no failure)
  std::optional<EvaluationRecord> best;  // the baseline's evaluation counts here (1.0x)
};

// By task name; `run_id` empty: every run.
Result<std::map<std::string, TaskCounts>> task_counts(sql::Database& db,
                                                      std::optional<int64_t> run_id);

}  // namespace kopt::memory
