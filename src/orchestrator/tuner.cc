#include "src/orchestrator/tuner.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace kopt::orchestrator {

namespace {

constexpr std::string_view kPlanOpen = "/* kopt:plan";

int64_t space_size(const std::vector<Tunable>& tunables, int64_t cap) {
  int64_t size = 1;
  for (const Tunable& t : tunables) {
    size *= std::max<int64_t>(1, static_cast<int64_t>(t.values.size()));
    if (size > cap) return cap + 1;
  }
  return size;
}

// The plan as a person writes it: one key per line, one launch per line, values compact.
std::string format_plan(const nlohmann::ordered_json& plan) {
  std::string text = "{\n";
  size_t index = 0;
  for (const auto& [key, value] : plan.items()) {
    text += "  " + nlohmann::json(key).dump() + ": ";
    if (value.is_array() && !value.empty() && value.front().is_object()) {
      text += "[\n";
      for (size_t i = 0; i < value.size(); ++i) {
        text += "    " + value[i].dump() + (i + 1 < value.size() ? ",\n" : "\n");
      }
      text += "  ]";
    } else {
      text += value.dump();
    }
    text += ++index < plan.size() ? ",\n" : "\n";
  }
  return text + "}";
}

}  // namespace

std::string describe_config(const TunableConfig& config) {
  if (config.empty()) return "defaults";
  std::string text;
  for (const auto& [name, value] : config) {
    if (!text.empty()) text += ' ';
    text += name + "=" + std::to_string(value);
  }
  return text;
}

std::string config_json(const TunableConfig& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : config) j[name] = value;
  return j.dump();
}

Result<std::string> with_default_tunables(const std::string& source, const TunableConfig& config) {
  size_t open = source.find(kPlanOpen);
  if (open == std::string::npos) return make_error("no kopt:plan block");
  size_t body = open + kPlanOpen.size();
  size_t close = source.find("*/", body);
  if (close == std::string::npos) return make_error("the kopt:plan block is not closed");
  std::string_view plan_text = std::string_view(source).substr(body, close - body);
  if (json_nesting_depth(plan_text) > kMaxJsonDepth)
    return make_error("the kopt:plan nests too deep");
  auto plan = nlohmann::ordered_json::parse(plan_text, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) return make_error("the kopt:plan is not JSON");
  if (!plan.contains("tunables") || !plan["tunables"].is_object()) {
    return config.empty() ? Result<std::string>(source)
                          : Result<std::string>(make_error("the plan declares no tunables"));
  }
  for (const auto& [name, value] : config) {
    auto& list = plan["tunables"][name];
    if (!list.is_array()) return make_error("the plan declares no tunable " + name);
    nlohmann::ordered_json reordered = nlohmann::ordered_json::array({value});
    bool found = false;
    for (const auto& v : list) {
      if (v.is_number_integer() && v.get<int64_t>() == value) {
        found = true;
      } else {
        reordered.push_back(v);
      }
    }
    if (!found) return make_error("tunable " + name + " has no value " + std::to_string(value));
    list = std::move(reordered);
  }
  return source.substr(0, body) + "\n" + format_plan(plan) + "\n" + source.substr(close);
}

TunerSweep::TunerSweep(std::vector<Tunable> tunables, int max_configs)
    : tunables_(std::move(tunables)), max_configs_(max_configs) {
  for (const Tunable& t : tunables_) {
    if (!t.values.empty()) defaults_[t.name] = t.values.front();
  }
  tried_.insert(defaults_);
}

bool TunerSweep::has_space() const { return space_size(tunables_, 2) > 1; }

std::vector<TunableConfig> TunerSweep::next_batch(const TunableConfig& best) {
  std::vector<TunableConfig> batch;
  auto add = [&](const TunableConfig& config) {
    if (proposed_ >= max_configs_ || tried_.count(config)) return;
    tried_.insert(config);
    batch.push_back(config);
    ++proposed_;
  };
  if (space_size(tunables_, max_configs_ + 1) <= max_configs_ + 1) {
    // The whole space fits in the budget: try it all at once (defaults are already known).
    if (exhaustive_done_) return batch;
    exhaustive_done_ = true;
    std::vector<TunableConfig> all = {TunableConfig{}};
    for (const Tunable& t : tunables_) {
      std::vector<TunableConfig> grown;
      for (const auto& partial : all) {
        for (int64_t v : t.values) {
          TunableConfig c = partial;
          c[t.name] = v;
          grown.push_back(std::move(c));
        }
      }
      all = std::move(grown);
    }
    for (const auto& c : all) add(c);
    return batch;
  }
  // Coordinate descent: vary one tunable at a time around the best configuration.
  TunableConfig center = best.empty() ? defaults_ : best;
  for (const Tunable& t : tunables_) {
    for (int64_t v : t.values) {
      TunableConfig c = center;
      c[t.name] = v;
      add(c);
    }
  }
  return batch;
}

}  // namespace kopt::orchestrator
