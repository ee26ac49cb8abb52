// Element types a task's tensors may have.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

// kE4M3: OCP FP8 E4M3 "fn" (bias 7, no infinities, S.1111.111 is NaN, largest finite 448), one
// byte; a float type (inputs are drawn from the float distributions, saturated to +-448).
enum class DType { kF32, kF16, kBF16, kI32, kI64, kE4M3 };

// What kopt knows of a dtype; dtype.cc holds one row per dtype and every function below reads it.
struct DTypeFacts {
  DType dtype;
  const char* name;        // the task format's spelling ("bf16")
  size_t size;             // bytes per element
  bool is_float;           // drawn from the float distributions, compared under the tolerance
  const char* cpp_type;    // the CUDA C++ type kernels see ("__nv_bfloat16")
  const char* host_type;   // the fixed-width spelling of exported host code ("int64_t")
  const char* torch_name;  // PyTorch's dtype in the exported Python ("bfloat16")
};

std::optional<DType> parse_dtype(const std::string& name);
// Every dtype name parse_dtype accepts, for "did you mean" suggestions.
std::vector<std::string> dtype_names();
std::string dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool dtype_is_float(DType dtype);
const char* dtype_cpp_type(DType dtype);
// The whole row of `dtype` (the f32 row for a value outside the enum).
const DTypeFacts& dtype_facts(DType dtype);

}  // namespace kopt
