// Drawn shapes: besides the fixed sweep and holdout, every evaluation draws a few shapes at random
// from ranges task.json declares (`draws`), so that a kernel cannot be right only at the sizes it
// was shown. The draw is stratified, not merely random: within one evaluation the drawn shapes
// give every ranged size each residue mod 4 (so a vectorised path wrong at 2 mod 4 meets it every
// time), the residues mod 128 are uniform over evaluations, a `long` size is drawn from the top
// half of its range in the first shape (long rows every time), and constraints between sizes
// (`q_heads % kv_heads == 0`) hold. Every drawn shape fits `max_bytes`, so the draws stay cheap.
// The format is documented in tasks/README.md ("Drawn shapes").
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/result.h"

namespace kopt {

using ShapeBinding = std::map<std::string, int64_t>;
struct TaskSpec;

struct SizeRange {
  int64_t min = 1, max = 1;
  bool long_rows = false;  // the first drawn shape takes this size from the top half of the range
  int64_t multiple = 1;    // drawn values are multiples of this (a tile or group the task fixes)
  // How far past `max` the shapes at a kernel's own thresholds may take this size (0: max):
  // a row the task lists past its draws (softmax's 393216 columns) is where a cap sits, and the
  // task's reference and real use hold it, while drawing such rows every time would cost
  // (sandbox/source_thresholds.h).
  int64_t threshold_max = 0;
};

// `left op right`, each side an expression over sizes and draw variables.
struct ShapeConstraint {
  std::string text, left, op, right;
};

struct DrawSpec {
  int count = 0;                                // shapes per evaluation; 0: no draws
  int64_t max_bytes = int64_t(16) << 20;        // inputs + outputs of one drawn shape
  std::map<std::string, SizeRange> ranges;      // task sizes drawn from a range
  std::map<std::string, SizeRange> variables;   // draw-only helpers (a GQA group ratio)
  std::map<std::string, std::string> computed;  // task sizes set by an expression (or a number)
  std::vector<ShapeConstraint> constraints;
  // Derived from the listed shapes (shape_derive.h) because task.json declares no `draws`: how it
  // was derived, for `kopt tasks check` to say.
  std::string derived;
};

// Reads `$.draws` of `root` (absent: no draws); `sizes` are the task's, already read.
DrawSpec read_draw_spec(JsonReader& reader, const nlohmann::json& root,
                        const std::map<std::string, int64_t>& sizes, int format);

// The `task.draws.count` shapes of one evaluation, from its seed (the same seed, the same
// shapes). Sizes the draw does not name keep their defaults. An error when no shape within
// the budget satisfies the constraints (load_task tries a few seeds, so a valid task.json
// does not fail here).
Result<std::vector<ShapeBinding>> draw_shapes(const TaskSpec& task, uint64_t seed);

// The seed of an evaluation's draw, from the evaluation's seed (drawn inside the worker, or the
// request's explicit one: a reproduction draws the same shapes).
inline uint64_t draw_seed(uint64_t evaluation_seed) {
  return evaluation_seed ^ 0xd6e8feb86659fd93ULL;
}

// Whether `constraint` holds at `sizes` (an error when a side does not evaluate).
Result<bool> constraint_holds(const ShapeConstraint& constraint, const ShapeBinding& sizes);

}  // namespace kopt
