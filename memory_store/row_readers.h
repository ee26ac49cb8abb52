// Internal to the memory store: the column lists of the record tables and the functions that
// turn a row into a record, shared by every file that selects records.
#pragma once

#include <string>
#include <vector>

#include "memory_store/records.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory::rows {

// SELECT list for PairRecord; use with "FROM pairs p JOIN tasks t ON t.id = p.task_id".
inline constexpr const char* kPairColumns =
    "p.id, p.slow_kernel_id, p.fast_kernel_id, t.name, p.speedup, p.gpu_model, p.gpu_arch,"
    " p.summary, p.tags, p.is_negative, p.lineage_root_id, p.retrieved_count, p.improved_count,"
    " p.created_at";
inline constexpr int kPairColumnCount = 14;

// SELECT list for EvaluationRecord; use with "FROM evaluations e JOIN tasks t ON ...".
inline constexpr const char* kEvaluationColumns =
    "e.id, e.kernel_id, t.name, e.run_id, e.gpu_model, e.compute_capability, e.driver_version,"
    " e.cuda_version, e.verdict, e.detail, e.tunables_json, e.median_us, e.noise, e.baseline_us,"
    " e.speedup, e.sol_percent, e.resources_json, e.created_at, e.profile_json,"
    " e.judging_spec_sha256, e.verifier_version";
inline constexpr int kEvaluationColumnCount = 21;

// SELECT list for KernelRecord; use with "FROM kernels k JOIN tasks t ON t.id = k.task_id".
inline constexpr const char* kKernelColumns =
    "k.id, k.sha256, k.source, t.name, k.parent_id, k.run_id, k.origin_agent, k.origin_model,"
    " k.origin_prompt_template, k.origin_tuner, k.tunables_json, k.created_at";

// The whole SELECT for RunRecord, to be followed by WHERE / ORDER BY.
inline constexpr const char* kRunSelect =
    "SELECT id, config_json, started_at, coalesce(finished_at, ''), status FROM runs";

// Reads a pair from the first kPairColumnCount columns of the current row.
PairRecord read_pair(const sql::Statement& row);
EvaluationRecord read_evaluation(const sql::Statement& row);
KernelRecord read_kernel(const sql::Statement& row);
// A column holding a JSON array of ids ("[3,5]"); anything else (text that does not parse, or
// more nesting than kMaxJsonDepth allows) reads as no ids, never as an error.
std::vector<int64_t> ids_from_json(const std::string& text);
RunRecord read_run(const sql::Statement& row);
// The first column of the row: for one-column queries (names, ids) handed to collect().
inline std::string read_text(const sql::Statement& row) { return row.column_text(0); }
inline int64_t read_int64(const sql::Statement& row) { return row.column_int64(0); }

// Tags are stored as a JSON array of strings.
std::string tags_to_json(const std::vector<std::string>& tags);
std::vector<std::string> tags_from_json(const std::string& json);

}  // namespace kopt::memory::rows

namespace kopt::sql {

// The columns the memory stores by name (verdicts, origins, run statuses: a name no longer known
// reads as stored_verdict and friends say) or as JSON (a list of strings such as tags, a list of
// ids), for read_columns.
void read_column(const Statement& row, int column, Verdict& out);
void read_column(const Statement& row, int column, Origin& out);
void read_column(const Statement& row, int column, RunStatus& out);
void read_column(const Statement& row, int column, std::vector<std::string>& out);
void read_column(const Statement& row, int column, std::vector<int64_t>& out);

}  // namespace kopt::sql
