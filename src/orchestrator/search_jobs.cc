// The orchestrator's jobs: measuring a baseline, evaluating one tuner configuration, asking the
// planner for plans, and developing one plan with the coder. Each runs on its own thread; they
// touch shared state only under the orchestrator's mutex and never hold it across a GPU
// evaluation or an LLM call.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_limits.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "memory_store/line_diff.h"
#include "memory_store/techniques.h"
#include "sandbox/kernel_file.h"
#include "sandbox/profile_bottleneck.h"
#include "src/orchestrator/kernel_fingerprint.h"
#include "src/orchestrator/orchestrator.h"
#include "src/orchestrator/task_contract.h"
#include "src/orchestrator/work_context.h"

namespace kopt::orchestrator {

namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return clip_utf8(line, 200);
}

std::string arch_from_cc(const std::string& cc) {
  auto dot = cc.find('.');
  if (dot == std::string::npos) return "";
  int major = std::atoi(cc.substr(0, dot).c_str());
  return "sm_" + cc.substr(0, dot) + cc.substr(dot + 1) + (major >= 9 ? "a" : "");
}

VerifiedKernel verified_from_history(const PastEvaluation& p) {
  VerifiedKernel k;
  k.kernel_id = p.kernel_id;
  k.parent_id = p.parent_id;
  k.source = p.source;
  k.origin = p.origin_agent;
  const memory::EvaluationRecord& e = p.evaluation;
  k.median_us = e.median_us;
  k.noise = e.noise;
  k.baseline_us = e.baseline_us;
  k.speedup = e.speedup > 0 ? e.speedup : 1.0;
  k.sol_percent = e.sol_percent;
  k.sol_us = e.sol_percent / 100.0 * e.median_us;
  auto r = parse_json_bounded(e.resources_json);
  if (r.is_object() && r.contains("registers")) {
    KernelResources res;
    res.registers = r.value("registers", 0);
    res.local_bytes = r.value("local_bytes", 0);
    res.static_shared_bytes = r.value("static_shared_bytes", 0);
    res.dynamic_shared_bytes = r.value("dynamic_shared_bytes", int64_t{0});
    res.occupancy = r.value("occupancy", 0.0);
    k.resources = res;
  }
  return k;
}

TunableConfig config_from_json(const std::string& text) {
  TunableConfig config;
  auto j = parse_json_bounded(text);
  if (!j.is_object()) return config;
  for (const auto& [name, value] : j.items()) {
    if (value.is_number_integer()) config[name] = value.get<int64_t>();
  }
  return config;
}

std::string describe_result(const CandidateOutcome& outcome) {
  if (!outcome.judged) return "no verdict: " + first_line(outcome.error);
  if (outcome.verified) {
    return fmt::format("ok {:.3f}x ({:.2f} us, {:.1f}% SOL)", outcome.verified->speedup,
                       outcome.verified->median_us, outcome.verified->sol_percent);
  }
  return verdict_name(outcome.verdict) + ": " + first_line(outcome.detail);
}

}  // namespace

CandidateInput Orchestrator::candidate_input(const TaskState& task, std::string source,
                                             memory::KernelOrigin origin,
                                             std::optional<int64_t> parent) const {
  CandidateInput input;
  input.task = &task.spec;
  input.reference_source = task.reference_source;
  input.baseline_source = task.baseline_source;
  {
    std::lock_guard lock(mutex_);
    input.gpu = gpu_;
  }
  input.source = std::move(source);
  input.origin = std::move(origin);
  input.parent_id = parent;
  input.best_us = task.best_us;
  return input;
}

void Orchestrator::count_candidate(TaskState& task, const CandidateOutcome& outcome,
                                   bool tune_new_kernels) {
  if (PhaseChange change = task.on_result(outcome, tune_new_kernels)) {
    spdlog::error("[{}] {}", task.spec.name, change.note);
  }
}

agents::WorkContext Orchestrator::work_context(const TaskState& task,
                                               const VerifiedKernel& current) const {
  agents::WorkContext context;
  GpuIdentity gpu = gpu_.value_or(GpuIdentity{});
  context.task = make_brief(task.spec, gpu, current.sol_us);
  // The baseline's speed of light, so the contract is the same text for every kernel.
  context.task.contract =
      task_contract(task.spec, gpu, task.baseline ? task.baseline->sol_us : current.sol_us);
  context.current.source = current.source;
  context.current.measurements = measurements_of(current, task.production);
  size_t first = task.tried_plans.size() > 12 ? task.tried_plans.size() - 12 : 0;
  context.tried_plans.assign(task.tried_plans.begin() + static_cast<ptrdiff_t>(first),
                             task.tried_plans.end());
  if (!task.planner_note.empty()) context.tried_plans.push_back(task.planner_note);
  context.repeats = task.repeat_notes;
  context.beam = beam_lines(task.beam, current.kernel_id);
  return context;
}

void Orchestrator::record_pair(TaskState& task, const VerifiedKernel& parent,
                               const VerifiedKernel& kernel, const std::string& mechanical_lesson) {
  if (parent.kernel_id == kernel.kernel_id || kernel.kernel_id == 0) return;
  // Both speedups were timed interleaved with the same baseline, so their ratio cancels drift
  // between the two evaluations.
  double ratio = parent.speedup > 0 && kernel.speedup > 0 ? kernel.speedup / parent.speedup
                                                          : parent.median_us / kernel.median_us;
  const SearchSettings& s = options_.search;
  if (!(ratio >= s.positive_pair_speedup || ratio <= 1.0 / s.negative_pair_speedup)) return;
  memory::PairRecord pair;
  pair.slow_kernel_id = parent.kernel_id;
  pair.fast_kernel_id = kernel.kernel_id;
  pair.task = task.spec.name;
  pair.speedup = ratio;
  {
    std::lock_guard lock(mutex_);
    pair.gpu_model = gpu_ ? gpu_->model : "unknown GPU";
    pair.gpu_arch = gpu_ ? gpu_->arch : "";
  }
  pair.tags = task.spec.tags;
  // Stored at once, lesson or not, so that a crash during the summarizer's call loses nothing.
  auto id = deps_.recorder->add_pair(pair);
  if (!id) {
    spdlog::error("[{}] could not store a pair: {}", task.spec.name, id.error());
    return;
  }
  std::string lesson = mechanical_lesson;
  if (lesson.empty() && summarizer_ && !stopping()) {
    agents::PairFacts facts;
    {
      std::lock_guard lock(mutex_);
      facts.task = make_brief(task.spec, gpu_.value_or(GpuIdentity{}), kernel.sol_us);
    }
    facts.before_source = parent.source;
    facts.after_source = kernel.source;
    facts.before = measurements_of(parent);
    facts.after = measurements_of(kernel);
    facts.speedup = ratio;
    facts.diff = agents::shorten(
        memory::unified_diff(parent.source, kernel.source, "before.cu", "after.cu"), 6000);
    agents::AgentUsage usage;
    auto summary = summarizer_->summarize(facts, usage);
    {
      std::lock_guard lock(mutex_);
      charge(task, usage);
    }
    if (summary) {
      lesson = summary->summary;
      for (const auto& tag : summary->tags) {
        if (std::find(pair.tags.begin(), pair.tags.end(), tag) == pair.tags.end()) {
          pair.tags.push_back(tag);
        }
      }
    } else {
      spdlog::warn("[{}] no lesson for pair {}: {}", task.spec.name, *id, summary.error());
    }
  }
  if (lesson.empty()) {
    lesson = fmt::format("A rewrite of the {} kernel was {:.2f}x {} ({:.2f} -> {:.2f} us).",
                         task.spec.name, ratio >= 1 ? ratio : 1 / ratio,
                         ratio >= 1 ? "faster" : "slower", parent.median_us, kernel.median_us);
  }
  pair.summary = lesson;
  if (auto merged = deps_.recorder->add_pair(pair); !merged) {
    spdlog::error("[{}] could not store a lesson: {}", task.spec.name, merged.error());
  }
  spdlog::info("[{}] pair {}: kernel {} -> {} is {:.3f}x: {}", task.spec.name, *id,
               parent.kernel_id, kernel.kernel_id, ratio, first_line(lesson));
}

void Orchestrator::run_baseline(TaskState& task) {
  CandidateInput input =
      candidate_input(task, task.baseline_source, {"baseline", "", "", false}, std::nullopt);
  input.gpu.reset();  // no local gate and no interleaved copy of itself
  CandidateOutcome outcome = candidates_->judge(input);
  std::lock_guard lock(mutex_);
  task.judged_sources.insert(sha256_hex(task.baseline_source));
  task.known_kernels[kernel_fingerprint(task.baseline_source)] = {outcome.kernel_id,
                                                                  "the task's baseline"};
  if (!outcome.judged || !outcome.verified) {
    task.phase = TaskState::Phase::kFailed;
    task.note = !outcome.judged ? "no verdict on the baseline: " + first_line(outcome.error)
                                : "the baseline does not verify: " + describe_result(outcome);
    spdlog::error("[{}] {}", task.spec.name, task.note);
    return;
  }
  if (!gpu_ && outcome.gpu) {
    gpu_ = outcome.gpu;
    spdlog::info("GPU: {} ({}, driver {})", gpu_->model, gpu_->arch, gpu_->driver);
  }
  const VerifiedKernel& k = *outcome.verified;
  task.baseline = k;
  task.beam.offer(k);
  task.best_speedup = 1.0;
  task.best_us = k.median_us;
  task.best_sol_percent = k.sol_percent;
  task.phase = TaskState::Phase::kSearching;
  task.add_tune_target(k);
  load_production_baseline(task);
  queue_warm_start(task);
  spdlog::info("[{}] baseline: {:.2f} us, {:.1f}% of speed of light ({:.2f} us){}", task.spec.name,
               k.median_us, k.sol_percent, k.sol_us,
               task.tune_queue.empty()
                   ? ""
                   : fmt::format("; {} tuner configurations queued", task.tune_queue.size()));
}

void Orchestrator::load_production_baseline(TaskState& task) {
  if (!gpu_) return;
  auto best = deps_.recorder->best_production_baseline(task.spec.name, gpu_->model);
  if (!best) {
    spdlog::warn("[{}] production baselines: {}", task.spec.name, best.error());
  } else {
    task.production = *best;
  }
  const SearchSettings& s = options_.search;
  if (s.score == ScoreBasis::kSolPercent) return;  // as before production baselines: no news
  if (task.production) {
    spdlog::info("[{}] judged by S against {} ({:.2f} us on {}): done at S {:.2f}", task.spec.name,
                 task.production->name, task.production->median_us, gpu_->model,
                 s.sol_score_threshold);
  } else {
    spdlog::info(
        "[{}] judged by {}: no production baseline measured on {} (kopt baselines "
        "measures them)",
        task.spec.name,
        s.score == ScoreBasis::kAuto
            ? fmt::format("%SOL (done at {:.0f}%)", s.sol_threshold_percent)
            : fmt::format("S against baseline.cu (done at S {:.2f})", s.sol_score_threshold),
        gpu_->model);
  }
}

void Orchestrator::queue_warm_start(TaskState& task) {
  if (options_.search.warm_start_kernels <= 0 || !gpu_) return;
  auto kernels = deps_.recorder->warm_start_kernels(task.spec.name, gpu_->model,
                                                    options_.search.warm_start_kernels);
  if (!kernels) {
    spdlog::warn("[{}] warm start: {}", task.spec.name, kernels.error());
    return;
  }
  for (WarmKernel& k : *kernels) task.warm_queue.push_back(std::move(k));
  if (!task.warm_queue.empty()) {
    spdlog::info("[{}] warm start: {} kernels of earlier runs on {} are judged again first",
                 task.spec.name, task.warm_queue.size(), gpu_->model);
  }
}

void Orchestrator::run_warm(TaskState& task, const WarmKernel& kernel) {
  bool skip = false;
  {
    std::lock_guard lock(mutex_);
    skip = stopping() || task.finished() ||
           !task.judged_sources.insert(sha256_hex(kernel.source)).second;
    if (skip) --task.warm_in_flight;
  }
  if (skip) return;
  // Judged again by this run's verifier and task spec: a kernel verified under an older spec or
  // verifier counts only if it passes now. A known source keeps its id, parent and origin.
  memory::KernelOrigin origin{kernel.origin, "", "", kernel.origin == "tuner"};
  CandidateOutcome outcome =
      candidates_->judge(candidate_input(task, kernel.source, origin, kernel.parent_id));
  if (outcome.verified) outcome.verified->origin = kernel.origin;
  spdlog::info("[{}] warm start: kernel {} ({:.2f}x in an earlier run): {}", task.spec.name,
               kernel.kernel_id, kernel.earlier_speedup, describe_result(outcome));
  std::lock_guard lock(mutex_);
  count_candidate(task, outcome);
  task.known_kernels[kernel_fingerprint(kernel.source)] = {outcome.kernel_id,
                                                           describe_result(outcome)};
  --task.warm_in_flight;
}

void Orchestrator::run_tune(TaskState& task, TuneItem item) {
  TuneTarget& target = *item.target;
  auto source = with_default_tunables(target.root.source, item.config);
  bool skip = false;
  {
    std::lock_guard lock(mutex_);
    skip = !source || stopping() || task.finished() ||
           !task.judged_sources.insert(sha256_hex(*source)).second;
    if (skip) {
      --target.in_flight;
      if (target.queued == 0 && target.in_flight == 0 && !stopping()) {
        task.queue_next_tune_batch(target);
      }
    }
  }
  if (skip) return;
  CandidateInput input =
      candidate_input(task, *source, {"tuner", "", "", true}, target.root.kernel_id);
  input.tunables_json = config_json(item.config);
  CandidateOutcome outcome = candidates_->judge(input);
  if (outcome.verified) outcome.verified->origin = "tuner";
  spdlog::info("[{}] tuner {}: {}", task.spec.name, describe_config(item.config),
               describe_result(outcome));
  {
    std::lock_guard lock(mutex_);
    count_candidate(task, outcome);
    task.known_kernels[kernel_fingerprint(*source)] = {outcome.kernel_id, describe_result(outcome)};
    --target.in_flight;
    if (outcome.verified && outcome.verified->speedup > target.best_speedup) {
      target.best = item.config;
      target.best_speedup = outcome.verified->speedup;
    }
    if (target.queued == 0 && target.in_flight == 0 && !stopping()) {
      task.queue_next_tune_batch(target);
    }
  }
  if (outcome.verified) {
    const VerifiedKernel& k = *outcome.verified;
    double ratio = k.speedup / std::max(1e-9, target.root.speedup);
    std::string gpu;
    {
      std::lock_guard lock(mutex_);
      gpu = gpu_ ? gpu_->model : "this GPU";
    }
    record_pair(
        task, target.root, k,
        fmt::format("Tuning the {} kernel on {}: {} instead of the declared defaults ({}) "
                    "made it {:.2f}x {} ({:.2f} -> {:.2f} us).",
                    task.spec.name, gpu, describe_config(item.config),
                    describe_config(target.sweep.defaults()), ratio >= 1 ? ratio : 1 / ratio,
                    ratio >= 1 ? "faster" : "slower", target.root.median_us, k.median_us));
  }
}

void Orchestrator::run_plan(TaskState& task) {
  agents::WorkContext context;
  VerifiedKernel parent;
  memory::RetrievalQuery query;
  size_t skip = 0;
  {
    std::lock_guard lock(mutex_);
    if (stopping() || task.finished() || task.beam.empty() || !task.parked.empty()) {
      task.plan_in_flight = false;
      return;
    }
    parent = task.next_parent();
    context = work_context(task, parent);
    context.temperature = raised_temperature("planner", task.temperature_boost);
    query.task = task.spec.name;
    query.family_tags = task.spec.tags;
    query.gpu_arch = gpu_ ? gpu_->arch : "";
    // After each back-off the prompt shows the next examples, not the ones it stalled on.
    skip = static_cast<size_t>(task.memory_rotation * options_.search.memory_examples);
  }
  query.kernel_source = parent.source;
  // Never show the model where it already is: the parent, its ancestors and near-copies of it.
  query.current_kernel_id = parent.kernel_id;
  query.near_copy = [source = parent.source, limit = options_.search.near_copy_similarity](
                        const std::string& fast) { return code_similarity(source, fast) >= limit; };
  query.current_techniques = memory::techniques_in(parent.source);
  // Pairs whose slow side was limited the way this kernel is rank higher (retrieval.h).
  if (parent.profile) query.bottleneck = bottleneck_name(classify_bottleneck(*parent.profile));
  query.bottleneck_of_profile = [this](const std::string& profile_json) {
    return bottleneck_classes_(profile_json);
  };
  query.k = options_.search.memory_examples + static_cast<int>(skip);
  std::vector<int64_t> retrieved;
  if (options_.search.memory_examples > 0) {
    auto pairs = deps_.recorder->retrieve(query);
    if (pairs) {
      size_t k = static_cast<size_t>(options_.search.memory_examples);
      size_t drop = pairs->size() > k ? std::min(skip, pairs->size() - k) : 0;
      pairs->erase(pairs->begin(), pairs->begin() + static_cast<ptrdiff_t>(drop));
      add_memory_examples(*pairs, *deps_.recorder, context);
      for (const auto& p : *pairs) retrieved.push_back(p.pair.id);
    } else {
      spdlog::warn("[{}] retrieval: {}", task.spec.name, pairs.error());
    }
  }
  agents::AgentUsage usage;
  auto plans = planner_->propose(context, options_.search.plans_per_iteration, usage);
  std::lock_guard lock(mutex_);
  charge(task, usage);
  task.plan_in_flight = false;
  if (!plans) {
    spdlog::warn("[{}] planner: {}", task.spec.name, plans.error());
    if (stopping() || task.finished()) return;
    if (usage.model_failures > 0) {
      // The model refused or called tools even after a nudge: its failure, not the task's.
      planner_stalled(task, "", "were no answer (" + first_line(plans.error()) + ")");
      return;
    }
    if (++task.planner_failures >= kMaxFailuresInARow) {
      task.phase = TaskState::Phase::kFailed;
      task.note = "the planner keeps failing: " + first_line(plans.error());
    }
    return;
  }
  auto [fresh, dropped] = task.on_plans(std::move(*plans), parent);
  spdlog::info("[{}] {} plans from kernel {} ({:.2f}x), {} memory pairs in the prompt{}",
               task.spec.name, fresh.size(), parent.kernel_id, parent.speedup, retrieved.size(),
               dropped.empty() ? std::string()
                               : fmt::format("; {} plans already tried dropped ({})",
                                             dropped.size(), join(dropped, "; ")));
  if (fresh.empty()) {
    planner_stalled(task,
                    "Your last answer proposed only plans already tried (" + join(dropped, "; ") +
                        "): propose different ones.",
                    "held only plans already tried");
    return;
  }
  task.planner_stale = 0;
  task.planner_note.clear();
  auto credited = std::make_shared<std::atomic<bool>>(false);
  for (agents::Plan& plan : fresh) {
    memory::PlanRecord record;
    record.task = task.spec.name;
    if (parent.kernel_id) record.parent_kernel_id = parent.kernel_id;
    record.title = plan.title;
    record.detail = plan.detail;
    record.technique = join(memory::techniques_in(plan.title + "\n" + plan.detail), " ");
    auto plan_id = deps_.recorder->add_plan(record);
    // A task far from speed of light gets more than one coder sample of each plan.
    for (int sample = task.coder_samples(); sample > 1; --sample) {
      task.code_queue.push_back(CodeItem{parent, plan, context, retrieved, credited, plan_id});
    }
    task.code_queue.push_back(
        CodeItem{parent, std::move(plan), context, retrieved, credited, plan_id});
  }
}

void Orchestrator::run_code(TaskState& task, CodeItem item) {
  std::optional<VerifiedKernel> accepted;
  std::vector<CallOutcome> calls;  // one per answer that held a kernel file
  std::vector<int64_t> children;   // the kernels judged for this plan
  int64_t answers = 0;
  double best_before = 0;
  {
    std::lock_guard lock(mutex_);
    best_before = task.best_speedup;
    // What the model repeated since this plan was queued, and how hot it should answer now.
    item.context.repeats = task.repeat_notes;
    item.context.temperature = raised_temperature("coder", task.temperature_boost);
  }
  agents::Judge judge = [&](const std::string& source, int attempt) -> agents::Judgement {
    ++answers;
    if (stopping()) return {false, false, "stopped", "the daemon is stopping"};
    std::string fingerprint = kernel_fingerprint(source);
    {
      std::lock_guard lock(mutex_);
      if (task.finished()) return {false, false, "task_done", task.note};
      // A task parked while this job was under way pays for no repair.
      if (!task.parked.empty()) return {false, false, "parked", task.parked};
      if (options_.budgets.candidates_per_task &&
          task.candidates >= *options_.budgets.candidates_per_task) {
        return {false, false, "budget", "the task's candidate budget is used"};
      }
      if (auto known = task.known_kernels.find(fingerprint); known != task.known_kernels.end()) {
        // Not judged again and not a candidate: counted apart, told to the model, and fed to
        // the stall detector, which decides when repeating has gone on long enough.
        ++task.repeats;
        calls.push_back(CallOutcome::kRepeat);
        const KnownKernel& k = known->second;
        std::string what = k.kernel_id ? fmt::format("kernel {}", k.kernel_id)
                                       : std::string("a kernel still being evaluated");
        task.repeat_notes.push_back(fmt::format(
            "your answer to the plan '{}' was the same kernel (up to names, comments and "
            "spacing) as {}, which was {}",
            item.plan.title, what, k.verdict));
        if (task.repeat_notes.size() > 6) task.repeat_notes.erase(task.repeat_notes.begin());
        spdlog::info(
            "[{}] coder '{}' attempt {}: is a repeat of {}, which was {}; not evaluated "
            "again ({} repeats on this task)",
            task.spec.name, item.plan.title, attempt, what, k.verdict, task.repeats);
        return {false, true, "repeat",
                "this kernel file is the same (up to names, comments and spacing) as " + what +
                    ", which was judged " + k.verdict +
                    "; write the change the plan asks for, as a kernel not written before"};
      }
      task.known_kernels[fingerprint] = {0, "still being evaluated"};
      task.judged_sources.insert(sha256_hex(source));
    }
    memory::KernelOrigin origin{"coder", deps_.coder_model,
                                attempt == 1 ? "coder.txt" : "repair.txt", false};
    CandidateOutcome outcome =
        candidates_->judge(candidate_input(task, source, origin, item.parent.kernel_id));
    spdlog::info("[{}] coder '{}' attempt {}: {}", task.spec.name, item.plan.title, attempt,
                 describe_result(outcome));
    {
      std::lock_guard lock(mutex_);
      count_candidate(task, outcome);
      task.known_kernels[fingerprint] = {outcome.kernel_id, describe_result(outcome)};
      if (outcome.kernel_id) children.push_back(outcome.kernel_id);
      if (outcome.judged) {
        bool broken =
            outcome.verdict == Verdict::kCompileError || outcome.verdict == Verdict::kInvalidPlan;
        calls.push_back(broken ? CallOutcome::kBrokenKernel : CallOutcome::kNewKernel);
      }
    }
    if (!outcome.judged) return {false, false, "evaluator_error", outcome.error};
    if (outcome.verified) {
      accepted = outcome.verified;
      return {true, false, "ok", ""};
    }
    return {false, true, verdict_name(outcome.verdict), outcome.detail};
  };
  agents::AgentUsage usage;
  agents::CoderOutcome result =
      coder_->develop(item.context, item.plan, judge, options_.search.max_repairs, usage);
  double ratio = accepted ? accepted->speedup / std::max(1e-9, item.parent.speedup) : 0;
  {
    std::lock_guard lock(mutex_);
    charge(task, usage);
    // The calls that brought no kernel to judge: cut off, refused, tool calls, empty, or an
    // answer without a usable kernel file.
    auto add = [&](int64_t n, CallOutcome outcome) {
      calls.insert(calls.end(), static_cast<size_t>(std::max<int64_t>(0, n)), outcome);
    };
    add(usage.truncated, CallOutcome::kTruncated);
    add(usage.refused, CallOutcome::kRefused);
    add(usage.tool_calls, CallOutcome::kToolCall);
    add(usage.empty, CallOutcome::kEmpty);
    add(usage.calls - answers - usage.truncated - usage.refused - usage.tool_calls - usage.empty,
        CallOutcome::kError);
    if (!stopping()) record_coder_calls(task, calls);
    std::string verdict =
        accepted ? fmt::format("verified, {:.2f}x its parent", ratio)
                 : (!result.error.empty() ? "no kernel: " + first_line(result.error)
                                          : (result.failures.empty() ? std::string("not judged")
                                                                     : result.failures.back()));
    task.tried_plans.push_back(item.plan.title + " -> " + first_line(verdict));
    if (!stopping() && result.attempts > 0) {
      task.on_plan_done(task.best_speedup > best_before * options_.search.min_improvement);
    }
    // Verified but no real gain over its parent: one more turn with its own measurements and
    // counters, to mature the idea instead of dropping it.
    const SearchSettings& s = options_.search;
    if (accepted && !item.refinement && ratio >= s.refine_within &&
        ratio < s.positive_pair_speedup && task.parked.empty() && !task.finished() && !stopping()) {
      CodeItem refine{*accepted,
                      item.plan,
                      work_context(task, *accepted),
                      item.retrieved_pairs,
                      item.credited,
                      item.plan_id,
                      true};
      refine.context.examples = item.context.examples;
      refine.context.warnings = item.context.warnings;
      refine.plan.detail += fmt::format(
          "\n\nThis plan was implemented as the current kernel above, which is correct but only "
          "{:.2f}x its parent. Read its measurements and hardware counters, find what still "
          "limits it, and change that, keeping the plan's idea.",
          ratio);
      task.code_queue.push_front(std::move(refine));
    }
    if (item.plan_id) deps_.recorder->finish_plan(*item.plan_id, first_line(verdict), children);
  }
  if (!result.error.empty() && !accepted) {
    spdlog::warn("[{}] coder '{}': {}", task.spec.name, item.plan.title, result.error);
  }
  // A retrieval is counted when it is made (RunRecorder::retrieve); its pairs earn credit once,
  // from the first of its plans whose child beats its parent by a pair's margin.
  if (accepted && ratio >= options_.search.positive_pair_speedup && item.credited &&
      !item.retrieved_pairs.empty() && !item.credited->exchange(true)) {
    deps_.recorder->record_outcome(item.retrieved_pairs, true);
  }
  if (accepted) record_pair(task, item.parent, *accepted, "");
}

void Orchestrator::restore_task(TaskState& task) {
  auto history = deps_.recorder->history(task.spec.name);
  if (!history) {
    spdlog::warn("[{}] cannot read the run's history: {}", task.spec.name, history.error());
    return;
  }
  std::vector<const PastEvaluation*> tuned;
  for (const PastEvaluation& p : *history) {
    task.judged_sources.insert(sha256_hex(p.source));
    task.known_kernels[kernel_fingerprint(p.source)] = {
        p.kernel_id, p.evaluation.verdict + (p.evaluation.verdict == "ok"
                                                 ? fmt::format(" {:.2f}x", p.evaluation.speedup)
                                                 : std::string())};
    bool ok = p.evaluation.verdict == "ok";
    if (p.origin_agent == "baseline" && !p.parent_id) {
      if (!ok) continue;
      VerifiedKernel k = verified_from_history(p);
      task.baseline = k;
      task.beam.offer(k);
      task.best_speedup = std::max(task.best_speedup, 1.0);
      task.best_us = task.best_us > 0 ? task.best_us : k.median_us;
      task.best_sol_percent = std::max(task.best_sol_percent, k.sol_percent);
      task.phase = TaskState::Phase::kSearching;
      if (!gpu_) {
        GpuIdentity gpu;
        gpu.model = p.evaluation.gpu.model;
        gpu.cc = p.evaluation.gpu.compute_capability;
        gpu.driver = p.evaluation.gpu.driver_version;
        gpu.arch = arch_from_cc(gpu.cc);
        gpu_ = gpu;
      }
      load_production_baseline(task);
      continue;
    }
    CandidateOutcome outcome;
    outcome.judged = true;
    if (ok) outcome.verified = verified_from_history(p);
    if (outcome.verified && p.tuner) outcome.verified->origin = "tuner";
    // Tune targets are rebuilt below from the restored beam, not while counting.
    count_candidate(task, outcome, /*tune_new_kernels=*/false);
    if (ok && p.tuner) tuned.push_back(&p);
  }
  if (task.phase != TaskState::Phase::kSearching) return;
  for (const VerifiedKernel& k : std::vector<VerifiedKernel>(task.beam.members())) {
    if (k.origin != "tuner") task.add_tune_target(k);
  }
  if (task.baseline && !task.beam.contains(task.baseline->kernel_id)) {
    task.add_tune_target(*task.baseline);
  }
  // Configurations judged before the resume count as tried; the best of them steers the sweep.
  for (TuneTarget& target : task.tune_targets) {
    for (const PastEvaluation* p : tuned) {
      if (p->parent_id != target.root.kernel_id) continue;
      TunableConfig config = config_from_json(p->evaluation.tunables_json);
      target.sweep.mark_tried(config);
      if (p->evaluation.speedup > target.best_speedup) {
        target.best = config;
        target.best_speedup = p->evaluation.speedup;
      }
    }
  }
}

}  // namespace kopt::orchestrator
