// One table from an enum's values to the names stored and printed, read both ways: every enum
// that crosses a boundary as text (a verdict, a kernel's origin, a run's status) keeps its
// spelling in exactly one such table. A table naming every enumerator is an EnumNames, a list of
// names in the enumerators' order (the position is the value, so it is not written again); one
// naming only some values (or values that do not count from 0) is an EnumNameTable of pairs.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// True when `table` lists every enumerator from the first (0) to `last` once, in order: the
// promise a `switch` without `default` made through -Wswitch, kept as
// `static_assert(names_each_enumerator(kNames, Enum::kLast))` next to the table.
template <typename Enum, std::size_t N>
constexpr bool names_each_enumerator(const EnumNameTable<Enum, N>& table, Enum last) {
  if (N != static_cast<std::size_t>(last) + 1) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].first) != i) return false;
  return true;
}

// The value named `name`, or nothing when no entry of `table` has that name.
template <typename Enum, std::size_t N>
std::optional<Enum> enum_from_name(const EnumNameTable<Enum, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

// Every name of `table`, in its order: the choices a reader offers and its "did you mean" list.
template <typename Enum, std::size_t N>
std::vector<std::string> enum_names(const EnumNameTable<Enum, N>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.second);
  return names;
}

// The names of every value of `Enum`, in its enumerators' order: names[0] names the first.
template <typename Enum, std::size_t N>
struct EnumNames {
  std::array<const char*, N> names;
};

// True when `table` has one name for each enumerator from the first (0) to `last`: the promise a
// `switch` without `default` made through -Wswitch, kept as
// `static_assert(names_each_enumerator(kNames, Enum::kLast))` next to the table.
template <typename Enum, std::size_t N>
constexpr bool names_each_enumerator(const EnumNames<Enum, N>&, Enum last) {
  return N == static_cast<std::size_t>(last) + 1;
}

template <typename Enum, std::size_t N>
const char* enum_name(const EnumNames<Enum, N>& table, Enum value, const char* fallback) {
  auto index = static_cast<std::size_t>(value);
  return index < N ? table.names[index] : fallback;
}

template <typename Enum, std::size_t N>
std::optional<Enum> enum_from_name(const EnumNames<Enum, N>& table, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == table.names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

template <typename Enum, std::size_t N>
std::vector<std::string> enum_names(const EnumNames<Enum, N>& table) {
  return {table.names.begin(), table.names.end()};
}

}  // namespace kopt
