// The search loop of `kopt run`. Per task: measure the baseline, then keep a beam of the best
// verified kernels; the built-in tuner sweeps the tunables of every new kernel, and with an LLM
// the planner proposes plans from beam kernels and the coder writes (and repairs) a kernel per
// plan. Every judged kernel is recorded as it is judged, with the pair against its parent and
// that pair's lesson.
//
// Work is a set of jobs (a baseline, a tuner configuration, a planner call, a coder's plan) run
// on threads of their own, at most max_in_flight at once: with more jobs than GPUs, the GPUs are
// kept busy while other jobs wait on the model. The next job goes to the task with the least
// work done per unit of weight, weight = log(1 / S) x priority where S is the SOL score of the
// task's best kernel against the best production baseline measured on this GPU model, or
// log(100 / best %SOL) x priority where there is none (SearchSettings::score), so tasks far from
// what users run and from speed of light get more of the night; a task stops at the S (or %SOL)
// threshold, on a plateau or at its candidate budget, and its share goes to the others.
//
// A model that stalls (repeats, cut-off answers, refusals, the same plans again) is noticed per
// task and for the model as a whole (stall_control.cc): the task backs off, then is parked with
// the reason; a spend-rate alarm and a per-task cap keep a night's dollars where kernels still
// improve.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agents/coder.h"
#include "agents/planner.h"
#include "agents/prompt_library.h"
#include "agents/summarizer.h"
#include "common/result.h"
#include "common/run_status.h"
#include "llm/llm_client.h"
#include "sandbox/compiler.h"
#include "sandbox/evaluator.h"
#include "sandbox/profile_bottleneck.h"
#include "src/orchestrator/candidate_evaluation.h"
#include "src/orchestrator/coder_judge.h"
#include "src/orchestrator/progress.h"
#include "src/orchestrator/run_options.h"
#include "src/orchestrator/run_recorder.h"
#include "src/orchestrator/sanitizer_lane.h"
#include "src/orchestrator/spend_rate.h"
#include "src/orchestrator/stall_detector.h"
#include "src/orchestrator/stop_signal.h"
#include "src/orchestrator/task_state.h"

namespace kopt::orchestrator {

struct OrchestratorDeps {
  RunRecorder* recorder = nullptr;                 // required
  Evaluator* evaluator = nullptr;                  // required
  int evaluator_slots = 1;                         // workers behind the evaluator
  int workers_per_gpu = 1;                         // of them sharing each GPU
  LlmClient* llm = nullptr;                        // null: the built-in tuner only
  const agents::PromptLibrary* prompts = nullptr;  // required with an LLM
  std::string coder_model;                         // recorded as the origin of coder kernels
  const CompileCache* compile_cache = nullptr;     // may be null
  StopSignal* stop = nullptr;                      // null: StopSignal::instance()
  std::function<void()> cancel_llm;                // called once when draining starts
  // Called from the loop's thread about once a second, and once at the end.
  std::function<void(const RunProgress&)> on_progress;
  // The sanitizer's own lane (sanitizer_lane.h): runs compute-sanitizer on a request's candidate
  // with worker processes of its own, lane 0 .. sanitizer_lanes-1. Unset: a would-be new best
  // is sanitized inside its evaluation (Evaluator::sanitize), holding its job slot.
  SanitizerLane::Runner sanitize;
  int sanitizer_lanes = 1;
  // The GPU workers' busy share since the first evaluation, for the progress line; may be unset.
  std::function<std::optional<double>()> gpu_busy_fraction;
};

struct RunOutcome {
  int64_t run_id = 0;
  RunStatus status = RunStatus::kFailed;  // finished, budget, interrupted or failed
  std::string stop_reason;                // "the time budget of 0.05 h ran out", ...
  int abandoned_jobs = 0;  // still running at the drain deadline: exit without destructors
  RunProgress progress;
};

class Orchestrator {
 public:
  Orchestrator(RunOptions options, OrchestratorDeps deps);
  ~Orchestrator();  // waits for job threads still running
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  // Runs until every task is done, a budget runs out, or a stop is requested. With a run id,
  // continues that run: what it evaluated is read back from the memory instead of redone.
  // Without one, uses the recorder's run when it has started one, else starts a run.
  // An error only when nothing could start (no task loads, the database refuses the run).
  Result<RunOutcome> run(std::optional<int64_t> resume_run_id = std::nullopt);

  RunProgress progress() const;

 private:
  struct Job {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  using Clock = std::chrono::steady_clock;

  // ---- set-up (orchestrator.cc) ----
  Status add_task(const std::filesystem::path& dir, bool restore);
  void restore_task(TaskState& task);
  // Rebuilds what earlier nights judged of the task into its search (TaskSearch::carry_over).
  void carry_over(TaskState& task);
  void take_submissions();
  void poll_submissions();  // take_submissions() at most every few seconds
  // Remembers a task folder the run could not take and logs why (resume_phases.cc).
  void refuse_task(const std::string& dir, const std::string& reason);
  // After a resume: a task that was done, failed or parked when the run last published its
  // state stays so; only unfinished work goes on (resume_phases.cc). Requires mutex_ unheld.
  void keep_finished_phases(const RunProgress& before);

  // ---- the run's steps (orchestrator.cc) ----
  // Reopens the run to resume (reading what it published last into `before`) or starts one.
  Status open_run(std::optional<int64_t> resume_run_id, std::optional<RunProgress>& before);
  // Loads every task folder and the submissions; an error (the run recorded failed) when none
  // loads.
  Status load_tasks(bool resuming, const std::optional<RunProgress>& before);
  // Launches and reaps jobs until every task is done (nullopt) or a stop or a budget ended the
  // run (the drain's deadline, the in-flight work reaped until then).
  std::optional<Clock::time_point> search_until_stopped();
  void check_stop_conditions();  // a stop signal or a spent budget begins the drain
  void feed_jobs();              // submissions, finished jobs, then new jobs up to the cap
  bool wait_or_finish();         // true (final status set) once every task is finished
  Clock::time_point drain_deadline() const;
  // Ends the sanitizer lane, records the run's end and says how it ended.
  RunOutcome close_run(std::optional<Clock::time_point> drained_until);

  // ---- the loop (orchestrator.cc) ----
  bool launch_next_job();  // false when no task has launchable work
  void launch(TaskState& task, std::function<void()> body);
  void reap_jobs(bool wait_all, Clock::time_point deadline);
  std::optional<std::string> exhausted_budget();
  void begin_drain(const std::string& reason, RunStatus status);
  void publish_progress(bool force);
  double elapsed_seconds() const;
  bool all_done() const;  // no job running and every task finished
  bool stopping() const { return draining_.load(); }
  // Logs what a rule of the task's search changed.
  void log_change(const TaskState& task, const PhaseChange& change) const;

  // ---- jobs (search_jobs.cc); each runs on its own thread ----
  void run_baseline(TaskState& task);
  void run_warm(TaskState& task, const WarmKernel& kernel);
  void run_tune(TaskState& task, TuneItem item);
  void run_plan(TaskState& task);
  void run_code(TaskState& task, CodeItem item);
  // The end of a coder job: the calls to the stall detector, the plan's outcome to the search
  // and the plans table, credit to the memory's pairs, and the pair parent -> kernel.
  void finish_code(TaskState& task, const CodeItem& item, const CoderJudge& judge,
                   const agents::CoderOutcome& result, const agents::AgentUsage& usage,
                   double best_before);
  // Memory examples for a plan from `parent` into `context`, `skip` of the best left out;
  // returns the pairs shown. For the coder, `plan` (its title and detail) joins the query and
  // the pairs teaching its techniques come first.
  std::vector<memory::RetrievedPair> add_examples(const TaskState& task,
                                                  const VerifiedKernel& parent, size_t skip,
                                                  agents::WorkContext& context,
                                                  const agents::Plan* plan = nullptr);
  // The coder's own examples: those that match its plan, not the planner's (add_examples).
  void retrieve_for_plan(const TaskState& task, CodeItem& item);
  // Records the planner's fresh plans and queues their coder samples; returns the plans' ids.
  // Requires mutex_.
  std::vector<int64_t> queue_plans(TaskState& task, const VerifiedKernel& parent,
                                   const agents::WorkContext& context,
                                   const std::vector<memory::RetrievedPair>& retrieved,
                                   std::vector<agents::Plan> fresh);
  // The random example slot of a prompt that showed `shown` (the drawn pair carries its
  // propensity), stored for off-policy scoring; its id, or nothing when no slot was drawn.
  std::optional<int64_t> record_draw(const TaskState& task, const VerifiedKernel& parent,
                                     const char* agent,
                                     const std::vector<memory::RetrievedPair>& shown,
                                     std::vector<int64_t> plan_ids);
  // A uniform index in [0, n) for the random example slot (thread-safe).
  size_t draw_index(size_t n);
  // The technique cards the planner reads for `task`, one text each (technique_cards.h).
  std::vector<std::string> technique_card_texts(const TaskState& task);

  // ---- the sanitizer lane (sanitizer_jobs.cc) ----
  // Judges a candidate; a provisional best goes to the sanitizer lane, whose verdict
  // on_sanitized() applies. Requires mutex_ unheld.
  CandidateOutcome judge(TaskState& task, const CandidateInput& input);
  void on_sanitized(TaskState& task, const CandidateOutcome& outcome,
                    const SanitizerOutcome& sanitized);
  // Hands a provisional best to the lane; its pass runs only while no faster kernel of its task
  // has been judged.
  void submit_to_lane(TaskState& task, const CandidateOutcome& outcome);
  // Whether a pair ending in `kernel` must wait (its kernel is provisional: stashed until the
  // pass) or be dropped (it or its parent failed the pass). Requires mutex_.
  bool hold_pair(TaskState& task, const VerifiedKernel& parent, const VerifiedKernel& kernel,
                 const std::string& lesson);
  // A search that ended with every task done leaves its provisional bests to the lane, which
  // goes on through its queue until it is empty, the time budget ends or a stop comes; true
  // where a task was submitted meanwhile (the search goes on).
  bool sanitize_what_is_left();
  void search_goes_on();  // a task joined: the run searches again
  // At the end of the run: stops the lane and waits for its passes until `deadline`; returns
  // how many were still running.
  int finish_sanitizer_lane(Clock::time_point deadline);

  // ---- shared by the jobs (search_jobs.cc) ----
  CandidateInput candidate_input(const TaskState& task, std::string source,
                                 memory::KernelOrigin origin, std::optional<int64_t> parent) const;
  // Stores the pair parent -> kernel when the change is large enough, with its lesson.
  void record_pair(TaskState& task, const VerifiedKernel& parent, const VerifiedKernel& kernel,
                   const std::string& mechanical_lesson);
  agents::WorkContext work_context(const TaskState& task, const VerifiedKernel& current) const;
  // Reads the task's best production baseline on this run's GPU model into its search and says
  // in the log what its weight and stopping rule are judged by. Requires mutex_ and gpu_.
  void load_production_baseline(TaskState& task);
  // Queues the task's warm start (the best kernels of earlier runs on this GPU model). Requires
  // mutex_.
  void queue_warm_start(TaskState& task);

  // ---- a model that stalls, and spend (stall_control.cc); all require mutex_ ----
  // Adds an agent's usage to the task, the run and the spend rate.
  void charge(TaskState& task, const agents::AgentUsage& usage);
  // Feeds the task's and the model's stall detectors with one coder job's calls and acts on
  // their advice.
  void record_coder_calls(TaskState& task, const std::vector<CallOutcome>& calls);
  // A planner answer with no new plan (or a model failure): back off, then park.
  void planner_stalled(TaskState& task, const std::string& note, const std::string& why);
  void back_off(TaskState& task, std::chrono::milliseconds delay, const std::string& why);
  void park(TaskState& task, const std::string& why);
  void park_model(const std::string& why);
  // The agent's configured temperature raised by `boost`, within its max_temperature.
  std::optional<double> raised_temperature(const std::string& agent, double boost) const;
  // Whether new LLM work must wait: the model is parked or backed off, or spend runs too fast.
  bool llm_held_back(Clock::time_point now) const;
  void check_spend_rate();  // takes mutex_ itself

  RunOptions options_;
  OrchestratorDeps deps_;
  StopSignal& stop_;
  std::unique_ptr<CandidateEvaluator> candidates_;
  std::unique_ptr<agents::AgentCaller> caller_;
  std::unique_ptr<agents::Planner> planner_;
  std::unique_ptr<agents::Coder> coder_;
  std::unique_ptr<agents::Summarizer> summarizer_;
  // The classes of the memory's profiles, for retrieval; guarded by itself.
  BottleneckMemo bottleneck_classes_;
  // The random example slot's generator, seeded on first use (SearchSettings::example_draw_seed).
  std::mutex draw_mutex_;
  std::optional<std::mt19937_64> draw_rng_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::list<TaskState> tasks_;  // a list: jobs hold references
  std::list<Job> jobs_;
  std::optional<GpuIdentity> gpu_;
  agents::AgentUsage usage_;   // this process's LLM use, all tasks
  StallDetector model_stall_;  // the coder model's calls across tasks
  Clock::time_point model_not_before_{};
  std::string model_parked_;  // why the model gets no more work this run; "" while it does
  SpendRate spend_rate_;
  std::string alarm_;                     // the spend-rate alarm while it holds; ""
  std::optional<double> search_done_at_;  // elapsed seconds when every task was done
  double cost_before_ = 0;                // LLM spend of the run before a resume
  int64_t tokens_before_ = 0;
  double elapsed_before_ = 0;         // active seconds of the run before a resume
  std::vector<RefusedTask> refused_;  // task folders this run could not take
  Clock::time_point started_;
  Clock::time_point last_status_write_{};
  Clock::time_point last_submission_poll_{};
  std::atomic<bool> draining_{false};
  std::string state_ = "running";
  std::string stop_reason_;
  // Set by begin_drain or wait_or_finish before close_run reads it.
  RunStatus final_status_ = RunStatus::kFailed;
  int max_in_flight_ = 1;
  // The sanitizer lane, when deps_.sanitize is set; its provisional bests and the pairs that
  // wait for their pass (kernel id -> parent, kernel, lesson).
  std::unique_ptr<SanitizerLane> lane_;
  struct HeldPair {
    VerifiedKernel parent;
    VerifiedKernel kernel;
    std::string lesson;
  };
  std::set<int64_t> provisional_;
  std::map<int64_t, CandidateOutcome> provisional_outcomes_;  // for a second submission
  std::map<int64_t, std::vector<HeldPair>> held_pairs_;
  int llm_jobs_ = 0;  // planner and coder jobs running
  // Gives a model job's slot back when the job ends, however it ends.
  struct LlmSlot {
    Orchestrator* self;
    ~LlmSlot() {
      std::lock_guard lock(self->mutex_);
      --self->llm_jobs_;
    }
  };
};

}  // namespace kopt::orchestrator
