#include "memory_store/task_counts.h"

#include "memory_store/row_readers.h"
#include "memory_store/task_best.h"

namespace kopt::memory {

Result<std::map<std::string, TaskCounts>> task_counts(sql::Database& db,
                                                      std::optional<int64_t> run_id) {
  std::map<std::string, TaskCounts> out;
  // A baseline is the task's own kernel: origin "baseline" with no parent (a tuned variant of
  // it has the baseline as parent and is a candidate).
  auto counts = db.cached(
      "SELECT t.name, count(*), sum(e.verdict = 'ok'), sum(e.verdict NOT IN ('ok', 'screened'))"
      " FROM evaluations e JOIN tasks t ON t.id = e.task_id JOIN kernels k ON k.id = e.kernel_id"
      " WHERE (?1 IS NULL OR e.run_id = ?1)"
      " AND NOT (k.origin_agent = 'baseline' AND k.parent_id IS NULL)"
      " GROUP BY t.name");
  auto counted = counts->bind(1, run_id).each_row([&](const sql::Statement& row) {
    TaskCounts& c = out[row.column_text(0)];
    c.candidates = row.column_int64(1);
    c.verified = row.column_int64(2);
    c.rejected = row.column_int64(3);
  });
  if (!counted) return make_error("task counts: " + counted.error());
  auto best = db.cached(std::string("SELECT ") + rows::kEvaluationColumns +
                        " FROM evaluations e JOIN tasks t ON t.id = e.task_id"
                        " WHERE (?1 IS NULL OR e.run_id = ?1) AND e.verdict = 'ok'"
                        " AND e.median_us > 0 ORDER BY t.name, " +
                        kBestEvaluationOrder);
  auto bested = best->bind(1, run_id).each_row([&](const sql::Statement& row) {
    EvaluationRecord e = rows::read_evaluation(row);
    TaskCounts& c = out[e.task];
    if (!c.best) c.best = std::move(e);
  });
  if (!bested) return make_error("task best: " + bested.error());
  return out;
}

}  // namespace kopt::memory
