#include "sandbox/name_rules.h"

#include <set>

namespace kopt {

namespace {

bool is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

bool is_task_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!is_lower_or_digit(c) && c != '_' && c != '-') return false;
  return true;
}

bool is_identifier_name(std::string_view name) {
  if (name.empty() || !(is_letter(name[0]) || name[0] == '_')) return false;
  for (char c : name)
    if (!is_letter(c) && !(c >= '0' && c <= '9') && c != '_') return false;
  return true;
}

bool is_reserved_code_name(std::string_view name) {
  static const std::set<std::string_view> kWords = {
      // C++ (C++20), alternative tokens included
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // Python 3
      "False", "None", "True", "as", "assert", "async", "await", "def", "del", "elif", "except",
      "finally", "from", "global", "import", "in", "is", "lambda", "nonlocal", "pass", "raise",
      "with", "yield",
      // names the generated code itself uses (types, macros, modules)
      "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
      "size_t", "dim3", "cudaError_t", "cudaStream_t", "INT32_MIN", "INT32_MAX", "INT64_MIN",
      "INT64_MAX", "SIZE_MAX", "NULL", "torch", "ctypes", "self"};
  return kWords.count(name) > 0 || name.starts_with("_") || name.starts_with("kopt_");
}

bool is_gpu_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == ' ' || name.back() == ' ') return false;
  for (char c : name) {
    if (!is_letter(c) && !(c >= '0' && c <= '9') &&
        std::string_view(" ._-()/+").find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f')) return false;
  return true;
}

}  // namespace kopt
