#include "sandbox/task_ranges.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"
#include "sandbox/named_members.h"
#include "sandbox/task_spec.h"

namespace kopt {

using nlohmann::json;

namespace {
const std::vector<std::string> kRangeKeys = {"min", "max", "log"};
const std::vector<std::string> kWideKeys = {"shape", "why"};
const std::vector<std::string> kFamilyKeys = {"skip"};
constexpr int64_t kTwoTo31 = int64_t(1) << 31;
}  // namespace

std::map<std::string, ConstantRange> read_constant_ranges(
    JsonReader& reader, const json& root, const std::map<std::string, double>& constants) {
  std::map<std::string, ConstantRange> ranges;
  const json* node = reader.typed_field(root, "$", "constant_ranges", json::value_t::object, false);
  if (!node) return ranges;
  auto read = [&](const std::string& name, const json& value, const std::string& path) {
    if (!value.is_object()) {
      reader.error(path, "expected {\"min\": ..., \"max\": ...}");
      return;
    }
    double constant = constants.at(name);
    reader.check_keys(value, path, kRangeKeys);
    ConstantRange r;
    r.min = reader.number_field(value, path, "min", true).value_or(constant);
    r.max = reader.number_field(value, path, "max", true).value_or(constant);
    r.log = reader.bool_field(value, path, "log", false).value_or(false);
    if (!(r.min < r.max)) reader.error(path + ".max", "must be above min");
    if (constant < r.min || constant > r.max)
      reader.error(path,
                   "the constant's value " + std::to_string(constant) + " lies outside its range");
    if (r.log && !(r.min > 0)) reader.error(path + ".log", "a log range needs min > 0");
    ranges[name] = r;
  };
  each_named_member(reader, *node, "$.constant_ranges", names_of(constants), "a constant", read);
  return ranges;
}

Result<int64_t> largest_tensor_elements(const TaskSpec& task, const ShapeBinding& shape) {
  int64_t largest = 0;
  for (const auto* list : {&task.inputs, &task.outputs}) {
    for (const auto& t : *list) {
      auto n = task.element_count(t, shape);
      if (!n) return make_error(n.error());
      largest = std::max(largest, *n);
    }
  }
  return largest;
}

std::optional<WideRound> read_wide_round(JsonReader& reader, const json& root,
                                         const TaskSpec& task) {
  const json* node = reader.typed_field(root, "$", "wide_round", json::value_t::object, false);
  if (!node) return std::nullopt;
  const std::string path = "$.wide_round";
  reader.check_keys(*node, path, kWideKeys);
  WideRound wide;
  if (const json* shape = reader.typed_field(*node, path, "shape", json::value_t::object, true))
    wide.shape = read_size_overrides(reader, *shape, path + ".shape", task.sizes);
  wide.why = reader.string_field(*node, path, "why", true).value_or("");
  if (node->contains("why") && trim(wide.why).empty())
    reader.error(path + ".why", "say which real use reaches this size");
  if (!reader.ok()) return wide;
  auto largest = largest_tensor_elements(task, task.bind(wide.shape));
  if (!largest) {
    reader.error(path + ".shape", largest.error());
  } else if (*largest <= kTwoTo31) {
    reader.error(path + ".shape", "its largest tensor holds " + std::to_string(*largest) +
                                      " elements: not past 2^31 (2147483648)");
  }
  return wide;
}

FamilySkips read_family_skips(JsonReader& reader, const json& root,
                              const std::vector<std::string>& known,
                              const std::vector<std::string>& inputs) {
  FamilySkips skips;
  const json* node = reader.typed_field(root, "$", "input_families", json::value_t::object, false);
  if (!node) return skips;
  reader.check_keys(*node, "$.input_families", kFamilyKeys);
  const json* skip =
      reader.typed_field(*node, "$.input_families", "skip", json::value_t::object, true);
  if (!skip) return skips;
  for (const auto& [key, reason] : skip->items()) {
    std::string path = "$.input_families.skip." + key;
    size_t dot = key.find('.');
    std::string input = dot == std::string::npos ? "" : key.substr(0, dot);
    std::string family = dot == std::string::npos ? key : key.substr(dot + 1);
    if (!input.empty() && std::find(inputs.begin(), inputs.end(), input) == inputs.end())
      reader.error(path,
                   "'" + input + "' is not an input of this task" + did_you_mean(input, inputs));
    if (std::find(known.begin(), known.end(), family) == known.end())
      reader.error(path, "unknown input family '" + family + "'" + did_you_mean(family, known));
    if (!reason.is_string() || trim(reason.get<std::string>()).empty()) {
      reader.error(path, "give the reason as a string");
      continue;
    }
    skips[key] = reason.get<std::string>();
  }
  return skips;
}

}  // namespace kopt
