#include "sandbox/input_families.h"

#include <algorithm>
#include <cmath>

#include "sandbox/task_spec.h"

namespace kopt {
namespace {

// The row an input's structure follows: its innermost dimension (a 1-D tensor in rows of up
// to 4096 elements, so that "a share of rows" is not all or nothing).
std::string row_of(const TensorSpec& t) {
  if (t.shape.empty()) return "1";
  if (t.shape.size() == 1) return "min(" + t.shape.back() + ", 4096)";
  return t.shape.back();
}

// The scale of the input's own values: what an outlier is measured against.
double init_scale(const InitSpec& init) {
  if (init.dist == "normal") return std::fabs(init.mean) + init.stddev;
  if (init.dist == "uniform") return std::max(std::fabs(init.low), std::fabs(init.high));
  if (init.dist == "constant") return std::max(1.0, std::fabs(init.value));
  return 1.0;
}

// The input's own distribution without structure (rows, runs, masking): what a family builds on.
InitSpec plain(const InitSpec& init) {
  InitSpec p = init;
  p.repeat.clear();
  p.neg_inf = 0;
  p.sorted.clear();
  p.row.clear();
  p.repeated_max.clear();
  return p;
}

FamilyRound make(const std::string& family, const TensorSpec& t, InitSpec init,
                 double tolerance_scale = 1) {
  FamilyRound f;
  f.family = family;
  f.input = t.name;
  f.round.name = "family " + family + " in " + t.name;
  f.round.inputs[t.name] = std::move(init);
  f.round.unmirrored = "generated";
  f.tolerance_scale = std::max(1.0, tolerance_scale);
  return f;
}

FamilyRound with_pattern(const std::string& family, const TensorSpec& t, RowPattern::Kind kind,
                         double value, double share, double tolerance_scale = 1) {
  FamilyRound f = make(family, t, plain(t.init), tolerance_scale);
  f.round.patterns[t.name] = RowPattern{kind, value, share, row_of(t)};
  return f;
}

void float_families(const TensorSpec& t, std::vector<FamilyRound>& out) {
  const double limit = family_limit_value(t.dtype);
  const double scale = init_scale(t.init);
  // Outputs may grow with the square of the inputs (a product of two activations, a square):
  // the tolerance's absolute parts grow so, too.
  const double grow = (limit / scale) * (limit / scale);
  using Kind = RowPattern::Kind;
  out.push_back(with_pattern("outlier_channels", t, Kind::kOutlierChannels, limit, 0.01, grow));
  out.push_back(with_pattern("outlier_rows", t, Kind::kOutlierRows, limit, 0.125, grow));
  out.push_back(with_pattern("spike_rows", t, Kind::kSpikeRows, limit, 1.0, grow));
  out.push_back(with_pattern("zero_rows", t, Kind::kScaleRows, 0.0, 0.25));
  out.push_back(with_pattern("tiny_rows", t, Kind::kScaleRows, 1e-4, 0.25));
  InitSpec constant = plain(t.init);
  constant.repeat = row_of(t);
  FamilyRound constant_rows = make("constant_rows", t, constant);
  constant_rows.coherent_row = row_of(t);
  out.push_back(std::move(constant_rows));
  for (const char* order : {"ascending", "descending"}) {
    InitSpec sorted = plain(t.init);
    sorted.sorted = order;
    sorted.row = row_of(t);
    out.push_back(make(order == std::string("ascending") ? "sorted" : "reversed", t, sorted));
  }
  InitSpec near_limit;
  near_limit.dist = "uniform";
  near_limit.low = -limit;
  near_limit.high = limit;
  out.push_back(make("dtype_limits", t, near_limit, grow));
}

void index_families(const TensorSpec& t, std::vector<FamilyRound>& out) {
  // Only plain whole numbers: an input with structure of its own (sorted offsets, runs) has
  // relations between its elements that these would break.
  if (t.init.dist != "randint" || !plain(t.init).repeat.empty() || !t.init.sorted.empty() ||
      !t.init.repeat.empty() || !t.init.repeated_max.empty())
    return;
  InitSpec same = t.init;
  same.repeat = "(" + (t.shape.empty() ? std::string("1") : t.shape.front()) + ")";
  for (size_t d = 1; d < t.shape.size(); ++d) same.repeat += " * (" + t.shape[d] + ")";
  out.push_back(make("duplicated", t, same));
  for (const char* order : {"ascending", "descending"}) {
    InitSpec sorted = t.init;
    sorted.sorted = order;
    sorted.row = row_of(t);
    out.push_back(make(order == std::string("ascending") ? "sorted" : "reversed", t, sorted));
  }
}

// Zero and tiny rows in every float input of one shape at once, the same rows in each. One input
// at a time leaves the others' rows whole, so where a task sums inputs before it normalizes
// (residual_rmsnorm's x + residual) no row of the sum is ever zero or tiny, and eps dropped or
// folded in passed. Named "zero_rows in x+residual"; skipping the family, or it for any one of
// the inputs, skips this round too.
void joint_families(const std::vector<TensorSpec>& inputs, std::vector<FamilyRound>& out) {
  std::vector<bool> grouped(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& first = inputs[i];
    if (grouped[i] || !dtype_is_float(first.dtype) || first.init.dist == "randint") continue;
    std::vector<const TensorSpec*> group = {&first};
    for (size_t j = i + 1; j < inputs.size(); ++j) {
      const TensorSpec& t = inputs[j];
      if (!grouped[j] && dtype_is_float(t.dtype) && t.init.dist != "randint" &&
          t.shape == first.shape) {
        group.push_back(&t);
        grouped[j] = true;
      }
    }
    if (group.size() < 2) continue;
    for (const auto& [family, value] : {std::pair{"zero_rows", 0.0}, {"tiny_rows", 1e-4}}) {
      FamilyRound f;
      f.family = family;
      for (const TensorSpec* t : group) {
        f.input += (f.input.empty() ? "" : "+") + t->name;
        f.round.inputs[t->name] = plain(t->init);
        RowPattern pattern{RowPattern::Kind::kScaleRows, value, 0.25, row_of(*t)};
        pattern.same_rows = true;
        f.round.patterns[t->name] = pattern;
      }
      f.round.name = "family " + f.family + " in " + f.input;
      f.round.unmirrored = "generated";
      out.push_back(std::move(f));
    }
  }
}

// Whether task.json's `input_families.skip` names family `f` (for all inputs, or for one of the
// inputs it changes).
bool skipped(const TaskSpec& task, const FamilyRound& f) {
  if (task.family_skips.count(f.family)) return true;
  size_t start = 0;
  while (start <= f.input.size()) {
    size_t end = f.input.find('+', start);
    if (end == std::string::npos) end = f.input.size();
    if (task.family_skips.count(f.input.substr(start, end - start) + "." + f.family)) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& input_family_names() {
  static const std::vector<std::string> names = {
      "outlier_channels", "outlier_rows", "spike_rows", "zero_rows",    "tiny_rows",
      "constant_rows",    "sorted",       "reversed",   "dtype_limits", "duplicated"};
  return names;
}

double family_limit_value(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return 32000.0;
    case DType::kE4M3:
      return 448.0;
    default:
      return 1.0e5;
  }
}

std::vector<FamilyRound> input_family_rounds(const TaskSpec& task) {
  std::vector<FamilyRound> all;
  for (const auto& t : task.inputs) {
    if (dtype_is_float(t.dtype) && t.init.dist != "randint") {
      float_families(t, all);
    } else {
      index_families(t, all);
    }
  }
  joint_families(task.inputs, all);
  std::vector<FamilyRound> kept;
  for (auto& f : all)
    if (!skipped(task, f)) kept.push_back(std::move(f));
  return kept;
}

}  // namespace kopt
