#include "src/orchestrator/daemon_tables.h"

#include <filesystem>

#include "memory_store/memory_store.h"

namespace kopt::orchestrator {

Status ensure_daemon_tables(sql::Database& db) {
  if (db.has_table("daemon_submissions") && db.has_table("daemon_status")) return ok_status();
  auto transaction = sql::Transaction::begin(db);
  if (!transaction) return make_error(transaction.error());
  auto s = db.execute(R"sql(
CREATE TABLE IF NOT EXISTS daemon_submissions (
  id INTEGER PRIMARY KEY,
  task_dir TEXT NOT NULL,
  submitted_at TEXT NOT NULL,
  taken_by_run INTEGER,
  taken_at TEXT
);
CREATE TABLE IF NOT EXISTS daemon_status (
  run_id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  active_seconds REAL NOT NULL DEFAULT 0,
  status_json TEXT NOT NULL
);
)sql");
  if (!s) return make_error("daemon tables: " + s.error());
  if (db.has_table("meta")) {
    auto meta =
        db.cached("INSERT OR REPLACE INTO meta(key, value) VALUES ('daemon_tables_version', ?1)");
    meta->bind(1, kDaemonTablesVersion);
    if (auto m = meta->run(); !m) return m;
  }
  return transaction->commit();
}

Result<int64_t> submit_task(sql::Database& db, const std::string& task_dir) {
  if (auto s = ensure_daemon_tables(db); !s) return make_error(s.error());
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(task_dir, ec);
  auto statement =
      db.cached("INSERT INTO daemon_submissions(task_dir, submitted_at) VALUES (?1, ?2)");
  statement->bind(1, (ec ? std::filesystem::path(task_dir) : absolute).lexically_normal().string())
      .bind(2, memory::utc_timestamp());
  if (auto s = statement->run(); !s) return make_error("submit: " + s.error());
  return db.last_insert_rowid();
}

Result<std::vector<Submission>> take_submissions(sql::Database& db, int64_t run_id) {
  if (auto s = ensure_daemon_tables(db); !s) return make_error(s.error());
  auto transaction = sql::Transaction::begin(db);
  if (!transaction) return make_error(transaction.error());
  auto taken = waiting_submissions(db);
  if (!taken || taken->empty()) return taken;
  auto mark = db.cached(
      "UPDATE daemon_submissions SET taken_by_run = ?1, taken_at = ?2 WHERE taken_by_run IS NULL");
  mark->bind(1, run_id).bind(2, memory::utc_timestamp());
  if (auto s = mark->run(); !s) return make_error(s.error());
  if (auto s = transaction->commit(); !s) return make_error(s.error());
  return taken;
}

Result<int64_t> pending_submissions(sql::Database& db) {
  if (!db.has_table("daemon_submissions")) return int64_t{0};
  return db.query_int64("SELECT count(*) FROM daemon_submissions WHERE taken_by_run IS NULL");
}

Result<std::vector<Submission>> waiting_submissions(sql::Database& db) {
  std::vector<Submission> waiting;
  if (!db.has_table("daemon_submissions")) return waiting;
  auto statement = db.cached(
      "SELECT id, task_dir, submitted_at FROM daemon_submissions WHERE taken_by_run IS NULL"
      " ORDER BY id");
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    waiting.push_back(
        {statement->column_int64(0), statement->column_text(1), statement->column_text(2)});
  }
  return waiting;
}

Status write_status(sql::Database& db, const StatusRow& row) {
  if (auto s = ensure_daemon_tables(db); !s) return s;
  auto statement = db.cached(
      "INSERT OR REPLACE INTO daemon_status(run_id, pid, updated_at, active_seconds, status_json)"
      " VALUES (?1, ?2, ?3, ?4, ?5)");
  statement->bind_all(row.run_id, row.pid,
                      row.updated_at.empty() ? memory::utc_timestamp() : row.updated_at,
                      row.active_seconds, row.status_json);
  return statement->run();
}

Result<std::optional<StatusRow>> read_status(sql::Database& db, std::optional<int64_t> run_id) {
  if (!db.has_table("daemon_status")) return std::optional<StatusRow>();
  auto statement = db.cached(
      "SELECT run_id, pid, updated_at, active_seconds, status_json FROM daemon_status"
      " WHERE ?1 IS NULL OR run_id = ?1 ORDER BY run_id DESC LIMIT 1");
  return statement->bind(1, run_id).first_row([](const sql::Statement& row) {
    StatusRow out;
    sql::read_columns(row, out.run_id, out.pid, out.updated_at, out.active_seconds,
                      out.status_json);
    return out;
  });
}

Status reopen_run(sql::Database& db, int64_t run_id) {
  auto statement =
      db.cached("UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?1");
  statement->bind(1, run_id);
  if (auto s = statement->run(); !s) return s;
  if (db.changes() == 0) return make_error("run " + std::to_string(run_id) + " does not exist");
  return ok_status();
}

}  // namespace kopt::orchestrator
