#include "sandbox/init_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/strings.h"
#include "sandbox/expr.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kInitKeys = {"dist",   "mean",  "std",         "low",
                                            "high",   "value", "repeat",      "neg_inf",
                                            "sorted", "row",   "repeated_max"};
const std::vector<std::string> kSortOrders = {"ascending", "descending"};
const std::vector<std::string> kDistributions = {"normal", "uniform", "randint", "constant"};

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A randint bound: an integer or an expression over sizes.
void read_int_bound(JsonReader& reader, const json& node, const std::string& path, const char* key,
                    std::string& target, const std::set<std::string>& symbols) {
  read_size_field(reader, node, path, key, target, symbols, {.required = true});
}

// A positive integer or an expression string at `path.key` into `target`.
void read_length(JsonReader& reader, const json& node, const std::string& path, const char* key,
                 std::string& target, const std::set<std::string>& symbols) {
  read_size_field(reader, node, path, key, target, symbols,
                  {.min = 1, .integer = "a positive integer"});
}

// The structure keys: what they need and what they exclude.
void check_structure(JsonReader& reader, const InitSpec& init, const std::string& path,
                     DType dtype) {
  if (!init.sorted.empty() &&
      std::find(kSortOrders.begin(), kSortOrders.end(), init.sorted) == kSortOrders.end())
    reader.error(path + ".sorted", "expected \"ascending\" or \"descending\"" +
                                       did_you_mean(init.sorted, kSortOrders));
  bool structured = init.needs_format_3();
  if (structured && init.row.empty())
    reader.error(path + ".row", "sorted and repeated_max need the row length (\"row\": \"cols\")");
  if (!structured && !init.row.empty())
    reader.error(path + ".row", "only with \"sorted\" or \"repeated_max\"");
  if (structured && !init.repeat.empty())
    reader.error(path + ".repeat", "equal runs and structured rows exclude each other");
  if (structured && init.neg_inf > 0)
    reader.error(path + ".neg_inf", "masking and structured rows exclude each other");
  if (!init.sorted.empty() && !init.repeated_max.empty())
    reader.error(path + ".repeated_max", "a row is either sorted or has repeated maxima");
  if (!init.repeated_max.empty() && !dtype_is_float(dtype))
    reader.error(path + ".repeated_max",
                 "only for float inputs (the planted maximum lies above the integer range)");
}

// e4m3 has no infinities and saturates at +-448: a bound or value outside that range would
// describe inputs the fill cannot make (normal draws may pass it: their tails saturate).
void check_e4m3_range(JsonReader& reader, const InitSpec& init, const std::string& path) {
  constexpr double kMax = 448;
  if (init.neg_inf > 0) reader.error(path + ".neg_inf", "e4m3 has no infinities");
  auto check = [&](const char* key, double v) {
    if (!(std::fabs(v) <= kMax))
      reader.error(path + "." + key, "outside e4m3's finite range -448..448");
  };
  if (init.dist == "uniform") {
    check("low", init.low);
    check("high", init.high);
  } else if (init.dist == "constant") {
    check("value", init.value);
  }
}

}  // namespace

std::optional<InitSpec> InitSpec::mirrored(DType dtype) const {
  if (!dtype_is_float(dtype)) return std::nullopt;
  InitSpec m = *this;
  if (dist == "normal" && mean != 0) {
    m.mean = -mean;
  } else if (dist == "uniform" && low + high != 0) {
    m.low = -high;
    m.high = -low;
  } else if (dist == "constant" && value != 0) {
    m.value = -value;
  } else if (dist == "randint") {
    // Literal bounds only (an expression bound is a size: not a value to reflect).
    char* end_low = nullptr;
    char* end_high = nullptr;
    long long lo = std::strtoll(int_low.c_str(), &end_low, 10);
    long long hi = std::strtoll(int_high.c_str(), &end_high, 10);
    if (*end_low || *end_high || int_low.empty() || int_high.empty() || lo + (hi - 1) == 0)
      return std::nullopt;
    m.int_low = std::to_string(-(hi - 1));
    m.int_high = std::to_string(-lo + 1);
  } else {
    return std::nullopt;
  }
  return m;
}

bool InitSpec::needs_format_2(DType dtype) const {
  return dist == "constant" || !repeat.empty() || neg_inf > 0 ||
         (dist == "randint" && dtype_is_float(dtype));
}

std::string describe_init(const InitSpec& init) {
  std::string text;
  if (init.dist == "normal") {
    text = (init.mean != 0 ? "mean " + number_text(init.mean) + " " : std::string()) + "std " +
           number_text(init.stddev);
  } else if (init.dist == "uniform") {
    text = "uniform " + number_text(init.low) + ".." + number_text(init.high);
  } else if (init.dist == "constant") {
    text = "constant " + number_text(init.value);
  } else if (init.dist == "randint") {
    text = "integers " + init.int_low + ".." + init.int_high + "-1";
  }
  if (!init.repeat.empty()) text += ", equal runs of " + init.repeat;
  if (init.neg_inf > 0) text += ", " + number_text(100 * init.neg_inf) + "% -inf";
  if (!init.sorted.empty()) text += ", rows of " + init.row + " sorted " + init.sorted;
  if (!init.repeated_max.empty())
    text += ", the row maximum at every " + init.repeated_max + "th of " + init.row;
  text += describe_structured(init);
  if (text.rfind(", ", 0) == 0) text.erase(0, 2);
  return text;
}

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

void read_dtype_field(JsonReader& reader, const json& node, const std::string& path,
                      DType& target) {
  std::string dtype = reader.string_field(node, path, "dtype", true).value_or("f32");
  if (auto d = parse_dtype(dtype)) {
    target = *d;
  } else {
    reader.error(path + ".dtype",
                 "unknown dtype '" + dtype + "'" + did_you_mean(dtype, dtype_names()));
  }
}

void read_size_field(JsonReader& reader, const json& node, const std::string& path, const char* key,
                     std::string& target, const std::set<std::string>& symbols,
                     const SizeField& rule) {
  if (!node.contains(key)) {
    if (rule.required) reader.error(path + "." + key, "required field is missing");
    return;
  }
  const json& v = node.at(key);
  if (v.is_number_integer() && (!rule.min || v.get<int64_t>() >= *rule.min)) {
    target = std::to_string(v.get<int64_t>());
  } else if (v.is_string()) {
    target = v.get<std::string>();
    check_expression(reader, path + "." + key, target, symbols);
  } else {
    reader.error(path + "." + key,
                 std::string("expected ") + rule.integer + " or an expression string");
  }
}

InitSpec read_init_object(JsonReader& reader, const json& node, const std::string& path,
                          DType dtype, const std::set<std::string>& symbols) {
  InitSpec init;
  std::vector<std::string> keys = kInitKeys;
  keys.insert(keys.end(), structured_init_keys().begin(), structured_init_keys().end());
  reader.check_keys(node, path, keys);
  init.dist = reader.string_field(node, path, "dist", true).value_or("normal");
  if (init.dist == "normal") {
    init.mean = reader.number_field(node, path, "mean", false).value_or(0.0);
    init.stddev = reader.number_field(node, path, "std", false).value_or(1.0);
    if (init.stddev <= 0) reader.error(path + ".std", "must be positive");
  } else if (init.dist == "uniform") {
    init.low = reader.number_field(node, path, "low", true).value_or(-1.0);
    init.high = reader.number_field(node, path, "high", true).value_or(1.0);
    if (init.low >= init.high) reader.error(path, "low must be below high");
  } else if (init.dist == "constant") {
    init.value = reader.number_field(node, path, "value", true).value_or(0.0);
  } else if (init.dist == "randint") {
    // Bounds may be expressions over sizes (token ids below the vocabulary size).
    read_int_bound(reader, node, path, "low", init.int_low, symbols);
    read_int_bound(reader, node, path, "high", init.int_high, symbols);
    if (node.contains("low") && node.contains("high") && node.at("low").is_number_integer() &&
        node.at("high").is_number_integer() &&
        node.at("low").get<int64_t>() >= node.at("high").get<int64_t>())
      reader.error(path, "low must be below high (high is exclusive)");
  } else if (!is_structured_dist(init.dist)) {
    std::vector<std::string> known = kDistributions;
    known.insert(known.end(), {"permutation", "pages"});
    reader.error(path + ".dist",
                 "unknown distribution '" + init.dist + "'" + did_you_mean(init.dist, known));
  }
  read_length(reader, node, path, "repeat", init.repeat, symbols);
  init.neg_inf = reader.number_field(node, path, "neg_inf", false).value_or(0.0);
  init.sorted = reader.string_field(node, path, "sorted", false).value_or("");
  read_length(reader, node, path, "row", init.row, symbols);
  read_length(reader, node, path, "repeated_max", init.repeated_max, symbols);
  check_structure(reader, init, path, dtype);
  read_structured_init(reader, node, path, dtype, symbols, init);
  if (init.neg_inf < 0 || init.neg_inf >= 1)
    reader.error(path + ".neg_inf", "must be a share in [0, 1)");
  if (!dtype_is_float(dtype)) {
    if (init.dist != "randint" && !is_structured_dist(init.dist))
      reader.error(path, "integer inputs need \"dist\": \"randint\", \"permutation\" or \"pages\"");
    if (init.neg_inf > 0) reader.error(path + ".neg_inf", "only float inputs can hold -inf");
  }
  if (dtype == DType::kE4M3) check_e4m3_range(reader, init, path);
  return init;
}

}  // namespace kopt
