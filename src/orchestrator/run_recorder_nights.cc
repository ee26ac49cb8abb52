// What a new night reads of the nights before it (run_recorder.h): the diverse beam it starts
// from, and everything judged under the task's current spec and verifier, so that the search
// pays for nothing twice (TaskSearch::carry_over).
#include <algorithm>
#include <set>

#include "memory_store/plan_store.h"
#include "memory_store/row_readers.h"
#include "sandbox/judging_spec.h"
#include "src/orchestrator/run_recorder.h"

namespace kopt::orchestrator {

Result<std::vector<PastEvaluation>> read_past_evaluations(sql::Statement& statement,
                                                          const std::string& task) {
  std::vector<PastEvaluation> out;
  while (true) {
    auto row = statement.step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    PastEvaluation p;
    memory::EvaluationRecord& e = p.evaluation;
    sql::read_columns(statement, p.evaluation_id, p.kernel_id, p.parent_id, p.source,
                      p.origin_agent, p.tuner, e.gpu.model, e.gpu.compute_capability,
                      e.gpu.driver_version, e.gpu.cuda_version, e.verdict, e.detail,
                      e.tunables_json, e.median_us, e.noise, e.baseline_us, e.speedup,
                      e.sol_percent, e.resources_json, e.created_at, e.run_id);
    e.id = p.evaluation_id;
    e.kernel_id = p.kernel_id;
    e.task = task;
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<WarmKernel>> RunRecorder::warm_start_kernels(const std::string& task,
                                                                const std::string& gpu_model,
                                                                int limit, double near_copy) {
  std::lock_guard lock(mutex_);
  // A kernel's best verified evaluation per kernel; the speedups of different runs are each
  // against their own baseline timed interleaved, so they compare across runs. A screened
  // kernel (a beam seed of its night, timed honestly, its stored speedup 0) counts by its times:
  // it is judged again anyway, and without it a night's other lineages would be lost.
  auto statement = store_.database().cached(
      "SELECT k.id, k.parent_id, k.source, k.origin_agent, k.origin_tuner,"
      " max(CASE WHEN e.verdict = 'ok' THEN e.speedup ELSE e.baseline_us / e.median_us END) AS s"
      " FROM evaluations e JOIN kernels k ON k.id = e.kernel_id JOIN tasks t ON t.id = e.task_id"
      " WHERE t.name = ?1 AND e.gpu_model = ?2 AND e.run_id IS NOT ?3"
      " AND (e.verdict = 'ok' OR (e.verdict = 'screened' AND e.median_us > 0"
      " AND e.baseline_us > 0)) AND k.origin_agent != 'baseline'"
      " GROUP BY k.id HAVING s > 1.0 ORDER BY s DESC, k.id LIMIT 500");
  statement->bind_all(task, gpu_model, run_id_);
  std::vector<WarmKernel> out;
  std::set<int64_t> lineages;  // a tuner kernel's lineage is the kernel it tuned
  while (static_cast<int>(out.size()) < limit) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    WarmKernel k;
    k.kernel_id = statement->column_int64(0);
    k.parent_id = statement->column_optional_int64(1);
    k.source = statement->column_text(2);
    k.origin = statement->column_int64(4) ? Origin::kTuner
                                          : memory::stored_origin(statement->column_text(3));
    k.earlier_speedup = statement->column_double(5);
    int64_t lineage = k.origin == Origin::kTuner && k.parent_id ? *k.parent_id : k.kernel_id;
    // Fastest first: the first kernel of a lineage is its best, and a near-copy of a kernel
    // already chosen is slower than it; the beam would drop either.
    bool copy = std::any_of(out.begin(), out.end(), [&](const WarmKernel& chosen) {
      return code_similarity(chosen.source, k.source) >= near_copy;
    });
    if (copy || !lineages.insert(lineage).second) continue;
    out.push_back(std::move(k));
  }
  return out;
}

Result<EarlierNights> RunRecorder::earlier_nights(const TaskSpec& task) {
  std::lock_guard lock(mutex_);
  EarlierNights nights;
  auto statement = store_.database().cached(
      std::string(kPastEvaluationColumns) +
      " WHERE t.name = ?1 AND e.run_id IS NOT ?2 AND e.judging_spec_sha256 = ?3"
      " AND e.verifier_version = ?4 ORDER BY e.id");
  statement->bind_all(task.name, run_id_ ? std::optional<int64_t>(run_id_) : std::nullopt,
                      judging_spec_sha256(task), int64_t{kVerifierVersion});
  auto evaluations = read_past_evaluations(*statement, task.name);
  if (!evaluations) return make_error(evaluations.error());
  nights.evaluations = std::move(*evaluations);
  auto plans = memory::earlier_plans(store_.database(), task.name,
                                     run_id_ ? std::optional<int64_t>(run_id_) : std::nullopt);
  if (!plans) return make_error(plans.error());
  nights.plans = std::move(*plans);
  return nights;
}

}  // namespace kopt::orchestrator
