#include "sandbox/worker/evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>

#include "common/files.h"
#include "common/sha256.h"
#include "sandbox/compiler.h"
#include "sandbox/gpu_turn.h"
#include "sandbox/kernel_file.h"
#include "sandbox/worker/co_runner.h"
#include "sandbox/worker/gpu_quiet_check.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/profile_pass.h"
#include "sandbox/worker/speed_of_light.h"
#include "sandbox/worker/timing_loop.h"
#include "sandbox/worker/verifier.h"
#include "sandbox/worker/verify_plan.h"

namespace kopt::worker {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Compiled {
  std::optional<LoadedKernel> kernel;
  std::optional<PlanFailure> failure;
  CompileOutput output;
};

// Parses, compiles and loads one kernel file; failures become verdicts.
Compiled prepare(Device& device, const KernelSource& source, const TaskSpec& task,
                 const std::string& arch, const CompileCache& cache) {
  Compiled c;
  auto file = parse_kernel_file(source.source, source.origin, &task);
  if (!file) {
    c.failure = PlanFailure{Verdict::kInvalidPlan, file.error()};
    return c;
  }
  CompileRequest request = make_compile_request(*file, source.tunables, arch);
  request.use_pch = true;
  auto compiled = compile_kernel(request, &cache);
  if (!compiled) {
    c.failure = PlanFailure{Verdict::kCompileError, compiled.error()};
    return c;
  }
  c.output = *compiled;
  if (!compiled->ok) {
    c.failure = PlanFailure{Verdict::kCompileError, compiled->log};
    return c;
  }
  auto loaded = LoadedKernel::load(device, std::move(*file), *compiled, source.tunables);
  if (!loaded) {
    c.failure = PlanFailure{Verdict::kLaunchError, loaded.error(), device.context_lost()};
    return c;
  }
  c.kernel = std::move(*loaded);
  return c;
}

// What the plan needs besides the task: the candidate's literals and the GPU's memory.
PlanInputs plan_inputs(Device& device, const LoadedKernel& candidate,
                       const std::map<std::string, int64_t>& tunables) {
  PlanInputs inputs;
  inputs.candidate = &candidate.file();
  inputs.tunables = tunables;
  MemoryInfo memory = memory_info(device);
  inputs.free_bytes = int64_t(memory.free_bytes);
  inputs.total_bytes = int64_t(memory.total_bytes);
  return inputs;
}

// "12.35": a median in microseconds for a verdict's detail.
std::string us_text(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", us);
  return text;
}

// "+ 3 stress rounds + 9 input families + 4 drawn shapes + 8 threshold shapes": what the
// verification covered besides the sweep and the holdout.
std::string coverage_text(const TaskSpec& task, const EvalOptions& options, const VerifyPlan& plan,
                          int corun_runs) {
  std::string text;
  if (options.stress && !task.stress.empty())
    text += " + " + std::to_string(task.stress.size()) + " stress rounds";
  if (plan.family_rounds > 0)
    text += " + " + std::to_string(plan.family_rounds) + " input family rounds";
  if (options.draws && task.draws.count > 0)
    text += " + " + std::to_string(task.draws.count) + " drawn shapes";
  if (plan.threshold_shapes > 0)
    text += " + " + std::to_string(plan.threshold_shapes) + " shapes at the kernel's thresholds";
  if (plan.corun_rounds > 0)
    text +=
        " + " + std::to_string(plan.corun_rounds) + " co-run rounds (" +
        std::to_string(corun_runs) +
        " runs beside a kernel holding a share of the SMs; inter-block signs: " + plan.corun_signs +
        ")";
  if (plan.wide) text += " + the round past 2^31 elements";
  for (const auto& note : plan.notes) text += "; " + note;
  return text;
}

// One kernel of one task, as a key of what the worker keeps across evaluations: the task, the
// kernel's source and its tunables.
std::string kernel_key(const std::string& task_json, const KernelSource& kernel) {
  std::string key = task_json + '\0' + kernel.source;
  for (const auto& [name, value] : kernel.tunables)
    key += '\0' + name + "=" + std::to_string(value);
  return key;
}

// Whether verification, begun at `started` when this process had waited `waits_ms` for its
// GPU's turns, has spent its time budget (if it has one). Waits since then are not its time: the
// sanitizer lane's worker yields to timers and backs off, and its coverage must not shrink so;
// but twice the budget in all ends it, so that with the last step (a run may take the budget)
// the tool's wall limit (seconds_per_tool, 4x the budget) is never reached.
bool over_budget(const EvalOptions& options, Clock::time_point started, double waits_ms) {
  if (options.verify_budget_seconds <= 0) return false;
  double budget_ms = 1000.0 * options.verify_budget_seconds, wall_ms = ms_since(started);
  return wall_ms - (yielding_waits_ms() - waits_ms) > budget_ms || wall_ms > 2 * budget_ms;
}

void apply_failure(EvalResult& result, const PlanFailure& failure) {
  result.verdict = failure.verdict;
  result.detail = failure.detail;
}

// "5 rounds x 4, 2 rounds x 2, 1 round x 1": how many shapes got how many rounds, most first.
std::string rounds_text(const std::map<int, int>& shapes_by_rounds) {
  std::string text;
  for (auto it = shapes_by_rounds.rbegin(); it != shapes_by_rounds.rend(); ++it)
    text += std::string(text.empty() ? "" : ", ") + std::to_string(it->first) +
            (it->first == 1 ? " round x " : " rounds x ") + std::to_string(it->second);
  return text;
}

// A step of an evaluation either lets it go on or ends it with the verdict it left in the result;
// errors (the task's or the worker's) are errors.
enum class Next { kGoOn, kEnd };
using Step = Result<Next>;

// One evaluation, step by step (Evaluation::run is the script). The total time is set once, at
// the end, whichever step ended it.
class Evaluation {
 public:
  Evaluation(Device& device, SupportKernels& support, GpuQuietCheck& quiet,
             const EvalRequest& request, InputPool* pool, BaselineHistory* baselines)
      : device_(device),
        support_(support),
        quiet_(quiet),
        request_(request),
        options_(request.options),
        pool_(pool),
        baselines_(baselines) {
    result_.device = device.info().to_json();
  }

  Result<EvalResult> run() {
    // Each step's wall time goes to result.phases under its name (what the daemon's phase log and
    // bench/daemon_throughput.py show): a few clock reads per evaluation.
    using StepFn = Step (Evaluation::*)();
    struct NamedStep {
      const char* name;
      StepFn step;
      GpuUse use;  // the turn it runs in (sandbox/gpu_turn.h: step_unit)
    };
    // "untimed" may profile (a timing turn); "reverify" verifies again (compute).
    static constexpr NamedStep kSteps[] = {
        {"kernels", &Evaluation::build_kernels, GpuUse::kCompute},
        {"verify", &Evaluation::verify, GpuUse::kPerShape},
        {"timed_plan", &Evaluation::resolve_timed_plan, GpuUse::kHost},
        {"peaks", &Evaluation::bound_by_speed_of_light, GpuUse::kCompute},
        {"untimed", &Evaluation::finish_untimed, GpuUse::kTimed},
        {"baseline_build", &Evaluation::build_baseline, GpuUse::kCompute},
        {"time", &Evaluation::time_candidate, GpuUse::kTimed},
        {"gate", &Evaluation::finish_gate, GpuUse::kPerShape},
        {"accept", &Evaluation::accept_timing, GpuUse::kHost},
        {"reverify", &Evaluation::reject_implausible, GpuUse::kCompute},
        {"profile", &Evaluation::profile_new_best, GpuUse::kTimed}};
    for (const auto& [name, step, use] : kSteps) {
      auto step_started = Clock::now();
      // The sanitizer lane's worker and co-workers of a shared GPU compute in units between
      // timing turns: each step is one (verification: each shape, verify_step).
      std::optional<YieldingTurn> unit = step_unit(use, gpu_id());
      if (unit) add_phase("turns.unit_wait", unit->waited_ms());
      auto next = (this->*step)();
      unit.reset();
      add_phase(name, ms_since(step_started));
      if (!next) return make_error(next.error());
      if (*next == Next::kEnd) break;
    }
    result_.total_ms = ms_since(started_);
    return std::move(result_);
  }

 private:
  // What every worker on this GPU names its turns by (as WideRoundTurn).
  std::string gpu_id() const {
    return gpu_turn_name(device_.info().pci_bus_id, device_.info().ordinal);
  }

  // The GPU's timing turn (sandbox/gpu_turn.h), its wait said under `phase`. A yielding worker
  // takes none: it holds a unit's shared turn itself, and its numbers are never reported.
  void take_timing_turn(std::optional<TimingTurn>& turn, const char* phase) {
    if (!takes_timing_turn()) return;
    turn.emplace(gpu_id());
    add_phase(phase, turn->waited_ms());
  }

  // `ms` more under `name` in result.phases ("verify.plan": a part of the verify step).
  void add_phase(const char* name, double ms) {
    nlohmann::json& slot = result_.phases[name];
    slot = (slot.is_number() ? slot.get<double>() : 0.0) + std::round(ms * 10) / 10;
  }

  // The task, the candidate (its failures are verdicts), the reference and the seed.
  Step build_kernels() {
    auto task = parse_task(request_.task_json, "task.json");
    if (!task) return make_error("the request's task does not parse: " + task.error());
    task_ = std::move(*task);
    arch_ = options_.arch.empty() ? device_.info().arch() : options_.arch;
    cache_.emplace(cache_directory() / "compile");
    add_phase("kernels.task", ms_since(started_));

    auto compile_started = Clock::now();
    candidate_ = prepare(device_, request_.candidate, task_, arch_, *cache_);
    result_.compile_ms = ms_since(compile_started);
    add_phase("kernels.compile", result_.compile_ms);
    result_.compile_log = candidate_.output.log;
    result_.compile_cache_hit = candidate_.output.cache_hit;
    // What `kopt export` must ship: the bytes loaded here are the bytes judged.
    if (!candidate_.output.cubin.empty())
      result_.image_sha256 = sha256_hex(candidate_.output.cubin);
    if (candidate_.failure) {
      apply_failure(result_, *candidate_.failure);
      return Next::kEnd;
    }
    auto reference_started = Clock::now();
    reference_ = prepare(device_, request_.reference, task_, arch_, *cache_);
    add_phase("kernels.reference", ms_since(reference_started));
    if (reference_.failure)
      return make_error("the task's reference does not build: " + reference_.failure->detail);

    seed_ = options_.seed;
    if (seed_ == 0)
      seed_ = std::random_device{}() * 0x9e3779b97f4a7c15ULL ^
              uint64_t(started_.time_since_epoch().count());
    return Next::kGoOn;
  }

  // Verification: the sweep, the stress rounds, then the holdout shapes.
  Step verify() {
    verify_started_ = Clock::now();
    verify_waits_ms_ = yielding_waits_ms();
    set_exact_allocations(options_.exact_allocations);
    verifier_.emplace(device_, support_, task_, *reference_.kernel, *candidate_.kernel, options_);
    // Kept input sets belong to one task and one reference: both are in the key. A reproduction
    // (an explicit seed) gets inputs from its seed alone.
    if (!options_.reuse_inputs || options_.seed != 0) pool_ = nullptr;
    pool_key_ = kernel_key(request_.task_json, request_.reference);
    auto plan =
        plan_verification(task_, options_, seed_,
                          plan_inputs(device_, *candidate_.kernel, request_.candidate.tunables));
    add_phase("verify.plan", ms_since(verify_started_));
    if (!plan) return make_error(plan.error());
    plan_ = std::move(*plan);
    for (const auto& step : plan_.steps) {
      if (screening() && !screen_step(step, options_)) {
        held_.push_back(&step);
        continue;
      }
      if (over_budget(options_, verify_started_, verify_waits_ms_)) break;
      auto next = counted_step(step);
      if (!next || *next == Next::kEnd) return next;
    }
    verifier_->use_task_variant(nullptr);
    result_.verify_ms = ms_since(verify_started_);
    result_.verify_phases = verifier_->phases().to_json();
    return Next::kGoOn;
  }

  // Screening (EvalOptions::full_gate_below_us): before timing only the declared shapes' sweep,
  // or nothing (screen_time_first); the rest of the gate waits for the median (finish_gate).
  bool screening() const { return options_.time && options_.full_gate_below_us > 0; }
  static bool screen_step(const VerifyStep& step, const EvalOptions& options) {
    return !options.screen_time_first && step.phase == "sweep" && step.corun_share == 0;
  }

  // The rest of the gate, after timing, for a kernel that may beat its task's best beyond the
  // noise; any other ends here with verdict `screened` and its honest times. The steps run as
  // in verify(), in the plan's order; their time counts as verification's.
  Step finish_gate() {
    if (held_.empty()) return Next::kGoOn;
    if (timed_.candidate.median_us >= options_.full_gate_below_us) return end_screened();
    auto gate_started = Clock::now();
    double verified_ms = result_.verify_ms;
    // The verification budget counts verification's time, not the timing between its halves.
    auto budget_start = gate_started - std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double, std::milli>(verified_ms));
    for (const VerifyStep* step : held_) {
      if (over_budget(options_, budget_start, verify_waits_ms_)) break;
      auto next = counted_step(*step);
      if (!next || *next == Next::kEnd) {
        if (next) result_.verify_ms = verified_ms + ms_since(gate_started);
        return next;
      }
    }
    verifier_->use_task_variant(nullptr);
    result_.verify_ms = verified_ms + ms_since(gate_started);
    result_.verify_phases = verifier_->phases().to_json();
    held_.clear();
    return Next::kGoOn;
  }

  Step end_screened() {
    record_times();
    result_.verdict = Verdict::kScreened;
    const std::string checked =
        options_.screen_time_first
            ? "checked at the timed shape alone (every timed sample's outputs); the declared "
              "shapes and the other "
            : "verified on " + std::to_string(steps_run_) + " declared shapes (" +
                  rounds_text(shapes_by_rounds_) + ") before timing; the other ";
    result_.detail = "not faster than the task's best beyond the noise: median " +
                     us_text(timed_.candidate.median_us) + " us, not below " +
                     us_text(options_.full_gate_below_us) + " us; " + checked +
                     std::to_string(held_.size()) +
                     " steps of the gate (stress rounds, input families, drawn, threshold and "
                     "holdout shapes, the round past 2^31 elements) run only for a kernel that "
                     "may be a new best";
    return Next::kEnd;
  }

  // One step of the plan, counted: steps_run_ when it starts, shapes_verified when it passes
  // (what a run under a tool that stopped part way says it finished).
  Step counted_step(const VerifyStep& step) {
    ++steps_run_;
    auto next = verify_step(step);
    if (next && *next == Next::kGoOn) ++result_.shapes_verified;
    return next;
  }

  Step verify_step(const VerifyStep& step) {
    // The kept sets made during this evaluation may have taken the memory the plan counted on.
    // Another worker on this GPU may be in its own wide round: wait for its end first, before
    // this shape's unit: a unit held while waiting would make a timer wait for two wide rounds
    // back to back (past its patience, kTimingTurnMaxWaitSeconds). The wide-round lock is never
    // asked for within a unit, so a unit's holder never waits on it.
    auto step_started = Clock::now();
    std::optional<WideRoundTurn> turn;
    if (step.phase == "wide") turn.emplace(gpu_id());
    std::optional<YieldingTurn> unit = step_unit(GpuUse::kCompute, gpu_id());
    if (unit) add_phase("turns.unit_wait", unit->waited_ms());
    // The round past 2^31 elements, waits included: what a one-shot cache would save (issue 35).
    struct WideTime {
      Evaluation* self;
      bool wide;
      Clock::time_point started;
      ~WideTime() {
        if (wide) self->add_phase("verify.wide", ms_since(started));
      }
    } wide_time{this, step.phase == "wide", step_started};
    if (step.phase == "wide") {
      if (auto skip = wide_round_skipped(task_, free_device_bytes(device_))) {
        plan_.notes.push_back(*skip);
        plan_.wide = false;
        return Next::kGoOn;
      }
    }
    if (step.phase != "stress" && step.corun_share == 0) ++shapes_by_rounds_[step.rounds];
    verifier_->use_pool(step.pooled ? pool_ : nullptr, pool_key_);
    verifier_->use_task_variant(step.variant);
    auto co_run = co_run_for(step);
    if (!co_run) return make_error(co_run.error());
    verifier_->use_co_run(*co_run);
    auto outcome =
        verifier_->verify_shape(step.sizes, step.rounds, step.seed, step.phase, step.stress);
    verifier_->use_co_run(std::nullopt);
    if (*co_run) add_phase("verify.corun", ms_since(step_started));
    if (!outcome) return make_error(outcome.error());
    if (outcome->verdict == Verdict::kOk) return Next::kGoOn;
    result_.verdict = outcome->verdict;
    result_.detail = outcome->detail + co_run_note(step);
    result_.mismatch = outcome->mismatch;
    result_.verify_ms = ms_since(verify_started_);
    result_.verify_phases = verifier_->phases().to_json();
    return Next::kEnd;
  }

  // A co-run step's occupier (co_runner.h), made at the first such step; none for other steps.
  // The round past 2^31 elements frees it first: its traffic buffer is twice the L2.
  Result<std::optional<CoRun>> co_run_for(const VerifyStep& step) {
    if (step.phase == "wide" && co_runner_) {
      corun_runs_ += co_runner_->runs();
      co_runner_.reset();
    }
    if (step.corun_share <= 0) return std::optional<CoRun>();
    if (!co_runner_) {
      auto runner = CoRunner::create(device_, support_);
      if (!runner) return make_error(runner.error());
      co_runner_.emplace(std::move(*runner));
    }
    return std::optional<CoRun>(
        CoRun{&*co_runner_, step.corun_share, step.seed ^ 0x6c8e9cf570932bd5ULL});
  }

  // What a failed co-run round tells the coder: the race, not the inputs.
  std::string co_run_note(const VerifyStep& step) const {
    if (step.corun_share <= 0) return "";
    int sms = device_.info().sm_count;
    return "; under a co-running kernel that held " +
           std::to_string(held_sms(step.corun_share, sms)) + " of " + std::to_string(sms) +
           " SMs and loaded and stored through DRAM, so the kernel's blocks ran on other SMs in "
           "another order: the result depends on how blocks are scheduled, a race between blocks "
           "(a flag stored or read without __threadfence, data read before the block that writes "
           "it has published it)";
  }

  // The candidate's plan and resources at the timed shape.
  Step resolve_timed_plan() {
    timed_shape_ = task_.bind({});
    auto resolved = candidate_.kernel->resolve(task_, timed_shape_);
    if (auto* f = std::get_if<PlanFailure>(&resolved)) {
      apply_failure(result_, *f);
      return Next::kEnd;
    }
    result_.resources = candidate_.kernel->resources(std::get<ResolvedPlan>(resolved));
    return Next::kGoOn;
  }

  Step bound_by_speed_of_light() {
    auto peaks = device_peaks(device_, support_);
    if (peaks) {
      // Both roofs and every peak reach the task contract the agents read.
      result_.device["peaks"] = peaks->to_json();
      auto flops = evaluate_expression(task_.flops, timed_shape_);
      auto bytes = evaluate_expression(task_.bytes, timed_shape_);
      if (flops && bytes)
        result_.sol_us = speed_of_light_us(double(*flops), double(*bytes), *peaks, task_.peak);
    }
    return Next::kGoOn;
  }

  // Shapes a time budget left out are said in every ok verdict's detail.
  std::string budget_note() const {
    if (steps_run_ >= plan_.steps.size()) return "";
    return "; the verification budget of " +
           std::to_string(int64_t(options_.verify_budget_seconds)) + " s stopped it after " +
           std::to_string(steps_run_) + " of " + std::to_string(plan_.steps.size()) + " shapes";
  }

  Step finish_untimed() {
    if (options_.time) return Next::kGoOn;
    result_.verdict = Verdict::kOk;
    result_.detail = "verified (not timed)" + budget_note();
    if (!options_.profile.empty()) profile();
    return Next::kEnd;
  }

  Step build_baseline() {
    if (!request_.baseline) return Next::kGoOn;
    baseline_ = prepare(device_, *request_.baseline, task_, arch_, *cache_);
    if (baseline_->failure)
      return make_error("the task's baseline does not build: " + baseline_->failure->detail);
    return Next::kGoOn;
  }

  // Candidate and baseline timed interleaved, between two checks that the GPU is ours alone.
  Step time_candidate() {
    time_started_ = Clock::now();
    // The GPU is this worker's alone from the check before to the check after: a yielding
    // worker (the sanitizer lane's) ends its current unit and starts none meanwhile.
    std::optional<TimingTurn> turn;
    take_timing_turn(turn, "time.turn_wait");
    auto before_started = Clock::now();
    auto quiet_before = gpu_is_quiet("before");
    add_phase("time.quiet_before", ms_since(before_started));
    if (!quiet_before) return make_error(quiet_before.error());
    if (!*quiet_before) return Next::kEnd;
    auto loop_started = Clock::now();
    TimingLoop loop(device_, support_, task_, *reference_.kernel, options_);
    loop.use_pool(pool_, pool_key_);
    if (baseline_) {
      // One baseline of one task at one shape: its samples from earlier evaluations may serve.
      std::string key = kernel_key(request_.task_json, *request_.baseline);
      loop.use_baseline_history(baselines_, key + '\0' + describe_shape(timed_shape_));
    }
    // Only where finish_gate() screens: a kernel it would gate whatever its median is timed fully.
    if (screening() && !held_.empty()) loop.screen_above(options_.full_gate_below_us);
    auto timed =
        loop.run(*candidate_.kernel, baseline_ ? &*baseline_->kernel : nullptr, timed_shape_,
                 seed_ ^ 0x5bd1e995ULL, verifier_->candidate_seconds(timed_shape_));
    result_.time_ms = ms_since(time_started_);
    add_phase("time.loop", ms_since(loop_started));
    if (!timed) return make_error(timed.error());
    for (const auto& [step, ms] : timed->step_ms) add_phase(("time.loop." + step).c_str(), ms);
    result_.timing_facts = timed->facts();
    if (timed->verdict == Verdict::kOk) {
      auto after_started = Clock::now();
      auto quiet_after = gpu_is_quiet("after");
      add_phase("time.quiet_after", ms_since(after_started));
      if (!quiet_after) return make_error(quiet_after.error());
      if (!*quiet_after) return Next::kEnd;
    }
    if (timed->verdict != Verdict::kOk) {
      result_.verdict = timed->verdict;
      result_.detail = timed->detail;
      result_.mismatch = timed->mismatch;
      return Next::kEnd;
    }
    timed_ = std::move(*timed);
    return Next::kGoOn;
  }

  // A number taken on a shared or throttled GPU is never reported: checked before and after.
  Result<bool> gpu_is_quiet(const char* when) {
    if (!options_.check_gpu_quiet) return true;
    auto check = quiet_.check(options_.probe_tolerance);
    if (!check) return make_error(check.error());
    result_.gpu_check[when] = check->facts;
    if (check->quiet) return true;
    result_.verdict = Verdict::kGpuBusy;
    result_.detail = std::string("the GPU is not ours alone ") + when +
                     " timing: " + check->reason +
                     "; no time is reported, evaluate again when it is quiet";
    result_.time_ms = ms_since(time_started_);
    return false;
  }

  // The timed medians, the speedup over the baseline and the share of the speed of light.
  void record_times() {
    result_.candidate_time = timed_.candidate;
    result_.baseline_time = timed_.baseline;
    double median = timed_.candidate.median_us;
    if (timed_.baseline && median > 0) result_.speedup = timed_.baseline->median_us / median;
    if (result_.sol_us > 0 && median > 0) result_.sol_percent = 100.0 * result_.sol_us / median;
  }

  Step accept_timing() {
    record_times();
    result_.verdict = Verdict::kOk;
    result_.detail =
        "verified on " + std::to_string(task_.shapes.size()) + " shapes" +
        (options_.check_holdout ? " + " + std::to_string(task_.holdout.size()) + " holdout" : "");
    result_.detail += " (" + rounds_text(shapes_by_rounds_) + ")" + budget_note();
    result_.detail +=
        coverage_text(task_, options_, plan_, corun_runs_ + (co_runner_ ? co_runner_->runs() : 0));
    if (timed_.baseline_from_history)
      result_.detail += "; baseline: " + std::to_string(timed_.fresh_baseline_samples) +
                        " fresh samples agreed with earlier ones";
    return Next::kGoOn;
  }

  // Faster than physics allows: never accepted. Implausibly large speedups: re-verified with
  // twice the rounds and new seeds before they count.
  Step reject_implausible() {
    double median = timed_.candidate.median_us;
    if (result_.sol_us > 0 && median < 0.8 * result_.sol_us) {
      result_.verdict = Verdict::kSuspicious;
      result_.detail = "median " + std::to_string(median) +
                       " us is below the speed-of-light bound " + std::to_string(result_.sol_us) +
                       " us";
      return Next::kGoOn;
    }
    if (result_.speedup <= options_.suspicious_speedup) return Next::kGoOn;
    for (size_t i = 0; i < task_.shapes.size(); ++i) {
      auto outcome = verifier_->verify_shape(task_.bind(task_.shapes[i]), 2 * options_.rounds,
                                             seed_ * 31 + 17 * (i + 1), "reverify");
      if (!outcome) return make_error(outcome.error());
      if (outcome->verdict != Verdict::kOk) {
        result_.verdict = Verdict::kSuspicious;
        result_.detail = "speedup " + std::to_string(result_.speedup) +
                         "x failed re-verification: " + outcome->detail;
        result_.mismatch = outcome->mismatch;
        break;
      }
    }
    if (result_.verdict == Verdict::kOk)
      result_.detail += "; speedup above " + std::to_string(options_.suspicious_speedup) +
                        "x confirmed by extra rounds";
    return Next::kGoOn;
  }

  // Counters for a new best (or on request), after the timed samples so they stay clean.
  Step profile_new_best() {
    double median = timed_.candidate.median_us;
    bool new_best = options_.profile_below_us <= 0 || median < options_.profile_below_us;
    if (result_.verdict == Verdict::kOk && !options_.profile.empty() && new_best) profile();
    return Next::kGoOn;
  }

  void profile() {
    // Counters of a kernel time-sliced with the lane's would be the lane's too.
    std::optional<TimingTurn> turn;
    take_timing_turn(turn, "profile.turn_wait");
    profile_candidate(device_, support_, task_, *reference_.kernel, *candidate_.kernel,
                      timed_shape_, options_, seed_ ^ 0x2545f491ULL, result_);
  }

  const Clock::time_point started_ = Clock::now();
  Device& device_;
  SupportKernels& support_;
  GpuQuietCheck& quiet_;
  const EvalRequest& request_;
  const EvalOptions& options_;
  InputPool* pool_;
  BaselineHistory* baselines_;
  EvalResult result_;

  TaskSpec task_;
  std::string arch_;
  std::optional<CompileCache> cache_;
  Compiled candidate_, reference_;
  std::optional<Compiled> baseline_;
  uint64_t seed_ = 0;

  Clock::time_point verify_started_, time_started_;
  double verify_waits_ms_ = 0;  // yielding_waits_ms() when verification began
  std::optional<Verifier> verifier_;
  std::optional<CoRunner> co_runner_;  // declared after the verifier, freed before it
  int corun_runs_ = 0;                 // runs of co-runners already freed
  std::string pool_key_;
  VerifyPlan plan_;
  std::map<int, int> shapes_by_rounds_;  // for the detail line
  size_t steps_run_ = 0;
  std::vector<const VerifyStep*> held_;  // screening: the steps finish_gate() may run

  ShapeBinding timed_shape_;
  TimedOutcome timed_;
};

}  // namespace

int64_t free_device_bytes(Device& device) { return int64_t(memory_info(device).free_bytes); }

Result<int> verification_rounds(const EvalOptions& options, const TaskSpec& task,
                                const ShapeBinding& sizes) {
  auto bytes = task.tensor_bytes(sizes);
  if (!bytes) return make_error(bytes.error());
  if (*bytes > options.large_shape_bytes)
    return std::min(options.rounds, options.large_shape_rounds);
  return options.rounds;
}

Result<EvalResult> evaluate(Device& device, SupportKernels& support, GpuQuietCheck& quiet,
                            const EvalRequest& request, InputPool* pool,
                            BaselineHistory* baselines) {
  return Evaluation(device, support, quiet, request, pool, baselines).run();
}

}  // namespace kopt::worker
