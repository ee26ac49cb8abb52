#include "sandbox/named_members.h"

namespace kopt {

std::map<std::string, int64_t> read_size_overrides(JsonReader& reader, const nlohmann::json& object,
                                                   const std::string& path,
                                                   const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> binding;
  each_named_member(
      reader, object, path, names_of(sizes), "a size",
      [&](const std::string& name, const nlohmann::json& value, const std::string& member_path) {
        if (!value.is_number_integer() || value.get<int64_t>() < 1)
          reader.error(member_path, "expected a positive integer");
        else
          binding[name] = value.get<int64_t>();
      });
  return binding;
}

}  // namespace kopt
