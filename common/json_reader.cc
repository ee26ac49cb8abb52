#include "common/json_reader.h"

#include <functional>

#include "common/enum_names.h"
#include "common/json_limits.h"
#include "common/strings.h"
#include "common/utf8.h"

namespace kopt {

using nlohmann::json;

namespace {
// Both integer kinds read "an integer"; the rest (binary, discarded) "a value".
constexpr EnumNameTable<json::value_t, 8> kTypeNames = {{
    {json::value_t::object, "an object"},
    {json::value_t::array, "an array"},
    {json::value_t::string, "a string"},
    {json::value_t::boolean, "a boolean"},
    {json::value_t::number_integer, "an integer"},
    {json::value_t::number_unsigned, "an integer"},
    {json::value_t::number_float, "a number"},
    {json::value_t::null, "null"},
}};

// The field when present and `accepts` it; else nullptr, after an error when it is required and
// missing or present as something other than `expected` ("a number").
const json* field_where(JsonReader& reader, const json& object, const std::string& path,
                        const std::string& key, bool required,
                        const std::function<bool(const json&)>& accepts,
                        const std::string& expected) {
  if (!object.is_object() || !object.contains(key)) {
    if (required) reader.error(path + "." + key, "required field is missing");
    return nullptr;
  }
  const json& value = object.at(key);
  if (!accepts(value)) {
    reader.error(path + "." + key,
                 "expected " + expected + ", found " + json_type_name(value.type()));
    return nullptr;
  }
  return &value;
}

}  // namespace

std::string json_type_name(json::value_t type) { return enum_name(kTypeNames, type, "a value"); }

std::optional<json> JsonReader::parse(const std::string& text, int first_line) {
  // A value nested past the limit would overflow the stack when copied or dumped later.
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    errors_.push_back(origin_ + ":" + std::to_string(first_line) +
                      ": invalid JSON: nested more than " + std::to_string(kMaxJsonDepth) +
                      " levels deep");
    return std::nullopt;
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // Convert the byte offset into a line so the user can jump to it.
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    int line = first_line;
    size_t line_start = 0;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    std::string what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    errors_.push_back(origin_ + ":" + std::to_string(line) + ":" +
                      std::to_string(offset - line_start + 1) + ": invalid JSON: " + what);
    return std::nullopt;
  } catch (const json::exception& e) {
    // A number too large for a double (out_of_range.406) is bad input too, not a crash; its
    // text quotes the whole number, which may be huge.
    std::string what = e.what();
    what = clip_utf8(what, 200);
    errors_.push_back(origin_ + ":" + std::to_string(first_line) + ": invalid JSON: " + what);
    return std::nullopt;
  }
}

void JsonReader::error(const std::string& path, const std::string& message) {
  errors_.push_back(origin_ + ": " + path + ": " + message);
}

void JsonReader::check_keys(const json& object, const std::string& path,
                            const std::vector<std::string>& known) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (const auto& k : known) found = found || k == key;
    if (!found) error(path + "." + key, "unknown key" + did_you_mean(key, known));
  }
}

const json* JsonReader::typed_field(const json& object, const std::string& path,
                                    const std::string& key, json::value_t type, bool required) {
  return field_where(
      *this, object, path, key, required, [type](const json& v) { return v.type() == type; },
      json_type_name(type));
}

std::optional<std::string> JsonReader::string_field(const json& object, const std::string& path,
                                                    const std::string& key, bool required) {
  const json* v = typed_field(object, path, key, json::value_t::string, required);
  if (!v) return std::nullopt;
  return v->get<std::string>();
}

std::optional<double> JsonReader::number_field(const json& object, const std::string& path,
                                               const std::string& key, bool required) {
  const json* v = field_where(
      *this, object, path, key, required, [](const json& j) { return j.is_number(); }, "a number");
  if (!v) return std::nullopt;
  return v->get<double>();
}

std::optional<int64_t> JsonReader::integer_field(const json& object, const std::string& path,
                                                 const std::string& key, bool required) {
  const json* v = field_where(
      *this, object, path, key, required, [](const json& j) { return j.is_number_integer(); },
      "an integer");
  if (!v) return std::nullopt;
  return v->get<int64_t>();
}

std::optional<bool> JsonReader::bool_field(const json& object, const std::string& path,
                                           const std::string& key, bool required) {
  const json* v = typed_field(object, path, key, json::value_t::boolean, required);
  if (!v) return std::nullopt;
  return v->get<bool>();
}

std::vector<std::string> JsonReader::string_list(const json& object, const std::string& path,
                                                 const std::string& key, bool required) {
  std::vector<std::string> out;
  const json* v = typed_field(object, path, key, json::value_t::array, required);
  if (!v) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    if (!item.is_string()) {
      error(path + "." + key + "[" + std::to_string(i) + "]",
            "expected a string, found " + json_type_name(item.type()));
      continue;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::string JsonReader::message() const { return join(errors_, "\n"); }

}  // namespace kopt
