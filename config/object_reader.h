// Reads the fields of one JSON object of the config file through a JsonReader. Every read names
// its key, and finish() rejects the keys that no read asked for, so the list of known keys can
// never drift from the code that reads them: adding a setting is one read call.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace kopt {

class ObjectReader {
 public:
  enum class Bound { kAny, kNonNegative, kPositive };

  // `object` may be null or of another type (already reported by whoever found it): reads are
  // then no-ops.
  ObjectReader(JsonReader& reader, const nlohmann::json* object, std::string path);

  // Each read leaves `out` untouched when the key is absent or invalid; required keys that are
  // absent, wrong types and out-of-bound values are recorded as errors.
  void string(const std::string& key, std::string& out, bool required = false);
  void number(const std::string& key, double& out, Bound bound = Bound::kAny);
  void number(const std::string& key, std::optional<double>& out, Bound bound = Bound::kAny);
  void integer(const std::string& key, int& out, Bound bound = Bound::kAny);
  void integer(const std::string& key, int64_t& out, Bound bound = Bound::kAny);
  void integer(const std::string& key, std::optional<int64_t>& out, Bound bound = Bound::kAny);
  void boolean(const std::string& key, bool& out);
  void boolean(const std::string& key, std::optional<bool>& out);
  // A duration given in seconds (the key says so: "timeout_s"); must not be negative.
  void seconds(const std::string& key, std::chrono::milliseconds& out);
  void string_list(const std::string& key, std::vector<std::string>& out, bool required = false);
  void integer_list(const std::string& key, std::vector<int>& out);
  // A string that must be one of `choices`; "did you mean" otherwise.
  void choice(const std::string& key, std::string& out, const std::vector<std::string>& choices,
              bool required = false);
  // A nested object, or nullptr when absent (or not an object, which is recorded).
  const nlohmann::json* object(const std::string& key, bool required = false);

  // Accepts `key` without reading it (for a value whose meaning is "nothing here", like null).
  void ignore(const std::string& key) { known_.push_back(key); }

  // Records "required field is missing" when `key` is absent (for keys read with defaults).
  void require(const std::string& key);

  // Records every key not asked for as an unknown key. Call after the last read.
  void finish();

  // "$.llm.providers.x" + "." + key.
  std::string path_of(const std::string& key) const { return path_ + "." + key; }
  const std::string& path() const { return path_; }
  JsonReader& reader() { return reader_; }

 private:
  bool check_bound(const std::string& key, double value, Bound bound);

  JsonReader& reader_;
  const nlohmann::json* object_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace kopt
