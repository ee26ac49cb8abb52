#include "src/cli/status_counts.h"

#include <cstdio>
#include <ctime>
#include <limits>
#include <map>

#include "memory_store/plan_store.h"
#include "memory_store/task_counts.h"

namespace kopt::cli {

namespace {

// Seconds since the epoch of "2026-11-25T03:04:05Z" (the memory's timestamps), or -1.
double utc_seconds(const std::string& text) {
  std::tm tm{};
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

orchestrator::TaskProgress& task_named(orchestrator::RunProgress& progress,
                                       const std::string& name) {
  for (auto& t : progress.tasks)
    if (t.name == name) return t;
  orchestrator::TaskProgress added;
  added.name = name;
  added.state = "-";
  progress.tasks.push_back(added);
  return progress.tasks.back();
}

}  // namespace

Status apply_database_counts(memory::MemoryStore& store, orchestrator::RunProgress& progress) {
  if (progress.state != "running" && progress.state != "draining") {
    progress.time_left_seconds.reset();
  }
  // The report's numbers (memory_store/task_counts.h): candidates without the baseline's own
  // evaluations, and the best by the one rule of task_best.h.
  auto counts = memory::task_counts(store.database(), progress.run_id);
  if (!counts) return make_error(counts.error());
  for (const auto& [name, c] : *counts) task_named(progress, name);
  for (auto& t : progress.tasks) {
    auto found = counts->find(t.name);
    if (found == counts->end()) continue;
    const memory::TaskCounts& c = found->second;
    t.candidates = c.candidates;
    t.failures = c.rejected;
    if (c.best) {
      t.best_speedup = c.best->speedup;
      t.best_us = c.best->median_us;
      t.best_sol_percent = c.best->sol_percent;
    }
  }
  auto calls = memory::list_transcripts(store.database(), progress.run_id,
                                        std::numeric_limits<int64_t>::max());
  if (!calls) return make_error(calls.error());
  if (calls->empty()) return ok_status();  // prompts not kept: the daemon's own count stays
  std::map<std::string, int64_t> per_task;
  for (const auto& c : *calls) ++per_task[c.task];
  for (auto& t : progress.tasks) t.llm_calls = per_task[t.name];
  return ok_status();
}

orchestrator::RunProgress progress_from_record(const memory::RunRecord& run) {
  orchestrator::RunProgress progress;
  progress.run_id = run.id;
  progress.state = run_status_name(run.status);
  auto config = nlohmann::json::parse(run.config_json, nullptr, false);
  bool llm = config.is_object() && config.contains("options") && config["options"].is_object() &&
             config["options"].value("use_llm", false);
  progress.mode = llm ? "llm" : "tuner";
  double start = utc_seconds(run.started_at);
  double end = run.finished_at.empty() ? -1 : utc_seconds(run.finished_at);
  if (start >= 0 && end >= start) progress.elapsed_seconds = end - start;
  return progress;
}

}  // namespace kopt::cli
