#include "sandbox/task_spec.h"

#include <optional>
#include <set>

#include "common/files.h"
#include "common/json_reader.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kTaskKeys = {
    "format", "name",    "description", "tags",  "sizes", "constants", "inputs",  "outputs",
    "shapes", "holdout", "tolerance",   "flops", "bytes", "peak",      "priority"};
const std::vector<std::string> kTensorKeys = {"name", "dtype", "shape", "init"};
const std::vector<std::string> kInitKeys = {"dist", "mean", "std", "low", "high"};
const std::vector<std::string> kToleranceKeys = {"atol", "rtol", "max_error", "min_pass_fraction"};
const std::vector<std::string> kPeaks = {"fp32", "bf16_tensor", "fp16_tensor", "tf32_tensor"};

bool valid_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// An expression field: checks it parses and refers only to known sizes.
void check_expression(JsonReader& reader, const std::string& path, const std::string& text,
                      const std::set<std::string>& symbols) {
  auto expr = Expr::parse(text);
  if (!expr) {
    reader.error(path, expr.error());
    return;
  }
  for (const auto& id : expr->identifiers()) {
    if (!symbols.count(id)) {
      reader.error(path,
                   "unknown symbol '" + id + "' in '" + text + "'" +
                       did_you_mean(id, std::vector<std::string>(symbols.begin(), symbols.end())));
    }
  }
}

InitSpec read_init(JsonReader& reader, const json& tensor, const std::string& path,
                   const std::set<std::string>& symbols) {
  InitSpec init;
  const json* node = reader.typed_field(tensor, path, "init", json::value_t::object, false);
  if (!node) return init;
  std::string ipath = path + ".init";
  reader.check_keys(*node, ipath, kInitKeys);
  init.dist = reader.string_field(*node, ipath, "dist", true).value_or("normal");
  if (init.dist == "normal") {
    init.mean = reader.number_field(*node, ipath, "mean", false).value_or(0.0);
    init.stddev = reader.number_field(*node, ipath, "std", false).value_or(1.0);
    if (init.stddev <= 0) reader.error(ipath + ".std", "must be positive");
  } else if (init.dist == "uniform") {
    init.low = reader.number_field(*node, ipath, "low", true).value_or(-1.0);
    init.high = reader.number_field(*node, ipath, "high", true).value_or(1.0);
    if (init.low >= init.high) reader.error(ipath, "low must be below high");
  } else if (init.dist == "randint") {
    // Bounds may be expressions over sizes (token ids below the vocabulary size).
    for (auto [key, target] :
         {std::pair{"low", &init.int_low}, std::pair{"high", &init.int_high}}) {
      if (!node->contains(key)) {
        reader.error(ipath + "." + key, "required field is missing");
        continue;
      }
      const json& v = node->at(key);
      if (v.is_number_integer()) {
        *target = std::to_string(v.get<int64_t>());
      } else if (v.is_string()) {
        *target = v.get<std::string>();
        check_expression(reader, ipath + "." + key, *target, symbols);
      } else {
        reader.error(ipath + "." + key, "expected an integer or an expression string");
      }
    }
    if (node->contains("low") && node->contains("high") && node->at("low").is_number_integer() &&
        node->at("high").is_number_integer() &&
        node->at("low").get<int64_t>() >= node->at("high").get<int64_t>())
      reader.error(ipath, "low must be below high (high is exclusive)");
  } else {
    reader.error(ipath + ".dist", "unknown distribution '" + init.dist + "'" +
                                      did_you_mean(init.dist, {"normal", "uniform", "randint"}));
  }
  return init;
}

std::vector<TensorSpec> read_tensors(JsonReader& reader, const json& root, const std::string& key,
                                     const std::set<std::string>& symbols, bool with_init) {
  std::vector<TensorSpec> tensors;
  const json* list = reader.typed_field(root, "$", key, json::value_t::array, true);
  if (!list) return tensors;
  if (list->empty()) reader.error("$." + key, "needs at least one entry");
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = "$." + key + "[" + std::to_string(i) + "]";
    const json& item = (*list)[i];
    if (!item.is_object()) {
      reader.error(path, "expected an object");
      continue;
    }
    std::vector<std::string> keys = kTensorKeys;
    if (!with_init) keys.pop_back();
    reader.check_keys(item, path, keys);
    TensorSpec t;
    t.name = reader.string_field(item, path, "name", true).value_or("");
    if (!t.name.empty() && !valid_identifier(t.name))
      reader.error(path + ".name", "'" + t.name + "' is not an identifier");
    std::string dtype = reader.string_field(item, path, "dtype", true).value_or("f32");
    if (auto d = parse_dtype(dtype)) {
      t.dtype = *d;
    } else {
      reader.error(path + ".dtype",
                   "unknown dtype '" + dtype + "'" + did_you_mean(dtype, dtype_names()));
    }
    t.shape = reader.string_list(item, path, "shape", true);
    for (size_t d = 0; d < t.shape.size(); ++d)
      check_expression(reader, path + ".shape[" + std::to_string(d) + "]", t.shape[d], symbols);
    if (with_init) {
      t.init = read_init(reader, item, path, symbols);
      if (!dtype_is_float(t.dtype) && t.init.dist != "randint")
        reader.error(path + ".init", "integer inputs need \"dist\": \"randint\"");
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

std::vector<ShapeBinding> read_shapes(JsonReader& reader, const json& root, const std::string& key,
                                      const std::map<std::string, int64_t>& sizes, bool required) {
  std::vector<ShapeBinding> shapes;
  const json* list = reader.typed_field(root, "$", key, json::value_t::array, required);
  if (!list) return shapes;
  std::vector<std::string> names;
  for (const auto& [n, v] : sizes) names.push_back(n);
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = "$." + key + "[" + std::to_string(i) + "]";
    const json& item = (*list)[i];
    if (!item.is_object()) {
      reader.error(path, "expected an object of size overrides");
      continue;
    }
    ShapeBinding binding;
    for (const auto& [name, value] : item.items()) {
      if (!sizes.count(name)) {
        reader.error(path + "." + name, "not a size of this task" + did_you_mean(name, names));
      } else if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        reader.error(path + "." + name, "expected a positive integer");
      } else {
        binding[name] = value.get<int64_t>();
      }
    }
    shapes.push_back(std::move(binding));
  }
  return shapes;
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
  if (!task.name.empty() &&
      task.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
    reader.error("$.name", "use lower-case letters, digits, '_' and '-' only");
  task.description = reader.string_field(root, "$", "description", true).value_or("");
  task.tags = reader.string_list(root, "$", "tags", true);

  if (const json* sizes = reader.typed_field(root, "$", "sizes", json::value_t::object, true)) {
    for (const auto& [name, value] : sizes->items()) {
      if (!valid_identifier(name)) reader.error("$.sizes." + name, "not an identifier");
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        reader.error("$.sizes." + name, "expected a positive integer default");
        continue;
      }
      task.sizes[name] = value.get<int64_t>();
    }
  }
  if (const json* c = reader.typed_field(root, "$", "constants", json::value_t::object, false)) {
    for (const auto& [name, value] : c->items()) {
      if (!valid_identifier(name)) reader.error("$.constants." + name, "not an identifier");
      if (task.sizes.count(name)) reader.error("$.constants." + name, "also declared as a size");
      if (!value.is_number()) {
        reader.error("$.constants." + name, "expected a number");
        continue;
      }
      task.constants[name] = value.get<double>();
    }
  }

  std::set<std::string> symbols;
  for (const auto& [n, v] : task.sizes) symbols.insert(n);
  task.inputs = read_tensors(reader, root, "inputs", symbols, true);
  task.outputs = read_tensors(reader, root, "outputs", symbols, false);
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

  task.shapes = read_shapes(reader, root, "shapes", task.sizes, true);
  if (task.shapes.empty() && reader.ok()) reader.error("$.shapes", "needs at least one shape");
  task.holdout = read_shapes(reader, root, "holdout", task.sizes, false);

  if (const json* tol = reader.typed_field(root, "$", "tolerance", json::value_t::object, true)) {
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
  task.flops = reader.string_field(root, "$", "flops", true).value_or("0");
  check_expression(reader, "$.flops", task.flops, symbols);
  task.bytes = reader.string_field(root, "$", "bytes", true).value_or("0");
  check_expression(reader, "$.bytes", task.bytes, symbols);
  task.peak = reader.string_field(root, "$", "peak", false).value_or("fp32");
  if (std::find(kPeaks.begin(), kPeaks.end(), task.peak) == kPeaks.end())
    reader.error("$.peak", "unknown peak '" + task.peak + "'" + did_you_mean(task.peak, kPeaks));
  task.priority = reader.number_field(root, "$", "priority", false).value_or(1.0);
  if (task.priority <= 0) reader.error("$.priority", "must be positive");

  if (reader.ok()) {
    // Every shape must give every tensor a valid size.
    std::vector<std::pair<std::string, const std::vector<ShapeBinding>*>> groups = {
        {"shapes", &task.shapes}, {"holdout", &task.holdout}};
    for (const auto& [key, list] : groups) {
      for (size_t i = 0; i < list->size(); ++i) {
        ShapeBinding s = task.bind((*list)[i]);
        for (const auto* tensors : {&task.inputs, &task.outputs})
          for (const auto& t : *tensors)
            if (auto n = task.element_count(t, s); !n)
              reader.error("$." + key + "[" + std::to_string(i) + "]", n.error());
      }
    }
  }
  if (!reader.ok()) return make_error(reader.message());
  return task;
}

Result<TaskSpec> load_task(const std::filesystem::path& dir) {
  std::filesystem::path file = dir / "task.json";
  if (!std::filesystem::is_directory(dir))
    return make_error(dir.string() + ": not a task directory");
  auto text = read_file(file);
  if (!text) return make_error(text.error());
  auto task = parse_task(*text, file.string());
  if (!task) return task;
  task->dir = dir;
  for (const char* needed : {"reference.cu", "baseline.cu"}) {
    if (!std::filesystem::exists(dir / needed))
      return make_error((dir / needed).string() + ": missing (every task needs it)");
  }
  return task;
}

}  // namespace kopt
