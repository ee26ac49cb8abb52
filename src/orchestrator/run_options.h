// The settings of one daemon run, resolved from the config file's daemon section, the command
// line and a resumed run's record by resolve_run_settings (run_settings.h). Everything the search
// loop reads is here, so tests build one directly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/score_basis.h"
#include "src/orchestrator/stall_detector.h"

namespace kopt::orchestrator {

struct SearchSettings {
  int beam_width = 4;                  // verified kernels kept per task
  double near_copy_similarity = 0.92;  // token similarity above which two kernels are one
  int plans_per_iteration = 4;         // plans the planner proposes from one beam kernel
  int max_repairs = 2;                 // coder repairs after a compile error or a wrong answer
  int memory_examples = 4;             // pairs retrieved from memory into each prompt
  // One example slot of each prompt is a pair drawn uniformly from the eligible candidates, its
  // propensity logged (memory_store/example_draws.h), so that a night with a real model can be
  // scored off-policy later; example_draw_seed 0 seeds the draws from the system.
  bool random_example_slot = true;
  uint64_t example_draw_seed = 0;
  // Technique cards (memory_store/technique_cards.h) the planner reads beside its examples.
  int technique_cards = 3;
  double sol_threshold_percent = 90;  // a task at this share of speed of light is done
  // What the task weights and the stopping rule read (task_score.h). kAuto by default because S
  // against what users run is what users and SOL-ExecBench judge a kernel by: with a production
  // baseline measured on this GPU model (`kopt baselines`), a task is worth the night while it
  // trails it and is done well past it; without one, S against baseline.cu (a plain kernel of
  // this repository) would call a task done long before physics does, so %SOL decides there.
  ScoreBasis score = ScoreBasis::kAuto;
  // Where S decides, a task is done at this S (or at sol_threshold_percent once it is at least
  // as fast as the reference, S >= 0.5). 0.9: the kernel's time above the bound is a ninth of
  // the reference's, the same "within about 10% of the bound" spirit as the 90% SOL default for
  // a reference at 50% SOL; 0.5 would stop at parity and leave the gains the field reports over
  // production libraries (CUDA-L2: +11% over autotuned cuBLASLt) on the table.
  double sol_score_threshold = 0.9;
  int plateau_candidates = 400;   // backstop: candidates (tuner ones too) without a 1% gain
  int plateau_plans = 12;         // model plans in a row without a 1% gain end a task
  double min_improvement = 1.01;  // what counts as an improvement of the task's best
  // Screening (EvalOptions::full_gate_below_us): a candidate is verified at its task's declared
  // shapes and timed, and only one that may beat the task's best beyond the noise gets the rest
  // of the gate; the others are stored as `screened` (never a win, never exported). Off: every
  // candidate gets the whole gate before timing.
  bool screen = true;
  // With screen: time before any verification (EvalOptions::screen_time_first), so a candidate
  // above the bar is checked at the timed shape alone and only a would-be best runs the declared
  // shapes, with the rest of the gate. On by default (1.8x the evaluations per GPU-hour of the
  // fake-model night on an H200, 4854 against 2735); the price: a slow kernel that is wrong only
  // at a declared shape is stored `screened`, not `incorrect`, and its coder is told it is slow,
  // not where it is wrong.
  bool screen_time_first = true;
  int tuner_max_configs = 24;           // tunable configurations tried per kernel
  double positive_pair_speedup = 1.04;  // pairs kept as examples (AccelOpt's threshold)
  double negative_pair_speedup = 1.15;  // slowdowns kept as warnings (1/1.15x and worse)
  // Warm start: the best verified kernels of earlier runs of the task on the same GPU model
  // judged again and offered to the beam when the task starts; 0 turns it off.
  int warm_start_kernels = 4;
  // Parent choice (UCB): a beam kernel's score is its speedup over the task's best plus
  // exploration x sqrt(ln(plans from the task + 1) / (plans from it + 1)).
  double exploration = 0.5;
  // A verified child at least this share of its parent's speed (and under
  // positive_pair_speedup) gets one more coder turn with its own measurements and counters
  // against its parent's: a first tensor-core GEMM at 0.7x of a tuned SIMT parent is the kernel
  // CudaForge and K-Search iterate on, not one to drop.
  double refine_within = 0.6;
  // Tasks under this %SOL get `far_coder_samples` coder samples per plan instead of one.
  double far_from_sol_percent = 20;
  int far_coder_samples = 2;
};

struct Budgets {
  std::optional<double> hours;                 // wall time of the run
  std::optional<double> max_usd;               // LLM spend of the run
  std::optional<int64_t> candidates_per_task;  // kernels judged per task
  std::optional<double> max_usd_per_task;      // LLM spend of one task: then it is parked
  std::optional<double> max_usd_per_hour;      // spend-rate alarm: new LLM work waits above it
  double spend_rate_window_s = 600;            // the rate is measured over this window
};

struct RunOptions {
  std::vector<std::filesystem::path> task_dirs;  // one folder per task (already resolved)
  Budgets budgets;
  SearchSettings search;
  StallSettings stall;
  bool use_llm = true;            // false: the built-in tuner only
  bool keep_prompts = true;       // store every prompt and answer (daemon.keep_prompts)
  int max_in_flight = 0;          // concurrent jobs; 0: derived from the GPUs and the LLM
  int llm_concurrency = 0;        // model jobs (plans, coder turns) at once; 0: no cap of its own
  double drain_seconds = 60;      // after a stop signal, how long in-flight work may finish
  std::filesystem::path run_dir;  // logs of this run; empty: no file log

  // For the run record (resume reads task_dirs and budgets back).
  nlohmann::json to_json() const;
};

// What the run record's config_json holds: {"options": ...}; `extra` is merged in (the
// effective config's description, the GPUs).
nlohmann::json run_record_json(const RunOptions& options,
                               const nlohmann::json& extra = nlohmann::json::object());

}  // namespace kopt::orchestrator
