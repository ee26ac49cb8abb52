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
  PairRecord pair;
  int c = 0;
  pair.id = row.column_int64(c++);
  pair.slow_kernel_id = row.column_int64(c++);
  pair.fast_kernel_id = row.column_int64(c++);
  pair.task = row.column_text(c++);
  pair.speedup = row.column_double(c++);
  pair.gpu_model = row.column_text(c++);
  pair.gpu_arch = row.column_text(c++);
  pair.summary = row.column_text(c++);
  pair.tags = tags_from_json(row.column_text(c++));
  pair.is_negative = row.column_int64(c++) != 0;
  pair.lineage_root_id = row.column_int64(c++);
  pair.retrieved_count = row.column_int64(c++);
  pair.improved_count = row.column_int64(c++);
  pair.created_at = row.column_text(c++);
  return pair;
}

EvaluationRecord read_evaluation(const sql::Statement& row) {
  EvaluationRecord e;
  int c = 0;
  e.id = row.column_int64(c++);
  e.kernel_id = row.column_int64(c++);
  e.task = row.column_text(c++);
  e.run_id = row.column_optional_int64(c++);
  e.gpu.model = row.column_text(c++);
  e.gpu.compute_capability = row.column_text(c++);
  e.gpu.driver_version = row.column_text(c++);
  e.gpu.cuda_version = row.column_text(c++);
  e.verdict = stored_verdict(row.column_text(c++));
  e.detail = row.column_text(c++);
  e.tunables_json = row.column_text(c++);
  e.median_us = row.column_double(c++);
  e.noise = row.column_double(c++);
  e.baseline_us = row.column_double(c++);
  e.speedup = row.column_double(c++);
  e.sol_percent = row.column_double(c++);
  e.resources_json = row.column_text(c++);
  e.created_at = row.column_text(c++);
  e.profile_json = row.column_text(c++);
  e.judging_spec_sha256 = row.column_text(c++);
  e.verifier_version = static_cast<int>(row.column_int64(c++));
  return e;
}

KernelRecord read_kernel(const sql::Statement& row) {
  KernelRecord k;
  int c = 0;
  k.id = row.column_int64(c++);
  k.sha256 = row.column_text(c++);
  k.source = row.column_text(c++);
  k.task = row.column_text(c++);
  k.parent_id = row.column_optional_int64(c++);
  k.run_id = row.column_optional_int64(c++);
  k.origin.agent = stored_origin(row.column_text(c++));
  k.origin.model = row.column_text(c++);
  k.origin.prompt_template = row.column_text(c++);
  k.origin.tuner = row.column_int64(c++) != 0;
  k.tunables_json = row.column_text(c++);
  k.created_at = row.column_text(c++);
  return k;
}

RunRecord read_run(const sql::Statement& row) {
  RunRecord run;
  run.id = row.column_int64(0);
  run.config_json = row.column_text(1);
  run.started_at = row.column_text(2);
  run.finished_at = row.column_text(3);
  run.status = stored_run_status(row.column_text(4));
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
