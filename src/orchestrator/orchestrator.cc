#include "src/orchestrator/orchestrator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "sandbox/kernel_file.h"

namespace kopt::orchestrator {

namespace {

constexpr auto kWakeInterval = std::chrono::milliseconds(200);
// How far past a night's time budget the drain may run (drain_deadline()).
constexpr auto kTimeBudgetOverrun = std::chrono::seconds(3);
constexpr auto kStatusInterval = std::chrono::seconds(1);
constexpr auto kSubmissionInterval = std::chrono::seconds(2);

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

}  // namespace

Orchestrator::Orchestrator(RunOptions options, OrchestratorDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      stop_(deps_.stop ? *deps_.stop : StopSignal::instance()),
      model_stall_(options_.stall),
      spend_rate_(std::chrono::milliseconds(
          static_cast<int64_t>(options_.budgets.spend_rate_window_s * 1000))) {
  if (!deps_.recorder || !deps_.evaluator) {
    throw std::invalid_argument("the orchestrator needs a recorder and an evaluator");
  }
  candidates_ =
      std::make_unique<CandidateEvaluator>(*deps_.evaluator, *deps_.recorder, deps_.compile_cache);
  if (!options_.use_llm) deps_.llm = nullptr;
  if (deps_.llm) {
    if (!deps_.prompts) throw std::invalid_argument("an LLM needs prompt templates");
    caller_ = std::make_unique<agents::AgentCaller>(*deps_.llm, *deps_.prompts);
    planner_ = std::make_unique<agents::Planner>(*caller_);
    coder_ = std::make_unique<agents::Coder>(*caller_);
    summarizer_ = std::make_unique<agents::Summarizer>(*caller_);
    if (options_.keep_prompts) {
      caller_->set_transcript_sink([recorder = deps_.recorder](const agents::Transcript& t) {
        recorder->record_transcript(t);
      });
    }
  }
  int slots = std::max(1, deps_.evaluator_slots);
  // Without a cap of its own, model jobs share 2 x GPUs + 2 slots with GPU jobs; with one,
  // every GPU gets a slot and the model its llm_concurrency.
  int with_llm = options_.llm_concurrency > 0 ? slots + options_.llm_concurrency : 2 * slots + 2;
  // Tuner-only, too, more jobs than GPUs: the next candidate compiles on the CPU (the local gate)
  // while the GPU times the one before, so a freed GPU finds it ready.
  max_in_flight_ =
      options_.max_in_flight > 0 ? options_.max_in_flight : (deps_.llm ? with_llm : 2 * slots + 1);
  if (deps_.sanitize) {
    lane_ = std::make_unique<SanitizerLane>(deps_.sanitize, std::max(1, deps_.sanitizer_lanes));
    candidates_->set_sanitizer_lane(true);
  }
}

Orchestrator::~Orchestrator() {
  for (Job& job : jobs_) {
    if (job.thread.joinable()) job.thread.join();
  }
  lane_.reset();  // its threads call back into the state below: they end first
}

Status Orchestrator::add_task(const std::filesystem::path& dir, bool restore) {
  auto spec = load_task(dir);
  if (!spec) return make_error(spec.error());
  {
    std::lock_guard lock(mutex_);
    for (const TaskState& t : tasks_) {
      if (t.spec().name == spec->name) {
        return make_error("task " + spec->name + " is already part of this run (from " +
                          t.spec().dir.string() + ")");
      }
    }
  }
  auto reference = read_file(dir / "reference.cu");
  if (!reference) return make_error(reference.error());
  auto baseline = read_file(dir / "baseline.cu");
  if (!baseline) return make_error(baseline.error());
  for (const auto& [name, text] :
       {std::pair{"reference.cu", &*reference}, {"baseline.cu", &*baseline}}) {
    auto file = parse_kernel_file(*text, (dir / name).string(), &*spec);
    if (!file) return make_error(file.error());
  }
  if (auto s = deps_.recorder->upsert_task(*spec); !s) return s;
  std::lock_guard lock(mutex_);
  SearchLimits limits{options_.search, options_.stall, options_.budgets.candidates_per_task,
                      options_.budgets.max_usd_per_task, deps_.llm != nullptr};
  TaskState& task = tasks_.emplace_back(std::move(*spec), std::move(*reference),
                                        std::move(*baseline), std::move(limits));
  // What earlier nights judged first, so that this run's own history (a resume) has the last
  // word on the kernels both judged.
  carry_over(task);
  if (restore) restore_task(task);
  spdlog::info(
      "task {} from {} (priority {}){}", task.spec().name, dir.string(), task.spec().priority,
      restore ? fmt::format(": {} candidates judged before the resume", task.candidates()) : "");
  return ok_status();
}

void Orchestrator::take_submissions() {
  auto submissions = deps_.recorder->take_submissions();
  if (!submissions) {
    spdlog::warn("submissions: {}", submissions.error());
    return;
  }
  for (const Submission& s : *submissions) {
    if (auto added = add_task(s.task_dir, false); !added) {
      refuse_task(s.task_dir, added.error());
    } else {
      std::lock_guard lock(mutex_);
      options_.task_dirs.push_back(s.task_dir);
      spdlog::info("took submitted task {}", s.task_dir);
    }
  }
}

bool Orchestrator::all_done() const {
  std::lock_guard lock(mutex_);
  return jobs_.empty() &&
         std::all_of(tasks_.begin(), tasks_.end(), [](const TaskState& t) { return t.finished(); });
}

double Orchestrator::elapsed_seconds() const {
  return elapsed_before_ + std::chrono::duration<double>(Clock::now() - started_).count();
}

std::optional<std::string> Orchestrator::exhausted_budget() {
  if (options_.budgets.hours && elapsed_seconds() >= *options_.budgets.hours * 3600) {
    return fmt::format("the time budget of {} h ran out", *options_.budgets.hours);
  }
  if (options_.budgets.max_usd) {
    std::lock_guard lock(mutex_);
    double spent = cost_before_ + usage_.cost_usd;
    if (spent >= *options_.budgets.max_usd) {
      return fmt::format("the LLM cost budget of ${:.2f} ran out (${:.2f} spent)",
                         *options_.budgets.max_usd, spent);
    }
  }
  return std::nullopt;
}

void Orchestrator::begin_drain(const std::string& reason, RunStatus status) {
  if (draining_.exchange(true)) return;
  deps_.evaluator->cancel_pauses();  // a GPU waiting to be quiet must not hold up the drain
  {
    std::lock_guard lock(mutex_);
    stop_reason_ = reason;
    final_status_ = status;
    state_ = "draining";
  }
  spdlog::info("stopping: {}; no new work, waiting up to {:.0f} s for the work in flight", reason,
               options_.drain_seconds);
  if (deps_.cancel_llm) deps_.cancel_llm();
  // No sanitizer pass starts after the budget: one takes half a minute or more of its GPU.
  if (lane_) lane_->stop();
  changed_.notify_all();
}

void Orchestrator::log_change(const TaskState& task, const PhaseChange& change) const {
  switch (change.kind) {
    case PhaseChange::Kind::kNone:
      return;
    case PhaseChange::Kind::kDone:
      spdlog::info("[{}] done: {} (best {:.2f}x, {:.1f}% SOL, {} candidates)", task.spec().name,
                   change.note, task.best_speedup(), task.best_sol_percent(), task.candidates());
      return;
    case PhaseChange::Kind::kParked:
      if (task.finished()) {
        spdlog::info("[{}] {}: {} (best {:.2f}x, {:.1f}% SOL)", task.spec().name,
                     phase_name(task.phase()), change.note, task.best_speedup(),
                     task.best_sol_percent());
      } else {
        spdlog::warn("[{}] parked: {}; no more LLM work for this task in this run{}",
                     task.spec().name, change.note,
                     task.tuning() ? " (the tuner finishes its queue)" : "");
      }
      return;
    case PhaseChange::Kind::kFailed:
      spdlog::error("[{}] {}", task.spec().name, change.note);
      return;
  }
}

bool Orchestrator::launch_next_job() {
  std::unique_lock lock(mutex_);
  TaskState* chosen = nullptr;
  double chosen_score = 0;
  JobKind kind = JobKind::kBaseline;
  bool llm_up = deps_.llm != nullptr;
  if (llm_up) {
    auto availability = deps_.llm->availability("coder");
    llm_up = availability.available;
  }
  Clock::time_point now = Clock::now();
  // LLM concurrency is a setting of its own: model jobs wait for a free slot, GPU jobs do not.
  bool llm_slot = options_.llm_concurrency <= 0 || llm_jobs_ < options_.llm_concurrency;
  bool llm_now = llm_up && llm_slot && !llm_held_back(now);
  for (TaskState& task : tasks_) {
    PhaseChange change;
    std::optional<JobKind> next = task.next_job(now, llm_now, change);
    log_change(task, change);
    if (auto note = task.take_score_note()) spdlog::info("[{}] {}", task.spec().name, *note);
    if (!next) continue;
    double score = task.fair_score();
    if (!chosen || score < chosen_score) {
      chosen = &task;
      chosen_score = score;
      kind = *next;
    }
  }
  if (!chosen) return false;
  TaskState& task = *chosen;
  TakenJob job = task.take_job(kind);
  switch (kind) {
    case JobKind::kBaseline:
      launch(task, [this, &task] { run_baseline(task); });
      break;
    case JobKind::kWarm:
      launch(task, [this, &task, kernel = std::move(*job.warm)] { run_warm(task, kernel); });
      break;
    case JobKind::kTune:
      launch(task, [this, &task, item = *job.tune] { run_tune(task, item); });
      break;
    case JobKind::kCode: {
      auto item = std::make_shared<CodeItem>(std::move(*job.code));
      ++llm_jobs_;
      launch(task, [this, &task, item] {
        LlmSlot slot{this};
        run_code(task, std::move(*item));
      });
      break;
    }
    case JobKind::kPlan:
      ++llm_jobs_;
      launch(task, [this, &task] {
        LlmSlot slot{this};
        run_plan(task);
      });
      break;
  }
  return true;
}

void Orchestrator::launch(TaskState& task, std::function<void()> body) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  Job& job = jobs_.emplace_back();
  job.done = done;
  job.thread = std::thread([this, &task, body = std::move(body), done] {
    try {
      body();
    } catch (const std::exception& e) {
      // A bug in one job must not take the night's other work down with it.
      spdlog::error("[{}] job failed: {}", task.spec().name, e.what());
    }
    {
      std::lock_guard lock(mutex_);
      task.on_job_ended();
      done->store(true);
    }
    changed_.notify_all();
  });
}

void Orchestrator::reap_jobs(bool wait_all, Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (true) {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->done->load()) {
        std::thread thread = std::move(it->thread);
        it = jobs_.erase(it);
        lock.unlock();
        thread.join();
        lock.lock();
      } else {
        ++it;
      }
    }
    if (!wait_all || jobs_.empty() || Clock::now() >= deadline) return;
    changed_.wait_until(lock, std::min(deadline, Clock::now() + kWakeInterval));
    lock.unlock();
    publish_progress(false);
    lock.lock();
  }
}

RunProgress Orchestrator::progress() const {
  std::lock_guard lock(mutex_);
  RunProgress p;
  p.run_id = deps_.recorder->run_id();
  p.pid = ::getpid();
  p.state = state_;
  p.stop_reason = stop_reason_;
  p.mode = deps_.llm ? "llm" : "tuner";
  p.gpu = gpu_ ? gpu_->model : "";
  p.workers_per_gpu = std::max(1, deps_.workers_per_gpu);
  p.gpus = std::max(1, deps_.evaluator_slots / p.workers_per_gpu);
  p.elapsed_seconds = elapsed_seconds();
  if (options_.budgets.hours) {
    p.time_left_seconds = std::max(0.0, *options_.budgets.hours * 3600 - p.elapsed_seconds);
  }
  p.max_usd = options_.budgets.max_usd;
  p.tokens = tokens_before_ + usage_.input_tokens + usage_.output_tokens;
  p.cost_usd = cost_before_ + usage_.cost_usd;
  p.alarm = alarm_;
  p.waiting_workers = deps_.evaluator->waiting();
  if (deps_.gpu_busy_fraction) p.gpu_busy_fraction = deps_.gpu_busy_fraction();
  if (lane_) {
    p.sanitizer_runs = lane_->runs();
    p.sanitizer_pending = lane_->pending();
  }
  p.search_done_seconds = search_done_at_;
  for (const TaskState& t : tasks_) p.tasks.push_back(t.progress());
  p.refused = refused_;
  return p;
}

void Orchestrator::publish_progress(bool force) {
  auto now = Clock::now();
  if (!force && now - last_status_write_ < kStatusInterval) return;
  last_status_write_ = now;
  RunProgress p = progress();
  p.pending_submissions = deps_.recorder->pending_submissions();
  StatusRow row;
  row.run_id = p.run_id;
  row.pid = p.pid;
  row.active_seconds = p.elapsed_seconds;
  row.status_json = dump_json(p.to_json());
  if (auto s = deps_.recorder->write_status(row); !s) spdlog::warn("status: {}", s.error());
  if (deps_.on_progress) deps_.on_progress(p);
}

Status Orchestrator::open_run(std::optional<int64_t> resume_run_id,
                              std::optional<RunProgress>& before) {
  RunRecorder& recorder = *deps_.recorder;
  if (resume_run_id) {
    before = recorder.published_progress(*resume_run_id);
    if (auto s = recorder.resume_run(*resume_run_id); !s) return make_error(s.error());
    auto totals = recorder.run_totals();
    if (totals) {
      cost_before_ = totals->cost_usd;
      tokens_before_ = totals->input_tokens + totals->output_tokens;
    }
    // The status row keeps the run's active time across resumes: the wall-time budget is for
    // work done, not for the hours the machine sat idle in between.
    elapsed_before_ = recorder.active_seconds(*resume_run_id);
    spdlog::info("resuming run {} ({} of work and ${:.2f} of LLM spend so far)", *resume_run_id,
                 format_duration(elapsed_before_), cost_before_);
  } else if (recorder.run_id() == 0) {
    auto id = recorder.start_run(dump_json(run_record_json(options_)));
    if (!id) return make_error("cannot start a run: " + id.error());
  }
  if (!resume_run_id) spdlog::info("run {} started", recorder.run_id());
  return ok_status();
}

Status Orchestrator::load_tasks(bool resuming, const std::optional<RunProgress>& before) {
  std::vector<std::string> refused;
  for (const auto& dir : options_.task_dirs) {
    if (auto s = add_task(dir, resuming); !s) {
      refuse_task(dir.string(), s.error());
      refused.push_back(s.error());
    }
  }
  if (before) keep_finished_phases(*before);
  take_submissions();
  if (tasks_.empty()) {
    (void)deps_.recorder->finish_run(RunStatus::kFailed);
    return make_error(refused.empty() ? std::string("no task to work on")
                                      : "no task could be loaded:\n" + join(refused, "\n"));
  }
  spdlog::info("{} tasks, {}, up to {} jobs at once on {}", tasks_.size(),
               deps_.llm ? "LLM agents and the tuner" : "the built-in tuner only (no LLM)",
               max_in_flight_, deps_.evaluator->name());
  return ok_status();
}

void Orchestrator::check_stop_conditions() {
  if (stop_.requested() && !stopping()) {
    int sig = stop_.signal_number();
    begin_drain(sig ? "interrupted by " + signal_name(sig) : std::string("a stop was requested"),
                RunStatus::kInterrupted);
  }
  if (!stopping()) {
    if (auto reason = exhausted_budget()) begin_drain(*reason, RunStatus::kBudget);
  }
}

void Orchestrator::poll_submissions() {
  if (Clock::now() - last_submission_poll_ < kSubmissionInterval) return;
  last_submission_poll_ = Clock::now();
  take_submissions();
}

void Orchestrator::feed_jobs() {
  poll_submissions();
  reap_jobs(false, Clock::now());
  check_spend_rate();
  while (!stopping()) {
    {
      std::lock_guard lock(mutex_);
      if (static_cast<int>(jobs_.size()) >= max_in_flight_) break;
    }
    if (!launch_next_job()) break;
  }
  if (all_done()) take_submissions();  // a task submitted just now still counts
}

bool Orchestrator::wait_or_finish() {
  std::unique_lock lock(mutex_);
  bool all_finished =
      std::all_of(tasks_.begin(), tasks_.end(), [](const TaskState& t) { return t.finished(); });
  if (jobs_.empty() && all_finished) {
    size_t failed =
        static_cast<size_t>(std::count_if(tasks_.begin(), tasks_.end(), [](const TaskState& t) {
          return t.phase() == TaskState::Phase::kFailed;
        }));
    final_status_ = failed == tasks_.size() ? RunStatus::kFailed : RunStatus::kFinished;
    stop_reason_ = failed == tasks_.size() ? "every task failed (" + tasks_.front().note() + ")"
                                           : fmt::format("all {} tasks are done", tasks_.size());
    return true;
  }
  changed_.wait_for(lock, kWakeInterval);
  return false;
}

Orchestrator::Clock::time_point Orchestrator::drain_deadline() const {
  Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.drain_seconds * 1000));
  if (!options_.budgets.hours) return deadline;
  // A night's time budget bounds the drain too: what cannot finish within a few seconds of the
  // limit (a queued evaluation, a half-minute sanitizer pass) is cut and said, instead of the
  // night running on for the drain's minute.
  double left = std::max(0.0, *options_.budgets.hours * 3600 - elapsed_seconds());
  Clock::time_point limit = Clock::now() +
                            std::chrono::milliseconds(static_cast<int64_t>(left * 1000)) +
                            kTimeBudgetOverrun;
  return std::min(deadline, limit);
}

std::optional<Orchestrator::Clock::time_point> Orchestrator::search_until_stopped() {
  while (true) {
    check_stop_conditions();
    if (stopping()) {
      Clock::time_point deadline = drain_deadline();
      reap_jobs(true, deadline);
      return deadline;
    }
    feed_jobs();
    if (wait_or_finish()) return std::nullopt;
    publish_progress(false);
  }
}

RunOutcome Orchestrator::close_run(std::optional<Clock::time_point> drained_until) {
  // The lane's passes in progress finish within the drain time; queued ones are dropped, their
  // kernels staying provisional (never exported).
  int lane_running = finish_sanitizer_lane(drained_until ? *drained_until : drain_deadline());
  RunOutcome outcome;
  {
    std::lock_guard lock(mutex_);
    outcome.abandoned_jobs = static_cast<int>(jobs_.size()) + lane_running;
    state_ = run_status_name(final_status_);
    outcome.status = final_status_;
    outcome.stop_reason = stop_reason_;
  }
  bool time_spent = options_.budgets.hours && elapsed_seconds() >= *options_.budgets.hours * 3600;
  if (outcome.abandoned_jobs > 0) {
    // Said apart, because what becomes of them differs: a cut job's evaluation or model call
    // is not stored; a kernel whose sanitizer pass was cut stays provisional (never exported).
    spdlog::warn(
        "cut at the {}: {} jobs in flight (what they finished is stored, the rest is not) and "
        "{} sanitizer passes (their kernels stay provisional)",
        time_spent ? "time budget" : "drain deadline", outcome.abandoned_jobs - lane_running,
        lane_running);
  }
  outcome.run_id = deps_.recorder->run_id();
  publish_progress(true);
  if (auto s = deps_.recorder->finish_run(outcome.status); !s) spdlog::error("run: {}", s.error());
  outcome.progress = progress();
  spdlog::info("run {} {}: {}", outcome.run_id, run_status_name(outcome.status),
               outcome.stop_reason);
  return outcome;
}

Result<RunOutcome> Orchestrator::run(std::optional<int64_t> resume_run_id) {
  std::optional<RunProgress> before;  // what the run published last, read before reopening it
  if (auto opened = open_run(resume_run_id, before); !opened) return make_error(opened.error());
  started_ = Clock::now();
  if (auto loaded = load_tasks(resume_run_id.has_value(), before); !loaded)
    return make_error(loaded.error());
  std::optional<Clock::time_point> drained_until = search_until_stopped();
  // A search that ended early goes on where a task was submitted while its lane checked.
  while (!drained_until && sanitize_what_is_left()) drained_until = search_until_stopped();
  return close_run(drained_until);
}

}  // namespace kopt::orchestrator
