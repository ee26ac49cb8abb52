#include "memory_store/production_baselines.h"

#include <algorithm>

#include "memory_store/memory_store.h"

namespace kopt::memory {

namespace {

constexpr const char* kColumns =
    "id, task, gpu_model, name, median_us, noise, samples, device_json, library_versions_json,"
    " spec_sha256, shape, detail, created_at";

ProductionBaselineRecord read_row(const sql::Statement& s) {
  ProductionBaselineRecord r;
  sql::read_columns(s, r.id, r.task, r.gpu_model, r.name, r.median_us, r.noise, r.samples,
                    r.device_json, r.library_versions_json, r.spec_sha256, r.shape, r.detail,
                    r.created_at);
  return r;
}

Result<std::vector<ProductionBaselineRecord>> read_all(sql::Statement& statement) {
  auto rows = statement.collect(read_row);
  if (!rows) return make_error("production_baselines: " + rows.error());
  return rows;
}

}  // namespace

Status migrate_to_version_6(sql::Database& db) {
  // Keyed by the task's name rather than tasks(id): `kopt baselines` measures tasks that no run
  // has recorded yet.
  return db.execute(R"sql(
CREATE TABLE production_baselines (
  id INTEGER PRIMARY KEY,
  task TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  name TEXT NOT NULL,
  median_us REAL NOT NULL,
  noise REAL NOT NULL DEFAULT 0,
  samples INTEGER NOT NULL DEFAULT 0,
  device_json TEXT NOT NULL DEFAULT '{}',
  library_versions_json TEXT NOT NULL DEFAULT '{}',
  spec_sha256 TEXT NOT NULL DEFAULT '',
  shape TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
CREATE INDEX production_baselines_task ON production_baselines(task, gpu_model, name, id);
)sql");
}

Result<int64_t> add_production_baseline(sql::Database& db, const ProductionBaselineRecord& r) {
  if (r.task.empty() || r.gpu_model.empty() || r.name.empty()) {
    return make_error("production_baselines: a row needs a task, a GPU model and a name");
  }
  bool absence = r.median_us == 0 && r.detail.rfind("not installed", 0) == 0;
  if (!(r.median_us > 0) && !absence) {
    return make_error("production_baselines: " + r.task + " " + r.name +
                      ": the median must be positive (0 only for a library not installed)");
  }
  auto statement = db.cached(
      "INSERT INTO production_baselines (task, gpu_model, name, median_us, noise, samples,"
      " device_json, library_versions_json, spec_sha256, shape, detail, created_at)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  statement->bind_all(r.task, r.gpu_model, r.name, r.median_us, r.noise, r.samples, r.device_json,
                      r.library_versions_json, r.spec_sha256, r.shape, r.detail,
                      r.created_at.empty() ? utc_timestamp() : r.created_at);
  if (auto s = statement->run(); !s) return make_error("production_baselines: " + s.error());
  return db.last_insert_rowid();
}

Result<std::vector<ProductionBaselineRecord>> current_production_baselines(
    sql::Database& db, const std::string& task, const std::string& gpu_model,
    const std::string& spec_sha256) {
  // A database from before version 6 (a test's, or one opened by an older reader) has none.
  if (!db.has_table("production_baselines")) return std::vector<ProductionBaselineRecord>{};
  // The newest row per name (the largest id), among rows of the asked spec when one is given.
  auto statement = db.cached(std::string("SELECT ") + kColumns +
                             " FROM production_baselines WHERE id IN (SELECT max(id) FROM"
                             " production_baselines WHERE task = ?1 AND gpu_model = ?2 AND"
                             " (?3 = '' OR spec_sha256 = ?3) GROUP BY name) AND median_us > 0"
                             " ORDER BY median_us, name");
  statement->bind_all(task, gpu_model, spec_sha256);
  return read_all(*statement);
}

Result<std::optional<ProductionBaselineRecord>> best_production_baseline(
    sql::Database& db, const std::string& task, const std::string& gpu_model,
    const std::string& spec_sha256) {
  auto rows = current_production_baselines(db, task, gpu_model, spec_sha256);
  if (!rows) return make_error(rows.error());
  if (rows->empty()) return std::optional<ProductionBaselineRecord>{};
  return std::optional<ProductionBaselineRecord>{rows->front()};
}

Result<std::vector<std::string>> libraries_not_installed(sql::Database& db, const std::string& task,
                                                         const std::string& gpu_model) {
  if (!db.has_table("production_baselines")) return std::vector<std::string>{};
  auto statement = db.cached(
      "SELECT name FROM production_baselines WHERE id IN (SELECT max(id) FROM"
      " production_baselines WHERE task = ?1 AND gpu_model = ?2 GROUP BY name) AND median_us = 0"
      " ORDER BY name");
  statement->bind(1, task).bind(2, gpu_model);
  auto names = statement->collect([](const sql::Statement& row) { return row.column_text(0); });
  if (!names) return make_error("production_baselines: " + names.error());
  return names;
}

Result<std::vector<ProductionBaselineRecord>> all_production_baselines(sql::Database& db) {
  if (!db.has_table("production_baselines")) return std::vector<ProductionBaselineRecord>{};
  auto statement = db.cached(std::string("SELECT ") + kColumns +
                             " FROM production_baselines WHERE id IN (SELECT max(id) FROM"
                             " production_baselines GROUP BY task, gpu_model, name)"
                             " ORDER BY task, gpu_model, median_us");
  return read_all(*statement);
}

Standing evaluation_standing(sql::Database& db, const EvaluationRecord& evaluation) {
  std::optional<ProductionReference> production;
  auto best = best_production_baseline(db, evaluation.task, evaluation.gpu.model);
  if (best && *best) production = ProductionReference{(*best)->name, (*best)->median_us};
  double sol_us = evaluation.median_us * evaluation.sol_percent / 100.0;
  Standing s = standing(evaluation.median_us, evaluation.baseline_us, sol_us, production);
  if (auto missing = libraries_not_installed(db, evaluation.task, evaluation.gpu.model))
    s.not_installed = std::move(*missing);
  return s;
}

}  // namespace kopt::memory
