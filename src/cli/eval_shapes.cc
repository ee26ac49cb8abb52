#include "src/cli/eval_shapes.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "common/strings.h"

namespace kopt::cli {

using nlohmann::json;

Result<std::string> task_at_shape(const std::string& task_json, const json& overrides) {
  json task = json::parse(task_json, nullptr, false);
  if (!task.is_object() || !task.contains("sizes") || !task["sizes"].is_object()) {
    return make_error("task.json has no sizes object");
  }
  if (!overrides.is_object()) return make_error("a shape is not an object of sizes");
  for (const auto& [name, value] : overrides.items()) {
    if (!task["sizes"].contains(name)) return make_error("shape names an unknown size " + name);
    task["sizes"][name] = value;
  }
  task["shapes"] = json::array({json::object()});
  task.erase("holdout");
  return task.dump();
}

namespace {

std::string shape_text(const json& overrides) {
  if (overrides.empty()) return "(timed shape)";
  std::vector<std::string> parts;
  for (const auto& [name, value] : overrides.items()) {
    parts.push_back(name + "=" + value.dump());
  }
  return join(parts, " ");
}

}  // namespace

Result<std::vector<ShapeTiming>> time_each_shape(Evaluator& evaluator, const EvalRequest& request) {
  json task = json::parse(request.task_json, nullptr, false);
  if (!task.is_object() || !task.contains("shapes") || !task["shapes"].is_array()) {
    return make_error("task.json has no shapes list");
  }
  std::vector<ShapeTiming> rows;
  for (const json& overrides : task["shapes"]) {
    auto at = task_at_shape(request.task_json, overrides);
    if (!at) return make_error(at.error());
    EvalRequest one = request;
    one.task_json = *at;
    // Judged in full already: one round of that shape only, then the timing.
    one.options.rounds = 1;
    one.options.check_holdout = false;
    one.options.stress = false;
    one.options.draws = false;
    one.options.profile.clear();
    auto result = evaluator.evaluate(one);
    if (!result) return make_error(shape_text(overrides) + ": " + result.error());
    ShapeTiming row;
    row.shape = shape_text(overrides);
    row.verdict = verdict_name(result->verdict);
    if (result->candidate_time) {
      row.candidate_us = result->candidate_time->median_us;
      row.noise = result->candidate_time->noise;
    }
    if (result->baseline_time) row.baseline_us = result->baseline_time->median_us;
    row.speedup = result->speedup;
    row.sol_percent = result->sol_percent;
    rows.push_back(std::move(row));
  }
  return rows;
}

json shape_timings_json(const std::vector<ShapeTiming>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    out.push_back({{"shape", r.shape},
                   {"verdict", r.verdict},
                   {"candidate_us", r.candidate_us > 0 ? json(r.candidate_us) : json()},
                   {"baseline_us", r.baseline_us > 0 ? json(r.baseline_us) : json()},
                   {"speedup", r.speedup > 0 ? json(r.speedup) : json()},
                   {"sol_percent", r.sol_percent > 0 ? json(r.sol_percent) : json()},
                   {"noise", r.noise}});
  }
  return out;
}

void print_shape_timings(const std::vector<ShapeTiming>& rows) {
  std::printf("\n%-32s %-10s %12s %12s %8s %6s\n", "shape", "verdict", "kernel us", "baseline us",
              "speedup", "%SOL");
  auto cell = [](double v, const char* format) {
    return v > 0 ? fmt::format(fmt::runtime(format), v) : std::string("-");
  };
  for (const auto& r : rows) {
    std::printf("%-32s %-10s %12s %12s %8s %6s\n", r.shape.substr(0, 32).c_str(), r.verdict.c_str(),
                cell(r.candidate_us, "{:.2f}").c_str(), cell(r.baseline_us, "{:.2f}").c_str(),
                cell(r.speedup, "{:.2f}x").c_str(), cell(r.sol_percent, "{:.1f}").c_str());
  }
}

}  // namespace kopt::cli
