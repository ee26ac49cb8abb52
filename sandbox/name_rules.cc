#include "sandbox/name_rules.h"

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
