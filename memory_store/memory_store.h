// The memory: one SQLite database of tasks, kernels, evaluations, slow-to-fast pairs, runs and
// LLM calls. The daemon writes it, prompts retrieve from it, people query it (kopt memory) and
// export from it (kopt export). Every write is one transaction, or joins the caller's when one
// is open (begin()), so a crash at any point leaves a consistent database.
//
// Independent of LLM clients and CUPTI: callers pass plain records (memory_store/records.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/records.h"
#include "memory_store/retrieval.h"
#include "memory_store/schema.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

// The current time as an ISO-8601 UTC string, "2026-11-22T03:14:07Z".
std::string utc_timestamp();

struct OpenOptions {
  bool create = true;                   // false: a missing file is an error (read-only commands)
  int target_version = kSchemaVersion;  // tests build older schemas with this
  // Read commands: open for reading only (a file or folder the user may only read works) and
  // never migrate; a database at an older schema is refused with what to do.
  bool read_only = false;
};

// Filters of `kopt memory wins`.
struct WinsFilter {
  std::string task;  // exact task name; empty: all
  std::string gpu;   // a substring of the GPU model, or the exact arch ("sm_90")
  double min_speedup = 0;
  std::string since;  // ISO date or time prefix; pairs created at or after it
  int64_t limit = 50;
};

// One match of `kopt memory search`.
struct SearchHit {
  std::string kind;  // "pair" or "kernel"
  int64_t id = 0;
  std::string task;
  std::string text;    // the pair's summary, or the kernel's sha256 prefix and origin
  double speedup = 0;  // pairs only
};

// Counts for `kopt memory stats`.
struct StoreStats {
  int64_t tasks = 0, kernels = 0, evaluations = 0, pairs = 0, negative_pairs = 0, runs = 0,
          llm_calls = 0;
  std::vector<std::pair<std::string, int64_t>> evaluations_by_task;
  std::vector<std::pair<std::string, int64_t>> pairs_by_task;
  std::vector<std::pair<std::string, int64_t>> evaluations_by_verdict;
  std::vector<std::pair<std::string, int64_t>> evaluations_by_gpu;
  int64_t file_bytes = 0;  // the database file plus its write-ahead log
  int schema_version = 0;
};

// Caps of `prune`: the least useful pairs beyond a cap go first.
struct PruneCaps {
  int64_t max_pairs_per_task = 500;      // positive pairs per task
  int64_t max_pairs_per_family = 2000;   // positive pairs per operation family (first tag)
  int64_t max_negatives_per_task = 100;  // negative pairs per task
  // Pairs whose fast kernel is a tuner configuration, per task: they teach a number, not a
  // technique, and retrieval shows at most one per prompt, so few are worth keeping.
  int64_t max_tuner_pairs_per_task = 20;
  bool dry_run = true;  // report only
};

// What prune removed (or, in a dry run, would remove), least useful first, with the reason.
struct PruneResult {
  std::vector<PairRecord> removed;
  std::vector<std::string> reasons;  // "task axpy over 500", parallel to `removed`
};

class MemoryStore {
 public:
  // Opens (creating folders and the file unless options.create is false) and migrates.
  static Result<MemoryStore> open(const std::filesystem::path& path,
                                  const OpenOptions& options = {});

  // Starts a transaction that the following writes join; commit it to keep them.
  Result<sql::Transaction> begin();

  // ---- tasks ----
  // Inserts the task or updates its spec, hash and tags by name; returns its id.
  Result<int64_t> upsert_task(const TaskRecord& task);
  // The task named `name`, if the memory knows it.
  Result<std::optional<TaskRecord>> find_task(const std::string& name);
  // Every task, by name.
  Result<std::vector<TaskRecord>> list_tasks();

  // ---- kernels ----
  // Stores a kernel under the SHA-256 of its source; a duplicate source returns the existing id.
  // The task must exist (upsert_task first).
  Result<int64_t> add_kernel(const KernelRecord& kernel);
  // The kernel with id `id`.
  Result<std::optional<KernelRecord>> kernel(int64_t id);
  // The id of the kernel whose source hashes to `sha256`.
  Result<std::optional<int64_t>> find_kernel(const std::string& sha256);

  // ---- evaluations ----
  // Records one evaluation of a stored kernel; returns its id.
  Result<int64_t> add_evaluation(const EvaluationRecord& evaluation);
  // The best verified evaluation (verdict "ok", lowest median) of `task` on GPU model `gpu_model`.
  Result<std::optional<EvaluationRecord>> best_kernel(const std::string& task,
                                                      const std::string& gpu_model);
  // The newest profile (profile_json) recorded for kernel `kernel_id`; "" when it has none.
  Result<std::string> latest_profile(int64_t kernel_id);
  // The newest verified evaluation of kernel `kernel_id` on `gpu_model` (any GPU when empty): the
  // verdict a win or an export stands on.
  Result<std::optional<EvaluationRecord>> verifying_evaluation(int64_t kernel_id,
                                                               const std::string& gpu_model);
  // GPU models with verified evaluations of `task`, most evaluations first.
  Result<std::vector<std::string>> verified_gpus(const std::string& task);

  // ---- pairs ----
  // Stores a slow-to-fast pair; an exact duplicate (same kernels and GPU model) is merged into
  // the existing pair (larger counters, union of tags, summary filled if empty) and its id
  // returned.
  Result<int64_t> add_pair(const PairRecord& pair);
  // The pair with id `id`.
  Result<std::optional<PairRecord>> pair(int64_t id);
  // The fastest positive pairs matching `filter`, best first.
  Result<std::vector<PairRecord>> wins(const WinsFilter& filter);
  // The k most useful pairs for a task and its current kernel (see retrieval.h for the ranking).
  Result<std::vector<RetrievedPair>> retrieve(const RetrievalQuery& query);
  // Counts that these pairs were put into a prompt.
  Status mark_retrieved(const std::vector<int64_t>& pair_ids);
  // Counts whether the kernel built from a prompt holding this pair improved on its parent.
  Status record_outcome(int64_t pair_id, bool improved);
  // Applies `caps`, dropping the least useful pairs first (nothing when caps.dry_run).
  Result<PruneResult> prune(const PruneCaps& caps);
  // Pairs and kernels whose summaries, tags or code contain every word of `query`.
  Result<std::vector<SearchHit>> search(const std::string& query, int64_t limit = 20);

  // ---- runs and LLM calls ----
  // Records the start of a daemon run with its effective config; returns the run id.
  Result<int64_t> start_run(const std::string& config_json);
  // Records the end of run `run_id` with its final status.
  Status finish_run(int64_t run_id, RunStatus status);
  // The most recently started run, if any (the daemon resumes from it).
  Result<std::optional<RunRecord>> latest_run();
  // Records one LLM call; `error` passes the secret scrubber (common/scrub_secrets.h) first.
  Result<int64_t> record_llm_call(const LlmCallRecord& call);
  // Tokens and cost of run `run_id` so far.
  Result<RunTotals> run_totals(int64_t run_id);

  // ---- history, oldest first (kopt report) ----
  // The run with id `id`, if any.
  Result<std::optional<RunRecord>> run(int64_t id);
  // Every run.
  Result<std::vector<RunRecord>> list_runs();
  // The evaluations of run `run_id` (every evaluation when empty), in the order recorded.
  Result<std::vector<EvaluationRecord>> list_evaluations(std::optional<int64_t> run_id);
  // The LLM calls of run `run_id` (every call when empty), in the order made.
  Result<std::vector<LlmCallRecord>> list_llm_calls(std::optional<int64_t> run_id);

  // Counts by task, verdict and GPU, and the file size.
  // Of the whole memory, or of one task (then llm_calls is -1: calls are accounted per run).
  Result<StoreStats> stats(const std::string& task = "");

  // The connection, for tests and the JSONL importer.
  sql::Database& database() { return db_; }

 private:
  explicit MemoryStore(sql::Database db) : db_(std::move(db)) {}
  Result<int64_t> task_id(const std::string& name);
  Result<int64_t> lineage_of(int64_t slow_kernel_id, int64_t fast_kernel_id);

  sql::Database db_;
};

}  // namespace kopt::memory
