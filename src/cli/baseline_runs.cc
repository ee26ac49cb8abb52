#include "src/cli/baseline_runs.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "common/subprocess.h"
#include "sandbox/task_baselines.h"

namespace kopt::cli {

using nlohmann::json;

std::filesystem::path default_torch_helper() {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  // bin/kopt beside scripts/ (a copied tree), or build/bin/kopt in the source tree; else the
  // tree this binary was built from.
  if (!error) {
    auto bin = self.parent_path();
    for (const auto& root : {bin.parent_path(), bin.parent_path().parent_path()}) {
      auto beside = root / "scripts" / "torch_baselines.py";
      if (std::filesystem::exists(beside)) return beside;
    }
  }
  return std::filesystem::path(KOPT_SOURCE_DIR) / "scripts" / "torch_baselines.py";
}

BaselineRunReport parse_helper_output(const std::string& stdout_text,
                                      const std::vector<TaskSpec>& tasks) {
  BaselineRunReport report;
  for (const std::string& line : split(stdout_text, '\n')) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) {
      report.problems.push_back("the helper printed a line that is not JSON: " +
                                line.substr(0, 120));
      continue;
    }
    std::string task_name = j.value("task", "");
    std::string name = j.value("name", "");
    if (j.contains("error")) {
      std::string what = task_name.empty() ? "" : task_name + " " + name + ": ";
      report.problems.push_back(what + j["error"].get<std::string>());
      continue;
    }
    const TaskSpec* task = nullptr;
    for (const auto& t : tasks) {
      if (t.name == task_name) task = &t;
    }
    double median = j.value("median_us", 0.0);
    if (!task || name.empty() || !(median > 0)) {
      report.problems.push_back("the helper printed an unusable row: " + line.substr(0, 120));
      continue;
    }
    memory::ProductionBaselineRecord r;
    r.task = task_name;
    r.name = name;
    r.median_us = median;
    r.noise = j.value("noise", 0.0);
    r.samples = j.value("samples", int64_t{0});
    json device = j.value("device", json::object());
    r.gpu_model = device.value("name", "");
    r.device_json = device.dump();
    r.library_versions_json = j.value("library_versions", json::object()).dump();
    r.spec_sha256 = task->spec_hash;
    r.shape = j.value("shape", "");
    r.detail = j.value("detail", "") + (j.contains("op") ? " (" + j.value("op", "") + ")" : "");
    report.stored.push_back(std::move(r));
  }
  return report;
}

BaselineRunReport measure_production_baselines(memory::MemoryStore& store,
                                               const std::vector<TaskSpec>& tasks,
                                               const BaselineRunOptions& options) {
  BaselineRunReport report;
  std::vector<std::string> argv = {options.python, options.helper.string()};
  if (!options.torch_compile) argv.push_back("--no-compile");
  size_t torch_tasks = 0;
  for (const auto& t : tasks) {
    if (task_baselines(t.raw_json).names.empty()) {
      report.problems.push_back(t.name + ": task.json declares no production baselines");
    } else {
      argv.push_back(t.dir.string());
      ++torch_tasks;
    }
  }
  if (torch_tasks == 0) return report;
  // torch.compile takes up to a minute per task on a cold cache.
  auto out = run_command(argv, "", std::chrono::minutes(10 + 2 * static_cast<int>(torch_tasks)));
  if (!out) {
    report.problems.push_back("could not start " + options.helper.string() + ": " + out.error());
    return report;
  }
  BaselineRunReport parsed = parse_helper_output(out->stdout_text, tasks);
  report.problems.insert(report.problems.end(), parsed.problems.begin(), parsed.problems.end());
  if (out->exit_code != 0 && out->exit_code != 3) {
    std::string tail = out->stderr_text.size() > 600
                           ? out->stderr_text.substr(out->stderr_text.size() - 600)
                           : out->stderr_text;
    report.problems.push_back(
        options.helper.string() + " failed (" +
        (out->timed_out ? std::string("timed out") : "exit " + std::to_string(out->exit_code)) +
        "): " + tail);
  }
  for (auto& row : parsed.stored) {
    auto id = memory::add_production_baseline(store.database(), row);
    if (!id) {
      report.problems.push_back(id.error());
      continue;
    }
    row.id = *id;
    report.stored.push_back(std::move(row));
  }
  return report;
}

}  // namespace kopt::cli
