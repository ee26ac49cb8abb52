#include "sandbox/dtype.h"

namespace kopt {
namespace {

// Every fact of every dtype, in one table that the functions below read: a new dtype is one row.
constexpr DTypeFacts kDTypes[] = {
    {DType::kF32, "f32", 4, true, "float", "float", "float32"},
    {DType::kF16, "f16", 2, true, "__half", "__half", "float16"},
    {DType::kBF16, "bf16", 2, true, "__nv_bfloat16", "__nv_bfloat16", "bfloat16"},
    {DType::kI32, "i32", 4, false, "int", "int32_t", "int32"},
    {DType::kI64, "i64", 8, false, "long long", "int64_t", "int64"},
    {DType::kE4M3, "e4m3", 1, true, "__nv_fp8_e4m3", "__nv_fp8_e4m3", "float8_e4m3fn"},
};

const DTypeFacts* find_facts(DType dtype) {
  for (const auto& facts : kDTypes)
    if (facts.dtype == dtype) return &facts;
  return nullptr;
}

}  // namespace

std::optional<DType> parse_dtype(const std::string& name) {
  for (const auto& facts : kDTypes)
    if (name == facts.name) return facts.dtype;
  return std::nullopt;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const auto& facts : kDTypes) names.push_back(facts.name);
  return names;
}

std::string dtype_name(DType dtype) {
  const DTypeFacts* facts = find_facts(dtype);
  return facts ? facts->name : "?";
}

size_t dtype_size(DType dtype) {
  const DTypeFacts* facts = find_facts(dtype);
  return facts ? facts->size : 4;
}

bool dtype_is_float(DType dtype) {
  const DTypeFacts* facts = find_facts(dtype);
  return facts && facts->is_float;
}

const char* dtype_cpp_type(DType dtype) {
  const DTypeFacts* facts = find_facts(dtype);
  return facts ? facts->cpp_type : "float";
}

const DTypeFacts& dtype_facts(DType dtype) {
  const DTypeFacts* facts = find_facts(dtype);
  return facts ? *facts : kDTypes[0];
}

}  // namespace kopt
