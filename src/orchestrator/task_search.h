// The search of one task as a plain object: its files, its beam, the work queued for it, its
// counters, its stall state and budgets, and the rules that change them (which job comes next,
// what a judged kernel counts for, which plans are new, when the task is done or parked). No
// threads, no locks, no I/O: the orchestrator owns one per task under its mutex, runs the jobs
// and logs what the rules return (ninja's Plan and Builder split), and tests drive it directly.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
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
#include "src/orchestrator/task_score.h"
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
  // Shared by the plans of one retrieval: its pairs are credited once, by the first plan whose
  // child is a real improvement (SearchSettings::positive_pair_speedup over its parent).
  std::shared_ptr<std::atomic<bool>> credited;
  std::optional<int64_t> plan_id;  // its row in the memory's plans table
  bool refinement = false;         // the profile-guided second turn of a plan (no third)
};

struct CandidateOutcome;  // candidate_evaluation.h

// After this many failures in a row of the same kind, a task stops instead of spinning.
constexpr int kMaxFailuresInARow = 5;
// What a GPU job (a tuner configuration, a baseline) counts for in the fair share, in dollars:
// a model plan costs about $0.05-0.20, so a configuration is a small fraction of one.
constexpr double kGpuJobUsd = 0.002;

// The job a task asks for next.
enum class JobKind { kBaseline, kWarm, kTune, kCode, kPlan };

// A verified kernel of an earlier run, to be judged again before it joins the beam.
struct WarmKernel {
  int64_t kernel_id = 0;
  std::optional<int64_t> parent_id;
  std::string source;
  std::string origin;  // "coder", "tuner"
  double earlier_speedup = 0;
};

// What a rule changed about the task's phase, for the orchestrator to log.
struct PhaseChange {
  enum class Kind { kNone, kDone, kParked, kFailed } kind = Kind::kNone;
  std::string note;
  explicit operator bool() const { return kind != Kind::kNone; }
};

// The plans of one planner answer, split into those never tried on this task and repeats.
struct SortedPlans {
  std::vector<agents::Plan> fresh;
  std::vector<std::string> dropped;  // titles
};

// The limits of the run that the rules read.
struct SearchLimits {
  SearchSettings search;
  StallSettings stall;
  std::optional<int64_t> candidates_per_task;
  std::optional<double> max_usd_per_task;
  bool llm = false;  // whether model work exists at all (plateau and parking need it)
};

class TaskSearch {
 public:
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
  // The best production baseline measured for the task on this run's GPU model (the orchestrator
  // reads it from the memory once the GPU is known); S is measured against it (task_score.h).
  std::optional<ProductionReference> production;
  bool score_fallback_said = false;  // take_score_note() said why S is not used

  // Warm start: the best kernels of earlier runs on this GPU model, judged again by this run's
  // verifier and task spec before they count; plans wait until they are in the beam.
  std::deque<WarmKernel> warm_queue;
  int warm_in_flight = 0;
  std::list<TuneTarget> tune_targets;  // a list: TuneItem points into it
  std::deque<TuneItem> tune_queue;
  std::deque<CodeItem> code_queue;
  std::set<std::string> judged_sources;  // sha256 of every source judged in this run
  bool plan_in_flight = false;
  size_t next_parent_index = 0;  // round robin over the beam for the next plan
  std::vector<std::string> tried_plans;

  int64_t candidates = 0;
  int64_t failures = 0;
  int64_t since_improvement = 0;
  int64_t plans_since_improvement = 0;  // model plans developed since the best last grew
  std::map<int64_t, int> plans_from;    // plans asked from each beam kernel (parent choice)
  int plans_asked = 0;
  int64_t in_flight = 0;
  int64_t jobs_started = 0;  // for fair scheduling
  int planner_failures = 0;  // in a row; the task fails after a few
  int evaluator_errors = 0;  // in a row (no verdict reached); the task fails after a few
  agents::AgentUsage usage;

  // ---- a model that stalls (stall_control.cc) ----
  std::map<std::string, KnownKernel> known_kernels;  // by kernel_fingerprint()
  std::set<std::string> plan_keys;        // lineage:technique of every plan tried or queued
  std::map<int64_t, int64_t> parent_of;   // kernel id -> the kernel it came from (verified)
  std::vector<std::string> repeat_notes;  // the coder's latest repeats, for its next prompt
  std::string planner_note;               // what the planner is told with the tried plans
  StallDetector stall;                    // the coder's calls for this task
  int planner_stale = 0;                  // planner answers in a row with nothing new
  std::chrono::steady_clock::time_point llm_not_before{};  // backed off until then
  double temperature_boost = 0;  // added to the agents' configured temperature
  int memory_rotation = 0;       // memory examples skipped, in units of k
  std::string parked;            // why LLM work stopped; "" while it goes on
  int64_t repeats = 0;           // coder answers that repeated a judged kernel

  SearchLimits limits;

  TaskSearch(TaskSpec task, std::string reference, std::string baseline_file,
             SearchLimits search_limits);

  bool finished() const {
    return phase == Phase::kDone || phase == Phase::kFailed || phase == Phase::kParked;
  }
  // How much the task can still gain, log(100 / best %SOL) or log(1 / S) as score() says,
  // times its priority.
  double weight() const;
  // What the weight and the stopping rule read now (SearchSettings::score, task_score.h).
  TaskScore score() const;
  // Once per task: why S cannot be used although the settings ask for it, for the run log.
  std::optional<std::string> take_score_note();
  // The fair-share score, dollars of work per unit of weight: the lowest gets the next job.
  double fair_score() const;
  TaskProgress progress() const;

  // ---- the rules ----
  // Marks the task done when its threshold (sol_score_threshold where score() uses S, else
  // sol_threshold_percent), candidate budget or plateau says so, and parks it
  // when its LLM budget is spent. Returns whether it may start new work; `change` says what
  // changed.
  bool update_phase(PhaseChange& change);
  // The job this task wants now (nothing when it has none). A task with nothing left to do and
  // no model work ahead moves to done or parked (told through `change`). `llm_now`: the model
  // may be called now (up, not held back).
  std::optional<JobKind> next_job(std::chrono::steady_clock::time_point now, bool llm_now,
                                  PhaseChange& change);
  // Counts a judged candidate and offers a verified one to the beam (and, when it enters and
  // `tune_new_kernels`, to the tuner). A change when the evaluator keeps failing.
  PhaseChange on_result(const CandidateOutcome& outcome, bool tune_new_kernels = true);
  // Keeps the plans not tried (or queued) from this parent's lineage before: a plan is the same
  // as another when it starts from the same lineage (`parent` or one of the kernels it came
  // from, `lineage`) and names the same techniques (techniques.h), or, naming none, has the
  // same title. The same idea from another kernel is a new plan.
  SortedPlans on_plans(std::vector<agents::Plan> plans, const VerifiedKernel& parent);
  // One model plan developed; `improved`: its kernel raised the task's best by min_improvement.
  void on_plan_done(bool improved);
  // The beam kernel the next plan starts from: the highest UCB score (run_options.h), ties to
  // the faster kernel.
  VerifiedKernel next_parent();
  // The UCB score of a beam member (exposed for tests).
  double parent_score(const VerifiedKernel& kernel) const;
  // Coder samples per plan: more for a task far from speed of light.
  int coder_samples() const;
  // Stops model work for the task with the reason; false when it already was parked or done.
  bool park(const std::string& why);
  // Starts sweeping `kernel`'s tunables when it declares any.
  void add_tune_target(const VerifiedKernel& kernel);
  void queue_next_tune_batch(TuneTarget& target);
};

const char* phase_name(TaskSearch::Phase phase);

}  // namespace kopt::orchestrator
