// The daemon's own two tables in the memory database, through which other shells talk to a
// running daemon: `kopt submit` queues a task folder in daemon_submissions, and the daemon
// publishes its state (one JSON document per run) in daemon_status for `kopt status`. Both are
// created on demand (CREATE TABLE IF NOT EXISTS) so read-only commands work on any database.
// Version 1; the version is kept in the memory's meta table under "daemon_tables_version".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/sqlite_database.h"

namespace kopt::orchestrator {

inline constexpr int kDaemonTablesVersion = 1;

Status ensure_daemon_tables(sql::Database& db);

struct Submission {
  int64_t id = 0;
  std::string task_dir;  // absolute
  std::string submitted_at;
};

// Queues `task_dir` (made absolute) for the running daemon, or for the next `kopt run --resume`.
Result<int64_t> submit_task(sql::Database& db, const std::string& task_dir);
// The submissions no run has taken yet, oldest first, now marked as taken by `run_id`.
Result<std::vector<Submission>> take_submissions(sql::Database& db, int64_t run_id);
// How many submissions wait.
Result<int64_t> pending_submissions(sql::Database& db);
// The submissions that wait, oldest first, left waiting.
Result<std::vector<Submission>> waiting_submissions(sql::Database& db);

struct StatusRow {
  int64_t run_id = 0;
  int64_t pid = 0;
  std::string updated_at;
  double active_seconds = 0;  // time the daemon has worked on this run, over every resume
  std::string status_json;
};

Status write_status(sql::Database& db, const StatusRow& row);
// The status of `run_id`, or of the latest run with a status when run_id is empty.
Result<std::optional<StatusRow>> read_status(sql::Database& db,
                                             std::optional<int64_t> run_id = std::nullopt);

// Marks a finished or interrupted run as running again (kopt run --resume).
Status reopen_run(sql::Database& db, int64_t run_id);

}  // namespace kopt::orchestrator
