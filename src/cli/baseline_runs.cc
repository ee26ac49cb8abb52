#include "src/cli/baseline_runs.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/files.h"
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

namespace {

// One measured row (the helper's or the worker's, the same fields) as the memory stores it, for
// `task` on the GPU `device` describes; nothing when it names no baseline or no positive time.
std::optional<memory::ProductionBaselineRecord> record_of(const json& row, const json& device,
                                                          const TaskSpec& task) {
  memory::ProductionBaselineRecord r;
  r.task = task.name;
  r.name = row.value("name", "");
  r.median_us = row.value("median_us", 0.0);
  if (r.name.empty() || !(r.median_us > 0)) return std::nullopt;
  r.noise = row.value("noise", 0.0);
  r.samples = row.value("samples", int64_t{0});
  r.gpu_model = device.value("name", "");
  r.device_json = device.dump();
  r.library_versions_json = row.value("library_versions", json::object()).dump();
  r.spec_sha256 = task.spec_hash;
  r.shape = row.value("shape", "");
  r.detail = row.value("detail", "");
  return r;
}

// The absence row of a library that did not import (scripts/library_baselines.py's "not
// installed: ..." error), on the GPU the row's device names; nothing for any other error.
std::optional<memory::ProductionBaselineRecord> absence_of(const json& row, const TaskSpec& task,
                                                           const std::string& error) {
  if (error.rfind("not installed", 0) != 0) return std::nullopt;
  memory::ProductionBaselineRecord r;
  r.task = task.name;
  r.name = row.value("name", "");
  json device = row.value("device", json::object());
  r.gpu_model = device.is_object() ? device.value("name", "") : "";
  if (r.name.empty() || r.gpu_model.empty()) return std::nullopt;
  r.device_json = device.dump();
  r.spec_sha256 = task.spec_hash;
  r.shape = row.value("shape", "");
  r.detail = error;
  return r;
}

}  // namespace

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
    const TaskSpec* task = nullptr;
    for (const auto& t : tasks) {
      if (t.name == task_name) task = &t;
    }
    if (j.contains("error")) {
      std::string what = task_name.empty() ? "" : task_name + " " + name + ": ";
      std::string error =
          j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
      report.problems.push_back(what + error);
      // A library that does not import is stored as an absence (median 0), so that status, the
      // report and the export say "not installed" for it rather than nothing.
      auto absent = task ? absence_of(j, *task, error) : std::nullopt;
      if (absent) report.stored.push_back(std::move(*absent));
      continue;
    }
    auto r = task ? record_of(j, j.value("device", json::object()), *task) : std::nullopt;
    if (!r) {
      report.problems.push_back("the helper printed an unusable row: " + line.substr(0, 120));
      continue;
    }
    if (j.contains("op")) r->detail += " (" + j.value("op", "") + ")";
    report.stored.push_back(std::move(*r));
  }
  return report;
}

BaselineRunReport parse_cublaslt_answer(const json& result, const TaskSpec& task) {
  BaselineRunReport report;
  json device = result.value("device", json::object());
  for (const auto& row : result.value("rows", json::array())) {
    auto r = record_of(row, device, task);
    if (!r) {
      report.problems.push_back(
          task.name + ": the worker sent an unusable cuBLASLt row: " + row.dump().substr(0, 120));
      continue;
    }
    report.stored.push_back(std::move(*r));
  }
  return report;
}

namespace {

// cuBLASLt rows of every task that declares them, from one worker that exits before the PyTorch
// helper starts (the worker would see the helper's context as another user of the GPU).
BaselineRunReport measure_cublaslt_rows(const std::vector<TaskSpec>& tasks,
                                        const SandboxOptions& worker) {
  BaselineRunReport report;
  std::optional<SandboxEvaluator> evaluator;
  for (const auto& task : tasks) {
    if (!task_baselines(task.raw_json).wants("cublaslt")) continue;
    auto reference = read_file(task.dir / "reference.cu");
    if (!reference) {
      report.problems.push_back(task.name + " cublaslt: " + reference.error());
      continue;
    }
    if (!evaluator) {
      evaluator.emplace(worker);
      if (auto started = evaluator->start(); !started) {
        report.problems.push_back("cuBLASLt baselines: " + started.error());
        return report;
      }
    }
    json body = {{"task_json", task.raw_json},
                 {"reference", {{"source", *reference}, {"origin", "reference.cu"}}}};
    auto answer = evaluator->call("cublaslt", std::move(body), 900);
    if (!answer) {
      report.problems.push_back(task.name + " cublaslt: " + answer.error());
      continue;
    }
    BaselineRunReport rows = parse_cublaslt_answer((*answer)["result"], task);
    report.problems.insert(report.problems.end(), rows.problems.begin(), rows.problems.end());
    for (auto& r : rows.stored) report.stored.push_back(std::move(r));
  }
  if (evaluator) evaluator->shutdown();
  return report;
}

// Eager and torch.compile rows from the PyTorch helper.
BaselineRunReport measure_torch_rows(const std::vector<TaskSpec>& tasks,
                                     const BaselineRunOptions& options) {
  BaselineRunReport report;
  std::vector<std::string> argv = {options.python, options.helper.string()};
  if (!options.torch_compile) argv.push_back("--no-compile");
  size_t torch_tasks = 0;
  for (const auto& t : tasks) {
    auto declared = task_baselines(t.raw_json);
    // Every name but cublaslt is the PyTorch helper's (the libraries:
    // scripts/library_baselines.py).
    bool helper_rows = std::any_of(declared.names.begin(), declared.names.end(),
                                   [](const std::string& n) { return n != "cublaslt"; });
    if (helper_rows) {
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
  report = parse_helper_output(out->stdout_text, tasks);
  if (out->exit_code != 0 && out->exit_code != 3) {
    std::string tail = out->stderr_text.size() > 600
                           ? out->stderr_text.substr(out->stderr_text.size() - 600)
                           : out->stderr_text;
    report.problems.push_back(
        options.helper.string() + " failed (" +
        (out->timed_out ? std::string("timed out") : "exit " + std::to_string(out->exit_code)) +
        "): " + tail);
  }
  return report;
}

}  // namespace

BaselineRunReport measure_production_baselines(memory::MemoryStore& store,
                                               const std::vector<TaskSpec>& tasks,
                                               const BaselineRunOptions& options) {
  BaselineRunReport report, measured;
  for (const auto& t : tasks) {
    if (task_baselines(t.raw_json).names.empty())
      report.problems.push_back(t.name + ": task.json declares no production baselines");
  }
  // The worker first, and gone before the helper starts.
  BaselineRunReport lt = measure_cublaslt_rows(tasks, options.worker);
  BaselineRunReport torch =
      options.torch ? measure_torch_rows(tasks, options) : BaselineRunReport{};
  for (auto* part : {&lt, &torch}) {
    measured.problems.insert(measured.problems.end(), part->problems.begin(), part->problems.end());
    for (auto& row : part->stored) measured.stored.push_back(std::move(row));
  }
  report.problems.insert(report.problems.end(), measured.problems.begin(), measured.problems.end());
  for (auto& row : measured.stored) {
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
