// Element types a task's tensors may have.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

enum class DType { kF32, kF16, kBF16, kI32, kI64 };

std::optional<DType> parse_dtype(const std::string& name);
// Every dtype name parse_dtype accepts, for "did you mean" suggestions.
std::vector<std::string> dtype_names();
std::string dtype_name(DType dtype);
size_t dtype_size(DType dtype);
bool dtype_is_float(DType dtype);

}  // namespace kopt
