// A snapshot of a run's progress: what the live display draws, what the daemon publishes in the
// database for `kopt status`, and what `kopt status --json` prints. Rendering is separate from
// collecting, so the display and the status command print the same table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kopt::orchestrator {

struct TaskProgress {
  std::string name;
  std::string state;        // "waiting", "baseline", "tuning", "searching", "done", "failed"
  std::string note;         // why it is done or failed
  double best_speedup = 0;  // over the baseline; 0 before the baseline is measured
  double best_sol_percent = 0;
  double best_us = 0;
  int64_t candidates = 0;  // kernels judged (the baseline not counted)
  int64_t failures = 0;    // judged and rejected
  int64_t in_flight = 0;
  int64_t tokens = 0;
  double cost_usd = 0;
  int64_t repeats = 0;  // coder answers that repeated a judged kernel (not candidates)
  int64_t llm_calls = 0;
};

// A task folder the run could not take (a broken task.json, a name already taken), with why.
struct RefusedTask {
  std::string dir;
  std::string reason;
};

struct RunProgress {
  int64_t run_id = 0;
  int64_t pid = 0;
  std::string state;        // "running", "draining", "finished", "interrupted", "failed"
  std::string stop_reason;  // set once the run stops taking work
  std::string mode;         // "llm" or "tuner"
  std::string gpu;          // the GPU model, once known
  int gpus = 0;
  int workers_per_gpu = 1;     // timing workers sharing each GPU in turns
  double elapsed_seconds = 0;  // over every resume
  std::optional<double> time_left_seconds;
  std::optional<double> max_usd;
  int64_t tokens = 0;
  double cost_usd = 0;
  int64_t pending_submissions = 0;
  std::string alarm;  // the spend-rate alarm while it holds LLM work back
  // GPU workers waiting to start, e.g. in Slurm's queue (Evaluator::waiting()).
  std::vector<std::string> waiting_workers;
  // The GPUs' busy share since the first evaluation (EvaluatorPool::utilization: a GPU is busy
  // while any of its workers evaluates), when the evaluator says; the sanitizer lane's passes
  // done and those queued or running.
  std::optional<double> gpu_busy_fraction;
  int64_t sanitizer_runs = 0;
  int64_t sanitizer_pending = 0;
  // When the search ended with every task done and the lane went on checking what it left.
  std::optional<double> search_done_seconds;
  std::vector<TaskProgress> tasks;
  std::vector<RefusedTask> refused;

  nlohmann::json to_json() const;
  static RunProgress from_json(const nlohmann::json& j);
};

// `line` cut to `width` characters at a word boundary ("..." marks the cut), never mid-word
// unless one word is longer than the line.
std::string fit_words(std::string line, size_t width);

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

// The table: a header, one line per task, a total line. `width` caps the line length.
std::vector<std::string> render_progress(const RunProgress& progress, size_t width = 120);

}  // namespace kopt::orchestrator
