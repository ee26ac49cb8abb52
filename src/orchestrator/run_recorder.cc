#include "src/orchestrator/run_recorder.h"

#include <spdlog/spdlog.h>

#include "memory_store/production_baselines.h"
#include "sandbox/judging_spec.h"

namespace kopt::orchestrator {

namespace {

// Writes a row of the run through `add` (a memory_store writer), with the run's id when there is
// one; a failure is logged and gives no id: the search goes on without the row.
template <typename Row, typename Add>
std::optional<int64_t> add_run_row(sql::Database& db, int64_t run_id, Row& row, Add add) {
  if (run_id) row.run_id = run_id;
  auto id = add(db, row);
  if (!id) {
    spdlog::warn("memory: {}", id.error());
    return std::nullopt;
  }
  return *id;
}

}  // namespace

Result<int64_t> RunRecorder::start_run(const std::string& config_json) {
  std::lock_guard lock(mutex_);
  if (auto s = ensure_daemon_tables(store_.database()); !s) return make_error(s.error());
  auto id = store_.start_run(config_json);
  if (id) run_id_ = *id;
  return id;
}

Status RunRecorder::resume_run(int64_t run_id) {
  std::lock_guard lock(mutex_);
  if (auto s = ensure_daemon_tables(store_.database()); !s) return s;
  if (auto s = reopen_run(store_.database(), run_id); !s) return s;
  run_id_ = run_id;
  return ok_status();
}

Status RunRecorder::finish_run(RunStatus status) {
  std::lock_guard lock(mutex_);
  return store_.finish_run(run_id_, status);
}

Status RunRecorder::upsert_task(const TaskSpec& task) {
  std::lock_guard lock(mutex_);
  memory::TaskRecord record;
  record.name = task.name;
  record.spec_hash = task.spec_hash;
  record.tags = task.tags;
  record.spec_json = task.raw_json;
  record.judging_spec_sha256 = judging_spec_sha256(task);
  judging_specs_[task.name] = record.judging_spec_sha256;
  auto id = store_.upsert_task(record);
  if (!id) return make_error(id.error());
  return ok_status();
}

Result<int64_t> RunRecorder::record_evaluation(memory::KernelRecord kernel,
                                               memory::EvaluationRecord evaluation) {
  std::lock_guard lock(mutex_);
  kernel.run_id = run_id_;
  evaluation.task = kernel.task;
  evaluation.run_id = run_id_;
  if (evaluation.judging_spec_sha256.empty()) {
    auto spec = judging_specs_.find(kernel.task);
    if (spec != judging_specs_.end()) evaluation.judging_spec_sha256 = spec->second;
  }
  if (evaluation.verifier_version == 0) evaluation.verifier_version = kVerifierVersion;
  // Another process holding the write lock (a long `kopt memory prune`, a backup) delays the
  // evaluation; it is never dropped.
  return retry_while_locked("storing an evaluation of " + kernel.task, [&]() -> Result<int64_t> {
    auto transaction = store_.begin();
    if (!transaction) return make_error(transaction.error());
    auto kernel_id = store_.add_kernel(kernel);
    if (!kernel_id) return make_error(kernel_id.error());
    evaluation.kernel_id = *kernel_id;
    auto evaluation_id = store_.add_evaluation(evaluation);
    if (!evaluation_id) return make_error(evaluation_id.error());
    if (auto s = transaction->commit(); !s) return make_error(s.error());
    return *kernel_id;
  });
}

Result<int64_t> RunRecorder::add_pair(const memory::PairRecord& pair) {
  std::lock_guard lock(mutex_);
  return retry_while_locked("storing a pair of " + pair.task,
                            [&] { return store_.add_pair(pair); });
}

Result<std::vector<memory::RetrievedPair>> RunRecorder::retrieve(
    const memory::RetrievalQuery& query) {
  std::lock_guard lock(mutex_);
  auto pairs = store_.retrieve(query);
  if (!pairs) return pairs;
  std::vector<int64_t> ids;
  for (const auto& p : *pairs) ids.push_back(p.pair.id);
  if (auto s = store_.mark_retrieved(ids); !s) spdlog::warn("memory: {}", s.error());
  return pairs;
}

std::optional<int64_t> RunRecorder::record_draw(memory::ExampleDrawRecord draw) {
  std::lock_guard lock(mutex_);
  return add_run_row(store_.database(), run_id_, draw, memory::add_example_draw);
}

void RunRecorder::set_draw_plans(int64_t draw_id, const std::vector<int64_t>& plan_ids) {
  std::lock_guard lock(mutex_);
  if (auto s = memory::set_draw_plans(store_.database(), draw_id, plan_ids); !s) {
    spdlog::warn("memory: {}", s.error());
  }
}

std::vector<memory::TechniqueCard> RunRecorder::technique_cards(const memory::CardQuery& query) {
  std::lock_guard lock(mutex_);
  auto cards = memory::technique_cards(store_.database(), query);
  if (!cards) {
    spdlog::warn("memory: {}", cards.error());
    return {};
  }
  return std::move(*cards);
}

void RunRecorder::record_outcome(const std::vector<int64_t>& pair_ids, bool improved) {
  std::lock_guard lock(mutex_);
  for (int64_t id : pair_ids) {
    if (auto s = store_.record_outcome(id, improved); !s) spdlog::warn("memory: {}", s.error());
  }
}

std::optional<memory::KernelRecord> RunRecorder::kernel(int64_t id) {
  std::lock_guard lock(mutex_);
  auto k = store_.kernel(id);
  if (!k) {
    spdlog::warn("memory: {}", k.error());
    return std::nullopt;
  }
  return *k;
}

void RunRecorder::record(const LlmCallRecord& call) {
  memory::LlmCallRecord row;
  row.agent = call.agent;
  row.provider = call.provider;
  row.model = call.model;
  row.prompt_tokens = call.input_tokens;
  row.completion_tokens = call.output_tokens;
  row.cost_usd = call.cost_usd;
  row.latency_ms = static_cast<double>(call.latency.count());
  row.status = llm_status_name(call.status);
  row.error = call.error;
  std::lock_guard lock(mutex_);
  if (run_id_ > 0) row.run_id = run_id_;
  if (auto id = store_.record_llm_call(row); !id) spdlog::warn("memory: {}", id.error());
}

Result<memory::RunTotals> RunRecorder::run_totals() {
  std::lock_guard lock(mutex_);
  return store_.run_totals(run_id_);
}

Status RunRecorder::write_status(const StatusRow& row) {
  std::lock_guard lock(mutex_);
  return orchestrator::write_status(store_.database(), row);
}

double RunRecorder::active_seconds(int64_t run_id) {
  std::lock_guard lock(mutex_);
  auto row = read_status(store_.database(), run_id);
  return row && *row ? (*row)->active_seconds : 0.0;
}

std::optional<RunProgress> RunRecorder::published_progress(int64_t run_id) {
  std::lock_guard lock(mutex_);
  auto row = read_status(store_.database(), run_id);
  if (!row || !*row) return std::nullopt;
  auto json = nlohmann::json::parse((*row)->status_json, nullptr, false);
  if (!json.is_object()) return std::nullopt;
  return RunProgress::from_json(json);
}

Result<std::vector<Submission>> RunRecorder::take_submissions() {
  std::lock_guard lock(mutex_);
  return orchestrator::take_submissions(store_.database(), run_id_);
}

int64_t RunRecorder::pending_submissions() {
  std::lock_guard lock(mutex_);
  auto n = orchestrator::pending_submissions(store_.database());
  return n ? *n : 0;
}

std::optional<int64_t> RunRecorder::add_plan(memory::PlanRecord plan) {
  std::lock_guard lock(mutex_);
  return add_run_row(store_.database(), run_id_, plan, memory::add_plan);
}

void RunRecorder::finish_plan(int64_t id, const std::string& outcome,
                              const std::vector<int64_t>& children) {
  std::lock_guard lock(mutex_);
  if (auto s = memory::finish_plan(store_.database(), id, outcome, children); !s) {
    spdlog::warn("memory: {}", s.error());
  }
}

void RunRecorder::record_transcript(const agents::Transcript& t) {
  auto scrub = [this](const std::string& text) { return scrub_ ? scrub_(text) : text; };
  memory::TranscriptRecord record;
  record.agent = t.agent;
  record.task = t.label;
  record.template_file = t.template_file;
  record.system = scrub(t.system);
  record.prompt = scrub(t.prompt);
  record.answer = scrub(t.answer);
  record.status = t.status;
  std::lock_guard lock(mutex_);
  add_run_row(store_.database(), run_id_, record, memory::add_transcript);
}

Result<std::optional<ProductionReference>> RunRecorder::best_production_baseline(
    const std::string& task, const std::string& gpu_model) {
  std::lock_guard lock(mutex_);
  auto best = memory::best_production_baseline(store_.database(), task, gpu_model);
  if (!best) return make_error(best.error());
  if (!*best) return std::optional<ProductionReference>{};
  return std::optional<ProductionReference>{ProductionReference{(*best)->name, (*best)->median_us}};
}

Result<std::vector<PastEvaluation>> RunRecorder::history(const std::string& task) {
  std::lock_guard lock(mutex_);
  auto statement = store_.database().cached(std::string(kPastEvaluationColumns) +
                                            " WHERE e.run_id = ?1 AND t.name = ?2 ORDER BY e.id");
  statement->bind(1, run_id_).bind(2, task);
  return read_past_evaluations(*statement, task);
}

}  // namespace kopt::orchestrator
