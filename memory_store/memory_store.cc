// Opening the memory, and the records that are written once and never merged: tasks, kernels,
// evaluations, runs and LLM calls. Pairs live in pair_store.cc, retrieval in retrieval.cc.
#include "memory_store/memory_store.h"

#include <cstdlib>
#include <ctime>
#include <system_error>

#include "common/files.h"
#include "common/scrub_secrets.h"
#include "common/sha256.h"
#include "memory_store/fts_index.h"
#include "memory_store/row_readers.h"
#include "memory_store/task_best.h"

namespace kopt::memory {

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

const std::string& or_now(const std::string& time, std::string& storage) {
  if (!time.empty()) return time;
  storage = utc_timestamp();
  return storage;
}

}  // namespace

Result<MemoryStore> MemoryStore::open(const std::filesystem::path& path,
                                      const OpenOptions& options) {
  std::error_code ec;
  if (!options.create || options.read_only) {
    if (!std::filesystem::exists(path, ec)) {
      return make_error(path.string() +
                        ": no memory database there (it is created by the first run; "
                        "pass --db or set KOPT_DB to use another)");
    }
  } else if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return make_error(path.parent_path().string() + ": cannot create: " + ec.message());
  }
  sql::Database::Options db_options;
  db_options.create = options.create && !options.read_only;
  db_options.read_only = options.read_only;
  auto db = sql::Database::open(path, db_options);
  if (!db) return make_error(db.error());
  if (options.read_only) {
    if (auto s = check_readable(*db); !s) return make_error(s.error());
  } else if (auto s = migrate(*db, options.target_version); !s) {
    return make_error(s.error());
  }
  return MemoryStore(std::move(*db));
}

Result<sql::Transaction> MemoryStore::begin() { return sql::Transaction::begin(db_); }

// ---- tasks ----

Result<int64_t> MemoryStore::task_id(const std::string& name) {
  auto statement = db_.cached("SELECT id FROM tasks WHERE name = ?1");
  statement->bind(1, name);
  auto row = statement->step();
  if (!row) return make_error(row.error());
  if (!*row) return make_error("unknown task '" + name + "' (not in the memory)");
  return statement->column_int64(0);
}

Result<int64_t> MemoryStore::upsert_task(const TaskRecord& task) {
  if (task.name.empty()) return make_error("a task needs a name");
  std::string now;
  auto statement = db_.cached(
      "INSERT INTO tasks(name, spec_hash, tags, spec_json, updated_at, judging_spec_sha256)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
      " ON CONFLICT(name) DO UPDATE SET spec_hash = excluded.spec_hash, tags = excluded.tags,"
      " spec_json = excluded.spec_json, updated_at = excluded.updated_at,"
      " judging_spec_sha256 = CASE WHEN excluded.judging_spec_sha256 = '' THEN"
      " judging_spec_sha256 ELSE excluded.judging_spec_sha256 END"
      " WHERE spec_hash != excluded.spec_hash OR tags != excluded.tags"
      " OR (excluded.judging_spec_sha256 != '' AND"
      " judging_spec_sha256 != excluded.judging_spec_sha256)"
      " RETURNING id");
  statement->bind_all(task.name, task.spec_hash, rows::tags_to_json(task.tags), task.spec_json,
                      or_now(task.updated_at, now), task.judging_spec_sha256);
  auto row = statement->step();
  if (!row) return make_error(row.error());
  if (*row) return statement->column_int64(0);
  return task_id(task.name);  // unchanged: the conditional update returned no row
}

Result<std::optional<TaskRecord>> MemoryStore::find_task(const std::string& name) {
  auto statement = db_.cached(
      "SELECT id, name, spec_hash, tags, spec_json, updated_at, judging_spec_sha256 FROM tasks"
      " WHERE name = ?1");
  return statement->bind(1, name).first_row([](const sql::Statement& row) {
    TaskRecord task;
    sql::read_columns(row, task.id, task.name, task.spec_hash, task.tags, task.spec_json,
                      task.updated_at, task.judging_spec_sha256);
    return task;
  });
}

Result<std::vector<TaskRecord>> MemoryStore::list_tasks() {
  auto names = db_.cached("SELECT name FROM tasks ORDER BY name")->collect(rows::read_text);
  if (!names) return make_error(names.error());
  std::vector<TaskRecord> tasks;
  for (const auto& name : *names) {
    auto task = find_task(name);
    if (!task) return make_error(task.error());
    if (*task) tasks.push_back(std::move(**task));
  }
  return tasks;
}

// ---- kernels ----

Result<int64_t> MemoryStore::add_kernel(const KernelRecord& kernel) {
  std::string sha = sha256_hex(kernel.source);
  if (auto existing = find_kernel(sha); !existing || *existing) {
    if (!existing) return make_error(existing.error());
    return **existing;
  }
  auto tid = task_id(kernel.task);
  if (!tid) return make_error("kernel: " + tid.error());
  auto transaction = sql::Transaction::begin_or_join(db_);
  if (!transaction) return make_error(transaction.error());
  std::string now;
  int64_t id = 0;
  {
    auto statement = db_.cached(
        "INSERT INTO kernels(sha256, source, task_id, parent_id, run_id, origin_agent, "
        "origin_model,"
        " origin_prompt_template, origin_tuner, tunables_json, created_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    statement->bind_all(sha, kernel.source, *tid, kernel.parent_id, kernel.run_id,
                        origin_name(kernel.origin.agent), kernel.origin.model,
                        kernel.origin.prompt_template, kernel.origin.tuner, kernel.tunables_json,
                        or_now(kernel.created_at, now));
    if (auto s = statement->run(); !s) return make_error("kernel: " + s.error());
    id = db_.last_insert_rowid();
  }
  return index_and_commit(db_, *transaction, id, index_kernel);
}

Result<std::optional<KernelRecord>> MemoryStore::kernel(int64_t id) {
  auto statement = db_.cached(std::string("SELECT ") + rows::kKernelColumns +
                              " FROM kernels k JOIN tasks t ON t.id = k.task_id WHERE k.id = ?1");
  return statement->bind(1, id).first_row(rows::read_kernel);
}

Result<std::optional<int64_t>> MemoryStore::find_kernel(const std::string& sha256) {
  auto statement = db_.cached("SELECT id FROM kernels WHERE sha256 = ?1");
  statement->bind(1, sha256);
  auto row = statement->step();
  if (!row) return make_error(row.error());
  if (!*row) return std::optional<int64_t>();
  return std::optional<int64_t>(statement->column_int64(0));
}

// ---- evaluations ----

Result<int64_t> MemoryStore::add_evaluation(const EvaluationRecord& e) {
  auto tid = task_id(e.task);
  if (!tid) return make_error("evaluation: " + tid.error());
  if (e.gpu.model.empty()) return make_error("evaluation: the GPU model is missing");
  std::string now;
  auto statement = db_.cached(
      "INSERT INTO evaluations(kernel_id, task_id, run_id, gpu_model, compute_capability,"
      " driver_version, cuda_version, verdict, detail, tunables_json, median_us, noise,"
      " baseline_us, speedup, sol_percent, resources_json, created_at, profile_json,"
      " judging_spec_sha256, verifier_version)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
      " ?19, ?20)");
  statement->bind_all(e.kernel_id, *tid, e.run_id, e.gpu.model, e.gpu.compute_capability,
                      e.gpu.driver_version, e.gpu.cuda_version, verdict_name(e.verdict),
                      scrub_secrets(e.detail), e.tunables_json, e.median_us, e.noise, e.baseline_us,
                      e.speedup, e.sol_percent, e.resources_json, or_now(e.created_at, now),
                      e.profile_json.empty() ? std::string("{}") : e.profile_json,
                      e.judging_spec_sha256, e.verifier_version);
  if (auto s = statement->run(); !s) return make_error("evaluation: " + s.error());
  return db_.last_insert_rowid();
}

Result<std::optional<EvaluationRecord>> MemoryStore::best_kernel(const std::string& task,
                                                                 const std::string& gpu_model) {
  // The one rule of a task's best (task_best.h).
  auto statement = db_.cached(std::string("SELECT ") + rows::kEvaluationColumns +
                              " FROM evaluations e JOIN tasks t ON t.id = e.task_id"
                              " WHERE t.name = ?1 AND e.gpu_model = ?2 AND e.verdict = 'ok'"
                              " AND e.median_us > 0 ORDER BY " +
                              kBestEvaluationOrder + " LIMIT 1");
  return statement->bind(1, task).bind(2, gpu_model).first_row(rows::read_evaluation);
}

Result<std::string> MemoryStore::latest_profile(int64_t kernel_id) {
  auto statement = db_.cached(
      "SELECT profile_json FROM evaluations WHERE kernel_id = ?1 AND profile_json != '{}'"
      " ORDER BY id DESC LIMIT 1");
  auto profile = statement->bind(1, kernel_id).first_row(rows::read_text);
  if (!profile) return make_error(profile.error());
  return profile->value_or(std::string());
}

Result<std::vector<std::string>> MemoryStore::verified_gpus(const std::string& task) {
  auto statement = db_.cached(
      "SELECT e.gpu_model FROM evaluations e JOIN tasks t ON t.id = e.task_id"
      " WHERE t.name = ?1 AND e.verdict = 'ok' AND e.median_us > 0"
      " GROUP BY e.gpu_model ORDER BY count(*) DESC, e.gpu_model");
  return statement->bind(1, task).collect(rows::read_text);
}

// ---- runs and LLM calls ----

Result<int64_t> MemoryStore::start_run(const std::string& config_json) {
  auto statement =
      db_.cached("INSERT INTO runs(config_json, started_at, status) VALUES (?1, ?2, 'running')");
  statement->bind(1, scrub_secrets(config_json)).bind(2, utc_timestamp());
  if (auto s = statement->run(); !s) return make_error("run: " + s.error());
  return db_.last_insert_rowid();
}

Status MemoryStore::finish_run(int64_t run_id, RunStatus status) {
  auto statement = db_.cached("UPDATE runs SET finished_at = ?2, status = ?3 WHERE id = ?1");
  statement->bind_all(run_id, utc_timestamp(), run_status_name(status));
  if (auto s = statement->run(); !s) return s;
  if (db_.changes() == 0) return make_error("run " + std::to_string(run_id) + " does not exist");
  return ok_status();
}

Result<std::optional<RunRecord>> MemoryStore::latest_run() {
  auto statement = db_.cached(std::string(rows::kRunSelect) + " ORDER BY id DESC LIMIT 1");
  return statement->first_row(rows::read_run);
}

Result<int64_t> MemoryStore::record_llm_call(const LlmCallRecord& call) {
  std::string now;
  auto statement = db_.cached(
      "INSERT INTO llm_calls(run_id, agent, provider, model, prompt_tokens, completion_tokens,"
      " cost_usd, latency_ms, status, error, created_at)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  statement->bind_all(call.run_id, call.agent, call.provider, call.model, call.prompt_tokens,
                      call.completion_tokens, call.cost_usd, call.latency_ms, call.status,
                      scrub_secrets(call.error), or_now(call.created_at, now));
  if (auto s = statement->run(); !s) return make_error("LLM call: " + s.error());
  return db_.last_insert_rowid();
}

Result<RunTotals> MemoryStore::run_totals(int64_t run_id) {
  auto statement = db_.cached(
      "SELECT count(*), coalesce(sum(status != 'ok'), 0), coalesce(sum(prompt_tokens), 0),"
      " coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0) FROM llm_calls"
      " WHERE run_id = ?1");
  statement->bind(1, run_id);
  auto row = statement->step();
  if (!row) return make_error(row.error());
  RunTotals totals;
  sql::read_columns(*statement, totals.calls, totals.failed_calls, totals.input_tokens,
                    totals.output_tokens, totals.cost_usd);
  return totals;
}

}  // namespace kopt::memory
