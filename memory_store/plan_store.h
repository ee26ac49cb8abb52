// What the model saw and said, kept: every plan (its parent, title, technique, outcome and the
// kernels it produced) and every prompt with its answer (scrubbed of keys by the caller, each
// text capped, the table capped). Free functions over the memory's database, so the store's
// class stays about kernels and pairs. The tables come with schema version 5 (schema.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/records.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

// Each of system, prompt and answer is kept up to this many characters (start and end).
inline constexpr size_t kMaxTranscriptChars = 100000;
// The newest this many transcripts are kept; older ones go as new ones arrive.
inline constexpr int64_t kMaxTranscripts = 20000;

Result<int64_t> add_plan(sql::Database& db, const PlanRecord& plan);
// Records what became of one attempt of plan `id` (a coder sample, a refinement) and the kernels
// judged for it: the kernels join those of earlier attempts, and the outcome is the best of all
// attempts (merged_plan_outcome), not the last.
Status finish_plan(sql::Database& db, int64_t id, const std::string& outcome,
                   const std::vector<int64_t>& child_kernel_ids);
// The outcome a plan keeps when an attempt ending in `now` follows one recorded as `before`:
// verified beats failed, the faster of two verified ones ("verified, 1.30x its parent") wins.
std::string merged_plan_outcome(const std::string& before, const std::string& now);
// Every plan of `task` from runs other than `except_run`, oldest first.
Result<std::vector<PlanRecord>> earlier_plans(sql::Database& db, const std::string& task,
                                              std::optional<int64_t> except_run);
// The plans of `task` from runs other than `except_run` that produced no verified kernel,
// newest first, at most `limit`.
Result<std::vector<PlanRecord>> failed_plans(sql::Database& db, const std::string& task,
                                             std::optional<int64_t> except_run, int64_t limit);

Result<int64_t> add_transcript(sql::Database& db, TranscriptRecord transcript);
// Newest first; `run_id` narrows to one run, a non-empty `task` to one task. The texts are left
// empty, their sizes given.
Result<std::vector<TranscriptRecord>> list_transcripts(sql::Database& db,
                                                       std::optional<int64_t> run_id, int64_t limit,
                                                       const std::string& task = "");
Result<std::optional<TranscriptRecord>> transcript(sql::Database& db, int64_t id);

// Schema version 5: the plans and llm_transcripts tables.
Status migrate_to_version_5(sql::Database& db);

}  // namespace kopt::memory
