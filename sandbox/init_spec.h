// How an input tensor is filled: the distributions of task.json's `init` (and of its stress
// rounds' overrides), read and validated here, generated on the GPU by the worker's support
// kernels. The format is documented in tasks/README.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "common/json_reader.h"
#include "sandbox/dtype.h"
#include "sandbox/structured_init.h"

namespace kopt {

// Distributions are signed and varied by default, because all-positive inputs let a plain copy
// pass ReLU.
struct InitSpec {
  std::string dist = "normal";                // normal | uniform | randint | constant
  double mean = 0.0, stddev = 1.0;            // normal
  double low = -1.0, high = 1.0;              // uniform
  double value = 0.0;                         // constant
  std::string int_low = "0", int_high = "1";  // randint in [low, high), expressions over sizes
  // Runs of this many consecutive elements share one value ("" = every element its own): the
  // row length gives all-equal rows. An expression over sizes.
  std::string repeat;
  double neg_inf = 0.0;  // share of elements replaced by -inf (masking), float inputs only
  // Structured rows (format 3): `row` (an expression: the row length) splits the tensor into
  // rows; `sorted` ("ascending" | "descending") makes each row monotone (values drawn from the
  // distribution's quantiles, so they keep its spread); `repeated_max` (an expression: a
  // spacing) puts the row's maximum, one value above the distribution, at every spacing-th
  // position from a random phase: many equal maxima in one residue class.
  std::string sorted;
  std::string row;
  std::string repeated_max;
  // Structured index tensors and planted values (sandbox/structured_init.h, issue 33).
  StructuredInit structured;

  // Whether this uses what task.json format 2 added (constant, repeat, neg_inf, float randint).
  bool needs_format_2(DType dtype) const;
  // Whether this uses what format 3 added (sorted, repeated_max).
  bool needs_format_3() const { return !sorted.empty() || !repeated_max.empty(); }
  // The init with its values reflected through 0 (mean 1000 -> mean -1000, uniform 500..600 ->
  // -600..-500, constant 3 -> -3, whole numbers 0..7 -> -7..0), or nullopt where that changes
  // nothing (a zero mean, a symmetric range) or would be invalid (integer inputs: indices).
  std::optional<InitSpec> mirrored(DType dtype) const;
};

// Short human text: "std 40", "mean 1000 std 1", "uniform 500..600", "integers 0..7",
// "constant 3", with ", equal runs of cols" and ", 25% -inf" where they apply.
std::string describe_init(const InitSpec& init);

// Reads `node` (an init object at `path`) for an input of `dtype`; problems go to `reader`.
// Expressions (randint bounds, repeat) may use `symbols`.
InitSpec read_init_object(JsonReader& reader, const nlohmann::json& node, const std::string& path,
                          DType dtype, const std::set<std::string>& symbols);

// An expression field: checks it parses and refers only to `symbols`.
void check_expression(JsonReader& reader, const std::string& path, const std::string& text,
                      const std::set<std::string>& symbols);

// A size field at `path.key` into `target`: an integer literal of at least `min` (any integer
// without one), written as text, or an expression string checked against `symbols`. `integer`
// names the literal for the error ("a positive integer").
// The required "dtype" field of `node` (a dtype's name; "did you mean" otherwise) into `target`.
void read_dtype_field(JsonReader& reader, const nlohmann::json& node, const std::string& path,
                      DType& target);

struct SizeField {
  std::optional<int64_t> min;
  const char* integer = "an integer";
  bool required = false;
};
void read_size_field(JsonReader& reader, const nlohmann::json& node, const std::string& path,
                     const char* key, std::string& target, const std::set<std::string>& symbols,
                     const SizeField& rule);

}  // namespace kopt
