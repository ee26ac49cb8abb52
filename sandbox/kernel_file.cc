#include "sandbox/kernel_file.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "common/files.h"
#include "common/json_reader.h"
#include "common/strings.h"
#include "sandbox/expr.h"

namespace kopt {

using nlohmann::json;

namespace {

constexpr std::string_view kPlanOpen = "/* kopt:plan";
const std::vector<std::string> kPlanKeys = {"tunables", "scratch", "launches", "compile_options"};
const std::vector<std::string> kLaunchKeys = {"kernel", "grid", "block", "shared_bytes", "args"};
const std::vector<std::string> kScratchKeys = {"name", "dtype", "count", "zero"};

// Strips // and /* */ comments so a kernel mentioned only in a comment does not count as
// defined. String and character literals are blanked (their quotes kept): a "/*" inside one
// starts no comment, and a kernel spelled inside one is not a definition.
std::string strip_comments(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '"' || c == '\'') {
      out += c;
      for (++i; i < source.size() && source[i] != c && source[i] != '\n'; ++i) {
        if (source[i] == '\\' && i + 1 < source.size()) ++i;
        out += ' ';
      }
      if (i < source.size()) out += source[i];
    } else if (source.compare(i, 2, "//") == 0) {
      while (i < source.size() && source[i] != '\n') ++i;
      out += '\n';
    } else if (source.compare(i, 2, "/*") == 0) {
      size_t end = source.find("*/", i + 2);
      if (end == std::string::npos) break;
      i = end + 1;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), is_identifier_char);
}

// The __global__ functions `code` (comments stripped) defines: between a __global__ and the
// next ';' or '{' a name is followed by a parameter list, and that list by a body. A bare
// declaration ("...);") does not count: the plan would name a kernel that this file does not
// provide. One linear pass over the file for all of a plan's launches (model output: a
// backtracking regex over it overflowed the stack, and a pass per launch made one 241 KB answer
// cost 34 s).
std::set<std::string> defined_kernels(const std::string& code) {
  constexpr std::string_view kGlobal = "__global__";
  const size_t n = code.size();
  std::vector<size_t> closing(n, std::string::npos);  // '(' -> its ')'
  std::vector<size_t> open_parens;
  for (size_t i = 0; i < n; ++i) {
    if (code[i] == '(') open_parens.push_back(i);
    if (code[i] == ')' && !open_parens.empty()) {
      closing[open_parens.back()] = i;
      open_parens.pop_back();
    }
  }
  std::vector<size_t> next_stop(n + 1, std::string::npos);  // the first ';' or '{' at or after i
  for (size_t i = n; i-- > 0;)
    next_stop[i] = (code[i] == ';' || code[i] == '{') ? i : next_stop[i + 1];

  std::set<std::string> defined;
  for (size_t g = code.find(kGlobal); g != std::string::npos;) {
    size_t region_end = std::min(next_stop[g + kGlobal.size()], n);
    size_t at = g + kGlobal.size();
    while (at < region_end && is_identifier_char(code[at])) ++at;  // "__global__x" is no keyword
    while (at < region_end) {
      if (!is_identifier_char(code[at])) {
        ++at;
        continue;
      }
      size_t end = at;
      while (end < region_end && is_identifier_char(code[end])) ++end;
      size_t paren = end;
      while (paren < region_end && std::isspace(static_cast<unsigned char>(code[paren]))) ++paren;
      if (paren < region_end && code[paren] == '(' && closing[paren] != std::string::npos) {
        size_t stop = next_stop[closing[paren] + 1];
        if (stop != std::string::npos && code[stop] == '{')
          defined.insert(code.substr(at, end - at));
      }
      at = end;
    }
    g = region_end >= n ? std::string::npos : code.find(kGlobal, region_end);
  }
  return defined;
}

struct Symbols {
  std::set<std::string> integers;  // sizes and tunables
  std::set<std::string> floats;    // constants
  std::set<std::string> buffers;   // inputs, outputs, scratch
  std::vector<std::string> all() const {
    std::vector<std::string> out(integers.begin(), integers.end());
    out.insert(out.end(), floats.begin(), floats.end());
    out.insert(out.end(), buffers.begin(), buffers.end());
    return out;
  }
};

void check_integer_expression(JsonReader& reader, const std::string& path, const std::string& text,
                              const Symbols* symbols) {
  auto expr = Expr::parse(text);
  if (!expr) {
    reader.error(path, expr.error());
    return;
  }
  if (!symbols) return;
  for (const auto& id : expr->identifiers()) {
    if (!symbols->integers.count(id)) {
      std::vector<std::string> known(symbols->integers.begin(), symbols->integers.end());
      reader.error(path, "unknown symbol '" + id + "'" + did_you_mean(id, known));
    }
  }
}

ArgBinding parse_arg(JsonReader& reader, const std::string& path, const std::string& text,
                     const Symbols* symbols) {
  ArgBinding arg;
  arg.text = text;
  static const std::vector<std::pair<std::string, ArgBinding::Kind>> kTyped = {
      {"i32:", ArgBinding::Kind::kInt32},
      {"i64:", ArgBinding::Kind::kInt64},
      {"f32:", ArgBinding::Kind::kFloat32},
      {"f64:", ArgBinding::Kind::kFloat64}};
  for (const auto& [prefix, kind] : kTyped) {
    if (!starts_with(text, prefix)) continue;
    arg.kind = kind;
    arg.expression = trim(text.substr(prefix.size()));
    if (kind == ArgBinding::Kind::kFloat32 || kind == ArgBinding::Kind::kFloat64) {
      if (symbols && !symbols->floats.count(arg.expression)) {
        std::vector<std::string> known(symbols->floats.begin(), symbols->floats.end());
        reader.error(path, "'" + arg.expression + "' is not a constant of the task" +
                               did_you_mean(arg.expression, known));
      }
    } else {
      check_integer_expression(reader, path, arg.expression, symbols);
    }
    return arg;
  }
  // A bare name: a buffer becomes a pointer, a size or tunable an int, a constant a float.
  if (!symbols) {
    arg.buffer = text;
    return arg;
  }
  if (symbols->buffers.count(text)) {
    arg.buffer = text;
  } else if (symbols->integers.count(text)) {
    arg.kind = ArgBinding::Kind::kInt32;
    arg.expression = text;
  } else if (symbols->floats.count(text)) {
    arg.kind = ArgBinding::Kind::kFloat32;
    arg.expression = text;
  } else {
    reader.error(path, "'" + text + "' is not a buffer, size, tunable or constant" +
                           did_you_mean(text, symbols->all()) +
                           "; use i32:EXPR or i64:EXPR for computed integers");
  }
  return arg;
}

std::vector<std::string> expression_list(JsonReader& reader, const json& launch,
                                         const std::string& path, const std::string& key,
                                         const Symbols* symbols) {
  std::vector<std::string> out;
  const json* v = launch.contains(key) ? &launch.at(key) : nullptr;
  if (!v) {
    reader.error(path + "." + key, "required field is missing");
    return out;
  }
  if (!v->is_array() || v->empty() || v->size() > 3) {
    reader.error(path + "." + key, "expected an array of 1 to 3 expressions");
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    std::string item_path = path + "." + key + "[" + std::to_string(i) + "]";
    const json& item = (*v)[i];
    std::string text = item.is_string()           ? item.get<std::string>()
                       : item.is_number_integer() ? std::to_string(item.get<int64_t>())
                                                  : "";
    if (text.empty()) {
      reader.error(item_path, "expected an expression string or an integer");
      continue;
    }
    check_integer_expression(reader, item_path, text, symbols);
    out.push_back(text);
  }
  return out;
}

// Where the plan block is: its JSON text and the line its comment opens on.
struct PlanBlock {
  std::string text;
  int line = 0;
};

// The one '/* kopt:plan ... */' comment of a kernel file, with the file's size checked first.
Result<PlanBlock> find_plan_block(const std::string& source, const std::string& origin) {
  if (source.size() > kMaxKernelSourceBytes)
    return make_error(origin + ": the kernel file is " + std::to_string(source.size()) +
                      " bytes, over the limit of " + std::to_string(kMaxKernelSourceBytes) +
                      " bytes");
  size_t open = source.find(kPlanOpen);
  if (open == std::string::npos)
    return make_error(origin + ": no launch plan: add a '/* kopt:plan { ... } */' block");
  size_t body = open + kPlanOpen.size();
  size_t close = source.find("*/", body);
  int plan_line = line_of_offset(source, open);
  if (close == std::string::npos)
    return make_error(origin + ":" + std::to_string(plan_line) +
                      ": the kopt:plan comment is not closed with */");
  if (size_t second = source.find(kPlanOpen, close); second != std::string::npos)
    return make_error(origin + ":" + std::to_string(line_of_offset(source, second)) +
                      ": more than one kopt:plan block (the first is on line " +
                      std::to_string(plan_line) + ")");
  return PlanBlock{source.substr(body, close - body), plan_line};
}

void read_tunables(JsonReader& checker, const json& plan, KernelFile& file) {
  const json* t = checker.typed_field(plan, "$", "tunables", json::value_t::object, false);
  if (!t) return;
  for (const auto& [name, values] : t->items()) {
    Tunable tunable{name, {}};
    if (!values.is_array() || values.empty()) {
      checker.error("$.tunables." + name, "expected a non-empty array of integers");
      continue;
    }
    for (const auto& v : values) {
      if (!v.is_number_integer()) {
        checker.error("$.tunables." + name, "expected integers");
        break;
      }
      tunable.values.push_back(v.get<int64_t>());
    }
    file.tunables.push_back(std::move(tunable));
  }
}

// The names a plan may use: the task's sizes, constants and tensors, then the file's tunables.
Symbols plan_symbols(JsonReader& checker, const TaskSpec* task, const KernelFile& file) {
  Symbols symbols;
  if (task) {
    for (const auto& [n, v] : task->sizes) symbols.integers.insert(n);
    for (const auto& [n, v] : task->constants) symbols.floats.insert(n);
    for (const auto& t : task->inputs) symbols.buffers.insert(t.name);
    for (const auto& t : task->outputs) symbols.buffers.insert(t.name);
  }
  for (const auto& t : file.tunables) {
    std::string path = "$.tunables." + t.name;
    if (!is_identifier(t.name))
      checker.error(
          path, "'" + t.name + "' is not an identifier (it is passed as -D" + t.name + "=VALUE)");
    if (symbols.integers.count(t.name) || symbols.floats.count(t.name))
      checker.error(path, "clashes with a size or constant of the task");
    if (symbols.buffers.count(t.name))
      checker.error(path, "clashes with tensor '" + t.name + "' of the task");
    symbols.integers.insert(t.name);
  }
  return symbols;
}

// One scratch buffer at `path`; its name joins the buffers the launches may pass.
ScratchBuffer read_scratch_buffer(JsonReader& checker, const json& item, const std::string& path,
                                  const TaskSpec* task, Symbols& symbols) {
  checker.check_keys(item, path, kScratchKeys);
  ScratchBuffer buffer;
  std::optional<std::string> name = checker.string_field(item, path, "name", true);
  buffer.name = name.value_or("");
  if (name && !is_identifier(buffer.name))
    checker.error(path + ".name", "'" + buffer.name + "' is not an identifier");
  if (symbols.integers.count(buffer.name) || symbols.floats.count(buffer.name))
    checker.error(path + ".name",
                  "'" + buffer.name + "' clashes with a size or constant of the task");
  read_dtype_field(checker, item, path, buffer.dtype);
  buffer.count = checker.string_field(item, path, "count", true).value_or("0");
  check_integer_expression(checker, path + ".count", buffer.count, task ? &symbols : nullptr);
  buffer.zero = checker.bool_field(item, path, "zero", false).value_or(false);
  if (symbols.buffers.count(buffer.name))
    checker.error(path + ".name", "'" + buffer.name + "' is already a buffer name");
  symbols.buffers.insert(buffer.name);
  return buffer;
}

void read_scratch(JsonReader& checker, const json& plan, const TaskSpec* task, Symbols& symbols,
                  KernelFile& file) {
  const json* s = checker.typed_field(plan, "$", "scratch", json::value_t::array, false);
  if (!s) return;
  checker.each_object(*s, "$.scratch", [&](const json& item, const std::string& path) {
    file.scratch.push_back(read_scratch_buffer(checker, item, path, task, symbols));
  });
}

void read_compile_options(JsonReader& checker, const json& plan, KernelFile& file) {
  file.compile_options = checker.string_list(plan, "$", "compile_options", false);
  for (size_t i = 0; i < file.compile_options.size(); ++i) {
    if (!is_allowed_compile_option(file.compile_options[i]))
      checker.error("$.compile_options[" + std::to_string(i) + "]",
                    "option '" + file.compile_options[i] + "' is not allowed");
  }
}

// One launch at `path`; `checked` is null where there is no task to check names against.
Launch read_launch(JsonReader& checker, const json& item, const std::string& path, int plan_line,
                   const std::set<std::string>& kernels, const Symbols* checked) {
  checker.check_keys(item, path, kLaunchKeys);
  Launch launch;
  launch.plan_line = plan_line;
  launch.kernel = checker.string_field(item, path, "kernel", true).value_or("");
  if (!launch.kernel.empty()) {
    if (!is_identifier(launch.kernel)) {
      checker.error(path + ".kernel", "'" + launch.kernel + "' is not an identifier");
    } else if (!kernels.count(launch.kernel)) {
      checker.error(path + ".kernel",
                    "kernel '" + launch.kernel + "' is not defined as a __global__ function");
    }
  }
  launch.grid = expression_list(checker, item, path, "grid", checked);
  launch.block = expression_list(checker, item, path, "block", checked);
  if (item.contains("shared_bytes")) {
    const json& smem = item.at("shared_bytes");
    launch.shared_bytes = smem.is_string()           ? smem.get<std::string>()
                          : smem.is_number_integer() ? std::to_string(smem.get<int64_t>())
                                                     : "";
    if (launch.shared_bytes.empty()) {
      checker.error(path + ".shared_bytes", "expected an expression");
    } else {
      check_integer_expression(checker, path + ".shared_bytes", launch.shared_bytes, checked);
    }
  }
  auto args = checker.string_list(item, path, "args", true);
  for (size_t a = 0; a < args.size(); ++a) {
    launch.args.push_back(
        parse_arg(checker, path + ".args[" + std::to_string(a) + "]", args[a], checked));
  }
  return launch;
}

void read_launches(JsonReader& checker, const json& plan, const TaskSpec* task,
                   const Symbols& symbols, KernelFile& file) {
  std::string code = strip_comments(file.source);
  const std::set<std::string> kernels = defined_kernels(code);
  const json* launches = checker.typed_field(plan, "$", "launches", json::value_t::array, true);
  if (!launches) return;
  if (launches->empty()) checker.error("$.launches", "needs at least one launch");
  checker.each_object(*launches, "$.launches", [&](const json& item, const std::string& path) {
    file.launches.push_back(
        read_launch(checker, item, path, file.plan_line, kernels, task ? &symbols : nullptr));
  });
}

}  // namespace

bool is_allowed_compile_option(const std::string& option) {
  static const std::vector<std::string> kExact = {
      "--use_fast_math",   "-use_fast_math", "--extra-device-vectorization",
      "--ftz=true",        "--ftz=false",    "--prec-div=false",
      "--prec-sqrt=false", "--fmad=true"};
  for (const auto& o : kExact)
    if (option == o) return true;
  for (std::string_view prefix : {"-maxrregcount=", "--maxrregcount="}) {
    if (option.rfind(prefix, 0) != 0) continue;
    std::string_view digits = std::string_view(option).substr(prefix.size());
    return !digits.empty() && digits.size() <= 3 &&
           std::all_of(digits.begin(), digits.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  }
  return false;
}

std::map<std::string, int64_t> KernelFile::tunable_values(
    const std::map<std::string, int64_t>& chosen) const {
  std::map<std::string, int64_t> out;
  for (const auto& t : tunables) {
    auto it = chosen.find(t.name);
    out[t.name] = it != chosen.end() ? it->second : t.values.front();
  }
  return out;
}

Result<KernelFile> parse_kernel_file(const std::string& source, const std::string& origin,
                                     const TaskSpec* task) {
  auto block = find_plan_block(source, origin);
  if (!block) return make_error(block.error());
  JsonReader reader(origin);
  auto parsed = reader.parse(block->text, block->line);
  if (!parsed) return make_error(reader.message());
  const json& plan = *parsed;
  std::string where = origin + ":" + std::to_string(block->line);
  JsonReader checker(where + " (kopt:plan)");
  if (!plan.is_object()) return make_error(where + ": the plan must be a JSON object");
  checker.check_keys(plan, "$", kPlanKeys);

  KernelFile file;
  file.source = source;
  file.origin = origin;
  file.plan_line = block->line;
  read_tunables(checker, plan, file);
  Symbols symbols = plan_symbols(checker, task, file);
  read_scratch(checker, plan, task, symbols, file);
  read_compile_options(checker, plan, file);
  read_launches(checker, plan, task, symbols, file);
  if (!checker.ok()) return make_error(checker.message());
  return file;
}

Result<KernelFile> load_kernel_file(const std::filesystem::path& path, const TaskSpec* task) {
  auto text = read_file(path);
  if (!text) return make_error(text.error());
  return parse_kernel_file(*text, path.string(), task);
}

}  // namespace kopt
