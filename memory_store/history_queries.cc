// What happened, in order: runs, evaluations and LLM calls as recorded, for `kopt report`'s
// charts over time. Read-only; ordered by id, which is insertion order, so ties in created_at
// (one second of resolution) keep the order of events.
#include "memory_store/memory_store.h"
#include "memory_store/row_readers.h"

namespace kopt::memory {

namespace {

// Every row of `sql`; a query with a "?1" gets `run_id` bound there, written as
// "WHERE (?1 IS NULL OR run_id = ?1)" so that no run means every run.
template <typename Record, typename Reader>
Result<std::vector<Record>> collect(sql::Database& db, const std::string& sql,
                                    std::optional<int64_t> run_id, Reader read) {
  auto statement = db.cached(sql);
  if (sql.find("?1") != std::string::npos) statement->bind(1, run_id);
  return statement->collect(read);
}

}  // namespace

Result<std::optional<RunRecord>> MemoryStore::run(int64_t id) {
  auto statement = db_.cached(std::string(rows::kRunSelect) + " WHERE id = ?1");
  return statement->bind(1, id).first_row(rows::read_run);
}

Result<std::vector<RunRecord>> MemoryStore::list_runs() {
  return collect<RunRecord>(db_, std::string(rows::kRunSelect) + " ORDER BY id", std::nullopt,
                            rows::read_run);
}

Result<std::vector<EvaluationRecord>> MemoryStore::list_evaluations(std::optional<int64_t> run_id) {
  return collect<EvaluationRecord>(db_,
                                   std::string("SELECT ") + rows::kEvaluationColumns +
                                       " FROM evaluations e JOIN tasks t ON t.id = e.task_id"
                                       " WHERE (?1 IS NULL OR e.run_id = ?1) ORDER BY e.id",
                                   run_id, rows::read_evaluation);
}

Result<std::optional<EvaluationRecord>> MemoryStore::verifying_evaluation(
    int64_t kernel_id, const std::string& gpu_model) {
  auto statement = db_.cached(std::string("SELECT ") + rows::kEvaluationColumns +
                              " FROM evaluations e JOIN tasks t ON t.id = e.task_id"
                              " WHERE e.kernel_id = ?1 AND (?2 = '' OR e.gpu_model = ?2)"
                              " AND e.verdict = 'ok' ORDER BY e.id DESC LIMIT 1");
  return statement->bind(1, kernel_id).bind(2, gpu_model).first_row(rows::read_evaluation);
}

Result<std::vector<LlmCallRecord>> MemoryStore::list_llm_calls(std::optional<int64_t> run_id) {
  return collect<LlmCallRecord>(
      db_,
      "SELECT id, run_id, agent, provider, model, prompt_tokens, completion_tokens, cost_usd,"
      " latency_ms, status, error, created_at FROM llm_calls"
      " WHERE (?1 IS NULL OR run_id = ?1) ORDER BY id",
      run_id, [](const sql::Statement& row) {
        LlmCallRecord call;
        sql::read_columns(row, call.id, call.run_id, call.agent, call.provider, call.model,
                          call.prompt_tokens, call.completion_tokens, call.cost_usd,
                          call.latency_ms, call.status, call.error, call.created_at);
        return call;
      });
}

}  // namespace kopt::memory
