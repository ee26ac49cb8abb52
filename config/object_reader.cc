#include "config/object_reader.h"

#include <cmath>

#include "common/strings.h"

namespace kopt {

using nlohmann::json;

namespace {
const json kNoObject = json::object();
}  // namespace

ObjectReader::ObjectReader(JsonReader& reader, const json* object, std::string path)
    : reader_(reader),
      object_(object && object->is_object() ? object : &kNoObject),
      path_(std::move(path)) {}

bool ObjectReader::check_bound(const std::string& key, double value, Bound bound) {
  if (bound == Bound::kNonNegative && value < 0) {
    reader_.error(path_of(key), "must not be negative");
    return false;
  }
  if (bound == Bound::kPositive && !(value > 0)) {
    reader_.error(path_of(key), "must be positive");
    return false;
  }
  return true;
}

void ObjectReader::string(const std::string& key, std::string& out, bool required) {
  known_.push_back(key);
  if (auto v = reader_.string_field(*object_, path_, key, required)) out = *v;
}

void ObjectReader::number(const std::string& key, double& out, Bound bound) {
  std::optional<double> v;
  number(key, v, bound);
  if (v) out = *v;
}

void ObjectReader::number(const std::string& key, std::optional<double>& out, Bound bound) {
  known_.push_back(key);
  auto v = reader_.number_field(*object_, path_, key, false);
  if (v && check_bound(key, *v, bound)) out = *v;
}

void ObjectReader::integer(const std::string& key, int64_t& out, Bound bound) {
  std::optional<int64_t> v;
  integer(key, v, bound);
  if (v) out = *v;
}

void ObjectReader::integer(const std::string& key, int& out, Bound bound) {
  std::optional<int64_t> v;
  integer(key, v, bound);
  if (!v) return;
  if (*v > INT32_MAX || *v < INT32_MIN) {
    reader_.error(path_of(key), "out of range");
    return;
  }
  out = static_cast<int>(*v);
}

void ObjectReader::integer(const std::string& key, std::optional<int64_t>& out, Bound bound) {
  known_.push_back(key);
  auto v = reader_.integer_field(*object_, path_, key, false);
  if (v && check_bound(key, static_cast<double>(*v), bound)) out = *v;
}

void ObjectReader::boolean(const std::string& key, bool& out) {
  known_.push_back(key);
  if (auto v = reader_.bool_field(*object_, path_, key, false)) out = *v;
}

void ObjectReader::boolean(const std::string& key, std::optional<bool>& out) {
  known_.push_back(key);
  if (auto v = reader_.bool_field(*object_, path_, key, false)) out = *v;
}

void ObjectReader::seconds(const std::string& key, std::chrono::milliseconds& out) {
  std::optional<double> v;
  number(key, v, Bound::kNonNegative);
  if (v) out = std::chrono::milliseconds(static_cast<int64_t>(std::llround(*v * 1000.0)));
}

void ObjectReader::string_list(const std::string& key, std::vector<std::string>& out,
                               bool required) {
  known_.push_back(key);
  if (!object_->contains(key) && !required) return;
  out = reader_.string_list(*object_, path_, key, required);
}

void ObjectReader::integer_list(const std::string& key, std::vector<int>& out) {
  known_.push_back(key);
  const json* list = reader_.typed_field(*object_, path_, key, json::value_t::array, false);
  if (!list) return;
  out.clear();
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string item_path = path_of(key) + "[" + std::to_string(i) + "]";
    if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX) {
      reader_.error(item_path,
                    "expected a non-negative integer, found " +
                        (item.is_number_integer() ? item.dump() : json_type_name(item.type())));
      continue;
    }
    out.push_back(item.get<int>());
  }
}

void ObjectReader::choice(const std::string& key, std::string& out,
                          const std::vector<std::string>& choices, bool required) {
  known_.push_back(key);
  auto value = reader_.string_field(*object_, path_, key, required);
  if (!value) return;
  for (const auto& c : choices) {
    if (c == *value) {
      out = *value;
      return;
    }
  }
  reader_.error(path_of(key), "unknown value '" + *value + "', expected one of " +
                                  join(choices, ", ") + did_you_mean(*value, choices));
}

const json* ObjectReader::object(const std::string& key, bool required) {
  known_.push_back(key);
  return reader_.typed_field(*object_, path_, key, json::value_t::object, required);
}

void ObjectReader::require(const std::string& key) {
  if (!object_->contains(key)) reader_.error(path_of(key), "required field is missing");
}

void ObjectReader::finish() { reader_.check_keys(*object_, path_, known_); }

}  // namespace kopt
