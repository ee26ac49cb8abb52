#include "sandbox/task_spec.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/files.h"
#include "common/json_reader.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "sandbox/input_families.h"
#include "sandbox/name_rules.h"
#include "sandbox/shape_derive.h"
#include "sandbox/stress_bounds.h"
#include "sandbox/task_baselines.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kTaskKeys = {
    "format", "name", "description", "tags", "sizes", "constants", "inputs", "outputs", "shapes",
    "holdout", "stress", "tolerance", "flops", "bytes", "peak", "priority", "draws",
    // sandbox/task_ranges.h
    "constant_ranges", "wide_round", "input_families",
    // sandbox/task_baselines.h
    "production_baselines", "cublaslt"};
const std::vector<std::string> kTensorKeys = {"name", "dtype", "shape", "init"};
const std::vector<std::string> kToleranceKeys = {"atol", "rtol", "max_error", "min_pass_fraction"};
const std::vector<std::string> kPeaks = {"fp32", "bf16_tensor", "fp16_tensor", "tf32_tensor",
                                         "fp8_tensor"};

InitSpec read_init(JsonReader& reader, const json& tensor, const std::string& path, DType dtype,
                   int format, const std::set<std::string>& symbols) {
  const json* node = reader.typed_field(tensor, path, "init", json::value_t::object, false);
  if (!node) {
    if (!dtype_is_float(dtype))
      reader.error(path + ".init", "integer inputs need \"dist\": \"randint\"");
    return InitSpec{};
  }
  InitSpec init = read_init_object(reader, *node, path + ".init", dtype, symbols);
  if (format < 2 && init.needs_format_2(dtype))
    reader.error(path + ".init",
                 "constant, repeat, neg_inf and randint for float inputs need \"format\": 2");
  if (format < 3 && init.needs_format_3())
    reader.error(path + ".init", "sorted and repeated_max need \"format\": 3");
  return init;
}

std::vector<TensorSpec> read_tensors(JsonReader& reader, const json& root, const std::string& key,
                                     const std::set<std::string>& symbols, bool with_init,
                                     int format) {
  std::vector<TensorSpec> tensors;
  const json* list = reader.typed_field(root, "$", key, json::value_t::array, true);
  if (!list) return tensors;
  if (list->empty()) reader.error("$." + key, "needs at least one entry");
  reader.each_object(*list, "$." + key, [&](const json& item, const std::string& path) {
    std::vector<std::string> keys = kTensorKeys;
    if (!with_init) keys.pop_back();
    reader.check_keys(item, path, keys);
    TensorSpec t;
    t.name = reader.string_field(item, path, "name", true).value_or("");
    if (!t.name.empty() && !is_identifier_name(t.name))
      reader.error(path + ".name", "'" + t.name + "' is not an identifier");
    else if (is_reserved_code_name(t.name))
      reader.error(path + ".name", "'" + t.name + "' " + std::string(kReservedCodeNameRule));
    read_dtype_field(reader, item, path, t.dtype);
    t.shape = reader.string_list(item, path, "shape", true);
    for (size_t d = 0; d < t.shape.size(); ++d)
      check_expression(reader, path + ".shape[" + std::to_string(d) + "]", t.shape[d], symbols);
    if (with_init) t.init = read_init(reader, item, path, t.dtype, format, symbols);
    tensors.push_back(std::move(t));
  });
  return tensors;
}

}  // namespace

ShapeBinding TaskSpec::bind(const ShapeBinding& overrides) const {
  ShapeBinding out = sizes;
  for (const auto& [k, v] : overrides) out[k] = v;
  return out;
}

Result<int64_t> TaskSpec::element_count(const TensorSpec& tensor, const ShapeBinding& s) const {
  int64_t count = 1;
  for (const auto& dim : tensor.shape) {
    auto v = evaluate_expression(dim, s);
    if (!v) return make_error("tensor '" + tensor.name + "': " + v.error());
    if (*v < 0) return make_error("tensor '" + tensor.name + "': negative dimension " + dim);
    if (__builtin_mul_overflow(count, *v, &count))
      return make_error("tensor '" + tensor.name + "': element count overflows");
  }
  return count;
}

Result<int64_t> TaskSpec::tensor_bytes(const ShapeBinding& shape, int output_copies) const {
  int64_t total = 0;
  for (const auto* list : {&inputs, &outputs}) {
    for (const auto& t : *list) {
      auto n = element_count(t, shape);
      if (!n) return make_error(n.error());
      total += *n * int64_t(dtype_size(t.dtype)) * (list == &outputs ? output_copies : 1);
    }
  }
  return total;
}

const TensorSpec* TaskSpec::find_tensor(const std::string& tensor_name) const {
  for (const auto& t : inputs)
    if (t.name == tensor_name) return &t;
  for (const auto& t : outputs)
    if (t.name == tensor_name) return &t;
  return nullptr;
}

ShapeBinding clamp_to_round(const TaskSpec& task, const StressRound& round, ShapeBinding shape) {
  if (round.shapes.empty()) return shape;
  for (auto& [name, value] : shape) {
    int64_t most = 0;
    for (const auto& own : round.shapes) most = std::max(most, task.bind(own).at(name));
    value = std::min(value, most);
  }
  return shape;
}

std::vector<ShapeBinding> stress_shapes(const TaskSpec& task, const StressRound& round,
                                        int64_t small_shape_bytes) {
  std::vector<ShapeBinding> out;
  for (const auto& overrides : round.shapes) out.push_back(task.bind(overrides));
  // A round's own shapes add to the small sweep shapes, never replace them: a trap named for long
  // rows still springs at the short ones (a reference NaN there, from a fully masked row, checks
  // nothing and fails no one). Only sweep shapes within the round's own, size by size: its
  // tolerance was sized for them (a running sum over 65537 values drifts past the cap sized for
  // 16384).
  for (const auto& overrides : task.shapes) {
    ShapeBinding sizes = task.bind(overrides);
    auto bytes = task.tensor_bytes(sizes);
    if (bytes && *bytes <= small_shape_bytes && clamp_to_round(task, round, sizes) == sizes &&
        std::find(out.begin(), out.end(), sizes) == out.end())
      out.push_back(sizes);
  }
  return out;
}

namespace {

// format, name, description and tags.
void read_task_header(JsonReader& reader, const json& root, TaskSpec& task) {
  if (auto f = reader.integer_field(root, "$", "format", true)) {
    task.format = static_cast<int>(*f);
    if (*f < 1)
      reader.error("$.format",
                   "format " + std::to_string(*f) + " is not valid (must be at least 1)");
    if (*f > kTaskFormatVersion)
      reader.error("$.format", "format " + std::to_string(*f) + " is newer than this kopt (" +
                                   std::to_string(kTaskFormatVersion) + "); upgrade kopt");
  }
  std::optional<std::string> name_field = reader.string_field(root, "$", "name", true);
  task.name = name_field.value_or("");
  if (name_field && task.name.empty()) reader.error("$.name", "must not be empty");
  if (!task.name.empty() && !is_task_name(task.name))
    reader.error("$.name", std::string(kTaskNameRule));
  task.description = reader.string_field(root, "$", "description", true).value_or("");
  task.tags = reader.string_list(root, "$", "tags", true);
}

// A size or constant is named like code: an identifier that is not reserved.
void check_code_name(JsonReader& reader, const std::string& path, const std::string& name) {
  if (!is_identifier_name(name)) reader.error(path, "not an identifier");
  if (is_identifier_name(name) && is_reserved_code_name(name))
    reader.error(path, "'" + name + "' " + std::string(kReservedCodeNameRule));
}

void read_sizes_and_constants(JsonReader& reader, const json& root, TaskSpec& task) {
  if (const json* sizes = reader.typed_field(root, "$", "sizes", json::value_t::object, true)) {
    for (const auto& [name, value] : sizes->items()) {
      check_code_name(reader, "$.sizes." + name, name);
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        reader.error("$.sizes." + name, "expected a positive integer default");
        continue;
      }
      task.sizes[name] = value.get<int64_t>();
    }
  }
  if (const json* c = reader.typed_field(root, "$", "constants", json::value_t::object, false)) {
    for (const auto& [name, value] : c->items()) {
      check_code_name(reader, "$.constants." + name, name);
      if (task.sizes.count(name)) reader.error("$.constants." + name, "also declared as a size");
      if (!value.is_number()) {
        reader.error("$.constants." + name, "expected a number");
        continue;
      }
      task.constants[name] = value.get<double>();
    }
  }
}

// Inputs and outputs; returns the tensors' names, each used once and none a size or constant.
std::set<std::string> read_tensor_lists(JsonReader& reader, const json& root,
                                        const std::set<std::string>& symbols, TaskSpec& task) {
  task.inputs = read_tensors(reader, root, "inputs", symbols, true, task.format);
  task.outputs = read_tensors(reader, root, "outputs", symbols, false, task.format);
  std::set<std::string> tensor_names;
  for (const auto& [key, list] : {std::pair{"inputs", &task.inputs}, {"outputs", &task.outputs}}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string& tensor = (*list)[i].name;
      std::string path = std::string("$.") + key + "[" + std::to_string(i) + "].name";
      if (!tensor.empty() && !tensor_names.insert(tensor).second)
        reader.error(path, "tensor name '" + tensor + "' is used twice");
      if (symbols.count(tensor) || task.constants.count(tensor))
        reader.error(path, "tensor name '" + tensor + "' is also a size or constant");
    }
  }
  return tensor_names;
}

void read_tolerance(JsonReader& reader, const json& root, TaskSpec& task) {
  const json* tol = reader.typed_field(root, "$", "tolerance", json::value_t::object, true);
  if (!tol) return;
  reader.check_keys(*tol, "$.tolerance", kToleranceKeys);
  task.tolerance.atol = reader.number_field(*tol, "$.tolerance", "atol", true).value_or(0);
  task.tolerance.rtol = reader.number_field(*tol, "$.tolerance", "rtol", true).value_or(0);
  task.tolerance.max_error =
      reader.number_field(*tol, "$.tolerance", "max_error", true).value_or(0);
  task.tolerance.min_pass_fraction =
      reader.number_field(*tol, "$.tolerance", "min_pass_fraction", false).value_or(1.0);
  if (task.tolerance.atol < 0) reader.error("$.tolerance.atol", "must be >= 0");
  if (task.tolerance.rtol < 0) reader.error("$.tolerance.rtol", "must be >= 0");
  if (task.tolerance.max_error <= 0 && tol->contains("max_error"))
    reader.error("$.tolerance.max_error", "must be > 0");
  if (task.tolerance.min_pass_fraction <= 0 || task.tolerance.min_pass_fraction > 1)
    reader.error("$.tolerance.min_pass_fraction", "must be in (0, 1]");
}

// flops, bytes, the peak they are measured against, and the task's priority.
void read_cost(JsonReader& reader, const json& root, const std::set<std::string>& symbols,
               TaskSpec& task) {
  task.flops = reader.string_field(root, "$", "flops", true).value_or("0");
  check_expression(reader, "$.flops", task.flops, symbols);
  task.bytes = reader.string_field(root, "$", "bytes", true).value_or("0");
  check_expression(reader, "$.bytes", task.bytes, symbols);
  task.peak = reader.string_field(root, "$", "peak", false).value_or("fp32");
  if (std::find(kPeaks.begin(), kPeaks.end(), task.peak) == kPeaks.end())
    reader.error("$.peak", "unknown peak '" + task.peak + "'" + did_you_mean(task.peak, kPeaks));
  task.priority = reader.number_field(root, "$", "priority", false).value_or(1.0);
  if (task.priority <= 0) reader.error("$.priority", "must be positive");
}

// A shape must give every tensor a valid size, and every run length (repeat) a valid one.
void check_shape_fits(JsonReader& reader, const TaskSpec& task, const std::string& path,
                      const ShapeBinding& overrides, const StressRound* round) {
  ShapeBinding s = task.bind(overrides);
  for (const auto* tensors : {&task.inputs, &task.outputs})
    for (const auto& t : *tensors)
      if (auto n = task.element_count(t, s); !n) reader.error(path, n.error());
  for (const auto& t : task.inputs) {
    const InitSpec& init = stress_init(round, t);
    for (const auto& [key, length] : {std::pair{"repeat", &init.repeat},
                                      {"row", &init.row},
                                      {"repeated_max", &init.repeated_max}}) {
      if (length->empty()) continue;
      auto run = evaluate_expression(*length, s);
      if (!run || *run < 1)
        reader.error(path, "input '" + t.name + "': " + key + " '" + *length +
                               "' must be a positive length here");
    }
    check_structured_at_shape(reader, task, t, round, s, path);
  }
}

// Every listed shape, holdout shape and stress round shape (with each sweep shape it adds to).
void check_every_shape_fits(JsonReader& reader, const TaskSpec& task) {
  for (const auto& [key, list] : {std::pair{"shapes", &task.shapes}, {"holdout", &task.holdout}})
    for (size_t i = 0; i < list->size(); ++i)
      check_shape_fits(reader, task, std::string("$.") + key + "[" + std::to_string(i) + "]",
                       (*list)[i], nullptr);
  for (size_t r = 0; r < task.stress.size(); ++r) {
    const StressRound& round = task.stress[r];
    std::string path = "$.stress[" + std::to_string(r) + "]";
    for (size_t i = 0; i < round.shapes.size(); ++i)
      check_shape_fits(reader, task, path + ".shapes[" + std::to_string(i) + "]", round.shapes[i],
                       &round);
    for (size_t i = 0; i < task.shapes.size(); ++i)
      check_shape_fits(reader, task, path + " at $.shapes[" + std::to_string(i) + "]",
                       task.shapes[i], &round);
  }
}

// Draws, constant ranges, the wide round and input family skips: what the worker draws from.
void read_draw_sources(JsonReader& reader, const json& root, TaskSpec& task) {
  // A task that declares no draws is still drawn: from ranges its listed shapes imply.
  if (reader.ok() && !root.contains("draws")) task.draws = derive_draw_spec(task);
  task.constant_ranges = read_constant_ranges(reader, root, task.constants);
  if (reader.ok()) task.wide_round = read_wide_round(reader, root, task);
  std::vector<std::string> input_names;
  for (const auto& t : task.inputs) input_names.push_back(t.name);
  task.family_skips = read_family_skips(reader, root, input_family_names(), input_names);
  if (reader.ok() && task.draws.count > 0 && task.draws.derived.empty()) {
    // A few seeds, so that a range no shape of which fits is refused here, not in the worker.
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      if (auto drawn = draw_shapes(task, seed); !drawn) {
        reader.error("$.draws", drawn.error());
        break;
      }
    }
  }
}

}  // namespace

Result<TaskSpec> parse_task(const std::string& text, const std::string& origin) {
  JsonReader reader(origin);
  auto parsed = reader.parse(text);
  if (!parsed) return make_error(reader.message());
  const json& root = *parsed;
  if (!root.is_object()) return make_error(origin + ": $: expected an object");
  reader.check_keys(root, "$", kTaskKeys);

  TaskSpec task;
  task.raw_json = text;
  task.spec_hash = sha256_hex(text);
  read_task_header(reader, root, task);
  read_sizes_and_constants(reader, root, task);
  std::set<std::string> symbols;
  for (const auto& [n, v] : task.sizes) symbols.insert(n);
  std::set<std::string> tensor_names = read_tensor_lists(reader, root, symbols, task);
  read_task_baselines(reader, root, tensor_names, symbols);  // validated here, read on demand

  task.shapes = read_shape_list(reader, root, "$", "shapes", task.sizes, true);
  if (task.shapes.empty() && reader.ok()) reader.error("$.shapes", "needs at least one shape");
  task.holdout = read_shape_list(reader, root, "$", "holdout", task.sizes, false);
  task.stress = read_stress_rounds(reader, root, task.inputs, task.sizes, task.format);
  task.draws = read_draw_spec(reader, root, task.sizes, task.format);
  check_task_structured(reader, task);  // sandbox/structured_init.h

  read_tolerance(reader, root, task);
  read_cost(reader, root, symbols, task);
  if (reader.ok()) check_every_shape_fits(reader, task);
  read_draw_sources(reader, root, task);
  if (!reader.ok()) return make_error(reader.message());
  return task;
}

Result<TaskSpec> load_task(const std::filesystem::path& dir) {
  std::filesystem::path file = dir / "task.json";
  std::error_code ec;  // a symlink loop or an unreadable entry is this task's error, not a throw
  if (!std::filesystem::is_directory(dir, ec))
    return make_error(dir.string() + ": not a task directory" + (ec ? ": " + ec.message() : ""));
  auto text = read_file(file);
  if (!text) return make_error(text.error());
  auto task = parse_task(*text, file.string());
  std::string problems = task ? "" : task.error();
  for (const char* needed : {"reference.cu", "baseline.cu"}) {
    if (!std::filesystem::exists(dir / needed, ec))
      problems += (problems.empty() ? "" : "\n") + (dir / needed).string() +
                  (ec ? ": cannot read: " + ec.message() : ": missing (every task needs it)");
  }
  if (!problems.empty()) return make_error(problems);
  task->dir = dir;
  return task;
}

}  // namespace kopt
