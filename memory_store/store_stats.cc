// `kopt memory stats`: what the memory holds, by task, verdict and GPU.
#include <system_error>

#include "memory_store/memory_store.h"

namespace kopt::memory {

namespace {

Result<std::vector<std::pair<std::string, int64_t>>> grouped(sql::Database& db, const char* sql,
                                                             std::optional<int64_t> task_id) {
  auto statement = db.cached(sql);
  statement->bind(1, task_id);
  std::vector<std::pair<std::string, int64_t>> counts;
  while (true) {
    auto row = statement->step();
    if (!row) return make_error("stats: " + row.error());
    if (!*row) return counts;
    counts.emplace_back(statement->column_text(0), statement->column_int64(1));
  }
}

}  // namespace

Result<StoreStats> MemoryStore::stats(const std::string& task) {
  StoreStats stats;
  // ?1: the task's id, or NULL for the whole memory.
  std::optional<int64_t> task_id;
  if (!task.empty()) {
    auto found = find_task(task);
    if (!found) return make_error("stats: " + found.error());
    if (!*found) return make_error("stats: unknown task '" + task + "'");
    task_id = (*found)->id;
  }
  struct Count {
    int64_t* into;
    const char* sql;
  };
  const Count counts[] = {
      {&stats.tasks, "SELECT count(*) FROM tasks WHERE ?1 IS NULL OR id = ?1"},
      {&stats.kernels, "SELECT count(*) FROM kernels WHERE ?1 IS NULL OR task_id = ?1"},
      {&stats.evaluations, "SELECT count(*) FROM evaluations WHERE ?1 IS NULL OR task_id = ?1"},
      {&stats.pairs, "SELECT count(*) FROM pairs WHERE ?1 IS NULL OR task_id = ?1"},
      {&stats.negative_pairs,
       "SELECT count(*) FROM pairs WHERE is_negative = 1 AND (?1 IS NULL OR task_id = ?1)"},
      {&stats.runs,
       "SELECT count(*) FROM runs WHERE ?1 IS NULL OR id IN (SELECT run_id FROM evaluations "
       "WHERE task_id = ?1)"},
      // LLM calls are accounted per run, not per task.
      {&stats.llm_calls, "SELECT CASE WHEN ?1 IS NULL THEN (SELECT count(*) FROM llm_calls) END"},
  };
  for (const auto& count : counts) {
    auto statement = db_.cached(count.sql);
    statement->bind(1, task_id);
    auto row = statement->step();
    if (!row) return make_error("stats: " + row.error());
    *count.into = statement->column_is_null(0) ? -1 : statement->column_int64(0);
  }
  struct Group {
    std::vector<std::pair<std::string, int64_t>>* into;
    const char* sql;
  };
  const Group groups[] = {
      {&stats.evaluations_by_task,
       "SELECT t.name, count(e.id) FROM tasks t LEFT JOIN evaluations e ON e.task_id = t.id"
       " WHERE ?1 IS NULL OR t.id = ?1 GROUP BY t.id ORDER BY t.name"},
      {&stats.pairs_by_task,
       "SELECT t.name, count(p.id) FROM tasks t LEFT JOIN pairs p ON p.task_id = t.id"
       " WHERE ?1 IS NULL OR t.id = ?1 GROUP BY t.id ORDER BY t.name"},
      {&stats.evaluations_by_verdict,
       "SELECT verdict, count(*) FROM evaluations WHERE ?1 IS NULL OR task_id = ?1"
       " GROUP BY verdict ORDER BY count(*) DESC, verdict"},
      {&stats.evaluations_by_gpu,
       "SELECT gpu_model, count(*) FROM evaluations WHERE ?1 IS NULL OR task_id = ?1"
       " GROUP BY gpu_model ORDER BY count(*) DESC, gpu_model"},
  };
  for (const auto& group : groups) {
    auto rows = grouped(db_, group.sql, task_id);
    if (!rows) return make_error(rows.error());
    *group.into = std::move(*rows);
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal"}) {
    auto size = std::filesystem::file_size(db_.path().string() + suffix, ec);
    if (!ec) stats.file_bytes += static_cast<int64_t>(size);
  }
  auto version = schema_version(db_);
  if (!version) return make_error(version.error());
  stats.schema_version = *version;
  return stats;
}

}  // namespace kopt::memory
