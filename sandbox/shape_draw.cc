#include "sandbox/shape_draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "common/strings.h"
#include "sandbox/expr.h"
#include "sandbox/init_spec.h"
#include "sandbox/named_members.h"
#include "sandbox/task_spec.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kDrawKeys = {"count", "max_bytes", "sizes", "variables",
                                            "constraints"};
const std::vector<std::string> kRangeKeys = {"min", "max", "long", "multiple", "threshold_max"};
// Two-character operators first, so that "<=" is not read as "<".
const std::vector<std::string> kComparisons = {"==", "!=", "<=", ">=", "<", ">"};
constexpr int kMaxCount = 16;
constexpr int kAttemptsPerShape = 512;

// splitmix64: the same numbers on every platform (std's distributions are not portable).
class DrawRandom {
 public:
  explicit DrawRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

SizeRange read_range(JsonReader& reader, const json& node, const std::string& path) {
  SizeRange range;
  reader.check_keys(node, path, kRangeKeys);
  range.min = reader.integer_field(node, path, "min", true).value_or(1);
  range.max = reader.integer_field(node, path, "max", true).value_or(range.min);
  range.long_rows = reader.bool_field(node, path, "long", false).value_or(false);
  if (range.min < 1) reader.error(path + ".min", "must be at least 1");
  if (range.max < range.min) reader.error(path + ".max", "must be at least min");
  if (range.long_rows && range.max < 2) reader.error(path + ".long", "needs max >= 2");
  range.threshold_max = reader.integer_field(node, path, "threshold_max", false).value_or(0);
  if (range.threshold_max != 0 && range.threshold_max <= range.max)
    reader.error(path + ".threshold_max", "must be past max (" + std::to_string(range.max) + ")");
  range.multiple = reader.integer_field(node, path, "multiple", false).value_or(1);
  if (range.multiple < 1) {
    reader.error(path + ".multiple", "must be at least 1");
  } else if (range.max / range.multiple < (range.min + range.multiple - 1) / range.multiple) {
    reader.error(path + ".multiple", "no multiple of " + std::to_string(range.multiple) +
                                         " lies in " + std::to_string(range.min) + ".." +
                                         std::to_string(range.max));
  }
  return range;
}

std::optional<ShapeConstraint> parse_constraint(const std::string& text) {
  for (const auto& op : kComparisons) {
    size_t at = text.find(op);
    if (at == std::string::npos) continue;
    return ShapeConstraint{text, trim(text.substr(0, at)), op, trim(text.substr(at + op.size()))};
  }
  return std::nullopt;
}

// Log-uniform in [lo, hi] (small and large sizes equally likely per octave), then moved to the
// residue `residue4` mod 4 and a random residue mod 128 with that low part, where the range is
// wide enough to hold one.
int64_t draw_value(const SizeRange& range, bool long_draw, int residue4, DrawRandom& random) {
  if (range.multiple > 1) {
    // Drawn as a count of multiples, so the residues mod 4 and 128 are those of the count (a
    // tile count of each residue mod 4 still meets a kernel's partial last group of tiles).
    SizeRange count = range;
    count.min = (range.min + range.multiple - 1) / range.multiple;
    count.max = range.max / range.multiple;
    count.multiple = 1;
    return draw_value(count, long_draw, residue4, random) * range.multiple;
  }
  int64_t lo = range.min, hi = range.max;
  if (long_draw) lo = std::max(lo, hi / 2 + 1);
  double span = std::log(double(hi) + 1.0) - std::log(double(lo));
  int64_t v = int64_t(std::floor(std::exp(std::log(double(lo)) + random.unit() * span)));
  v = std::clamp(v, lo, hi);
  int64_t width = hi - lo + 1;
  int64_t modulus = width >= 128 ? 128 : width >= 4 ? 4 : 1;
  if (modulus == 1 || residue4 < 0) return v;
  int64_t target = residue4 + (modulus == 128 ? 4 * int64_t(random.below(32)) : 0);
  v += target - v % modulus;
  while (v < lo) v += modulus;
  while (v > hi) v -= modulus;
  return v;
}

// One candidate shape, or the reason it is refused.
Result<ShapeBinding> try_shape(const TaskSpec& task, int shape_index,
                               const std::map<std::string, std::array<int, 4>>& residues,
                               bool stratified, DrawRandom& random) {
  const DrawSpec& spec = task.draws;
  ShapeBinding all = task.sizes;
  auto draw_all = [&](const std::map<std::string, SizeRange>& ranges) {
    for (const auto& [name, range] : ranges)
      all[name] = draw_value(range, shape_index == 0 && range.long_rows,
                             stratified ? residues.at(name)[size_t(shape_index % 4)] : -1, random);
  };
  draw_all(spec.ranges);
  draw_all(spec.variables);
  for (const auto& [name, text] : spec.computed) {
    auto v = evaluate_expression(text, all);
    if (!v) return make_error("'" + name + "' = " + text + ": " + v.error());
    if (*v < 1) return make_error("'" + name + "' = " + text + " is " + std::to_string(*v));
    all[name] = *v;
  }
  for (const auto& c : spec.constraints) {
    auto holds = constraint_holds(c, all);
    if (!holds) return make_error(holds.error());
    if (!*holds) return make_error("'" + c.text + "' does not hold");
  }
  ShapeBinding shape;
  for (const auto& [name, v] : task.sizes) shape[name] = all.at(name);
  auto bytes = task.tensor_bytes(shape);
  if (!bytes) return make_error(bytes.error());
  if (*bytes > spec.max_bytes)
    return make_error(std::to_string(*bytes) + " bytes, over max_bytes " +
                      std::to_string(spec.max_bytes));
  for (const auto& t : task.inputs) {
    if (t.init.repeat.empty()) continue;
    auto run = evaluate_expression(t.init.repeat, shape);
    if (!run || *run < 1) return make_error("input '" + t.name + "': bad repeat length");
  }
  return shape;
}

}  // namespace

Result<bool> constraint_holds(const ShapeConstraint& c, const ShapeBinding& sizes) {
  auto left = evaluate_expression(c.left, sizes);
  if (!left) return make_error("'" + c.text + "': " + left.error());
  auto right = evaluate_expression(c.right, sizes);
  if (!right) return make_error("'" + c.text + "': " + right.error());
  if (c.op == "==") return *left == *right;
  if (c.op == "!=") return *left != *right;
  if (c.op == "<=") return *left <= *right;
  if (c.op == ">=") return *left >= *right;
  if (c.op == "<") return *left < *right;
  return *left > *right;
}

DrawSpec read_draw_spec(JsonReader& reader, const json& root,
                        const std::map<std::string, int64_t>& sizes, int format) {
  DrawSpec spec;
  const json* node = reader.typed_field(root, "$", "draws", json::value_t::object, false);
  if (!node) return spec;
  const std::string path = "$.draws";
  if (format < 3) reader.error(path, "drawn shapes need \"format\": 3");
  reader.check_keys(*node, path, kDrawKeys);
  spec.count = int(reader.integer_field(*node, path, "count", true).value_or(0));
  if (node->contains("count") && (spec.count < 1 || spec.count > kMaxCount))
    reader.error(path + ".count", "must be 1 to " + std::to_string(kMaxCount) +
                                      " (4 or more: every residue mod 4 in each evaluation)");
  spec.max_bytes = reader.integer_field(*node, path, "max_bytes", false).value_or(spec.max_bytes);
  if (spec.max_bytes < 1) reader.error(path + ".max_bytes", "must be positive");

  std::vector<std::string> size_names = names_of(sizes);
  std::set<std::string> symbols(size_names.begin(), size_names.end());
  if (const json* vars =
          reader.typed_field(*node, path, "variables", json::value_t::object, false)) {
    for (const auto& [name, value] : vars->items()) {
      std::string vpath = path + ".variables." + name;
      if (sizes.count(name)) {
        reader.error(vpath, "'" + name + "' is a size of the task: draw it under \"sizes\"");
      } else if (!value.is_object()) {
        reader.error(vpath, "expected a range {\"min\": ..., \"max\": ...}");
      } else {
        spec.variables[name] = read_range(reader, value, vpath);
        symbols.insert(name);
      }
    }
  }
  const json* drawn = reader.typed_field(*node, path, "sizes", json::value_t::object, true);
  if (drawn && drawn->empty()) reader.error(path + ".sizes", "draw at least one size");
  auto read_drawn = [&](const std::string& name, const json& value, const std::string& spath) {
    if (value.is_object()) {
      spec.ranges[name] = read_range(reader, value, spath);
    } else if (value.is_number_integer() && value.get<int64_t>() >= 1) {
      spec.computed[name] = std::to_string(value.get<int64_t>());
    } else if (value.is_string()) {
      spec.computed[name] = value.get<std::string>();
    } else {
      reader.error(spath,
                   "expected a range {\"min\", \"max\"}, a positive integer or an "
                   "expression string");
    }
  };
  if (drawn) each_named_member(reader, *drawn, path + ".sizes", size_names, "a size", read_drawn);
  // Computed sizes are evaluated after every range is drawn, so they may use ranged sizes and
  // variables, never one another (their order would matter).
  std::set<std::string> computable = symbols;
  for (const auto& [name, text] : spec.computed) computable.erase(name);
  for (const auto& [name, text] : spec.computed)
    check_expression(reader, path + ".sizes." + name, text, computable);
  std::vector<std::string> constraints = reader.string_list(*node, path, "constraints", false);
  for (size_t i = 0; i < constraints.size(); ++i) {
    std::string cpath = path + ".constraints[" + std::to_string(i) + "]";
    auto c = parse_constraint(constraints[i]);
    if (!c) {
      reader.error(cpath,
                   "expected EXPR OP EXPR with OP one of == != <= >= < > (for example "
                   "\"q_heads % kv_heads == 0\")");
      continue;
    }
    check_expression(reader, cpath, c->left, symbols);
    check_expression(reader, cpath, c->right, symbols);
    spec.constraints.push_back(*c);
  }
  return spec;
}

Result<std::vector<ShapeBinding>> draw_shapes(const TaskSpec& task, uint64_t seed) {
  std::vector<ShapeBinding> shapes;
  const DrawSpec& spec = task.draws;
  if (spec.count == 0) return shapes;
  DrawRandom random(seed ^ 0x5851f42d4c957f2dULL);
  // Per ranged name, the order in which the evaluation's shapes take the residues 0..3 mod 4.
  std::map<std::string, std::array<int, 4>> residues;
  for (const auto* ranges : {&spec.ranges, &spec.variables}) {
    for (const auto& [name, range] : *ranges) {
      std::array<int, 4> order = {0, 1, 2, 3};
      for (int i = 3; i > 0; --i) std::swap(order[size_t(i)], order[random.below(uint64_t(i) + 1)]);
      residues[name] = order;
    }
  }
  for (int i = 0; i < spec.count; ++i) {
    std::string last_reason;
    for (int attempt = 0; attempt < kAttemptsPerShape; ++attempt) {
      // Residues that no shape within the budget can take (rows = 4 with a long row) give way
      // after half the attempts.
      auto shape = try_shape(task, i, residues, attempt < kAttemptsPerShape / 2, random);
      if (shape) {
        shapes.push_back(std::move(*shape));
        break;
      }
      last_reason = shape.error();
    }
    if (int(shapes.size()) != i + 1)
      return make_error("drawn shape " + std::to_string(i + 1) + ": no draw in " +
                        std::to_string(kAttemptsPerShape) + " attempts fits (last: " + last_reason +
                        "); widen the ranges or raise max_bytes");
  }
  return shapes;
}

}  // namespace kopt
