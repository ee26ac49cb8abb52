#include "sandbox/dtype.h"

namespace kopt {

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "f32") return DType::kF32;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  if (name == "i32") return DType::kI32;
  if (name == "i64") return DType::kI64;
  if (name == "e4m3") return DType::kE4M3;
  return std::nullopt;
}

std::vector<std::string> dtype_names() { return {"f32", "f16", "bf16", "i32", "i64", "e4m3"}; }

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kE4M3:
      return "e4m3";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kE4M3:
      return 1;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI64:
      return 8;
    default:
      return 4;
  }
}

bool dtype_is_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kE4M3;
}

}  // namespace kopt
