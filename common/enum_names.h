// One table from an enum's values to the names stored and printed, read both ways: every enum
// that crosses a boundary as text (a verdict, a kernel's origin, a run's status) keeps its
// spelling in exactly one such table.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace kopt {

template <typename Enum, std::size_t N>
using EnumNameTable = std::array<std::pair<Enum, const char*>, N>;

// The name of `value`, or `fallback` for a value missing from `table`.
template <typename Enum, std::size_t N>
const char* enum_name(const EnumNameTable<Enum, N>& table, Enum value, const char* fallback) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return fallback;
}

// The value named `name`, or nothing when no entry of `table` has that name.
template <typename Enum, std::size_t N>
std::optional<Enum> enum_from_name(const EnumNameTable<Enum, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace kopt
