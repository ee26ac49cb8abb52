// Element types a task's tensors may have.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kopt {

enum class DType { kF32, kF16, kBF16, kI32, kI64 };

std::optional<DType> parse_dtype(const std::string& name);
std::string dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool dtype_is_float(DType dtype);

}  // namespace kopt
