// The orchestrator's jobs: measuring a baseline, evaluating one tuner configuration, asking the
// planner for plans, and developing one plan with the coder. Each runs on its own thread; they
// touch shared state only under the orchestrator's mutex and never hold it across a GPU
// evaluation or an LLM call.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/strings.h"
#include "common/utf8.h"
#include "memory_store/line_diff.h"
#include "memory_store/techniques.h"
#include "sandbox/kernel_file.h"
#include "sandbox/profile_bottleneck.h"
#include "src/orchestrator/coder_judge.h"
#include "src/orchestrator/orchestrator.h"
#include "src/orchestrator/task_contract.h"
#include "src/orchestrator/work_context.h"

namespace kopt::orchestrator {

CandidateInput Orchestrator::candidate_input(const TaskState& task, std::string source,
                                             memory::KernelOrigin origin,
                                             std::optional<int64_t> parent) const {
  CandidateInput input;
  input.task = &task.spec();
  input.reference_source = task.reference_source();
  input.baseline_source = task.baseline_source();
  {
    std::lock_guard lock(mutex_);
    input.gpu = gpu_;
  }
  input.source = std::move(source);
  input.origin = std::move(origin);
  input.parent_id = parent;
  input.best_us = task.best_us_now();
  input.best_noise = task.best_noise();
  input.sanitize_above = options_.search.min_improvement;
  input.screen = options_.search.screen;
  input.screen_time_first = options_.search.screen_time_first;
  return input;
}

agents::WorkContext Orchestrator::work_context(const TaskState& task,
                                               const VerifiedKernel& current) const {
  agents::WorkContext context;
  GpuIdentity gpu = gpu_.value_or(GpuIdentity{});
  context.task = make_brief(task.spec(), gpu, current.sol_us);
  // The baseline's speed of light, so the contract is the same text for every kernel.
  context.task.contract =
      task_contract(task.spec(), gpu, task.baseline() ? task.baseline()->sol_us : current.sol_us);
  context.current.source = current.source;
  context.current.measurements = measurements_of(current, task.production());
  const auto& tried = task.tried_plans();
  size_t first = tried.size() > 12 ? tried.size() - 12 : 0;
  context.tried_plans.assign(tried.begin() + static_cast<ptrdiff_t>(first), tried.end());
  if (!task.planner_note().empty()) context.tried_plans.push_back(task.planner_note());
  context.repeats = task.repeat_notes();
  context.beam = beam_lines(task.beam(), current.kernel_id);
  context.tuner_facts = task.tuner_facts();
  return context;
}

void Orchestrator::record_pair(TaskState& task, const VerifiedKernel& parent,
                               const VerifiedKernel& kernel, const std::string& mechanical_lesson) {
  if (parent.kernel_id == kernel.kernel_id || kernel.kernel_id == 0) return;
  // Both speedups were timed interleaved with the same baseline, so their ratio cancels drift
  // between the two evaluations.
  double ratio = parent.speedup > 0 && kernel.speedup > 0 ? kernel.speedup / parent.speedup
                                                          : parent.median_us / kernel.median_us;
  // A pair's faster side (by the ratio that makes it a win or a warning) is a lesson shown to
  // later prompts: it passed the whole gate.
  if (ratio > 1 ? kernel.screened : parent.screened) return;
  {
    // Not stored as a pair (a win) while its kernel waits for the sanitizer, nor ever after a
    // finding (sanitizer_jobs.cc).
    std::lock_guard lock(mutex_);
    if (hold_pair(task, parent, kernel, mechanical_lesson)) return;
  }
  const SearchSettings& s = options_.search;
  if (!(ratio >= s.positive_pair_speedup || ratio <= 1.0 / s.negative_pair_speedup)) return;
  memory::PairRecord pair;
  pair.slow_kernel_id = parent.kernel_id;
  pair.fast_kernel_id = kernel.kernel_id;
  pair.task = task.spec().name;
  pair.speedup = ratio;
  {
    std::lock_guard lock(mutex_);
    pair.gpu_model = gpu_ ? gpu_->model : "unknown GPU";
    pair.gpu_arch = gpu_ ? gpu_->arch : "";
  }
  pair.tags = task.spec().tags;
  // Stored at once, lesson or not, so that a crash during the summarizer's call loses nothing.
  auto id = deps_.recorder->add_pair(pair);
  if (!id) {
    spdlog::error("[{}] could not store a pair: {}", task.spec().name, id.error());
    return;
  }
  std::string lesson = mechanical_lesson;
  if (lesson.empty() && summarizer_ && !stopping()) {
    agents::PairFacts facts;
    {
      std::lock_guard lock(mutex_);
      facts.task = make_brief(task.spec(), gpu_.value_or(GpuIdentity{}), kernel.sol_us);
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
      spdlog::warn("[{}] no lesson for pair {}: {}", task.spec().name, *id, summary.error());
    }
  }
  if (lesson.empty()) {
    lesson = fmt::format("A rewrite of the {} kernel was {:.2f}x {} ({:.2f} -> {:.2f} us).",
                         task.spec().name, ratio >= 1 ? ratio : 1 / ratio,
                         ratio >= 1 ? "faster" : "slower", parent.median_us, kernel.median_us);
  }
  pair.summary = lesson;
  if (auto merged = deps_.recorder->add_pair(pair); !merged) {
    spdlog::error("[{}] could not store a lesson: {}", task.spec().name, merged.error());
  }
  spdlog::info("[{}] pair {}: kernel {} -> {} is {:.3f}x: {}", task.spec().name, *id,
               parent.kernel_id, kernel.kernel_id, ratio, first_line_clipped(lesson));
}

void Orchestrator::run_baseline(TaskState& task) {
  CandidateInput input = candidate_input(task, task.baseline_source(),
                                         {Origin::kBaseline, "", "", false}, std::nullopt);
  input.gpu.reset();  // no local gate and no interleaved copy of itself
  CandidateOutcome outcome = candidates_->judge(input);
  std::lock_guard lock(mutex_);
  if (PhaseChange change = task.on_baseline(outcome)) {
    log_change(task, change);
    return;
  }
  if (!gpu_ && outcome.gpu) {
    gpu_ = outcome.gpu;
    spdlog::info("GPU: {} ({}, driver {})", gpu_->model, gpu_->arch, gpu_->driver);
  }
  load_production_baseline(task);
  queue_warm_start(task);
  const VerifiedKernel& k = *task.baseline();
  spdlog::info("[{}] baseline: {:.2f} us, {:.1f}% of speed of light ({:.2f} us){}",
               task.spec().name, k.median_us, k.sol_percent, k.sol_us,
               task.tuning() ? "; its tunables are swept first" : "");
}

void Orchestrator::load_production_baseline(TaskState& task) {
  if (!gpu_) return;
  auto best = deps_.recorder->best_production_baseline(task.spec().name, gpu_->model);
  if (!best) {
    spdlog::warn("[{}] production baselines: {}", task.spec().name, best.error());
  } else {
    task.set_production(*best);
  }
  const SearchSettings& s = options_.search;
  if (s.score == ScoreBasis::kSolPercent) return;  // as before production baselines: no news
  if (task.production()) {
    spdlog::info("[{}] judged by S against {} ({:.2f} us on {}): done at S {:.2f}",
                 task.spec().name, task.production()->name, task.production()->median_us,
                 gpu_->model, s.sol_score_threshold);
  } else {
    spdlog::info(
        "[{}] judged by {}: no production baseline measured on {} (kopt baselines "
        "measures them)",
        task.spec().name,
        s.score == ScoreBasis::kAuto
            ? fmt::format("%SOL (done at {:.0f}%)", s.sol_threshold_percent)
            : fmt::format("S against baseline.cu (done at S {:.2f})", s.sol_score_threshold),
        gpu_->model);
  }
}

void Orchestrator::queue_warm_start(TaskState& task) {
  if (options_.search.warm_start_kernels <= 0 || !gpu_) return;
  auto kernels = deps_.recorder->warm_start_kernels(task.spec().name, gpu_->model,
                                                    options_.search.warm_start_kernels,
                                                    options_.search.near_copy_similarity);
  if (!kernels) {
    spdlog::warn("[{}] warm start: {}", task.spec().name, kernels.error());
    return;
  }
  task.add_warm_start(std::move(*kernels));
  if (task.warm_queued() > 0) {
    spdlog::info("[{}] warm start: {} kernels of earlier runs on {} are judged again first",
                 task.spec().name, task.warm_queued(), gpu_->model);
  }
}

void Orchestrator::run_warm(TaskState& task, const WarmKernel& kernel) {
  {
    std::lock_guard lock(mutex_);
    if (!task.claim_warm(kernel, stopping())) return;
  }
  // Judged again by this run's verifier and task spec: a kernel verified under an older spec or
  // verifier counts only if it passes now. A known source keeps its id, parent and origin.
  memory::KernelOrigin origin{kernel.origin, "", "", kernel.origin == Origin::kTuner};
  CandidateOutcome outcome =
      judge(task, candidate_input(task, kernel.source, origin, kernel.parent_id));
  if (outcome.verified) outcome.verified->origin = kernel.origin;
  std::string verdict = describe_result(outcome);
  spdlog::info("[{}] warm start: kernel {} ({:.2f}x in an earlier run): {}", task.spec().name,
               kernel.kernel_id, kernel.earlier_speedup, verdict);
  std::lock_guard lock(mutex_);
  log_change(task, task.on_warm_judged(kernel, verdict, outcome));
}

void Orchestrator::run_tune(TaskState& task, TuneItem item) {
  std::optional<std::string> source;
  {
    std::lock_guard lock(mutex_);
    source = task.claim_tune(item, stopping());
  }
  if (!source) return;
  const TuneTarget& target = *item.target;
  CandidateInput input =
      candidate_input(task, *source, {Origin::kTuner, "", "", true}, target.root.kernel_id);
  input.tunables_json = config_json(item.config);
  CandidateOutcome outcome = judge(task, input);
  if (outcome.verified) outcome.verified->origin = Origin::kTuner;
  std::string verdict = describe_result(outcome);
  spdlog::info("[{}] tuner {}: {}", task.spec().name, describe_config(item.config), verdict);
  std::string gpu;
  {
    std::lock_guard lock(mutex_);
    log_change(task, task.on_tune_judged(item, *source, verdict, outcome, stopping()));
    gpu = gpu_ ? gpu_->model : "this GPU";
  }
  if (!outcome.verified) return;
  const VerifiedKernel& k = *outcome.verified;
  double ratio = k.speedup / std::max(1e-9, target.root.speedup);
  record_pair(task, target.root, k,
              fmt::format("Tuning the {} kernel on {}: {} instead of the declared defaults ({}) "
                          "made it {:.2f}x {} ({:.2f} -> {:.2f} us).",
                          task.spec().name, gpu, describe_config(item.config),
                          describe_config(target.sweep.defaults()), ratio >= 1 ? ratio : 1 / ratio,
                          ratio >= 1 ? "faster" : "slower", target.root.median_us, k.median_us));
}

std::vector<memory::RetrievedPair> Orchestrator::add_examples(const TaskState& task,
                                                              const VerifiedKernel& parent,
                                                              size_t skip,
                                                              agents::WorkContext& context,
                                                              const agents::Plan* plan) {
  if (options_.search.memory_examples <= 0) return {};
  memory::RetrievalQuery query;
  query.task = task.spec().name;
  query.family_tags = task.spec().tags;
  {
    std::lock_guard lock(mutex_);
    query.gpu_arch = gpu_ ? gpu_->arch : "";
  }
  query.kernel_source = parent.source;
  if (plan) query.kernel_source += "\n" + plan->title + "\n" + plan->detail;
  // Never show the model where it already is: the parent, its ancestors and near-copies of it.
  query.current_kernel_id = parent.kernel_id;
  query.near_copy = [source = parent.source, limit = options_.search.near_copy_similarity](
                        const std::string& fast) { return code_similarity(source, fast) >= limit; };
  query.current_techniques = memory::techniques_in_code(parent.source);
  // Pairs whose slow side was limited the way this kernel is rank higher (retrieval.h).
  if (parent.profile) query.bottleneck = bottleneck_name(classify_bottleneck(*parent.profile));
  query.bottleneck_of_profile = [this](const std::string& profile_json) {
    return bottleneck_classes_(profile_json);
  };
  query.k = options_.search.memory_examples + static_cast<int>(skip);
  if (options_.search.random_example_slot) {
    query.draw_index = [this](size_t n) { return draw_index(n); };
  }
  auto pairs = deps_.recorder->retrieve(query);
  if (!pairs) {
    spdlog::warn("[{}] retrieval: {}", task.spec().name, pairs.error());
    return {};
  }
  size_t k = static_cast<size_t>(options_.search.memory_examples);
  size_t drop = pairs->size() > k ? std::min(skip, pairs->size() - k) : 0;
  pairs->erase(pairs->begin(), pairs->begin() + static_cast<ptrdiff_t>(drop));
  if (plan) put_plan_techniques_first(*pairs, plan_techniques(*plan));
  add_memory_examples(*pairs, *deps_.recorder, context);
  return std::move(*pairs);
}

void Orchestrator::retrieve_for_plan(const TaskState& task, CodeItem& item) {
  agents::WorkContext mine;
  std::vector<memory::RetrievedPair> pairs = add_examples(task, item.parent, 0, mine, &item.plan);
  if (pairs.empty()) return;  // the planner's examples, if any, stay
  item.context.examples = std::move(mine.examples);
  item.context.warnings = std::move(mine.warnings);
  std::vector<int64_t> plan_ids;
  if (item.plan_id) plan_ids.push_back(*item.plan_id);
  record_draw(task, item.parent, "coder", pairs, std::move(plan_ids));
  // Credit for this retrieval goes to its own pairs that the plan applies, once.
  item.retrieved_pairs = pairs_used_by_plan(pairs, plan_techniques(item.plan));
  item.credited = std::make_shared<std::atomic<bool>>(false);
}

void Orchestrator::run_plan(TaskState& task) {
  agents::WorkContext context;
  std::optional<VerifiedKernel> parent;
  size_t skip = 0;
  {
    std::lock_guard lock(mutex_);
    parent = task.begin_plan(stopping());
    if (!parent) return;
    context = work_context(task, *parent);
    context.temperature = raised_temperature("planner", task.temperature_boost());
    // After each back-off the prompt shows the next examples, not the ones it stalled on.
    skip = static_cast<size_t>(task.memory_rotation() * options_.search.memory_examples);
  }
  std::vector<memory::RetrievedPair> retrieved = add_examples(task, *parent, skip, context);
  context.technique_cards = technique_card_texts(task);
  agents::AgentUsage usage;
  auto plans = planner_->propose(context, options_.search.plans_per_iteration, usage);
  // Every prompt's draw is kept, a failed or stale answer's too: its outcome is "no gain".
  std::optional<int64_t> draw = record_draw(task, *parent, "planner", retrieved, {});
  std::lock_guard lock(mutex_);
  charge(task, usage);
  task.end_plan();
  if (!plans) {
    spdlog::warn("[{}] planner: {}", task.spec().name, plans.error());
    if (stopping() || task.finished()) return;
    if (usage.model_failures > 0) {
      // The model refused or called tools even after a nudge: its failure, not the task's.
      planner_stalled(task, "", "were no answer (" + first_line_clipped(plans.error()) + ")");
      return;
    }
    log_change(task, task.on_planner_failed(plans.error()));
    return;
  }
  auto [fresh, dropped] = task.on_plans(std::move(*plans), *parent);
  spdlog::info("[{}] {} plans from kernel {} ({:.2f}x), {} memory pairs in the prompt{}",
               task.spec().name, fresh.size(), parent->kernel_id, parent->speedup, retrieved.size(),
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
  std::vector<int64_t> plan_ids = queue_plans(task, *parent, context, retrieved, std::move(fresh));
  if (draw) deps_.recorder->set_draw_plans(*draw, plan_ids);
}

std::vector<int64_t> Orchestrator::queue_plans(TaskState& task, const VerifiedKernel& parent,
                                               const agents::WorkContext& context,
                                               const std::vector<memory::RetrievedPair>& retrieved,
                                               std::vector<agents::Plan> fresh) {
  auto credited = std::make_shared<std::atomic<bool>>(false);
  std::vector<int64_t> plan_ids;
  for (agents::Plan& plan : fresh) {
    memory::PlanRecord record;
    record.task = task.spec().name;
    if (parent.kernel_id) record.parent_kernel_id = parent.kernel_id;
    record.title = plan.title;
    record.detail = plan.detail;
    std::vector<std::string> techniques = plan_techniques(plan);
    record.technique = join(techniques, " ");
    auto plan_id = deps_.recorder->add_plan(record);
    if (plan_id) plan_ids.push_back(*plan_id);
    // Credit goes only to the examples whose technique this plan applies.
    task.queue_plan(CodeItem{parent, std::move(plan), context,
                             pairs_used_by_plan(retrieved, techniques), credited, plan_id});
  }
  return plan_ids;
}

std::optional<int64_t> Orchestrator::record_draw(const TaskState& task,
                                                 const VerifiedKernel& parent, const char* agent,
                                                 const std::vector<memory::RetrievedPair>& shown,
                                                 std::vector<int64_t> plan_ids) {
  memory::ExampleDrawRecord draw;
  for (size_t i = 0; i < shown.size(); ++i) {
    draw.shown.push_back(shown[i].pair.id);
    if (shown[i].propensity <= 0) continue;
    draw.pair_id = shown[i].pair.id;
    draw.propensity = shown[i].propensity;
    draw.candidates = shown[i].draw_candidates;
    draw.slot = static_cast<int64_t>(i);
  }
  if (draw.pair_id == 0) return std::nullopt;  // no slot drawn (off, or nothing eligible)
  draw.task = task.spec().name;
  draw.agent = agent;
  if (parent.kernel_id) draw.parent_kernel_id = parent.kernel_id;
  draw.plan_ids = std::move(plan_ids);
  return deps_.recorder->record_draw(std::move(draw));
}

size_t Orchestrator::draw_index(size_t n) {
  std::lock_guard lock(draw_mutex_);
  if (!draw_rng_) {
    uint64_t seed = options_.search.example_draw_seed;
    draw_rng_.emplace(seed ? seed : std::random_device{}());
  }
  return std::uniform_int_distribution<size_t>(0, n - 1)(*draw_rng_);
}

std::vector<std::string> Orchestrator::technique_card_texts(const TaskState& task) {
  if (options_.search.technique_cards <= 0) return {};
  memory::CardQuery query;
  query.task = task.spec().name;
  query.bottleneck_of_profile = [this](const std::string& profile_json) {
    return bottleneck_classes_(profile_json);
  };
  std::vector<std::string> texts;
  for (const memory::TechniqueCard& card : deps_.recorder->technique_cards(query)) {
    if (static_cast<int>(texts.size()) >= options_.search.technique_cards) break;
    texts.push_back(memory::describe_card(card));
  }
  return texts;
}

void Orchestrator::run_code(TaskState& task, CodeItem item) {
  retrieve_for_plan(task, item);
  double best_before = 0;
  {
    std::lock_guard lock(mutex_);
    best_before = task.best_speedup();
    // What the model repeated since this plan was queued, and how hot it should answer now.
    item.context.repeats = task.repeat_notes();
    item.context.temperature = raised_temperature("coder", task.coder_temperature_boost(item));
  }
  CoderJudge judge(
      {.mutex = &mutex_,
       .task = &task,
       .stopping = [this] { return stopping(); },
       .evaluate =
           [&](const std::string& source, int attempt) {
             memory::KernelOrigin origin{Origin::kCoder, deps_.coder_model,
                                         attempt == 1 ? "coder.txt" : "repair.txt", false};
             return this->judge(task, candidate_input(task, source, origin, item.parent.kernel_id));
           }},
      item.plan.title);
  agents::AgentUsage usage;
  agents::CoderOutcome result =
      coder_->develop(item.context, item.plan, std::ref(judge), options_.search.max_repairs, usage);
  finish_code(task, item, judge, result, usage, best_before);
}

void Orchestrator::finish_code(TaskState& task, const CodeItem& item, const CoderJudge& judge,
                               const agents::CoderOutcome& result, const agents::AgentUsage& usage,
                               double best_before) {
  const std::optional<VerifiedKernel>& accepted = judge.accepted();
  double ratio = accepted ? accepted->speedup / std::max(1e-9, item.parent.speedup) : 0;
  {
    std::lock_guard lock(mutex_);
    charge(task, usage);
    // The calls that brought no kernel to judge: cut off, refused, tool calls, empty, or an
    // answer without a usable kernel file.
    std::vector<CallOutcome> calls = judge.calls();
    auto add = [&](int64_t n, CallOutcome outcome) {
      calls.insert(calls.end(), static_cast<size_t>(std::max<int64_t>(0, n)), outcome);
    };
    add(usage.truncated, CallOutcome::kTruncated);
    add(usage.refused, CallOutcome::kRefused);
    add(usage.tool_calls, CallOutcome::kToolCall);
    add(usage.empty, CallOutcome::kEmpty);
    add(usage.calls - judge.answers() - usage.truncated - usage.refused - usage.tool_calls -
            usage.empty,
        CallOutcome::kError);
    if (!stopping()) record_coder_calls(task, calls);
    agents::WorkContext refine = accepted ? work_context(task, *accepted) : agents::WorkContext{};
    PlanFinish finish =
        task.on_plan_finished(item, accepted, result, best_before, stopping(), std::move(refine));
    if (item.plan_id) {
      deps_.recorder->finish_plan(*item.plan_id, first_line_clipped(finish.verdict),
                                  judge.children());
    }
  }
  if (!result.error.empty() && !accepted) {
    spdlog::warn("[{}] coder '{}': {}", task.spec().name, item.plan.title, result.error);
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
  auto history = deps_.recorder->history(task.spec().name);
  if (!history) {
    spdlog::warn("[{}] cannot read the run's history: {}", task.spec().name, history.error());
    return;
  }
  std::optional<GpuIdentity> gpu = task.restore(*history);
  if (!task.baseline()) return;
  if (!gpu_ && gpu) gpu_ = gpu;
  load_production_baseline(task);
}

void Orchestrator::carry_over(TaskState& task) {
  auto earlier = deps_.recorder->earlier_nights(task.spec());
  if (!earlier) {
    spdlog::warn("[{}] cannot read earlier nights: {}", task.spec().name, earlier.error());
    return;
  }
  task.carry_over(*earlier);
  if (!earlier->evaluations.empty()) {
    spdlog::info("[{}] carried over from earlier nights: {} judged kernels, {} plans",
                 task.spec().name, earlier->evaluations.size(), earlier->plans.size());
  }
}

}  // namespace kopt::orchestrator
