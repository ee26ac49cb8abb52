#include "memory_store/row_readers.h"

#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace kopt::memory {

Verdict stored_verdict(const std::string& name) {
  return parse_verdict(name).value_or(Verdict::kCrash);
}

Origin stored_origin(const std::string& name) {
  return parse_origin(name).value_or(Origin::kUnknown);
}

RunStatus stored_run_status(const std::string& name) {
  return parse_run_status(name).value_or(RunStatus::kFailed);
}

namespace rows {

PairRecord read_pair(const sql::Statement& row) {
  PairRecord p;
  sql::read_columns(row, p.id, p.slow_kernel_id, p.fast_kernel_id, p.task, p.speedup, p.gpu_model,
                    p.gpu_arch, p.summary, p.tags, p.is_negative, p.lineage_root_id,
                    p.retrieved_count, p.improved_count, p.created_at);
  return p;
}

EvaluationRecord read_evaluation(const sql::Statement& row) {
  EvaluationRecord e;
  sql::read_columns(row, e.id, e.kernel_id, e.task, e.run_id, e.gpu.model, e.gpu.compute_capability,
                    e.gpu.driver_version, e.gpu.cuda_version, e.verdict, e.detail, e.tunables_json,
                    e.median_us, e.noise, e.baseline_us, e.speedup, e.sol_percent, e.resources_json,
                    e.created_at, e.profile_json, e.judging_spec_sha256, e.verifier_version);
  return e;
}

KernelRecord read_kernel(const sql::Statement& row) {
  KernelRecord k;
  sql::read_columns(row, k.id, k.sha256, k.source, k.task, k.parent_id, k.run_id, k.origin.agent,
                    k.origin.model, k.origin.prompt_template, k.origin.tuner, k.tunables_json,
                    k.created_at);
  return k;
}

RunRecord read_run(const sql::Statement& row) {
  RunRecord run;
  sql::read_columns(row, run.id, run.config_json, run.started_at, run.finished_at, run.status);
  return run;
}

std::string tags_to_json(const std::vector<std::string>& tags) {
  return nlohmann::json(tags).dump();
}

std::vector<std::string> tags_from_json(const std::string& json) {
  std::vector<std::string> tags;
  auto parsed = parse_json_bounded(json);
  if (!parsed.is_array()) return tags;
  for (const auto& tag : parsed) {
    if (tag.is_string()) tags.push_back(tag.get<std::string>());
  }
  return tags;
}

std::vector<int64_t> ids_from_json(const std::string& text) {
  std::vector<int64_t> ids;
  auto j = parse_json_bounded(text);
  if (!j.is_array()) return ids;
  for (const auto& v : j) {
    if (v.is_number_integer()) ids.push_back(v.get<int64_t>());
  }
  return ids;
}

}  // namespace rows
}  // namespace kopt::memory

namespace kopt::sql {

void read_column(const Statement& row, int column, Verdict& out) {
  out = memory::stored_verdict(row.column_text(column));
}
void read_column(const Statement& row, int column, Origin& out) {
  out = memory::stored_origin(row.column_text(column));
}
void read_column(const Statement& row, int column, RunStatus& out) {
  out = memory::stored_run_status(row.column_text(column));
}
void read_column(const Statement& row, int column, std::vector<std::string>& out) {
  out = memory::rows::tags_from_json(row.column_text(column));
}
void read_column(const Statement& row, int column, std::vector<int64_t>& out) {
  out = memory::rows::ids_from_json(row.column_text(column));
}

}  // namespace kopt::sql
