#include "sandbox/worker/hygiene.h"

#include <algorithm>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/worker/evaluation.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/verifier.h"
#include "sandbox/worker/verify_plan.h"

namespace kopt::worker {

Result<LoadedKernel> build_trusted_kernel(Device& device, const nlohmann::json& source,
                                          const TaskSpec& task) {
  auto file = parse_kernel_file(source.at("source").get<std::string>(),
                                source.value("origin", std::string("kernel.cu")), &task);
  if (!file) return make_error(file.error());
  CompileCache cache(cache_directory() / "compile");
  auto compiled = compile_kernel(make_compile_request(*file, {}, device.info().arch()), &cache);
  if (!compiled) return make_error(compiled.error());
  if (!compiled->ok) return make_error(file->origin + " does not compile:\n" + compiled->log);
  return LoadedKernel::load(device, std::move(*file), *compiled, {});
}

namespace {

// Problems of the reference's outputs at one shape.
Result<std::vector<std::string>> shape_problems(Device& device, SupportKernels& support,
                                                const TaskSpec& task, const LoadedKernel& reference,
                                                const ShapeBinding& sizes, uint64_t seed) {
  std::vector<std::string> problems;
  auto resolved = reference.resolve(task, sizes);
  if (auto* f = std::get_if<PlanFailure>(&resolved)) return make_error(f->detail);
  const ResolvedPlan& plan = std::get<ResolvedPlan>(resolved);
  std::vector<GuardedBuffer> storage;
  BufferMap inputs, outputs, first, zeros, scratch;
  auto add = [&](BufferMap& map, const std::string& name, DType dtype, int64_t n) -> Status {
    auto b = GuardedBuffer::create(device, dtype, n);
    if (!b) return make_error(b.error());
    map[name] = b->ref();
    storage.push_back(std::move(*b));
    return ok_status();
  };
  for (const auto& t : task.inputs)
    if (auto s = add(inputs, t.name, t.dtype, *task.element_count(t, sizes)); !s)
      return make_error(s.error());
  for (const auto& t : task.outputs) {
    int64_t n = *task.element_count(t, sizes);
    for (BufferMap* m : {&outputs, &first, &zeros})
      if (auto s = add(*m, t.name, t.dtype, n); !s) return make_error(s.error());
    (void)fill_bytes(device, zeros[t.name], 0);
  }
  for (const auto& s : plan.scratch)
    if (auto st = add(scratch, s.name, s.dtype, s.elements); !st) return make_error(st.error());
  BufferMap all = inputs;
  all.insert(outputs.begin(), outputs.end());
  all.insert(scratch.begin(), scratch.end());

  if (auto s = fill_inputs(support, task, sizes, inputs, seed); !s) return make_error(s.error());
  if (auto f = run_plan(device, reference, plan, all, task, device.stream()))
    return make_error("the reference failed: " + f->detail);
  for (const auto& t : task.outputs) {
    const BufferRef& out = outputs[t.name];
    (void)copy_buffer(device, out, first[t.name]);
    auto vs_zero = support.compare(out.ptr, zeros[t.name].ptr, t.dtype, out.elements, 1e-6, 0);
    if (!vs_zero) return make_error(vs_zero.error());
    if (vs_zero->failed == 0) problems.push_back("output '" + t.name + "' is near zero everywhere");
    if (out.elements > 1) {
      // Comparing the output with itself shifted by one element: no difference means constant.
      auto shifted =
          support.compare(out.ptr, out.ptr + dtype_size(t.dtype), t.dtype, out.elements - 1, 0, 0);
      if (!shifted) return make_error(shifted.error());
      if (shifted->failed == 0) problems.push_back("output '" + t.name + "' is constant");
    }
  }
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    // Refill one input with new values and keep the others: some output must change.
    // Inputs whose structure follows this one (a block table of these lengths) are redrawn
    // with it, so the inputs stay consistent (sandbox/structured_init.h).
    TaskSpec only = task;
    only.inputs = {task.inputs[i]};
    for (const auto& name : structured_dependents(task, task.inputs[i].name))
      only.inputs.push_back(*task.find_tensor(name));
    if (auto s = fill_inputs(support, only, sizes, inputs, seed ^ 0xabcdef12345ULL); !s)
      return make_error(s.error());
    if (auto f = run_plan(device, reference, plan, all, task, device.stream()))
      return make_error("the reference failed: " + f->detail);
    bool changed = false;
    for (const auto& t : task.outputs) {
      auto diff = support.compare(outputs[t.name].ptr, first[t.name].ptr, t.dtype,
                                  outputs[t.name].elements, 0, 0);
      if (!diff) return make_error(diff.error());
      changed = changed || diff->failed > 0;
    }
    if (!changed)
      problems.push_back("the outputs do not change when input '" + task.inputs[i].name +
                         "' changes");
    if (auto s = fill_inputs(support, task, sizes, inputs, seed); !s) return make_error(s.error());
  }
  return problems;
}

// A stress round whose reference outputs hold NaN or Inf checks nothing at those elements (a
// non-finite expected value is not compared): its inputs are outside the operation's domain.
Result<std::vector<std::string>> stress_problems(Device& device, SupportKernels& support,
                                                 const TaskSpec& task,
                                                 const LoadedKernel& reference,
                                                 const StressRound& round,
                                                 const ShapeBinding& sizes, uint64_t seed) {
  InputSetMaker maker(device, support, task, reference, sizes, &round);
  auto set = maker.allocate();
  if (!set) return make_error(set.error());
  if (auto s = maker.fill(**set, seed); !s) return make_error(s.error());
  std::vector<std::string> problems;
  for (const auto& t : task.outputs) {
    const BufferRef& out = (*set)->expected.at(t.name);
    if (auto s = support.mask(out.ptr, out.dtype, out.elements); !s)  // unmasked: a set of its own
      return make_error(s.error());
    auto stats = support.compare(out.ptr, out.ptr, t.dtype, out.elements, 0, 0);
    if (!stats) return make_error(stats.error());
    if (stats->expected_non_finite > 0)
      problems.push_back("stress round '" + round.name +
                         "': " + std::to_string(stats->expected_non_finite) + " of " +
                         std::to_string(out.elements) + " elements of the reference's '" + t.name +
                         "' are NaN or Inf: those elements check nothing");
  }
  return problems;
}

// The baseline, like any correct kernel, on what no task lists: the drawn shapes, the shapes at
// its own thresholds, the input families and the round past 2^31 elements (the evaluation's plan,
// sandbox/worker/verify_plan.h, less the sweep, holdout and stress steps checked above). A
// failure names the shape: this text is for the task's author, not a model.
Result<CheckOutcome> baseline_on_unforeseen(Device& device, const TaskSpec& task,
                                            const LoadedKernel& baseline, Verifier& verifier,
                                            uint64_t seed) {
  PlanInputs inputs;
  inputs.candidate = &baseline.file();
  inputs.free_bytes = free_device_bytes(device);
  auto plan = plan_verification(task, EvalOptions{}, seed, inputs);
  if (!plan) return make_error(plan.error());
  for (const auto& step : plan->steps) {
    bool listed_stress = step.phase == "stress" && step.stress &&
                         step.stress >= task.stress.data() &&
                         step.stress < task.stress.data() + task.stress.size();
    if (step.phase == "sweep" || (step.phase == "holdout" && !step.stress) || listed_stress)
      continue;
    verifier.use_task_variant(step.variant);
    auto outcome = verifier.verify_shape(step.sizes, 1, step.seed, step.phase, step.stress);
    verifier.use_task_variant(nullptr);
    if (!outcome) return make_error(outcome.error());
    if (outcome->verdict != Verdict::kOk) {
      outcome->detail += " [" + step.phase + " shape " + describe_shape(step.sizes) +
                         (step.stress ? ", round '" + step.stress->name + "'" : "") + "]";
      return *outcome;
    }
  }
  return CheckOutcome{};
}

}  // namespace

Result<nlohmann::json> check_task_hygiene(Device& device, SupportKernels& support,
                                          const nlohmann::json& request) {
  auto task = parse_task(request.at("task_json").get<std::string>(), "task.json");
  if (!task) return make_error(task.error());
  auto reference = build_trusted_kernel(device, request.at("reference"), *task);
  if (!reference) return make_error("reference: " + reference.error());
  auto baseline = build_trusted_kernel(device, request.at("baseline"), *task);
  if (!baseline) return make_error("baseline: " + baseline.error());
  uint64_t seed = request.value("seed", uint64_t(12345));

  nlohmann::json findings = nlohmann::json::array();
  std::vector<ShapeBinding> shapes = task->shapes;
  shapes.insert(shapes.end(), task->holdout.begin(), task->holdout.end());
  for (const auto& overrides : shapes) {
    ShapeBinding sizes = task->bind(overrides);
    auto problems = shape_problems(device, support, *task, *reference, sizes, seed);
    if (!problems) return make_error(describe_shape(sizes) + ": " + problems.error());
    for (const auto& p : *problems)
      findings.push_back({{"shape", describe_shape(sizes)}, {"problem", p}});
  }
  // The baseline, like any correct kernel in the task's precision, must pass every stress round.
  struct Step {
    ShapeBinding sizes;
    const StressRound* stress = nullptr;
  };
  std::vector<Step> steps;
  for (const auto& overrides : shapes) steps.push_back({task->bind(overrides), nullptr});
  for (const auto& round : task->stress) {
    auto declared = stress_shapes(*task, round, EvalOptions{}.large_shape_bytes);
    for (const auto& sizes : declared) {
      steps.push_back({sizes, &round});
      // The domain check at the round's own shapes (or the sweep's, for a round without): the
      // sweep shapes a round with shapes of its own also runs at may mask a whole row there.
      if (!round.shapes.empty() &&
          std::find_if(round.shapes.begin(), round.shapes.end(), [&](const ShapeBinding& s) {
            return task->bind(s) == sizes;
          }) == round.shapes.end())
        continue;
      auto problems = stress_problems(device, support, *task, *reference, round, sizes, seed);
      if (!problems) return make_error(describe_shape(sizes) + ": " + problems.error());
      for (const auto& p : *problems)
        findings.push_back({{"shape", describe_shape(sizes)}, {"problem", p}});
    }
  }
  Verifier verifier(device, support, *task, *reference, *baseline);
  Verdict verdict = Verdict::kOk;
  std::string detail;
  for (size_t i = 0; i < steps.size(); ++i) {
    auto outcome = verifier.verify_shape(steps[i].sizes, 2, seed + i,
                                         steps[i].stress ? "stress" : "hygiene", steps[i].stress);
    if (!outcome) return make_error(outcome.error());
    if (outcome->verdict != Verdict::kOk) {
      verdict = outcome->verdict;
      detail = outcome->detail;
      break;
    }
  }
  if (verdict == Verdict::kOk) {
    auto unforeseen = baseline_on_unforeseen(device, *task, *baseline, verifier, seed);
    if (!unforeseen) return make_error(unforeseen.error());
    if (unforeseen->verdict != Verdict::kOk) {
      verdict = unforeseen->verdict;
      detail = unforeseen->detail;
    }
  }
  return nlohmann::json{{"findings", findings},
                        {"baseline_verdict", verdict_name(verdict)},
                        {"baseline_detail", detail}};
}

}  // namespace kopt::worker
