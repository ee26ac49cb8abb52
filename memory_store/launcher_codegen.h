// Turns a kernel file's launch plan into a C++ header with a host launcher, so an exported kernel
// can be called from a project that has never heard of kopt:
//
//   #include "axpy.cuh"   // in one .cu file compiled by nvcc; it includes axpy.cu
//   kopt_axpy::launch(x, y, out, n, alpha, /*workspace=*/nullptr, stream);
//
// Plan expressions become C++ over int64_t (ceil_div, min and max as inline helpers), tunables
// become #defines with the values the kernel was verified with, and scratch buffers are carved
// from one caller-provided workspace of workspace_bytes(...) bytes.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

struct HeaderInput {
  const TaskSpec* task = nullptr;
  const KernelFile* kernel = nullptr;
  std::map<std::string, int64_t> tunables;  // chosen values; missing ones take the defaults
  std::string kernel_file_name;             // "axpy.cu", included by the header
  std::string provenance;                   // one comment line: speedup, GPU, source hash
};

// The header text; an error when the plan uses something C++ cannot express here.
Result<std::string> generate_launcher_header(const HeaderInput& input);

// The C++ spelling of a plan expression: identifiers stay (sizes are launcher parameters,
// tunables are macros), literals become 64-bit, functions get the kopt_ helpers.
Result<std::string> expression_to_cpp(const std::string& expression);

// `name` made into a C++ identifier ("layer-norm" -> "layer_norm").
std::string cpp_identifier(const std::string& name);

}  // namespace kopt::exporter
