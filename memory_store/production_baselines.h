// Production baselines: the times of what a user would otherwise run for a task (cuBLASLt's
// heuristic and autotuned choices, PyTorch eager, torch.compile), per task and GPU model, at the
// task's default shape, measured like kopt's own numbers (cold L2, median and noise). Rows are
// appended, never replaced: the newest row of each (task, GPU model, name) is the current one, so
// a re-measurement after a driver or library update keeps the history. Free functions over the
// memory's database; the table comes with schema version 6 (schema.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/sol_score.h"
#include "memory_store/records.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

struct ProductionBaselineRecord {
  int64_t id = 0;
  std::string task;
  std::string gpu_model;  // "NVIDIA H100 80GB HBM3", as evaluations record it
  std::string name;       // "cublaslt_heuristic", "cublaslt_autotuned", "torch_eager", ...
  double median_us = 0;
  double noise = 0;  // relative spread of the median
  int64_t samples = 0;
  std::string device_json = "{}";            // name, compute capability, driver, CUDA
  std::string library_versions_json = "{}";  // {"cublasLt": "13.0.2", "torch": "2.9.0"...}
  std::string spec_sha256;                   // the task.json it was measured for
  std::string shape;                         // the sizes it was measured at, "m=4096 n=4096"
  std::string detail;                        // how (algorithm index, compile mode), free text
  std::string created_at;
};

// A row with median_us 0 records an absence: the library a task declares did not import on that
// GPU machine when `kopt baselines` ran (its `detail` starts "not installed"). It is the
// current row of its name until a later measurement replaces it, never a time to compare with.
Result<int64_t> add_production_baseline(sql::Database& db, const ProductionBaselineRecord& r);

// The current row of each baseline name of `task` on `gpu_model`, fastest first. A non-empty
// `spec_sha256` keeps only rows measured for that task.json.
Result<std::vector<ProductionBaselineRecord>> current_production_baselines(
    sql::Database& db, const std::string& task, const std::string& gpu_model,
    const std::string& spec_sha256 = "");

// The fastest current row, or none when nothing was measured for the task on that GPU model.
// Absence rows (median_us 0) are never current times: neither this nor the list above has them.
Result<std::optional<ProductionBaselineRecord>> best_production_baseline(
    sql::Database& db, const std::string& task, const std::string& gpu_model,
    const std::string& spec_sha256 = "");

// The names whose current row on `gpu_model` is an absence (not installed), sorted: what status,
// the report and the export's README say plainly beside the baseline that stands in.
Result<std::vector<std::string>> libraries_not_installed(sql::Database& db, const std::string& task,
                                                         const std::string& gpu_model);

// Every current row (each task, GPU model and name), absences included, for `kopt baselines
// --list`.
Result<std::vector<ProductionBaselineRecord>> all_production_baselines(sql::Database& db);

// Where an evaluated kernel stands (common/sol_score.h): its speedup over baseline.cu, over the
// best production baseline measured for its task on its GPU model, %SOL and S. The bound comes
// from the evaluation (sol_percent of its median); a failed lookup counts as "none measured".
Standing evaluation_standing(sql::Database& db, const EvaluationRecord& evaluation);

// Schema version 6: the production_baselines table.
Status migrate_to_version_6(sql::Database& db);

}  // namespace kopt::memory
