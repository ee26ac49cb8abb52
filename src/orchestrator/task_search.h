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
#include "agents/coder.h"
#include "agents/planner.h"
#include "memory_store/plan_store.h"
#include "memory_store/records.h"
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
  // What the sweep found so far, this night and earlier ones: for the planner's tuner facts.
  int judged = 0;
  int correct = 0;
  double slowest_speedup = 0;  // of the correct configurations (0: none yet)
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
  int sample = 0;                  // which coder sample of the plan (0: the first)
};

// An evaluation as read back from the memory (a resumed run's, or an earlier night's), with its
// kernel.
struct PastEvaluation {
  int64_t evaluation_id = 0;
  int64_t kernel_id = 0;
  std::optional<int64_t> parent_id;
  std::string source;
  Origin origin_agent = Origin::kUnknown;
  bool tuner = false;
  memory::EvaluationRecord evaluation;
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
  Origin origin = Origin::kUnknown;  // kCoder, kTuner
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

// A job taken from a task: its kind and what it works on. The task has already counted it as
// running (TaskSearch::take_job); the orchestrator runs it and reports through the verbs below.
struct TakenJob {
  JobKind kind = JobKind::kBaseline;
  std::optional<WarmKernel> warm;  // kWarm
  std::optional<TuneItem> tune;    // kTune
  std::optional<CodeItem> code;    // kCode
};

// What the search says about a kernel the coder wrote, before it is judged.
struct Admission {
  bool admitted = false;  // judge it; else `refusal` is the coder's answer
  bool repeat = false;    // refused as a repeat of a judged kernel
  std::string fingerprint;
  agents::Judgement refusal;
  std::string log;  // a line for the run log when it was refused as a repeat
};

// What became of one developed plan, for the plans table and the log.
struct PlanFinish {
  std::string verdict;  // "verified, 1.21x its parent", "incorrect: ..."
  bool refinement_queued = false;
};

// What earlier nights of the task judged under the same task spec and verifier, on this GPU
// model where speed matters (RunRecorder::earlier_nights reads it).
struct EarlierNights {
  std::vector<PastEvaluation> evaluations;  // oldest first
  std::vector<memory::PlanRecord> plans;    // every plan, with every attempt's outcome
};

class TaskSearch {
 public:
  // kParked: no more LLM work (the model stalled on it, or its LLM budget is spent); the tuner
  // finished what it had queued.
  enum class Phase { kNeedsBaseline, kBaselineRunning, kSearching, kDone, kFailed, kParked };

  TaskSearch(TaskSpec task, std::string reference, std::string baseline_file,
             SearchLimits search_limits);

  // ---- what it is (read only) ----
  const TaskSpec& spec() const { return spec_; }
  const std::string& reference_source() const { return reference_source_; }
  const std::string& baseline_source() const { return baseline_source_; }
  Phase phase() const { return phase_; }
  const std::string& note() const { return note_; }  // why it is done or failed
  bool finished() const {
    return phase_ == Phase::kDone || phase_ == Phase::kFailed || phase_ == Phase::kParked;
  }
  const std::optional<VerifiedKernel>& baseline() const { return baseline_; }
  const Beam& beam() const { return beam_; }
  // What the tuner found, one line per swept kernel (newest first, at most `max_lines`): the
  // planner reads it instead of tuner pairs among its examples.
  std::vector<std::string> tuner_facts(size_t max_lines = 3) const;
  double best_speedup() const { return best_speedup_; }  // the best ever verified
  double best_sol_percent() const { return best_sol_percent_; }
  double best_us() const { return best_us_; }
  double best_noise() const { return best_noise_; }
  // The best's median as the latest evaluation's baseline puts it (that baseline's median over
  // the best's speedup): the bar a candidate is screened and sanitized by moves with the GPU's
  // drift, as the best's choice (by speedup) does. On an H200 sum_dim's baseline read 789 us in
  // its own evaluation and 700 us in every later one, so parity kernels at 702 us went through
  // the whole gate and the sanitizer lane as would-be bests by their absolute medians. best_us()
  // until an evaluation reports a baseline.
  double best_us_now() const {
    return latest_baseline_us_ > 0 && best_speedup_ > 0 ? latest_baseline_us_ / best_speedup_
                                                        : best_us_;
  }
  // The best production baseline measured for the task on this run's GPU model; S is measured
  // against it (task_score.h).
  const std::optional<ProductionReference>& production() const { return production_; }
  int64_t candidates() const { return candidates_; }
  int64_t failures() const { return failures_; }
  int64_t since_improvement() const { return since_improvement_; }
  int64_t repeats() const { return repeats_; }
  const std::string& parked() const { return parked_; }  // why LLM work stopped; ""
  bool tuning() const { return !tune_queue_.empty(); }
  const agents::AgentUsage& usage() const { return usage_; }
  int planner_failures() const { return planner_failures_; }
  // What the prompts are told: the plans tried (newest last), the planner's note, the coder's
  // latest repeats.
  const std::vector<std::string>& tried_plans() const { return tried_plans_; }
  const std::string& planner_note() const { return planner_note_; }
  const std::vector<std::string>& repeat_notes() const { return repeat_notes_; }
  double temperature_boost() const { return temperature_boost_; }
  int memory_rotation() const { return memory_rotation_; }
  int strategy_changes() const { return strategy_changes_; }
  const StallDetector& stall() const { return stall_; }
  // The verdict a kernel with this fingerprint (kernel_fingerprint.h) got, if judged.
  const KnownKernel* known(const std::string& fingerprint) const;
  // Whether this exact source was judged (this run or, same spec and verifier, an earlier one).
  bool judged(const std::string& source) const;

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

  // ---- scheduling ----
  // Marks the task done when its threshold (sol_score_threshold where score() uses S, else
  // sol_threshold_percent), candidate budget or plateau says so, and parks it when its LLM
  // budget is spent. Returns whether it may start new work; `change` says what changed.
  bool update_phase(PhaseChange& change);
  // The job this task wants now (nothing when it has none). A task with nothing left to do and
  // no model work ahead moves to done or parked (told through `change`). `llm_now`: the model
  // may be called now (up, not held back).
  std::optional<JobKind> next_job(std::chrono::steady_clock::time_point now, bool llm_now,
                                  PhaseChange& change);
  // Takes the job next_job() named: off its queue and counted as running.
  TakenJob take_job(JobKind kind);
  // A job taken from this task ended, however it ended.
  void on_job_ended() { --in_flight_; }

  // Counts a judged candidate and offers a verified one to the beam (and, when it enters and
  // `tune_new_kernels`, to the tuner). A change when the evaluator keeps failing. The verbs
  // below call it; tests drive it directly.
  PhaseChange on_result(const CandidateOutcome& outcome, bool tune_new_kernels = true);
  // A provisional best failed its sanitizer pass (sanitizer_lane.h): it and its descendants
  // leave the beam (and never enter it later), and the task's best is the best that is left.
  // Returns the descendants dropped (the kernel itself not included).
  std::vector<int64_t> on_sanitizer_failed(int64_t kernel_id);
  // Whether `kernel_id` or one of its ancestors failed the sanitizer.
  bool sanitizer_tainted(int64_t kernel_id) const;

  // ---- the baseline and the warm start ----
  // The baseline's verdict: the task searches from it, or fails with the reason.
  PhaseChange on_baseline(const CandidateOutcome& outcome);
  void set_production(std::optional<ProductionReference> production) {
    production_ = std::move(production);
  }
  // Kernels of earlier runs to judge again before plans start (on purpose: the one re-judging
  // a carried-over night allows).
  void add_warm_start(std::vector<WarmKernel> kernels);
  int warm_queued() const { return static_cast<int>(warm_queue_.size()); }
  // False when the warm kernel was judged in this run already (its slot is given back).
  bool claim_warm(const WarmKernel& kernel, bool stopping);
  PhaseChange on_warm_judged(const WarmKernel& kernel, const std::string& verdict,
                             const CandidateOutcome& outcome);

  // ---- the tuner ----
  // The configuration's kernel file to judge, or nothing (not applicable, already judged, or the
  // task is over: the item's slot is given back and the sweep moves on).
  std::optional<std::string> claim_tune(const TuneItem& item, bool stopping);
  PhaseChange on_tune_judged(const TuneItem& item, const std::string& source,
                             const std::string& verdict, const CandidateOutcome& outcome,
                             bool stopping);

  // ---- the planner ----
  // The parent of the next plan, or nothing when no plan may start (the plan slot is freed).
  std::optional<VerifiedKernel> begin_plan(bool stopping);
  // Keeps the plans new to this parent: a plan is the same as another when it starts from the
  // same lineage and names the same techniques (techniques.h), or, naming none, has the same
  // title. An idea is blocked on a lineage only once a verified kernel of that lineage applies
  // it, or when it was tried twice from this very parent; an idea that failed before is kept,
  // its detail carrying the earlier failure.
  SortedPlans on_plans(std::vector<agents::Plan> plans, const VerifiedKernel& parent);
  // The planner answered (or failed): another plan may start.
  void end_plan() { plan_in_flight_ = false; }
  // The planner's call failed; a change when it keeps failing.
  PhaseChange on_planner_failed(const std::string& error);
  // The planner's answer held nothing new; returns how many answers in a row did.
  int on_planner_stale(const std::string& note);
  // Queues the coder samples of a fresh plan (coder_samples() of them, each told apart).
  void queue_plan(const CodeItem& item);
  int code_queued() const { return static_cast<int>(code_queue_.size()); }
  // What the coder's temperature is raised by for this item: the task's back-off boost, and a
  // step per later sample so that the samples of one plan differ.
  double coder_temperature_boost(const CodeItem& item) const;

  // ---- the coder ----
  // Whether a kernel the coder wrote for `plan_title` should be judged: not when the task is
  // over, parked or out of candidates, nor when it repeats a judged kernel (counted, told).
  Admission admit(const std::string& source, const std::string& plan_title, int attempt);
  // The verdict on an admitted kernel.
  PhaseChange on_judged(const Admission& admission, const std::string& verdict,
                        const CandidateOutcome& outcome);
  // A plan's coder job ended; `accepted` its verified kernel. Records the plan as tried, counts
  // it for the plateau, and queues a refinement turn for a correct kernel that did not gain.
  PlanFinish on_plan_finished(const CodeItem& item, const std::optional<VerifiedKernel>& accepted,
                              const agents::CoderOutcome& result, double best_before, bool stopping,
                              agents::WorkContext refine_context);

  // ---- a model that stalls, and spend ----
  void charge(const agents::AgentUsage& usage) { usage_.add(usage); }
  StallDetector::Advice record_coder_call(CallOutcome call) { return stall_.record(call); }
  // Holds LLM work for the task back until `until`, a little hotter, other memory examples.
  void back_off(std::chrono::steady_clock::time_point until, double temperature_step);
  // Stops model work for the task with the reason; false when it already was parked or done.
  bool park(const std::string& why);

  // ---- restoring ----
  // Rebuilds the state of a resumed run from what it judged (RunRecorder::history); returns the
  // GPU its baseline was measured on.
  std::optional<GpuIdentity> restore(const std::vector<PastEvaluation>& history);
  // What earlier nights judged (same task spec and verifier): their kernels are known and not
  // judged again, their plans tried with every attempt's outcome, their tuner configurations
  // tried, and the plans that failed told to the planner.
  void carry_over(const EarlierNights& earlier);
  // A resumed run: the task's LLM use before the resume counts toward its caps, and a task that
  // was done, failed or parked (`state`, `note`) stays so; `run_ended`: the run ended on its own,
  // so a parked task has no tuner work left either. False when the task goes on.
  bool keep_earlier_outcome(const std::string& state, const std::string& note,
                            const agents::AgentUsage& used, bool run_ended);

  // ---- the rules, exposed for tests ----
  // One model plan developed; `improved`: its kernel raised the task's best by min_improvement.
  // The first plateau changes strategy (another parent, radically different plans); the second
  // ends the task.
  void on_plan_done(bool improved);
  // Model plans without a gain that end the task: plateau_plans scaled by the headroom.
  int plateau_limit() const;
  // The beam kernel the next plan starts from: the highest UCB score, ties to the faster kernel.
  VerifiedKernel next_parent();
  double parent_score(const VerifiedKernel& kernel) const;
  // Coder samples per plan: more for a task far from speed of light.
  int coder_samples() const;

 private:
  // Starts sweeping `kernel`'s tunables when it declares any.
  void add_tune_target(const VerifiedKernel& kernel);
  void queue_next_tune_batch(TuneTarget& target);
  // One configuration of `target` judged: correct at `speedup`, or wrong (0).
  static void count_tune(TuneTarget& target, double speedup);
  void tune_slot_freed(TuneTarget& target, bool stopping);
  void remember(const std::string& source, int64_t kernel_id, const std::string& verdict);
  std::vector<int64_t> lineage(int64_t kernel_id) const;
  std::string idea_note(const std::vector<int64_t>& lineage, const std::string& idea) const;
  void record_idea_outcome(const CodeItem& item, const std::string& verdict,
                           const std::optional<VerifiedKernel>& accepted);
  // Carries one earlier plan's attempts over; its "title -> outcome" line when it failed.
  std::optional<std::string> carry_plan(const memory::PlanRecord& plan,
                                        const std::set<int64_t>& verified);
  bool finish(std::string why, PhaseChange& change);

  TaskSpec spec_;
  std::string reference_source_;
  std::string baseline_source_;
  Phase phase_ = Phase::kNeedsBaseline;
  std::string note_;

  std::optional<VerifiedKernel> baseline_;
  Beam beam_;
  double best_speedup_ = 0;
  double best_sol_percent_ = 0;
  double best_us_ = 0;
  double best_noise_ = 0;
  double latest_baseline_us_ = 0;  // the baseline's median in the latest evaluation reporting one
  std::set<int64_t> sanitizer_failed_;  // kernels whose sanitizer pass found something
  std::optional<ProductionReference> production_;
  bool score_fallback_said_ = false;

  std::deque<WarmKernel> warm_queue_;
  int warm_in_flight_ = 0;
  // Tuner jobs claimed and not yet judged: they count toward the candidate budget, so that
  // jobs in flight beyond the GPUs (compile-ahead) never overshoot it.
  int tunes_in_flight_ = 0;
  std::list<TuneTarget> tune_targets_;  // a list: TuneItem points into it
  std::deque<TuneItem> tune_queue_;
  // Tuner configurations judged in earlier nights, by the kernel they tuned: tried, and the
  // best of them steers the sweep.
  std::map<int64_t, std::vector<std::pair<TunableConfig, double>>> earlier_tunes_;
  std::deque<CodeItem> code_queue_;
  std::set<std::string> judged_sources_;   // sha256 of every source judged in this run
  std::set<std::string> earlier_sources_;  // ... in earlier nights (same spec and verifier)
  bool plan_in_flight_ = false;
  std::vector<std::string> tried_plans_;

  int64_t candidates_ = 0;
  int64_t failures_ = 0;
  int64_t since_improvement_ = 0;
  int64_t plans_since_improvement_ = 0;
  int strategy_changes_ = 0;           // plateaus met that changed strategy instead of stopping
  std::map<int64_t, int> plans_from_;  // plans asked from each beam kernel (parent choice)
  int plans_asked_ = 0;
  int64_t in_flight_ = 0;
  int64_t jobs_started_ = 0;  // for fair scheduling
  int planner_failures_ = 0;  // in a row; the task fails after a few
  int evaluator_errors_ = 0;  // in a row (no verdict reached); the task fails after a few
  agents::AgentUsage usage_;

  std::map<std::string, KnownKernel> known_kernels_;  // by kernel_fingerprint()
  // Ideas ("uses:a+b" or "title:x") by kernel: applied by a verified kernel (its own id), or
  // tried from a parent (the parent's id, with the attempts' failures, newest last).
  std::set<std::string> applied_;                               // "id:idea"
  std::map<std::string, std::vector<std::string>> tried_from_;  // "id:idea" -> failures
  std::map<int64_t, int64_t> parent_of_;  // kernel id -> the kernel it came from (verified)
  std::vector<std::string> repeat_notes_;
  std::string planner_note_;
  StallDetector stall_;
  int planner_stale_ = 0;
  std::chrono::steady_clock::time_point llm_not_before_{};
  double temperature_boost_ = 0;
  int memory_rotation_ = 0;
  std::string parked_;
  int64_t repeats_ = 0;

  SearchLimits limits_;
};

const char* phase_name(TaskSearch::Phase phase);

// The idea a plan names, for telling repeats apart: "uses:" its techniques (techniques.h), or
// "title:" its normalized title when it names none.
std::string plan_idea(const std::string& title);

}  // namespace kopt::orchestrator
