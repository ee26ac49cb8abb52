#include "memory_store/plan_store.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "common/utf8.h"
#include "memory_store/memory_store.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

namespace {

// `text` cut to `kMaxTranscriptChars`, keeping its start and its end.
std::string capped(const std::string& text, bool& cut) {
  if (text.size() <= kMaxTranscriptChars) return text;
  cut = true;
  return clip_utf8_middle(text, kMaxTranscriptChars,
                          "\n[... about " + std::to_string(text.size() - kMaxTranscriptChars) +
                              " characters cut ...]\n");
}

}  // namespace

Status migrate_to_version_5(sql::Database& db) {
  return db.execute(R"sql(
CREATE TABLE plans (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  parent_kernel_id INTEGER REFERENCES kernels(id),
  title TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  technique TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL DEFAULT 'queued',
  child_kernel_ids TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL
);
CREATE INDEX plans_task ON plans(task_id, id);
CREATE TABLE llm_transcripts (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  agent TEXT NOT NULL,
  task TEXT NOT NULL DEFAULT '',
  template TEXT NOT NULL DEFAULT '',
  system TEXT NOT NULL DEFAULT '',
  prompt TEXT NOT NULL,
  answer TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT '',
  cut INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE INDEX llm_transcripts_run ON llm_transcripts(run_id, id);
)sql");
}

Result<int64_t> add_plan(sql::Database& db, const PlanRecord& plan) {
  auto statement = db.cached(
      "INSERT INTO plans (run_id, task_id, parent_kernel_id, title, detail, technique, outcome,"
      " child_kernel_ids, created_at)"
      " SELECT ?1, t.id, ?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM tasks t WHERE t.name = ?2");
  statement->bind_all(plan.run_id, plan.task, plan.parent_kernel_id, plan.title, plan.detail,
                      plan.technique, plan.outcome, nlohmann::json(plan.child_kernel_ids).dump(),
                      plan.created_at.empty() ? utc_timestamp() : plan.created_at);
  if (auto s = statement->run(); !s) return make_error("plans: " + s.error());
  if (db.changes() == 0) return make_error("plans: no task named " + plan.task);
  return db.last_insert_rowid();
}

std::string merged_plan_outcome(const std::string& before, const std::string& now) {
  // A plan's samples and its refinement finish one by one: a verified attempt is never
  // overwritten by a later failure, and of two verified ones the faster is kept.
  auto ratio = [](const std::string& outcome) -> std::optional<double> {
    if (outcome.rfind("verified", 0) != 0) return std::nullopt;
    size_t at = outcome.find_first_of("0123456789");
    return at == std::string::npos ? 0.0 : std::strtod(outcome.c_str() + at, nullptr);
  };
  auto old_ratio = ratio(before), new_ratio = ratio(now);
  if (old_ratio && (!new_ratio || *new_ratio < *old_ratio)) return before;
  return now;
}

Status finish_plan(sql::Database& db, int64_t id, const std::string& outcome,
                   const std::vector<int64_t>& child_kernel_ids) {
  std::string merged;
  std::vector<int64_t> children;
  {  // read, then reset before the update
    auto read = db.cached("SELECT outcome, child_kernel_ids FROM plans WHERE id = ?1");
    read->bind(1, id);
    auto row = read->step();
    if (!row) return make_error("plans: " + row.error());
    if (!*row) return make_error("plans: plan " + std::to_string(id) + " does not exist");
    merged = merged_plan_outcome(read->column_text(0), outcome);
    children = rows::ids_from_json(read->column_text(1));
  }
  for (int64_t child : child_kernel_ids) {
    if (std::find(children.begin(), children.end(), child) == children.end()) {
      children.push_back(child);
    }
  }
  auto statement = db.cached("UPDATE plans SET outcome = ?2, child_kernel_ids = ?3 WHERE id = ?1");
  statement->bind_all(id, merged, nlohmann::json(children).dump());
  if (auto s = statement->run(); !s) return make_error("plans: " + s.error());
  return ok_status();
}

namespace {

constexpr const char* kPlanColumns =
    "SELECT p.id, p.run_id, p.parent_kernel_id, p.title, p.detail, p.technique, p.outcome,"
    " p.child_kernel_ids, p.created_at FROM plans p JOIN tasks t ON t.id = p.task_id";

Result<std::vector<PlanRecord>> read_plans(sql::Statement& statement, const std::string& task) {
  auto plans = statement.collect([&](const sql::Statement& row) {
    PlanRecord p;
    sql::read_columns(row, p.id, p.run_id, p.parent_kernel_id, p.title, p.detail, p.technique,
                      p.outcome, p.child_kernel_ids, p.created_at);
    p.task = task;
    return p;
  });
  if (!plans) return make_error("plans: " + plans.error());
  return plans;
}

}  // namespace

Result<std::vector<PlanRecord>> failed_plans(sql::Database& db, const std::string& task,
                                             std::optional<int64_t> except_run, int64_t limit) {
  auto statement = db.cached(std::string(kPlanColumns) +
                             " WHERE t.name = ?1 AND p.run_id IS NOT ?2 AND p.outcome NOT LIKE "
                             "'verified%' AND p.outcome != 'queued' ORDER BY p.id DESC LIMIT ?3");
  statement->bind_all(task, except_run, limit);
  return read_plans(*statement, task);
}

Result<std::vector<PlanRecord>> earlier_plans(sql::Database& db, const std::string& task,
                                              std::optional<int64_t> except_run) {
  auto statement = db.cached(std::string(kPlanColumns) +
                             " WHERE t.name = ?1 AND p.run_id IS NOT ?2 ORDER BY p.id");
  statement->bind(1, task).bind(2, except_run);
  return read_plans(*statement, task);
}

Result<int64_t> add_transcript(sql::Database& db, TranscriptRecord t) {
  t.system = capped(t.system, t.cut);
  t.prompt = capped(t.prompt, t.cut);
  t.answer = capped(t.answer, t.cut);
  auto transaction = sql::Transaction::begin_or_join(db);
  if (!transaction) return make_error(transaction.error());
  auto statement = db.cached(
      "INSERT INTO llm_transcripts (run_id, agent, task, template, system, prompt, answer,"
      " status, cut, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  statement->bind_all(t.run_id, t.agent, t.task, t.template_file, t.system, t.prompt, t.answer,
                      t.status, t.cut, t.created_at.empty() ? utc_timestamp() : t.created_at);
  if (auto s = statement->run(); !s) return make_error("transcripts: " + s.error());
  int64_t id = db.last_insert_rowid();
  // The table's cap: the oldest transcripts beyond the newest kMaxTranscripts go.
  auto trim = db.cached("DELETE FROM llm_transcripts WHERE id <= ?1");
  trim->bind(1, id - kMaxTranscripts);
  if (auto s = trim->run(); !s) return make_error("transcripts: " + s.error());
  if (auto s = transaction->commit(); !s) return make_error(s.error());
  return id;
}

namespace {

// Columns of one transcript row: the texts (or '' for a listing) then their stored sizes.
constexpr const char* kTranscriptColumns =
    "id, run_id, agent, task, template, status, cut, created_at, length(prompt),"
    " length(answer), ";

TranscriptRecord read_transcript(sql::Statement& row) {
  TranscriptRecord t;
  sql::read_columns(row, t.id, t.run_id, t.agent, t.task, t.template_file, t.status, t.cut,
                    t.created_at, t.prompt_chars, t.answer_chars, t.system, t.prompt, t.answer);
  return t;
}

}  // namespace

Result<std::vector<TranscriptRecord>> list_transcripts(sql::Database& db,
                                                       std::optional<int64_t> run_id, int64_t limit,
                                                       const std::string& task) {
  auto statement = db.cached(std::string("SELECT ") + kTranscriptColumns +
                             "'', '', '' FROM llm_transcripts"
                             " WHERE (?1 IS NULL OR run_id = ?1) AND (?3 = '' OR task = ?3)"
                             " ORDER BY id DESC LIMIT ?2");
  statement->bind_all(run_id, limit, task);
  auto out = statement->collect(read_transcript);
  if (!out) return make_error("transcripts: " + out.error());
  return out;
}

Result<std::optional<TranscriptRecord>> transcript(sql::Database& db, int64_t id) {
  auto statement = db.cached(std::string("SELECT ") + kTranscriptColumns +
                             "system, prompt, answer FROM llm_transcripts WHERE id = ?1");
  auto found = statement->bind(1, id).first_row(read_transcript);
  if (!found) return make_error("transcripts: " + found.error());
  return found;
}

}  // namespace kopt::memory
