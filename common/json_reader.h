// Strict, path-aware reading of JSON documents (task.json, launch plans, config files).
// Every problem is recorded as "FILE: $.json.path: message" and reading goes on, so one pass
// reports every error; unknown keys are errors with a "did you mean" suggestion.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

class JsonReader {
 public:
  // `origin` names the document in messages (a file path, "file:line" for embedded JSON).
  explicit JsonReader(std::string origin) : origin_(std::move(origin)) {}

  // Parses text; a syntax error names the line and column within `origin`.
  // `first_line` is the line the JSON starts on inside a larger file (1 for a whole file).
  std::optional<nlohmann::json> parse(const std::string& text, int first_line = 1);

  void error(const std::string& path, const std::string& message);

  // Rejects keys of `object` that are not in `known`.
  void check_keys(const nlohmann::json& object, const std::string& path,
                  const std::vector<std::string>& known);

  // Typed field access. Missing required fields and wrong types are recorded as errors.
  std::optional<std::string> string_field(const nlohmann::json& object, const std::string& path,
                                          const std::string& key, bool required);
  std::optional<double> number_field(const nlohmann::json& object, const std::string& path,
                                     const std::string& key, bool required);
  std::optional<int64_t> integer_field(const nlohmann::json& object, const std::string& path,
                                       const std::string& key, bool required);
  std::optional<bool> bool_field(const nlohmann::json& object, const std::string& path,
                                 const std::string& key, bool required);
  // Returns the field if it has the given type ("object", "array"), else records an error.
  const nlohmann::json* typed_field(const nlohmann::json& object, const std::string& path,
                                    const std::string& key, nlohmann::json::value_t type,
                                    bool required);
  std::vector<std::string> string_list(const nlohmann::json& object, const std::string& path,
                                       const std::string& key, bool required);
  // Calls `read(item, item_path)` for each element of the array `list` at `path` (item_path
  // "path[i]"); an element that is not an object is an error (`expected`) and is skipped.
  template <typename Read>
  void each_object(const nlohmann::json& list, const std::string& path, Read read,
                   const std::string& expected = "expected an object") {
    for (size_t i = 0; i < list.size(); ++i) {
      std::string item_path = path + "[" + std::to_string(i) + "]";
      if (list[i].is_object())
        read(list[i], item_path);
      else
        error(item_path, expected);
    }
  }

  bool ok() const { return errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  // All errors, one per line.
  std::string message() const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<std::string> errors_;
};

std::string json_type_name(nlohmann::json::value_t type);

}  // namespace kopt
