// What a morning report shows, gathered from the memory in one pass through its public API:
// per task the best kernel, %SOL and verdicts, the best speedup over time, LLM tokens and cost
// over time, and the wins with their diffs. The HTML and markdown writers only format this.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/sol_score.h"
#include "memory_store/memory_store.h"

namespace kopt::report {

// Which part of the memory a report covers.
struct ReportScope {
  std::optional<int64_t> run_id;  // empty: every run and every evaluation
  int max_wins = 50;              // the best wins shown, each with its diff
  // The verifier version whose verdicts count as current (sandbox/judging_spec.h); 0: not checked.
  int verifier_version = 0;
};

// Verdicts in the report's order: ok first, then the failures by name, so colors and columns
// are the same in every report.
struct VerdictOrder {
  bool operator()(Verdict a, Verdict b) const;
};

// Who wrote a kernel, for a table's "from" column: the tuner, else its model, else its agent.
std::string kernel_author(const memory::KernelOrigin& origin);

// (hours since the report's start, value)
using TimePoint = std::pair<double, double>;

struct TaskSummary {
  std::string task;
  int64_t candidates = 0;  // evaluations in scope, the baseline's own not counted (task_counts.h)
  int64_t verified = 0;    // of which verdict "ok"
  std::map<Verdict, int64_t, VerdictOrder> verdicts;  // verdict -> count
  // The most common failure detail of each failing verdict, for "why".
  std::map<Verdict, std::string, VerdictOrder> example_failure;
  std::optional<memory::EvaluationRecord> best;  // the verified evaluation with the best speedup
  double baseline_us = 0;                        // the baseline timed beside the best
  double baseline_sol_percent = 0;               // derived from the best's baseline time
  std::vector<TimePoint> best_speedup;           // running best, starting at 1x at time 0
  std::string best_origin;                       // "tuner", a model name, "baseline"
  std::string baseline_profile_json;  // the baseline kernel's newest profile; "" where none
  // Why the best's verdict may not hold under the task's current spec or verifier; "" when it does.
  std::string stale_judgment;
  // The best against the best production baseline on its GPU, %SOL and S (common/sol_score.h).
  Standing standing;
};

struct Win {
  memory::PairRecord pair;
  memory::KernelRecord slow, fast;
  std::string diff;  // unified diff slow -> fast
};

struct ReportData {
  std::string database;  // the file, for the header
  std::optional<memory::RunRecord> run;
  std::string start;                   // ISO time that the time axes count from
  double span_hours = 0;               // the last event after start
  std::vector<std::string> gpus;       // GPU models evaluated on
  std::vector<TaskSummary> tasks;      // by name
  std::vector<Verdict> verdict_order;  // every verdict seen, in VerdictOrder
  // LLM accounting: cumulative over time, and totals by model.
  std::vector<TimePoint> prompt_tokens, completion_tokens, cost_usd;
  memory::RunTotals llm_totals;
  std::vector<std::pair<std::string, memory::RunTotals>> llm_by_model;
  std::vector<Win> wins;  // best first
  // Tasks the daemon parked in this run, with why ("stalled: 18 of the last 20 coder answers
  // were repeats"), from the run's last published status; by task name.
  std::vector<std::pair<std::string, std::string>> parked;
  // Task folders the run refused at start or when submitted (a broken task.json, a name taken
  // twice), with why: folder, reason.
  std::vector<std::pair<std::string, std::string>> refused;
  int64_t evaluations = 0, verified = 0;
  std::string generated_at;
};

// Reads everything the report needs for `scope`.
Result<ReportData> load_report_data(memory::MemoryStore& store, const std::string& database,
                                    const ReportScope& scope);

// "run 3 (finished), started 2026-11-22T01:00:00Z" or "every run in the memory".
std::string describe_scope(const ReportData& data);

// The geometric mean of the best speedups of tasks that have one (0 when none has).
double geomean_best_speedup(const ReportData& data);

// How much S (common/sol_score.h) the task's best gained over its baseline, both against the
// best's reference T_b (the production baseline where one was measured, else baseline.cu) and
// the same bound; 0 when either S cannot be computed.
double sol_score_gained(const TaskSummary& task);
// LLM tokens (prompt + completion) per unit of S gained over all tasks (issue 36: tokens, not
// calls, are what a search pays); nothing when no S was gained.
std::optional<double> tokens_per_sol_score_gained(const ReportData& data);

// Where the time goes, for the report's table: DRAM %, L2 hit, SM %, achieved occupancy, top
// stall, bank conflicts (the cells under profile_headers()); empty for "{}" or a profile that
// does not parse.
std::vector<std::string> profile_cells(const std::string& profile_json);
const std::vector<std::string>& profile_headers();
struct ProfileRow {
  std::string task;
  std::string kernel;  // "baseline" or "best"
  std::vector<std::string> cells;
};
// Each task's baseline and best rows, where they were profiled.
std::vector<ProfileRow> profile_rows(const ReportData& data);

}  // namespace kopt::report
