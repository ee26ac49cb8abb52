#include "src/orchestrator/tuner.h"

#include <algorithm>
#include <cstdlib>
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
  space_ = space_size(tunables_, kSpaceCap - 1);
  // The draws depend on the space alone: a second night rebuilding the sweep asks for the same
  // configurations, which it then finds judged.
  draw_state_ = 0x9e3779b97f4a7c15ULL;
  for (const Tunable& t : tunables_) {
    for (char c : t.name) draw_state_ = (draw_state_ ^ uint8_t(c)) * 0x100000001b3ULL;
    for (int64_t v : t.values) draw_state_ = (draw_state_ ^ uint64_t(v)) * 0x100000001b3ULL;
  }
}

bool TunerSweep::has_space() const { return space_ > 1; }

void TunerSweep::record(const TunableConfig& config, double speedup) {
  tried_.insert(config);
  results_[config] = speedup;
}

std::vector<TunableConfig> TunerSweep::next_batch(const TunableConfig& best) {
  std::vector<TunableConfig> batch;
  const bool whole = space_ <= max_configs_ + 1;  // the defaults are known: cap + 1 fit
  const int left = max_configs_ - proposed_;
  // Halving: the first rung takes half the cap, each later one half of what is left; a small
  // space is tried whole at once.
  const int rung_budget = whole ? left : rung_ == 0 ? (max_configs_ + 1) / 2 : (left + 1) / 2;
  auto add = [&](const TunableConfig& config) {
    if (int(batch.size()) >= rung_budget || proposed_ >= max_configs_ || tried_.count(config))
      return;
    tried_.insert(config);
    batch.push_back(config);
    ++proposed_;
  };
  if (whole) {
    for (const auto& c : whole_space()) add(c);
  } else if (rung_ == 0) {
    for (const auto& c : first_rung(rung_budget)) add(c);
  } else {
    for (const auto& center : survivors(best))
      for (const auto& c : neighbours(center)) add(c);
    // Survivors whose neighbourhoods are spent: the rest of the product, drawn.
    for (int tries = 0; int(batch.size()) < rung_budget && tries < 8 * rung_budget; ++tries)
      add(drawn_config());
  }
  ++rung_;
  return batch;
}

std::vector<TunableConfig> TunerSweep::whole_space() const {
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
  return all;
}

// One-tunable moves from the defaults for two thirds of the rung, draws from the whole product
// for the rest (so interactions get a chance even when the moves alone would fill it), then the
// moves left over.
std::vector<TunableConfig> TunerSweep::first_rung(int budget) {
  std::vector<TunableConfig> moves, rung;
  for (const Tunable& t : tunables_) {
    for (int64_t v : t.values) {
      TunableConfig c = defaults_;
      c[t.name] = v;
      if (c != defaults_) moves.push_back(std::move(c));
    }
  }
  size_t first_moves = std::min(moves.size(), size_t(budget - budget / 3));
  rung.assign(moves.begin(), moves.begin() + first_moves);
  for (int i = 0; i < budget; ++i) rung.push_back(drawn_config());
  rung.insert(rung.end(), moves.begin() + first_moves, moves.end());
  return rung;
}

// The best third of the configurations that verified, best first (at least one); without any,
// the caller's best or the defaults.
std::vector<TunableConfig> TunerSweep::survivors(const TunableConfig& best) const {
  std::vector<std::pair<double, TunableConfig>> ranked;
  for (const auto& [config, speedup] : results_)
    if (speedup > 0) ranked.emplace_back(speedup, config);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<TunableConfig> kept;
  size_t keep = std::max<size_t>(1, (ranked.size() + 2) / 3);
  for (size_t i = 0; i < ranked.size() && i < keep; ++i) kept.push_back(ranked[i].second);
  if (kept.empty()) kept.push_back(best.empty() ? defaults_ : best);
  return kept;
}

// A configuration's neighbours: each tunable one step up or down its values in numeric order
// first, then to every other value (the coordinate line through it).
std::vector<TunableConfig> TunerSweep::neighbours(const TunableConfig& center) const {
  std::vector<TunableConfig> near, far;
  for (const Tunable& t : tunables_) {
    std::vector<int64_t> sorted = t.values;
    std::sort(sorted.begin(), sorted.end());
    auto at = center.find(t.name);
    if (at == center.end()) continue;
    auto pos = std::find(sorted.begin(), sorted.end(), at->second) - sorted.begin();
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] == at->second) continue;
      TunableConfig c = center;
      c[t.name] = sorted[i];
      (std::llabs(int64_t(i) - pos) == 1 ? near : far).push_back(std::move(c));
    }
  }
  near.insert(near.end(), far.begin(), far.end());
  return near;
}

// One configuration drawn uniformly from the product (splitmix64 on the sweep's own state).
TunableConfig TunerSweep::drawn_config() {
  TunableConfig c;
  for (const Tunable& t : tunables_) {
    if (t.values.empty()) continue;
    uint64_t z = (draw_state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    c[t.name] = t.values[z % t.values.size()];
  }
  return c;
}

std::vector<std::string> tunable_names(const TunerSweep& sweep) {
  std::vector<std::string> names;
  for (const auto& [name, value] : sweep.defaults()) names.push_back(name);
  return names;
}

std::string describe_space(const TunerSweep& sweep) {
  if (sweep.space() >= TunerSweep::kSpaceCap) return "more than a billion configurations";
  return std::to_string(sweep.space()) +
         (sweep.space() == 1 ? " configuration" : " configurations");
}

}  // namespace kopt::orchestrator
