// Turns a kernel file's launch plan into a plain C++ header with a host launcher, so an exported
// kernel can be called from a project that has never heard of kopt, with no CUDA compiler:
//
//   #include "axpy.cuh"   // in one C++ file (TASK_api.cc); links TASK_image.cc
//   kopt_axpy::launch(x, y, out, n, alpha, /*workspace=*/nullptr, stream);
//
// The kernels come from the device image kopt compiled (export_device_image.h), loaded on first
// use; the source is never included. Plan expressions become C++ over int64_t (ceil_div, min and
// max as inline helpers), tunables become constants with the values the kernel was verified
// (and compiled) with, and scratch buffers are carved from one caller-provided workspace of
// workspace_bytes(...) bytes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "exchange/export_device_image.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

struct HeaderInput {
  const TaskSpec* task = nullptr;
  const KernelFile* kernel = nullptr;
  std::map<std::string, int64_t> tunables;  // chosen values; missing ones take the defaults
  std::string kernel_file_name;             // "axpy.cu", named in comments (never included)
  std::string provenance;                   // one comment line: speedup, GPU, source hash
  // The launcher's namespace; empty: "kopt_" + the task's name.
  std::string namespace_name;
  // The compiled kernel file, and the prefix of its arrays in TASK_image.cc ("kopt_axpy":
  // kopt_axpy_cubin, kopt_axpy_ptx).
  const DeviceImage* image = nullptr;
  std::string image_prefix;
};

// One parameter of a launcher: inputs, outputs, sizes, constants, in the task's order.
struct LauncherParameter {
  enum class Kind { kInput, kOutput, kSize, kConstant };
  Kind kind;
  std::string type;  // "const float*", "__nv_bfloat16*", "int64_t", "double"
  std::string name;
  const TensorSpec* tensor = nullptr;  // for inputs and outputs
};
std::vector<LauncherParameter> launcher_parameters(const TaskSpec& task);

// Whether the task's tensors use __half / __nv_bfloat16 (the headers to include).
bool task_uses_dtype(const TaskSpec& task, DType dtype);

// The header text; an error when the plan uses something C++ cannot express here.
Result<std::string> generate_launcher_header(const HeaderInput& input);

// The C++ spelling of a plan expression: identifiers stay (sizes are launcher parameters,
// tunables are constants), literals become 64-bit, every operation a kopt_ helper of
// cpp_plan_arithmetic(), so the launcher computes what the sandbox computed.
Result<std::string> expression_to_cpp(const std::string& expression);

// The kopt_add, kopt_div, ... helpers (and kopt_plan_invalid()) every generated launcher defines.
const char* cpp_plan_arithmetic();

// `name` made into a C++ identifier ("layer-norm" -> "layer_norm").
std::string cpp_identifier(const std::string& name);

}  // namespace kopt::exporter
