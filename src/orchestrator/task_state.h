// What the search loop knows about one task: its files, its beam, the work queued for it and its
// counters. Owned by the orchestrator and guarded by its state mutex; job threads read a copy of
// what they need and report back through the orchestrator.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/agent_call.h"
#include "agents/agent_context.h"
#include "agents/planner.h"
#include "sandbox/task_spec.h"
#include "src/orchestrator/beam.h"
#include "src/orchestrator/progress.h"
#include "src/orchestrator/run_options.h"
#include "src/orchestrator/stall_detector.h"
#include "src/orchestrator/tuner.h"

namespace kopt::orchestrator {

// The GPU the task's baseline was measured on.
struct GpuIdentity {
  std::string model;  // "NVIDIA H100 80GB HBM3"
  std::string cc;     // "9.0"
  std::string arch;   // "sm_90a"
  std::string driver;
  int sms = 0;
  nlohmann::json device;  // as the worker reported it
};

// One kernel whose tunables the tuner sweeps, and the best configuration so far.
struct TuneTarget {
  VerifiedKernel root;
  TunerSweep sweep;
  TunableConfig best;
  double best_speedup = 0;
  int queued = 0;     // items of this target in the task's tune queue
  int in_flight = 0;  // items of this target being evaluated
};

struct TuneItem {
  TuneTarget* target;
  TunableConfig config;
};

// What became of a kernel judged for the task, to tell a model that repeats it what it scored.
struct KnownKernel {
  int64_t kernel_id = 0;  // 0 while it is being evaluated
  std::string verdict;    // "ok 1.52x (...)", "incorrect: ...", "the baseline"
};

// A plan waiting for the coder, with the prompt context it was planned in.
struct CodeItem {
  VerifiedKernel parent;
  agents::Plan plan;
  agents::WorkContext context;
  std::vector<int64_t> retrieved_pairs;
};

struct TaskState {
  // kParked: no more LLM work (the model stalled on it, or its LLM budget is spent); the tuner
  // finished what it had queued.
  enum class Phase { kNeedsBaseline, kBaselineRunning, kSearching, kDone, kFailed, kParked };

  TaskSpec spec;
  std::string reference_source;
  std::string baseline_source;
  Phase phase = Phase::kNeedsBaseline;
  std::string note;  // why it is done or failed

  std::optional<VerifiedKernel> baseline;
  Beam beam;
  double best_speedup = 0;  // the best ever verified (the beam may have moved on)
  double best_sol_percent = 0;
  double best_us = 0;

  std::list<TuneTarget> tune_targets;  // a list: TuneItem points into it
  std::deque<TuneItem> tune_queue;
  std::deque<CodeItem> code_queue;
  std::set<std::string> judged_sources;  // sha256 of every source judged in this run
  bool plan_in_flight = false;
  size_t next_parent = 0;  // round robin over the beam for the next plan
  std::vector<std::string> tried_plans;

  int64_t candidates = 0;
  int64_t failures = 0;
  int64_t since_improvement = 0;
  int64_t in_flight = 0;
  int64_t jobs_started = 0;  // for fair scheduling
  int planner_failures = 0;  // in a row; the task fails after a few
  int evaluator_errors = 0;  // in a row (no verdict reached); the task fails after a few
  agents::AgentUsage usage;

  // ---- a model that stalls (stall_control.cc) ----
  std::map<std::string, KnownKernel> known_kernels;  // by kernel_fingerprint()
  std::set<std::string> plan_keys;        // agents::plan_key of every plan tried or queued
  std::vector<std::string> repeat_notes;  // the coder's latest repeats, for its next prompt
  std::string planner_note;               // what the planner is told with the tried plans
  StallDetector stall;                    // the coder's calls for this task
  int planner_stale = 0;                  // planner answers in a row with nothing new
  std::chrono::steady_clock::time_point llm_not_before{};  // backed off until then
  double temperature_boost = 0;  // added to the agents' configured temperature
  int memory_rotation = 0;       // memory examples skipped, in units of k
  std::string parked;            // why LLM work stopped; "" while it goes on
  int64_t repeats = 0;           // coder answers that repeated a judged kernel

  TaskState(TaskSpec task, std::string reference, std::string baseline_file,
            const SearchSettings& search, const StallSettings& stall_settings);

  bool finished() const {
    return phase == Phase::kDone || phase == Phase::kFailed || phase == Phase::kParked;
  }
  // How much the task can still gain (1 - best %SOL), weighted by its priority.
  double weight() const;
  TaskProgress progress() const;
};

const char* phase_name(TaskState::Phase phase);

}  // namespace kopt::orchestrator
