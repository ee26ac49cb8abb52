#include "sandbox/structured_init.h"

#include <algorithm>

#include "common/strings.h"
#include "sandbox/expr.h"
#include "sandbox/init_spec.h"
#include "sandbox/stress_round.h"
#include "sandbox/task_spec.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kStaleKeys = {"table", "lengths", "page", "slot"};
const std::vector<std::string> kRoutingKeys = {"experts", "hot", "cold"};

// An expression field (a non-negative integer literal or an expression string) into `target`.
void read_expr(JsonReader& reader, const json& node, const std::string& path, const char* key,
               std::string& target, const std::set<std::string>& symbols, bool required) {
  read_size_field(reader, node, path, key, target, symbols,
                  {.min = 0, .integer = "a non-negative integer", .required = required});
}

std::string read_input_name(JsonReader& reader, const json& node, const std::string& path,
                            const char* key) {
  auto name = reader.string_field(node, path, key, true);
  return name.value_or("");
}

void read_edges(JsonReader& reader, const json& node, const std::string& path,
                const std::set<std::string>& symbols, InitSpec& init) {
  const json* list = reader.typed_field(node, path, "edges", json::value_t::array, false);
  if (!list) return;
  if (list->empty()) reader.error(path + ".edges", "list at least one value");
  for (size_t i = 0; i < list->size(); ++i) {
    std::string at = path + ".edges[" + std::to_string(i) + "]";
    const json& v = (*list)[i];
    if (v.is_number_integer()) {
      init.structured.edges.push_back(std::to_string(v.get<int64_t>()));
    } else if (v.is_string()) {
      init.structured.edges.push_back(v.get<std::string>());
      check_expression(reader, at, v.get<std::string>(), symbols);
    } else {
      reader.error(at, "expected an integer or an expression string");
    }
  }
  if (init.dist != "randint") reader.error(path + ".edges", "only with \"dist\": \"randint\"");
}

void read_pages(JsonReader& reader, const json& node, const std::string& path,
                const std::set<std::string>& symbols, InitSpec& init) {
  StructuredInit& s = init.structured;
  s.lengths = read_input_name(reader, node, path, "lengths");
  read_expr(reader, node, path, "page", s.page, symbols, true);
  read_expr(reader, node, path, "pool", s.pool, symbols, true);
  s.pad = "unused";
  if (node.contains("pad")) {
    const json& pad = node.at("pad");
    if (pad.is_number_integer()) {
      s.pad = std::to_string(pad.get<int64_t>());
    } else if (!(pad.is_string() && pad.get<std::string>() == "unused")) {
      reader.error(path + ".pad", "expected \"unused\" (a page no row reads) or an integer");
    }
  }
}

// An optional object of a structured init ("stale", "routing"), read from its path `at`.
using PartReader = void (*)(JsonReader& reader, const json& part, const std::string& at,
                            const std::set<std::string>& symbols, DType dtype, InitSpec& init);

void read_stale(JsonReader& reader, const json& stale, const std::string& at,
                const std::set<std::string>& symbols, DType dtype, InitSpec& init) {
  StaleSlots& s = init.structured.stale;
  s.table = read_input_name(reader, stale, at, "table");
  s.lengths = read_input_name(reader, stale, at, "lengths");
  read_expr(reader, stale, at, "page", s.page, symbols, true);
  read_expr(reader, stale, at, "slot", s.slot, symbols, true);
  if (s.table.empty()) s.table = "?";  // keeps empty() false so the other checks still run
  if (!dtype_is_float(dtype)) reader.error(at, "only float inputs can hold NaN");
}

void read_routing(JsonReader& reader, const json& routing, const std::string& at,
                  const std::set<std::string>& symbols, DType dtype, InitSpec& init) {
  RoutingSkew& r = init.structured.routing;
  read_expr(reader, routing, at, "experts", r.experts, symbols, true);
  r.hot = "0";
  r.cold = "0";
  read_expr(reader, routing, at, "hot", r.hot, symbols, false);
  read_expr(reader, routing, at, "cold", r.cold, symbols, false);
  if (r.experts.empty()) r.experts = "1";
  if (dtype != DType::kF32) reader.error(at, "routing logits must be f32");
  if (!init.sorted.empty() || !init.repeat.empty() || !init.repeated_max.empty())
    reader.error(at, "routing excludes sorted, repeat and repeated_max");
}

// The part `key` of `node` when present: its keys checked against `keys`, then `parse`.
void read_part(JsonReader& reader, const json& node, const std::string& path, const char* key,
               const std::vector<std::string>& keys, PartReader parse,
               const std::set<std::string>& symbols, DType dtype, InitSpec& init) {
  const json* part = reader.typed_field(node, path, key, json::value_t::object, false);
  if (!part) return;
  std::string at = path + "." + key;
  reader.check_keys(*part, at, keys);
  parse(reader, *part, at, symbols, dtype, init);
}

// Index `of` of the input named `name`, or -1.
int input_index(const TaskSpec& task, const std::string& name) {
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if (task.inputs[i].name == name) return int(i);
  return -1;
}

void check_named_input(JsonReader& reader, const TaskSpec& task, size_t index,
                       const std::string& name, const std::string& path) {
  std::vector<std::string> names;
  for (const auto& t : task.inputs) names.push_back(t.name);
  int at = input_index(task, name);
  if (at < 0) {
    reader.error(path, "no input named '" + name + "'" + did_you_mean(name, names));
  } else if (size_t(at) >= index) {
    reader.error(path, "input '" + name + "' must come before '" + task.inputs[index].name +
                           "' in $.inputs (it is filled first)");
  } else if (dtype_is_float(task.inputs[size_t(at)].dtype)) {
    reader.error(path, "input '" + name + "' must be an integer tensor (i32 or i64)");
  }
}

// The names `init` reads.
std::vector<std::string> names_read(const InitSpec& init) {
  std::vector<std::string> out;
  if (!init.structured.lengths.empty()) out.push_back(init.structured.lengths);
  if (!init.structured.stale.empty()) {
    out.push_back(init.structured.stale.table);
    out.push_back(init.structured.stale.lengths);
  }
  return out;
}

// `text` at `sizes` must be at least `least`; the value, or -1 after an error.
int64_t at_least(JsonReader& reader, const std::string& path, const std::string& what,
                 const std::string& text, const ShapeBinding& sizes, int64_t least) {
  auto v = evaluate_expression(text, sizes);
  if (!v || *v < least) {
    reader.error(path, what + " '" + text + "' must be at least " + std::to_string(least) +
                           " here" + (v ? " (it is " + std::to_string(*v) + ")" : ""));
    return -1;
  }
  return *v;
}

void check_pages_at_shape(JsonReader& reader, const TaskSpec& task, const TensorSpec& input,
                          const StressRound* round, const ShapeBinding& sizes,
                          const std::string& path) {
  const StructuredInit& s = stress_init(round, input).structured;
  std::string at = path + ": input '" + input.name + "'";
  int64_t page = at_least(reader, at, "page", s.page, sizes, 1);
  at_least(reader, at, "pool", s.pool, sizes, 1);
  if (input.shape.empty()) return;
  int64_t width = at_least(reader, at, "the table's last dimension", input.shape.back(), sizes, 1);
  int idx = input_index(task, s.lengths);
  if (idx < 0 || page < 1 || width < 1) return;
  const TensorSpec& lengths = task.inputs[size_t(idx)];
  auto rows = task.element_count(input, sizes);
  auto count = task.element_count(lengths, sizes);
  if (rows && count && *rows / width != *count)
    reader.error(at, "the table has " + std::to_string(*rows / width) + " rows but '" +
                         lengths.name + "' has " + std::to_string(*count) + " elements");
  const InitSpec& li = stress_init(round, lengths);
  if (li.dist != "randint") return;
  auto high = evaluate_expression(li.int_high, sizes);
  if (high && *high - 1 > width * page)
    reader.error(at, "'" + lengths.name + "' reaches " + std::to_string(*high - 1) +
                         " tokens, more than the table's " + std::to_string(width) + " pages of " +
                         std::to_string(page) + " hold");
}

}  // namespace

const std::vector<std::string>& structured_init_keys() {
  static const std::vector<std::string> keys = {"edges", "divide", "shuffle", "lengths", "page",
                                                "pool",  "pad",    "stale",   "routing"};
  return keys;
}

bool is_structured_dist(const std::string& dist) {
  return dist == "permutation" || dist == "pages";
}

void read_structured_init(JsonReader& reader, const json& node, const std::string& path,
                          DType dtype, const std::set<std::string>& symbols, InitSpec& init) {
  read_edges(reader, node, path, symbols, init);
  if (is_structured_dist(init.dist) && dtype_is_float(dtype))
    reader.error(path + ".dist", "'" + init.dist + "' makes indices: only for i32 or i64 inputs");
  if (init.dist == "permutation") {
    init.structured.divide = "1";
    read_expr(reader, node, path, "divide", init.structured.divide, symbols, false);
    init.structured.shuffle = reader.bool_field(node, path, "shuffle", false).value_or(true);
  } else if (init.dist == "pages") {
    read_pages(reader, node, path, symbols, init);
  } else {
    for (const char* key : {"divide", "shuffle", "lengths", "page", "pool", "pad"})
      if (node.contains(key))
        reader.error(path + "." + key,
                     "only with \"dist\": \"pages\"" + std::string(key[0] == 'd' ? " or "
                                                                                   "\"permutation\""
                                                                                 : ""));
  }
  read_part(reader, node, path, "stale", kStaleKeys, read_stale, symbols, dtype, init);
  read_part(reader, node, path, "routing", kRoutingKeys, read_routing, symbols, dtype, init);
}

std::string describe_structured(const InitSpec& init) {
  const StructuredInit& s = init.structured;
  std::string text;
  if (init.dist == "permutation")
    text = std::string(s.shuffle ? "a shuffled permutation" : "0, 1, 2, ...") +
           (s.divide != "1" ? " / " + s.divide : std::string());
  if (init.dist == "pages")
    text = "shuffled pages of " + s.page + " for " + s.lengths + ", padded with " +
           (s.pad == "unused" ? std::string("unused pages") : s.pad);
  if (!s.edges.empty()) text += ", edges " + join(s.edges, ", ");
  if (!s.stale.empty()) text += ", NaN in slots no sequence reads";
  if (!s.routing.empty())
    text += ", " + s.routing.hot + " hot and " + s.routing.cold + " cold experts";
  return text;
}

void check_structured_inputs(JsonReader& reader, const TaskSpec& task, size_t index,
                             const InitSpec& init, const std::string& path) {
  const StructuredInit& s = init.structured;
  if (init.dist == "pages") check_named_input(reader, task, index, s.lengths, path + ".lengths");
  if (!s.stale.empty()) {
    check_named_input(reader, task, index, s.stale.table, path + ".stale.table");
    check_named_input(reader, task, index, s.stale.lengths, path + ".stale.lengths");
  }
}

void check_task_structured(JsonReader& reader, const TaskSpec& task) {
  for (size_t i = 0; i < task.inputs.size(); ++i)
    check_structured_inputs(reader, task, i, task.inputs[i].init,
                            "$.inputs[" + std::to_string(i) + "].init");
  for (size_t r = 0; r < task.stress.size(); ++r)
    for (const auto& [name, init] : task.stress[r].inputs)
      if (int i = input_index(task, name); i >= 0)
        check_structured_inputs(reader, task, size_t(i), init,
                                "$.stress[" + std::to_string(r) + "].inputs." + name);
}

void check_structured_at_shape(JsonReader& reader, const TaskSpec& task, const TensorSpec& input,
                               const StressRound* round, const ShapeBinding& sizes,
                               const std::string& path) {
  const InitSpec& init = stress_init(round, input);
  const StructuredInit& s = init.structured;
  std::string at = path + ": input '" + input.name + "'";
  for (const auto& e : s.edges)
    if (!evaluate_expression(e, sizes)) reader.error(at, "edge '" + e + "' does not evaluate");
  if (init.dist == "permutation") at_least(reader, at, "divide", s.divide, sizes, 1);
  if (init.dist == "pages") check_pages_at_shape(reader, task, input, round, sizes, path);
  auto n = task.element_count(input, sizes);
  if (!s.stale.empty()) {
    int64_t page = at_least(reader, at, "stale.page", s.stale.page, sizes, 1);
    int64_t slot = at_least(reader, at, "stale.slot", s.stale.slot, sizes, 1);
    if (n && page > 0 && slot > 0 && *n % (page * slot) != 0)
      reader.error(at, "stale slots: " + std::to_string(*n) + " elements are not whole pages of " +
                           std::to_string(page) + " x " + std::to_string(slot));
  }
  if (!s.routing.empty()) {
    int64_t experts = at_least(reader, at, "routing.experts", s.routing.experts, sizes, 1);
    int64_t hot = at_least(reader, at, "routing.hot", s.routing.hot, sizes, 0);
    int64_t cold = at_least(reader, at, "routing.cold", s.routing.cold, sizes, 0);
    if (experts > 0 && n && *n % experts != 0)
      reader.error(at, "routing: " + std::to_string(*n) + " elements are not rows of " +
                           std::to_string(experts));
    if (experts > 0 && hot >= 0 && cold >= 0 && hot + cold > experts)
      reader.error(at, "routing: hot + cold (" + std::to_string(hot + cold) +
                           ") exceeds the experts (" + std::to_string(experts) + ")");
  }
}

std::vector<std::string> structured_dependents(const TaskSpec& task, const std::string& name) {
  std::set<std::string> reached = {name};
  std::vector<std::string> out;
  for (const auto& t : task.inputs) {
    std::vector<std::string> reads = names_read(t.init);
    for (const auto& round : task.stress)
      if (auto it = round.inputs.find(t.name); it != round.inputs.end())
        for (const auto& r : names_read(it->second)) reads.push_back(r);
    bool depends = std::any_of(reads.begin(), reads.end(),
                               [&](const std::string& r) { return reached.count(r) > 0; });
    if (depends && t.name != name && reached.insert(t.name).second) out.push_back(t.name);
  }
  return out;
}

}  // namespace kopt
