// `kopt memory stats`: what the memory holds, by task, verdict and GPU.
#include <system_error>

#include "memory_store/memory_store.h"

namespace kopt::memory {

namespace {

Result<std::vector<std::pair<std::string, int64_t>>> grouped(sql::Database& db, const char* sql) {
  auto statement = db.cached(sql);
  std::vector<std::pair<std::string, int64_t>> counts;
  while (true) {
    auto row = statement->step();
    if (!row) return make_error("stats: " + row.error());
    if (!*row) return counts;
    counts.emplace_back(statement->column_text(0), statement->column_int64(1));
  }
}

}  // namespace

Result<StoreStats> MemoryStore::stats() {
  StoreStats stats;
  struct Count {
    int64_t* into;
    const char* sql;
  };
  const Count counts[] = {
      {&stats.tasks, "SELECT count(*) FROM tasks"},
      {&stats.kernels, "SELECT count(*) FROM kernels"},
      {&stats.evaluations, "SELECT count(*) FROM evaluations"},
      {&stats.pairs, "SELECT count(*) FROM pairs"},
      {&stats.negative_pairs, "SELECT count(*) FROM pairs WHERE is_negative = 1"},
      {&stats.runs, "SELECT count(*) FROM runs"},
      {&stats.llm_calls, "SELECT count(*) FROM llm_calls"},
  };
  for (const auto& count : counts) {
    auto value = db_.query_int64(count.sql);
    if (!value) return make_error("stats: " + value.error());
    *count.into = *value;
  }
  struct Group {
    std::vector<std::pair<std::string, int64_t>>* into;
    const char* sql;
  };
  const Group groups[] = {
      {&stats.evaluations_by_task,
       "SELECT t.name, count(e.id) FROM tasks t LEFT JOIN evaluations e ON e.task_id = t.id"
       " GROUP BY t.id ORDER BY t.name"},
      {&stats.pairs_by_task,
       "SELECT t.name, count(p.id) FROM tasks t LEFT JOIN pairs p ON p.task_id = t.id"
       " GROUP BY t.id ORDER BY t.name"},
      {&stats.evaluations_by_verdict,
       "SELECT verdict, count(*) FROM evaluations GROUP BY verdict ORDER BY count(*) DESC, verdict"},
      {&stats.evaluations_by_gpu,
       "SELECT gpu_model, count(*) FROM evaluations GROUP BY gpu_model"
       " ORDER BY count(*) DESC, gpu_model"},
  };
  for (const auto& group : groups) {
    auto rows = grouped(db_, group.sql);
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
