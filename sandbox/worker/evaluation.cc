#include "sandbox/worker/evaluation.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>

#include "common/files.h"
#include "common/sha256.h"
#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
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

// "+ 3 stress rounds + 9 input families + 4 drawn shapes + 8 threshold shapes": what the
// verification covered besides the sweep and the holdout.
std::string coverage_text(const TaskSpec& task, const EvalOptions& options,
                          const VerifyPlan& plan) {
  std::string text;
  if (options.stress && !task.stress.empty())
    text += " + " + std::to_string(task.stress.size()) + " stress rounds";
  if (plan.family_rounds > 0)
    text += " + " + std::to_string(plan.family_rounds) + " input family rounds";
  if (options.draws && task.draws.count > 0)
    text += " + " + std::to_string(task.draws.count) + " drawn shapes";
  if (plan.threshold_shapes > 0)
    text += " + " + std::to_string(plan.threshold_shapes) + " shapes at the kernel's thresholds";
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

// Whether verification, begun at `started`, has spent its time budget (if it has one).
bool over_budget(const EvalOptions& options, Clock::time_point started) {
  return options.verify_budget_seconds > 0 &&
         ms_since(started) > 1000.0 * options.verify_budget_seconds;
}

void apply_failure(EvalResult& result, const PlanFailure& failure) {
  result.verdict = failure.verdict;
  result.detail = failure.detail;
}

}  // namespace

int64_t free_device_bytes(Device& device) {
  size_t free_bytes = 0, total_bytes = 0;
  if (device.driver().cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS) return 0;
  return int64_t(free_bytes);
}

Result<int> verification_rounds(const EvalOptions& options, const TaskSpec& task,
                                const ShapeBinding& sizes) {
  auto bytes = task.tensor_bytes(sizes);
  if (!bytes) return make_error(bytes.error());
  if (*bytes > options.large_shape_bytes)
    return std::min(options.rounds, options.large_shape_rounds);
  return options.rounds;
}

Result<EvalResult> evaluate(Device& device, SupportKernels& support, const EvalRequest& request,
                            InputPool* pool, BaselineHistory* baselines) {
  auto started = Clock::now();
  EvalResult result;
  result.device = device.info().to_json();
  auto task = parse_task(request.task_json, "task.json");
  if (!task) return make_error("the request's task does not parse: " + task.error());
  std::string arch = request.options.arch.empty() ? device.info().arch() : request.options.arch;
  CompileCache cache(cache_directory() / "compile");

  auto compile_started = Clock::now();
  Compiled candidate = prepare(device, request.candidate, *task, arch, cache);
  result.compile_ms = ms_since(compile_started);
  result.compile_log = candidate.output.log;
  result.compile_cache_hit = candidate.output.cache_hit;
  // What `kopt export` must ship: the bytes loaded here are the bytes judged.
  if (!candidate.output.cubin.empty()) result.image_sha256 = sha256_hex(candidate.output.cubin);
  if (candidate.failure) {
    apply_failure(result, *candidate.failure);
    result.total_ms = ms_since(started);
    return result;
  }
  Compiled reference = prepare(device, request.reference, *task, arch, cache);
  if (reference.failure)
    return make_error("the task's reference does not build: " + reference.failure->detail);

  uint64_t seed = request.options.seed;
  if (seed == 0)
    seed = std::random_device{}() * 0x9e3779b97f4a7c15ULL ^
           uint64_t(started.time_since_epoch().count());

  // Verification: the sweep, the stress rounds, then the holdout shapes.
  auto verify_started = Clock::now();
  Verifier verifier(device, support, *task, *reference.kernel, *candidate.kernel, request.options);
  // Kept input sets belong to one task and one reference: both are in the key. A reproduction
  // (an explicit seed) gets inputs from its seed alone.
  if (!request.options.reuse_inputs || request.options.seed != 0) pool = nullptr;
  std::string pool_key = kernel_key(request.task_json, request.reference);
  auto plan = plan_verification(*task, request.options, seed,
                                plan_inputs(device, *candidate.kernel, request.candidate.tunables));
  if (!plan) return make_error(plan.error());
  std::map<int, int> shapes_by_rounds;  // for the detail line: how many shapes got how many rounds
  size_t steps_run = 0;
  for (const auto& step : plan->steps) {
    if (over_budget(request.options, verify_started)) break;
    ++steps_run;
    // The kept sets made during this evaluation may have taken the memory the plan counted on.
    // Another worker on this GPU may be in its own wide round: wait for its end first.
    std::optional<WideRoundTurn> turn;
    if (step.phase == "wide") {
      const auto& info = device.info();
      turn.emplace(info.pci_bus_id.empty() ? std::to_string(info.ordinal) : info.pci_bus_id);
      if (auto skip = wide_round_skipped(*task, free_device_bytes(device))) {
        plan->notes.push_back(*skip);
        plan->wide = false;
        continue;
      }
    }
    if (step.phase != "stress") ++shapes_by_rounds[step.rounds];
    verifier.use_pool(step.pooled ? pool : nullptr, pool_key);
    verifier.use_task_variant(step.variant);
    auto outcome =
        verifier.verify_shape(step.sizes, step.rounds, step.seed, step.phase, step.stress);
    if (!outcome) return make_error(outcome.error());
    if (outcome->verdict != Verdict::kOk) {
      result.verdict = outcome->verdict;
      result.detail = outcome->detail;
      result.mismatch = outcome->mismatch;
      result.verify_ms = ms_since(verify_started);
      result.verify_phases = verifier.phases().to_json();
      result.total_ms = ms_since(started);
      return result;
    }
  }
  verifier.use_task_variant(nullptr);
  result.verify_ms = ms_since(verify_started);
  result.verify_phases = verifier.phases().to_json();

  const ShapeBinding timed_shape = task->bind({});
  auto resolved = candidate.kernel->resolve(*task, timed_shape);
  if (auto* f = std::get_if<PlanFailure>(&resolved)) {
    apply_failure(result, *f);
    return result;
  }
  result.resources = candidate.kernel->resources(std::get<ResolvedPlan>(resolved));

  auto peaks = device_peaks(device, support);
  if (peaks) {
    auto flops = evaluate_expression(task->flops, timed_shape);
    auto bytes = evaluate_expression(task->bytes, timed_shape);
    if (flops && bytes)
      result.sol_us = speed_of_light_us(double(*flops), double(*bytes), *peaks, task->peak);
  }

  // Shapes a time budget left out are said in every ok verdict's detail.
  const std::string budget_note =
      steps_run < plan->steps.size()
          ? "; the verification budget of " +
                std::to_string(int64_t(request.options.verify_budget_seconds)) +
                " s stopped it after " + std::to_string(steps_run) + " of " +
                std::to_string(plan->steps.size()) + " shapes"
          : "";
  if (!request.options.time) {
    result.verdict = Verdict::kOk;
    result.detail = "verified (not timed)" + budget_note;
    if (!request.options.profile.empty())
      profile_candidate(device, support, *task, *reference.kernel, *candidate.kernel, timed_shape,
                        request.options, seed ^ 0x2545f491ULL, result);
    result.total_ms = ms_since(started);
    return result;
  }

  std::optional<Compiled> baseline;
  if (request.baseline) {
    baseline = prepare(device, *request.baseline, *task, arch, cache);
    if (baseline->failure)
      return make_error("the task's baseline does not build: " + baseline->failure->detail);
  }
  auto time_started = Clock::now();
  // A number taken on a shared or throttled GPU is never reported: checked before and after.
  static GpuQuietCheck quiet(device, support);
  auto gpu_is_quiet = [&](const char* when) -> Result<bool> {
    if (!request.options.check_gpu_quiet) return true;
    auto check = quiet.check(request.options.probe_tolerance);
    if (!check) return make_error(check.error());
    result.gpu_check[when] = check->facts;
    if (check->quiet) return true;
    result.verdict = Verdict::kGpuBusy;
    result.detail = std::string("the GPU is not ours alone ") + when + " timing: " + check->reason +
                    "; no time is reported, evaluate again when it is quiet";
    result.time_ms = ms_since(time_started);
    result.total_ms = ms_since(started);
    return false;
  };
  auto quiet_before = gpu_is_quiet("before");
  if (!quiet_before) return make_error(quiet_before.error());
  if (!*quiet_before) return result;
  TimingLoop loop(device, support, *task, *reference.kernel, request.options);
  loop.use_pool(pool, pool_key);
  if (baseline) {
    // One baseline of one task at one shape: its samples from earlier evaluations may serve.
    std::string key = kernel_key(request.task_json, *request.baseline);
    loop.use_baseline_history(baselines, key + '\0' + describe_shape(timed_shape));
  }
  auto timed = loop.run(*candidate.kernel, baseline ? &*baseline->kernel : nullptr, timed_shape,
                        seed ^ 0x5bd1e995ULL, verifier.candidate_seconds(timed_shape));
  result.time_ms = ms_since(time_started);
  if (!timed) return make_error(timed.error());
  result.timing_facts = timed->facts();
  if (timed->verdict == Verdict::kOk) {
    auto quiet_after = gpu_is_quiet("after");
    if (!quiet_after) return make_error(quiet_after.error());
    if (!*quiet_after) return result;
  }
  if (timed->verdict != Verdict::kOk) {
    result.verdict = timed->verdict;
    result.detail = timed->detail;
    result.mismatch = timed->mismatch;
    result.total_ms = ms_since(started);
    return result;
  }
  result.candidate_time = timed->candidate;
  result.baseline_time = timed->baseline;
  double median = timed->candidate.median_us;
  if (timed->baseline && median > 0) result.speedup = timed->baseline->median_us / median;
  if (result.sol_us > 0 && median > 0) result.sol_percent = 100.0 * result.sol_us / median;
  result.verdict = Verdict::kOk;
  result.detail =
      "verified on " + std::to_string(task->shapes.size()) + " shapes" +
      (request.options.check_holdout ? " + " + std::to_string(task->holdout.size()) + " holdout"
                                     : "");
  std::string rounds_text;  // "5 rounds x 4, 2 rounds x 2, 1 round x 1", most rounds first
  for (auto it = shapes_by_rounds.rbegin(); it != shapes_by_rounds.rend(); ++it)
    rounds_text += std::string(rounds_text.empty() ? "" : ", ") + std::to_string(it->first) +
                   (it->first == 1 ? " round x " : " rounds x ") + std::to_string(it->second);
  result.detail += " (" + rounds_text + ")" + budget_note;
  result.detail += coverage_text(*task, request.options, *plan);
  if (timed->baseline_from_history)
    result.detail += "; baseline: " + std::to_string(timed->fresh_baseline_samples) +
                     " fresh samples agreed with earlier ones";

  // Faster than physics allows: never accepted. Implausibly large speedups: re-verified with
  // twice the rounds and new seeds before they count.
  if (result.sol_us > 0 && median < 0.8 * result.sol_us) {
    result.verdict = Verdict::kSuspicious;
    result.detail = "median " + std::to_string(median) + " us is below the speed-of-light bound " +
                    std::to_string(result.sol_us) + " us";
  } else if (result.speedup > request.options.suspicious_speedup) {
    for (size_t i = 0; i < task->shapes.size(); ++i) {
      auto outcome = verifier.verify_shape(task->bind(task->shapes[i]), 2 * request.options.rounds,
                                           seed * 31 + 17 * (i + 1), "reverify");
      if (!outcome) return make_error(outcome.error());
      if (outcome->verdict != Verdict::kOk) {
        result.verdict = Verdict::kSuspicious;
        result.detail = "speedup " + std::to_string(result.speedup) +
                        "x failed re-verification: " + outcome->detail;
        result.mismatch = outcome->mismatch;
        break;
      }
    }
    if (result.verdict == Verdict::kOk)
      result.detail += "; speedup above " + std::to_string(request.options.suspicious_speedup) +
                       "x confirmed by extra rounds";
  }
  // Counters for a new best (or on request), after the timed samples so they stay clean.
  bool new_best =
      request.options.profile_below_us <= 0 || median < request.options.profile_below_us;
  if (result.verdict == Verdict::kOk && !request.options.profile.empty() && new_best)
    profile_candidate(device, support, *task, *reference.kernel, *candidate.kernel, timed_shape,
                      request.options, seed ^ 0x2545f491ULL, result);
  result.total_ms = ms_since(started);
  return result;
}

}  // namespace kopt::worker
