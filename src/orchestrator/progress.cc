#include "src/orchestrator/progress.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/text_escape.h"
#include "common/utf8.h"

namespace kopt::orchestrator {

using nlohmann::json;

// A task's row of the progress file holds its fields under their own names; a reader takes the
// fields it finds and keeps the defaults of the rest (files of older formats lack some).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TaskProgress, name, state, note, best_speedup,
                                                best_sol_percent, best_us, candidates, failures,
                                                repeats, llm_calls, in_flight, tokens, cost_usd)

json RunProgress::to_json() const {
  json refused_json = json::array();
  for (const RefusedTask& r : refused)
    refused_json.push_back({{"dir", r.dir}, {"reason", r.reason}});
  // Format 2 added waiting_workers, format 3 refused; readers take what is there.
  json j = {{"format", 3},
            {"run_id", run_id},
            {"pid", pid},
            {"state", state},
            {"stop_reason", stop_reason},
            {"mode", mode},
            {"gpu", gpu},
            {"gpus", gpus},
            {"workers_per_gpu", workers_per_gpu},
            {"elapsed_seconds", elapsed_seconds},
            {"time_left_seconds", time_left_seconds ? json(*time_left_seconds) : json(nullptr)},
            {"max_usd", max_usd ? json(*max_usd) : json(nullptr)},
            {"tokens", tokens},
            {"cost_usd", cost_usd},
            {"pending_submissions", pending_submissions},
            {"alarm", alarm},
            {"waiting_workers", waiting_workers},
            {"gpu_busy_fraction", gpu_busy_fraction ? json(*gpu_busy_fraction) : json(nullptr)},
            {"sanitizer_runs", sanitizer_runs},
            {"sanitizer_pending", sanitizer_pending},
            {"search_done_seconds", search_done_seconds ? json(*search_done_seconds) : json()},
            {"tasks", tasks},
            {"refused", std::move(refused_json)}};
  return j;
}

RunProgress RunProgress::from_json(const json& j) {
  RunProgress p;
  p.run_id = j.value("run_id", int64_t{0});
  p.pid = j.value("pid", int64_t{0});
  p.state = j.value("state", "");
  p.stop_reason = j.value("stop_reason", "");
  p.mode = j.value("mode", "");
  p.gpu = j.value("gpu", "");
  p.gpus = j.value("gpus", 0);
  p.workers_per_gpu = j.value("workers_per_gpu", 1);
  p.elapsed_seconds = j.value("elapsed_seconds", 0.0);
  if (j.contains("time_left_seconds") && j["time_left_seconds"].is_number()) {
    p.time_left_seconds = j["time_left_seconds"].get<double>();
  }
  if (j.contains("max_usd") && j["max_usd"].is_number()) p.max_usd = j["max_usd"].get<double>();
  p.tokens = j.value("tokens", int64_t{0});
  p.cost_usd = j.value("cost_usd", 0.0);
  p.pending_submissions = j.value("pending_submissions", int64_t{0});
  p.alarm = j.value("alarm", "");
  if (j.contains("waiting_workers") && j["waiting_workers"].is_array()) {
    for (const json& w : j["waiting_workers"]) {
      if (w.is_string()) p.waiting_workers.push_back(w.get<std::string>());
    }
  }
  if (j.contains("gpu_busy_fraction") && j["gpu_busy_fraction"].is_number())
    p.gpu_busy_fraction = j["gpu_busy_fraction"].get<double>();
  p.sanitizer_runs = j.value("sanitizer_runs", int64_t{0});
  p.sanitizer_pending = j.value("sanitizer_pending", int64_t{0});
  if (j.contains("search_done_seconds") && j["search_done_seconds"].is_number())
    p.search_done_seconds = j["search_done_seconds"].get<double>();
  if (j.contains("tasks") && j["tasks"].is_array()) {
    for (const json& t : j["tasks"]) p.tasks.push_back(t.get<TaskProgress>());
  }
  if (j.contains("refused") && j["refused"].is_array()) {
    for (const json& r : j["refused"]) {
      if (r.is_object()) p.refused.push_back({r.value("dir", ""), r.value("reason", "")});
    }
  }
  return p;
}

std::string format_duration(double seconds) {
  if (seconds < 0) seconds = 0;
  auto total = static_cast<int64_t>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

namespace {

std::string tokens_text(int64_t tokens) {
  if (tokens >= 1'000'000) return fmt::format("{:.1f}M", tokens / 1e6);
  if (tokens >= 1'000) return fmt::format("{:.1f}k", tokens / 1e3);
  return std::to_string(tokens);
}

// A line for a terminal: a task's note can hold model or endpoint text, shown with visible
// escapes (no cursor moves, no OSC sequences), cut at a word and on a character.
std::string fit(const std::string& line, size_t width) {
  return fit_words(terminal_text(line), width);
}

}  // namespace

std::string fit_words(std::string line, size_t width) {
  if (line.size() <= width) return line;
  const std::string mark = "...";
  if (width <= mark.size()) return std::string(utf8_prefix(line, width));
  size_t keep = width - mark.size();
  // The last space at or before the cut, unless that leaves less than half the line.
  size_t space = line.rfind(' ', keep);
  if (space != std::string::npos && space >= keep / 2) keep = space;
  line = std::string(utf8_prefix(line, keep));
  while (!line.empty() &&
         (line.back() == ' ' || line.back() == ',' || line.back() == ';' || line.back() == ':')) {
    line.pop_back();
  }
  return line + mark;
}

std::vector<std::string> render_progress(const RunProgress& p, size_t width) {
  std::vector<std::string> lines;
  lines.push_back(fit(fmt::format("{:<18} {:>8} {:>6} {:>6} {:>5} {:>7} {:>8}  {}", "task",
                                  "speedup", "%SOL", "cands", "fail", "tokens", "cost", "state"),
                      width));
  int64_t candidates = 0, failures = 0;
  for (const TaskProgress& t : p.tasks) {
    candidates += t.candidates;
    failures += t.failures;
    std::string speedup = t.best_speedup > 0 ? fmt::format("{:.2f}x", t.best_speedup) : "-";
    std::string sol = t.best_sol_percent > 0 ? fmt::format("{:.1f}", t.best_sol_percent) : "-";
    std::string state = t.state;
    if (t.in_flight > 0) state += fmt::format(" ({} running)", t.in_flight);
    if (t.repeats > 0) state += fmt::format(" ({} repeats)", t.repeats);
    if (!t.note.empty()) state += ": " + t.note;
    lines.push_back(
        fit(fmt::format("{:<18} {:>8} {:>6} {:>6} {:>5} {:>7} {:>8}  {}", utf8_prefix(t.name, 18),
                        speedup, sol, t.candidates, t.failures, tokens_text(t.tokens),
                        fmt::format("${:.2f}", t.cost_usd), state),
            width));
  }
  for (const RefusedTask& r : p.refused) {
    std::string name = std::filesystem::path(r.dir).filename().string();
    // The first line of the reason: the rest (a "did you mean") is in `kopt status --json`.
    std::string reason = r.reason.substr(0, r.reason.find('\n'));
    // The reason on a line of its own: it starts with the task file's path, which would leave
    // nothing of it in the state column.
    lines.push_back(
        fit(fmt::format("{:<18} {:>8} {:>6} {:>6} {:>5} {:>7} {:>8}  refused: see below",
                        std::string(utf8_prefix(name, 18)), "-", "-", "-", "-", "-", "-"),
            width));
    lines.push_back(fit("  " + reason, width));
  }
  // Time left means something only while the run works; a run that stopped has none.
  bool active = p.state == "running" || p.state == "draining";
  std::string left = !active               ? std::string()
                     : p.time_left_seconds ? ", " + format_duration(*p.time_left_seconds) + " left"
                                           : std::string(", no time limit");
  std::string budget = p.max_usd ? fmt::format(" of ${:.2f}", *p.max_usd) : "";
  std::string total = fmt::format(
      "total: {} tasks, {} candidates, {} failed, {} tokens, ${:.2f}{}; run {} {} for {}{}",
      p.tasks.size(), candidates, failures, tokens_text(p.tokens), p.cost_usd, budget, p.run_id,
      p.state, format_duration(p.elapsed_seconds), left);
  if (p.pending_submissions > 0) total += fmt::format("; {} submitted", p.pending_submissions);
  if (!p.refused.empty()) total += fmt::format("; {} refused", p.refused.size());
  lines.push_back(fit(total, width));
  if (!p.alarm.empty()) lines.push_back(fit("alarm: " + p.alarm, width));
  if (p.gpu_busy_fraction || p.sanitizer_runs > 0 || p.sanitizer_pending > 0) {
    std::string busy =
        p.gpu_busy_fraction
            ? fmt::format("GPU busy {:.1f}% since the first evaluation", 100 * *p.gpu_busy_fraction)
            : std::string("GPU busy share unknown");
    // With co-workers a GPU is busy while any of them evaluates.
    if (p.workers_per_gpu > 1)
      busy += fmt::format(" ({} workers per GPU, busy while any evaluates)", p.workers_per_gpu);
    lines.push_back(fit(fmt::format("{}; sanitizer: {} passes, {} waiting", busy, p.sanitizer_runs,
                                    p.sanitizer_pending),
                        width));
  }
  // Why a run with every task done still runs: its would-be bests are being checked.
  const bool checking_what_is_left = active && p.search_done_seconds && p.sanitizer_pending > 0;
  if (checking_what_is_left) {
    lines.push_back(fit(fmt::format("search done at {}: the sanitizer lane checks the {} "
                                    "provisional best(s) left before the run ends",
                                    format_duration(*p.search_done_seconds), p.sanitizer_pending),
                        width));
  }
  for (const std::string& w : p.waiting_workers) lines.push_back(fit("worker " + w, width));
  // While the lane checks, the search's end ("all N tasks are done") is the line above; a drain's
  // reason (the budget, a signal) is news.
  const bool said_above = checking_what_is_left && p.state != "draining";
  if (!p.stop_reason.empty() && !said_above)
    lines.push_back(fit("stopping: " + p.stop_reason, width));
  return lines;
}

}  // namespace kopt::orchestrator
