// What task.json declares about the values a kernel cannot anticipate, besides drawn shapes:
// ranges its constants are drawn from (`constant_ranges`: a kernel that folds alpha in is wrong
// on the drawn shapes), the round past 2^31 elements its real use reaches (`wide_round`), and
// the input families it opts out of, each with its reason (`input_families`). The format is
// documented in tasks/README.md ("Constants drawn from a range", "The round past 2^31
// elements", "Input families").
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/json_reader.h"
#include "sandbox/shape_draw.h"

namespace kopt {

struct ConstantRange {
  double min = 0, max = 0;
  bool log = false;  // drawn log-uniform (eps from 1e-6 to 1e-2), else uniform
};

// One verification round at a shape whose largest tensor passes 2^31 elements: 32-bit index
// arithmetic (row * cols in an int) fails there and nowhere smaller.
struct WideRound {
  ShapeBinding shape;  // overrides of the defaults
  std::string why;     // the real use that reaches it ("16k tokens x a 152k vocabulary")
};

// Input families a task opts out of: "family" or "input.family" -> the reason.
using FamilySkips = std::map<std::string, std::string>;

// `$.constant_ranges`: every name a constant of the task, min <= its value <= max.
std::map<std::string, ConstantRange> read_constant_ranges(
    JsonReader& reader, const nlohmann::json& root, const std::map<std::string, double>& constants);

// `$.wide_round` (absent: none). `largest_elements` gives the largest tensor's element count at
// a bound shape (an error text when a dimension does not evaluate).
struct TaskSpec;
std::optional<WideRound> read_wide_round(JsonReader& reader, const nlohmann::json& root,
                                         const TaskSpec& task);

// `$.input_families.skip`; `known` are the family names, `inputs` the task's input names.
FamilySkips read_family_skips(JsonReader& reader, const nlohmann::json& root,
                              const std::vector<std::string>& known,
                              const std::vector<std::string>& inputs);

// The largest element count of any input or output at `shape` (bound), or an error.
Result<int64_t> largest_tensor_elements(const TaskSpec& task, const ShapeBinding& shape);

}  // namespace kopt
