#include "sandbox/stress_round.h"

#include "common/strings.h"
#include "sandbox/named_members.h"
#include "sandbox/task_spec.h"

namespace kopt {

using nlohmann::json;

namespace {

const std::vector<std::string> kStressKeys = {"name", "inputs", "shapes", "unmirrored"};

// "std 40" for one overridden input; "q std 40, k std 2" for several.
std::string derived_name(const std::map<std::string, InitSpec>& overrides) {
  if (overrides.size() == 1) return describe_init(overrides.begin()->second);
  std::string name;
  for (const auto& [input, init] : overrides)
    name += (name.empty() ? "" : ", ") + input + " " + describe_init(init);
  return name;
}

// A stress round's "inputs": init objects for some of the task's inputs, by input name.
std::map<std::string, InitSpec> read_input_overrides(JsonReader& reader, const json& overrides,
                                                     const std::string& path,
                                                     const std::vector<TensorSpec>& inputs,
                                                     const std::set<std::string>& symbols,
                                                     int format) {
  std::vector<std::string> names;
  for (const auto& t : inputs) names.push_back(t.name);
  std::map<std::string, InitSpec> overridden;
  auto read = [&](const std::string& name, const json& init, const std::string& ipath) {
    if (!init.is_object()) {
      reader.error(ipath, "expected an init object ({\"dist\": ...})");
      return;
    }
    auto input = std::find_if(inputs.begin(), inputs.end(),
                              [&](const TensorSpec& t) { return t.name == name; });
    InitSpec& spec = overridden[name] =
        read_init_object(reader, init, ipath, input->dtype, symbols);
    if (format < 3 && spec.needs_format_3())
      reader.error(ipath, "sorted and repeated_max need \"format\": 3");
  };
  each_named_member(reader, overrides, path, names, "an input", read);
  return overridden;
}

}  // namespace

std::optional<StressRound> mirrored_round(const StressRound& round,
                                          const std::vector<TensorSpec>& inputs) {
  StressRound twin = round;
  bool changed = false;
  for (auto& [name, init] : twin.inputs) {
    auto input = std::find_if(inputs.begin(), inputs.end(),
                              [&](const TensorSpec& t) { return t.name == name; });
    if (input == inputs.end()) continue;
    if (auto m = init.mirrored(input->dtype)) {
      init = *m;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  twin.mirror_of = round.name;
  twin.unmirrored.clear();
  twin.name = derived_name(twin.inputs) + " (mirror of '" + round.name + "')";
  return twin;
}

const InitSpec& stress_init(const StressRound* round, const TensorSpec& input) {
  if (round) {
    auto it = round->inputs.find(input.name);
    if (it != round->inputs.end()) return it->second;
  }
  return input.init;
}

std::vector<ShapeBinding> read_shape_list(JsonReader& reader, const json& root,
                                          const std::string& path, const std::string& key,
                                          const std::map<std::string, int64_t>& sizes,
                                          bool required) {
  std::vector<ShapeBinding> shapes;
  const json* list = reader.typed_field(root, path, key, json::value_t::array, required);
  if (!list) return shapes;
  reader.each_object(
      *list, path + "." + key,
      [&](const json& item, const std::string& item_path) {
        shapes.push_back(read_size_overrides(reader, item, item_path, sizes));
      },
      "expected an object of size overrides");
  return shapes;
}

std::vector<StressRound> read_stress_rounds(JsonReader& reader, const json& root,
                                            const std::vector<TensorSpec>& inputs,
                                            const std::map<std::string, int64_t>& sizes,
                                            int format) {
  std::vector<StressRound> rounds;
  const json* list = reader.typed_field(root, "$", "stress", json::value_t::array, false);
  if (!list) return rounds;
  if (format < 2) reader.error("$.stress", "stress rounds need \"format\": 2");
  std::set<std::string> symbols;
  for (const auto& [n, v] : sizes) symbols.insert(n);
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = "$.stress[" + std::to_string(i) + "]";
    const json& item = (*list)[i];
    if (!item.is_object()) {
      reader.error(path, "expected an object with \"inputs\" (and optional \"name\", \"shapes\")");
      continue;
    }
    reader.check_keys(item, path, kStressKeys);
    StressRound round;
    if (const json* overrides =
            reader.typed_field(item, path, "inputs", json::value_t::object, true)) {
      if (overrides->empty()) reader.error(path + ".inputs", "override at least one input");
      round.inputs =
          read_input_overrides(reader, *overrides, path + ".inputs", inputs, symbols, format);
    }
    round.shapes = read_shape_list(reader, item, path, "shapes", sizes, false);
    if (item.contains("shapes") && round.shapes.empty() && item.at("shapes").is_array())
      reader.error(path + ".shapes", "leave it out to use the sweep's shapes, or list some");
    auto given = reader.string_field(item, path, "name", false);
    round.name = given ? *given : derived_name(round.inputs);
    if (given && given->empty()) reader.error(path + ".name", "must not be empty");
    if (!round.name.empty() && !seen.insert(round.name).second)
      reader.error(path + ".name", "stress round name '" + round.name +
                                       "' is used twice (give each round its own \"name\")");
    if (item.contains("unmirrored")) {
      auto reason = reader.string_field(item, path, "unmirrored", false);
      if (format < 3) reader.error(path + ".unmirrored", "needs \"format\": 3");
      if (reason && trim(*reason).empty())
        reader.error(path + ".unmirrored", "give the reason the round has no mirrored twin");
      if (reason) round.unmirrored = *reason;
    }
    rounds.push_back(std::move(round));
  }
  // Format 3: a round of one sign implies its mirror (a cross-entropy that starts its max at 0
  // passes 'mean 1000' and fails 'mean -1000'), unless the task says why not.
  if (format >= 3) {
    size_t given = rounds.size();
    for (size_t i = 0; i < given; ++i) {
      if (!rounds[i].unmirrored.empty()) continue;
      auto twin = mirrored_round(rounds[i], inputs);
      if (!twin) continue;
      if (!seen.insert(twin->name).second) {
        reader.error("$.stress[" + std::to_string(i) + "]",
                     "its mirrored twin's name '" + twin->name + "' is taken by another round");
        continue;
      }
      rounds.push_back(std::move(*twin));
    }
  }
  return rounds;
}

}  // namespace kopt
