// Everything the daemon writes to the memory store goes through here, as it happens: a kernel and
// its evaluation in one transaction, pairs and lessons, LLM calls, the run's status. One store
// connection shared by the job threads, behind one mutex; SQLite's WAL lets `kopt status` and
// `kopt memory` read meanwhile. After kill -9, everything recorded before is in the file.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent_call.h"
#include "common/result.h"
#include "common/run_status.h"
#include "llm/accounting.h"
#include "memory_store/example_draws.h"
#include "memory_store/memory_store.h"
#include "memory_store/plan_store.h"
#include "memory_store/technique_cards.h"
#include "sandbox/task_spec.h"
#include "src/orchestrator/daemon_tables.h"
#include "src/orchestrator/progress.h"
#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

class RunRecorder final : public LlmCallSink {
 public:
  explicit RunRecorder(memory::MemoryStore& store) : store_(store) {}

  Result<int64_t> start_run(const std::string& config_json);
  // Continues `run_id` (kopt run --resume).
  Status resume_run(int64_t run_id);
  Status finish_run(RunStatus status);
  int64_t run_id() const { return run_id_; }

  // Records the task and its judging spec (sandbox/judging_spec.h), which this run's
  // evaluations of it are then stamped with.
  Status upsert_task(const TaskSpec& task);

  // Stores the kernel (a known source keeps its id) and its evaluation in one transaction.
  // kernel.run_id and evaluation.run_id/kernel_id/task are filled in, and where the evaluation
  // does not say, the task's judging spec and the verifier version. Returns the kernel id.
  Result<int64_t> record_evaluation(memory::KernelRecord kernel,
                                    memory::EvaluationRecord evaluation);
  // Stores a pair (a repeated pair merges, a lesson fills an empty summary).
  Result<int64_t> add_pair(const memory::PairRecord& pair);
  // The pairs worth showing a prompt for `query`, counted as retrieved.
  Result<std::vector<memory::RetrievedPair>> retrieve(const memory::RetrievalQuery& query);
  void record_outcome(const std::vector<int64_t>& pair_ids, bool improved);
  // The random example slot of one prompt (memory_store/example_draws.h), tagged with this run;
  // its id, or nothing when it could not be stored (said in the log).
  std::optional<int64_t> record_draw(memory::ExampleDrawRecord draw);
  void set_draw_plans(int64_t draw_id, const std::vector<int64_t>& plan_ids);
  // The technique cards of `query` (memory_store/technique_cards.h); none on error (logged).
  std::vector<memory::TechniqueCard> technique_cards(const memory::CardQuery& query);
  std::optional<memory::KernelRecord> kernel(int64_t id);

  // LlmCallSink: one row in llm_calls per call, tagged with this run.
  void record(const LlmCallRecord& call) override;
  Result<memory::RunTotals> run_totals();

  Status write_status(const StatusRow& row);
  // The active seconds the status row of `run_id` records (0 when it has none).
  double active_seconds(int64_t run_id);
  // What `run_id` last published for `kopt status` (nothing when it published nothing).
  std::optional<RunProgress> published_progress(int64_t run_id);
  Result<std::vector<Submission>> take_submissions();
  int64_t pending_submissions();

  // The beam of earlier runs of `task` on `gpu_model`, best first, at most `limit`: the fastest
  // verified kernels (not the baseline), one per lineage of ideas (a tuner copy stands for the
  // kernel it tuned, the best of them kept) and none a near-copy (code_similarity at least
  // `near_copy`) of a faster one. A warm start for this run (run_recorder_nights.cc).
  Result<std::vector<WarmKernel>> warm_start_kernels(const std::string& task,
                                                     const std::string& gpu_model, int limit,
                                                     double near_copy);
  // What earlier runs judged of `task` under its current judging spec and verifier version,
  // oldest first, and its plans of earlier runs (run_recorder_nights.cc).
  Result<EarlierNights> earlier_nights(const TaskSpec& task);
  // The fastest production baseline measured for `task` on `gpu_model`
  // (memory_store/production_baselines.h); nothing when none was measured.
  Result<std::optional<ProductionReference>> best_production_baseline(const std::string& task,
                                                                      const std::string& gpu_model);
  // Plans and transcripts (memory_store/plan_store.h), tagged with this run. Failures are logged,
  // never the caller's problem: a lost transcript must not stop the search.
  std::optional<int64_t> add_plan(memory::PlanRecord plan);
  void finish_plan(int64_t id, const std::string& outcome, const std::vector<int64_t>& children);
  // Stores one prompt and its answer, each text through the scrubber first.
  void record_transcript(const agents::Transcript& transcript);
  // What every stored prompt and answer passes through: removes key values (daemon.cc sets it
  // to the configured providers' keys); the default keeps text as it is.
  void set_scrubber(std::function<std::string(const std::string&)> scrub) {
    scrub_ = std::move(scrub);
  }
  // This run's evaluations of `task`, oldest first.
  Result<std::vector<PastEvaluation>> history(const std::string& task);

  // The SELECT ... FROM ... JOIN of read_past_evaluations(), for a WHERE to follow.
  static constexpr const char* kPastEvaluationColumns =
      "SELECT e.id, e.kernel_id, k.parent_id, k.source, k.origin_agent, k.origin_tuner,"
      " e.gpu_model, e.compute_capability, e.driver_version, e.cuda_version, e.verdict,"
      " e.detail, e.tunables_json, e.median_us, e.noise, e.baseline_us, e.speedup,"
      " e.sol_percent, e.resources_json, e.created_at, e.run_id"
      " FROM evaluations e JOIN kernels k ON k.id = e.kernel_id JOIN tasks t ON t.id = e.task_id";

 private:
  std::mutex mutex_;
  memory::MemoryStore& store_;
  int64_t run_id_ = 0;
  std::map<std::string, std::string> judging_specs_;  // task name -> judging_spec_sha256
  std::function<std::string(const std::string&)> scrub_;
};

// The rows of a kPastEvaluationColumns query.
Result<std::vector<PastEvaluation>> read_past_evaluations(sql::Statement& statement,
                                                          const std::string& task);

// Runs `write` (a function returning a Result or Status) until it succeeds, fails for a reason
// other than another process's lock on the database, or `patience` has passed: a held lock
// delays what the daemon found, it never drops it. Each wait is logged, with a backoff from
// 50 ms to 5 s.
template <typename Write>
auto retry_while_locked(const std::string& what, Write&& write,
                        std::chrono::seconds patience = std::chrono::hours(1)) -> decltype(write());

}  // namespace kopt::orchestrator

#include "src/orchestrator/run_recorder_retry.h"
