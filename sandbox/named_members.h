// Members of a task.json object keyed by the names of the task's things (its sizes, inputs,
// constants): a key that names none of them is an error with a "did you mean", and reading goes
// on, so one pass reports every stray key. Stress rounds, constant ranges, the wide round and
// drawn shapes all read such objects.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/strings.h"

namespace kopt {

// Calls `read(name, value, member_path)` for each member of `object` (at `path`; member_path is
// "path.name") whose name is one of `names`; any other member is an error at its path:
// "not `what` of this task" ("a size") with a "did you mean".
template <typename Read>
void each_named_member(JsonReader& reader, const nlohmann::json& object, const std::string& path,
                       const std::vector<std::string>& names, const std::string& what, Read read) {
  for (const auto& [name, value] : object.items()) {
    std::string member_path = path + "." + name;
    if (std::find(names.begin(), names.end(), name) != names.end())
      read(name, value, member_path);
    else
      reader.error(member_path, "not " + what + " of this task" + did_you_mean(name, names));
  }
}

// The names of a task's sizes (or any other map keyed by name), for each_named_member.
template <typename Value>
std::vector<std::string> names_of(const std::map<std::string, Value>& named) {
  std::vector<std::string> names;
  for (const auto& [name, value] : named) names.push_back(name);
  return names;
}

// Sizes set to positive integers, {"rows": 7, "cols": 4097}: each a size of the task.
std::map<std::string, int64_t> read_size_overrides(JsonReader& reader, const nlohmann::json& object,
                                                   const std::string& path,
                                                   const std::map<std::string, int64_t>& sizes);

}  // namespace kopt
