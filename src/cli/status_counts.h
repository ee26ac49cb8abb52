// What `kopt status` takes from the database itself rather than from the daemon's published
// progress, so that it says what `kopt report` says about the same run: evaluations stored per
// task, LLM calls per task where prompts were kept, and a run that never published a status.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "memory_store/memory_store.h"
#include "src/orchestrator/progress.h"

namespace kopt::cli {

// Per task: `candidates` becomes the evaluations stored for the task in the run (the report's
// "candidates judged", the baseline's evaluation included), `failures` those not verified, and
// `llm_calls` the calls whose prompts were kept for the task (unchanged where none were kept).
// Tasks with evaluations but absent from `progress` are added. A run that is no longer running
// has no time left.
Status apply_database_counts(memory::MemoryStore& store, orchestrator::RunProgress& progress);

// The progress of a run that has a record but never published a status (it stopped before its
// first status, or another program recorded it): its state and duration from the run record.
orchestrator::RunProgress progress_from_record(const memory::RunRecord& run);

}  // namespace kopt::cli
