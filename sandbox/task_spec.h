// A task: what to compute (task.json), the trusted oracle (reference.cu) and the kernel to beat
// (baseline.cu). The format is documented in tasks/README.md.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/dtype.h"
#include "sandbox/expr.h"
#include "sandbox/init_spec.h"
#include "sandbox/shape_draw.h"
#include "sandbox/stress_round.h"
#include "sandbox/task_ranges.h"

namespace kopt {

// 2 added stress rounds and the init keys constant, repeat, neg_inf and randint for floats;
// 3 added drawn shapes (`draws`), mirrored stress rounds and structured inputs (`sorted`,
// `repeated_max`); older files read as before.
inline constexpr int kTaskFormatVersion = 3;

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::string> shape;  // expressions over sizes
  InitSpec init;
};

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  double max_error = 1e-3;         // no element may be further off than this
  double min_pass_fraction = 1.0;  // share of elements that must be within atol + rtol*|ref|
};

struct TaskSpec {
  int format = kTaskFormatVersion;
  std::string name;
  std::string description;
  std::vector<std::string> tags;
  std::map<std::string, int64_t> sizes;     // symbolic sizes with defaults
  std::map<std::string, double> constants;  // scalar parameters (alpha, eps)
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<ShapeBinding> shapes;   // correctness sweep (overrides of the defaults)
  std::vector<ShapeBinding> holdout;  // never shown to an LLM
  std::vector<StressRound> stress;    // extreme but valid inputs (tasks/README.md)
  DrawSpec draws;                     // shapes drawn per evaluation (sandbox/shape_draw.h)
  // Values a kernel cannot anticipate (sandbox/task_ranges.h): constants' ranges, the round
  // past 2^31 elements, the input families the task opts out of.
  std::map<std::string, ConstantRange> constant_ranges;
  std::optional<WideRound> wide_round;
  FamilySkips family_skips;
  Tolerance tolerance;
  std::string flops;          // expression over sizes
  std::string bytes;          // expression over sizes
  std::string peak = "fp32";  // fp32 | bf16_tensor | fp16_tensor | tf32_tensor | fp8_tensor
  double priority = 1.0;

  std::filesystem::path dir;
  std::string spec_hash;  // sha256 of task.json's bytes
  std::string raw_json;   // task.json as read (sent to the sandbox worker)

  // The default sizes with `overrides` applied.
  ShapeBinding bind(const ShapeBinding& overrides) const;
  // Element count of a tensor under `sizes`.
  Result<int64_t> element_count(const TensorSpec& tensor, const ShapeBinding& sizes) const;
  // Bytes of every input and output under `shape` (outputs counted `output_copies` times): what
  // one input set with the reference's outputs, or a round's buffers, occupy on the GPU.
  Result<int64_t> tensor_bytes(const ShapeBinding& shape, int output_copies = 1) const;
  const TensorSpec* find_tensor(const std::string& name) const;
};

// The shapes `round` runs on, bound: its own, then the sweep shapes whose inputs and outputs hold
// at most `small_shape_bytes` (cheap to verify; the big shapes are for timing and scale). The
// worker adds a drawn shape (sandbox/worker/verify_plan.h).
std::vector<ShapeBinding> stress_shapes(const TaskSpec& task, const StressRound& round,
                                        int64_t small_shape_bytes);

// Reads and validates `dir/task.json`. Every problem is reported, each with file and JSON path.
Result<TaskSpec> load_task(const std::filesystem::path& dir);

// Parses task.json text (origin names the file in messages).
Result<TaskSpec> parse_task(const std::string& text, const std::string& origin);

}  // namespace kopt
