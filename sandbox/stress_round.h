// Stress rounds: named verification rounds on extreme but valid inputs (logits with std 40, rows
// with a large mean and a tiny spread, ties, masked entries), declared in task.json's `stress`
// list. They catch kernels that are right only on well-scaled inputs: softmax without the max
// subtraction, one-pass variance, float accumulation over long rows, a wrong tie break.
// The format and the rules are in tasks/README.md ("Stress rounds").
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "sandbox/init_spec.h"

namespace kopt {

using ShapeBinding = std::map<std::string, int64_t>;
struct TensorSpec;

// A structure planted over an input's fill, row by row (`row`: an expression, the row length):
// the input families' rounds (sandbox/input_families.h) use it; task.json has no key for it.
struct RowPattern {
  enum class Kind {
    kScaleRows,        // a share of rows multiplied by `value` (0: zero rows, 1e-4: tiny rows)
    kOutlierRows,      // a share of rows get `value` at a few positions past their first 32
    kOutlierChannels,  // a few columns (channels) hold +-`value` in every row
    kSpikeRows,        // a share of rows hold `value` at exactly one position each
    kTailSpikes,       // a share of rows hold `value` at their last position (threshold shapes)
    kLastElement       // the tensor's last element alone holds `value` (threshold shapes)
  };
  Kind kind = Kind::kScaleRows;
  double value = 0;
  double share = 0.125;
  std::string row;
  // The rows are chosen from the round's seed alone, not per input: every input whose pattern
  // says so scales the same rows (input_families.h, joint zero and tiny rows).
  bool same_rows = false;
};

struct StressRound {
  std::string name;                        // given, or derived from the overrides ("std 40")
  std::map<std::string, InitSpec> inputs;  // init overrides of some inputs, by input name
  std::vector<ShapeBinding> shapes;        // overrides like the sweep's; empty: see stress_shapes
  std::string mirror_of;   // the round this one mirrors (generated, format 3), or ""
  std::string unmirrored;  // why the round has no mirrored twin (task.json's reason), or ""
  std::map<std::string, RowPattern> patterns;  // planted over some inputs' fills, by input name
};

// The mirrored twin of `round` (every float override reflected through 0, named "mean -1000
// (mirror of 'mean 1000')"), or nullopt where no override changes. Format 3 adds one after every
// round that has one, unless the round gives a reason not to (`"unmirrored": "why"`).
std::optional<StressRound> mirrored_round(const StressRound& round,
                                          const std::vector<TensorSpec>& inputs);

// The init `input` gets in `round` (its own init where the round does not override it).
const InitSpec& stress_init(const StressRound* round, const TensorSpec& input);

// Reads `$.stress` of `root`; `inputs` and `sizes` are the task's, already read.
std::vector<StressRound> read_stress_rounds(JsonReader& reader, const nlohmann::json& root,
                                            const std::vector<TensorSpec>& inputs,
                                            const std::map<std::string, int64_t>& sizes,
                                            int format);

// Reads a list of size overrides at `$.key` (the sweep, the holdout, a stress round's shapes).
std::vector<ShapeBinding> read_shape_list(JsonReader& reader, const nlohmann::json& root,
                                          const std::string& path, const std::string& key,
                                          const std::map<std::string, int64_t>& sizes,
                                          bool required);

}  // namespace kopt
