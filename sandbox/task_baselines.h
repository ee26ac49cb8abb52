// What a task declares about production baselines (task.json's optional keys
// "production_baselines" and "cublaslt"): which of what users run apply to it, and how its
// inputs map onto one cuBLASLt matmul. Apart from task_spec.cc so that the task format's core
// stays about judging; tasks/README.md documents both keys.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "sandbox/task_spec.h"

namespace kopt {

// The names task.json may list under "production_baselines". "cublaslt" brings two rows
// (cublaslt_heuristic, cublaslt_autotuned); the torch ones one row each.
const std::vector<std::string>& production_baseline_names();

// out[m, n] = epilogue(a[m, k] @ b + bias), every tensor row-major. b is [k, n] ("kn") or
// [n, k] ("nk", a weight as nn.Linear keeps it). m, n and k are size names or numbers (a
// matvec is n = 1). Dtypes come from the tensors: f32 runs with CUBLAS_COMPUTE_32F (no TF32),
// bf16 and f16 with fp32 accumulation.
struct CublasLtMapping {
  std::string a, b, out;
  std::string m, n, k;   // size names or decimal numbers
  std::string b_layout;  // "kn" or "nk"
  std::string epilogue;  // "none" or "bias_relu"
  std::string bias;      // the bias tensor [n] when the epilogue takes one
  nlohmann::json to_json() const;
};

struct TaskBaselines {
  std::vector<std::string> names;           // as listed, each once
  std::optional<CublasLtMapping> cublaslt;  // required when names holds "cublaslt"
  bool wants(const std::string& name) const;
};

// A parsed task's declaration, read again from its task.json text (parse_task() has validated
// it, so this cannot fail for a loaded task; kept out of TaskSpec, which every part includes).
TaskBaselines task_baselines(const std::string& task_json);

// One cuBLASLt matmul at one shape, in cuBLAS's column-major terms. Row-major out[m, n] =
// a[m, k] @ b is column-major out^T[n, m] = b^T @ a^T, so cuBLAS's "A" is the task's b and its
// "B" the task's a: b "kn" is column-major [n, k] untransposed, b "nk" (a weight) column-major
// [k, n] transposed; a is column-major [k, m]; out is column-major [n, m]. The bias [n] is then
// per row of out^T, as the epilogue wants it.
struct CublasLtCall {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;              // cuBLAS's A (the task's b) is transposed ("nk")
  int64_t a_rows = 0, a_cols = 0;        // cuBLAS's A as stored (leading dimension = rows)
  int64_t b_rows = 0, b_cols = 0;        // cuBLAS's B (the task's a): [k, m]
  int64_t d_rows = 0, d_cols = 0;        // C and D (the task's out): [n, m]
  DType a_dtype = DType::kF32, b_dtype = DType::kF32, d_dtype = DType::kF32;  // cuBLAS's A, B, D
};

// The call for `mapping` at `sizes`, checked against the tensors' element counts (a mapping
// whose m, n, k do not match the tensors it names is an error saying which tensor).
Result<CublasLtCall> cublaslt_call(const TaskSpec& task, const CublasLtMapping& mapping,
                                   const ShapeBinding& sizes);

// Reads both keys from task.json's root (absent: no production baselines). `tensors` are the
// task's input and output names, `sizes` its size names; errors go to `reader` with their paths.
TaskBaselines read_task_baselines(JsonReader& reader, const nlohmann::json& root,
                                  const std::set<std::string>& tensors,
                                  const std::set<std::string>& sizes);

}  // namespace kopt
