#include "sandbox/worker/verifier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "sandbox/gpu_turn.h"
#include "sandbox/worker/candidate_buffers.h"
#include "sandbox/worker/memory_patterns.h"
#include "sandbox/worker/structured_fill.h"

namespace kopt::worker {
namespace {

constexpr unsigned char kPoisonFirstRun = 0xFF;  // NaN for every float type, -1 for integers

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Result<std::vector<std::string>> damaged_guards(SupportKernels& support,
                                                const std::vector<const GuardedBuffer*>& buffers) {
  // An exact allocation (under compute-sanitizer) has no zones: memcheck checks its ends, and the
  // scan kernel would itself read past an exact allocation's end.
  std::vector<GuardZones> regions;
  for (const auto* b : buffers)
    if (b->has_guards()) regions.push_back(b->guard_zones());
  auto scanned = support.scan_guards(regions);
  if (!scanned) return make_error(scanned.error());
  std::vector<std::string> out;
  size_t next = 0;
  for (const auto* b : buffers) {
    if (!b->has_guards()) {
      out.emplace_back();
      continue;
    }
    const auto& d = (*scanned)[next++];
    out.push_back(describe_guard_damage(d.head_distance, d.tail_offset));
  }
  return out;
}

nlohmann::json VerifyPhases::to_json() const {
  return {{"setup_ms", setup_ms},           {"inputs_ms", inputs_ms},
          {"reference_ms", reference_ms},   {"candidate_ms", candidate_ms},
          {"checks_ms", checks_ms},         {"rounds", rounds},
          {"pooled_rounds", pooled_rounds}, {"stress_rounds", stress_rounds},
          {"sets_made", sets_made}};
}

std::string describe_shape(const ShapeBinding& sizes) {
  std::string out;
  for (const auto& [k, v] : sizes) out += (out.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return out;
}

std::string describe_element(const TensorSpec& output, const ShapeBinding& sizes, int64_t flat) {
  std::vector<int64_t> dims;
  for (const auto& d : output.shape) {
    auto v = evaluate_expression(d, sizes);
    if (!v || *v < 1) return output.name + "[" + std::to_string(flat) + "]";
    dims.push_back(*v);
  }
  std::vector<int64_t> coords(dims.size(), 0);
  int64_t rest = flat;
  for (size_t i = dims.size(); i-- > 0;) {
    coords[i] = rest % dims[i];
    rest /= dims[i];
  }
  std::string text = output.name + "[";
  for (size_t i = 0; i < coords.size(); ++i) text += (i ? ", " : "") + std::to_string(coords[i]);
  return text + "]";
}

std::string describe_stress_failure(const TaskSpec& task, const StressRound& stress,
                                    const ShapeBinding& sizes, const CheckOutcome& outcome) {
  std::string text = verdict_name(outcome.verdict) + " on stress round '" + stress.name +
                     "' at shape " + describe_shape(sizes);
  if (outcome.mismatch) {
    const Mismatch& m = *outcome.mismatch;
    const TensorSpec* output = task.find_tensor(m.output);
    std::string where = output ? describe_element(*output, sizes, m.index)
                               : m.output + "[" + std::to_string(m.index) + "]";
    text += ": got " + format_number(m.actual) + " at " + where + " (expected " +
            format_number(m.expected) + ")";
  }
  std::string inputs;
  for (const auto& [name, init] : stress.inputs)
    inputs += (inputs.empty() ? "" : ", ") + name + ": " + describe_init(init) +
              (stress.patterns.count(name) ? " with " + stress.name : "");
  return text + "; " + outcome.detail + "; the round's inputs: " + inputs +
         ". The kernel is right on well-scaled inputs but not on these extreme, valid ones: "
         "check its numerical stability";
}

bool shape_is_hidden(const std::string& phase) {
  return phase == "holdout" || phase == "drawn" || phase == "threshold" || phase == "corun_drawn";
}

std::string describe_hidden_mismatch(const Mismatch& m, Verdict verdict) {
  return "'" + m.output + "' " +
         (verdict == Verdict::kNondeterministic ? "differs between two runs on the same inputs"
                                                : "differs from the reference") +
         ": got " + format_number(m.actual) + " where " + format_number(m.expected) +
         " is expected";
}

namespace {
// An input family's row pattern over the fill (sandbox/input_families.h), where the round has one.
// The rows it picks follow `round_seed` and the input's `stream`, or the round's seed alone where
// the pattern asks for the same rows in every input.
Status plant_pattern(SupportKernels& support, const TensorSpec& t, const ShapeBinding& sizes,
                     const BufferRef& b, const StressRound* stress, uint64_t round_seed,
                     uint64_t stream) {
  if (!stress) return ok_status();
  auto it = stress->patterns.find(t.name);
  if (it == stress->patterns.end()) return ok_status();
  auto row = evaluate_expression(it->second.row, sizes);
  if (!row || *row < 1) return make_error("input '" + t.name + "': bad family row length");
  const uint64_t seed = it->second.same_rows ? round_seed : round_seed + stream;
  return support.plant_rows(b.ptr, t.dtype, b.elements, it->second, *row,
                            seed * 0x94d049bb133111ebULL ^ 0x6a09e667f3bcc909ULL);
}
}  // namespace

Status fill_inputs(SupportKernels& support, const TaskSpec& task, const ShapeBinding& sizes,
                   const BufferMap& inputs, uint64_t seed, const StressRound* stress) {
  uint64_t stream = 0;
  for (const auto& t : task.inputs) {
    const BufferRef& b = inputs.at(t.name);
    const InitSpec& init = stress_init(stress, t);
    FillBounds bounds;
    if (init.dist == "randint" || !dtype_is_float(t.dtype)) {
      auto lo = evaluate_expression(init.int_low, sizes);
      auto hi = evaluate_expression(init.int_high, sizes);
      if (!lo || !hi) return make_error("input '" + t.name + "': bad randint bounds");
      bounds.int_low = *lo;
      bounds.int_high = *hi;
    }
    if (!init.repeat.empty()) {
      auto run = evaluate_expression(init.repeat, sizes);
      if (!run || *run < 1) return make_error("input '" + t.name + "': bad repeat length");
      bounds.repeat = *run;
    }
    for (const auto& [length, target] :
         {std::pair{&init.row, &bounds.row}, {&init.repeated_max, &bounds.max_spacing}}) {
      if (length->empty()) continue;
      auto v = evaluate_expression(*length, sizes);
      if (!v || *v < 1) return make_error("input '" + t.name + "': bad row structure length");
      *target = *v;
    }
    uint64_t input_seed = seed * 0x2545F4914F6CDD1DULL + (++stream) * 0x9E3779B97F4A7C15ULL;
    if (!is_structured_dist(init.dist))
      if (auto s = support.fill(b.ptr, t.dtype, b.elements, init, bounds, input_seed); !s)
        return make_error("filling input '" + t.name + "': " + s.error());
    if (auto s = plant_pattern(support, t, sizes, b, stress, seed, stream); !s) return s;
    // Index tensors and planted values (sandbox/worker/structured_fill.h), after the plain draw.
    if (needs_structured_fill(init))
      if (auto s = fill_structured(support.device(), task, sizes, inputs, t, init, b, input_seed);
          !s)
        return make_error("filling input '" + t.name + "': " + s.error());
  }
  return ok_status();
}

std::optional<PlanFailure> launch_plan(Device& device, const LoadedKernel& kernel,
                                       const ResolvedPlan& plan, const BufferMap& buffers,
                                       const TaskSpec& task, CUstream stream) {
  CudaFailure failure;
  // Scratch the plan did not ask to be zeroed holds NaN bytes on every other run and a random
  // far-from-zero byte on the others (memory_patterns.h): reading it before writing fails, and
  // its fill is no state to rely on.
  static uint64_t runs = 0;
  static std::mt19937_64 random{std::random_device{}()};
  const unsigned char fill = scratch_fill_byte(runs++, random());
  for (const auto& s : plan.scratch) {
    const BufferRef& b = buffers.at(s.name);
    if (b.bytes() &&
        !device.check(device.driver().cuMemsetD8Async(b.ptr, s.zero ? 0 : fill, b.bytes(), stream),
                      "cuMemsetD8Async(scratch)", &failure))
      return PlanFailure{Verdict::kCrash, failure.message, failure.sticky};
  }
  return kernel.launch(plan, buffers, task, stream);
}

std::optional<PlanFailure> run_plan(Device& device, const LoadedKernel& kernel,
                                    const ResolvedPlan& plan, const BufferMap& buffers,
                                    const TaskSpec& task, CUstream stream, const RunLimit& limit,
                                    double* elapsed_seconds) {
  if (auto f = launch_plan(device, kernel, plan, buffers, task, stream)) return f;
  auto failure = wait_for_stream(device, stream, limit, kernel.file().origin, elapsed_seconds);
  // The run is over and this stream idle: a timer waiting for the lane's unit (or a co-worker's)
  // times now rather than after the whole shape (sandbox/gpu_turn.h).
  if (!failure) (void)yield_point();
  return failure;
}

Result<CheckOutcome> check_output(SupportKernels& support, const TaskSpec& task,
                                  const TensorSpec& output, const BufferRef& actual,
                                  const BufferRef& expected, Verdict failure_verdict,
                                  bool expected_masked) {
  const Tolerance& tol = task.tolerance;
  auto stats = support.compare(actual.ptr, expected.ptr, output.dtype, actual.elements, tol.atol,
                               tol.rtol, expected_masked);
  if (!stats) return make_error(stats.error());
  CheckOutcome outcome;
  int64_t n = actual.elements;
  if (n == 0) return outcome;
  std::string what;
  if (stats->non_finite > 0) {
    what = std::to_string(stats->non_finite) + " of " + std::to_string(n) + " elements of '" +
           output.name + "' are NaN or Inf (never written, or invalid arithmetic)";
  } else if (stats->actual_nonzero == 0 && stats->expected_unlike_zero > 0) {
    what = "'" + output.name + "' is all zeros but the reference is not";
  } else if (double(stats->failed) > (1.0 - tol.min_pass_fraction) * double(n)) {
    what = std::to_string(stats->failed) + " of " + std::to_string(n) + " elements of '" +
           output.name + "' are outside atol " + format_number(tol.atol) + " + rtol " +
           format_number(tol.rtol) + " * |ref|";
  } else if (stats->max_error > tol.max_error) {
    what = "an element of '" + output.name + "' is off by " + format_number(stats->max_error) +
           ", over the cap " + format_number(tol.max_error);
  } else {
    return outcome;
  }
  outcome.verdict = failure_verdict;
  outcome.detail = what;
  Mismatch m;
  m.output = output.name;
  m.index = stats->worst_index;
  if (m.index >= 0 && m.index < n) {
    auto a = support.read_element(actual.ptr, output.dtype, m.index);
    auto e = support.read_element(expected.ptr, output.dtype, m.index, expected_masked);
    if (a) m.actual = *a;
    if (e) m.expected = *e;
    outcome.detail += "; worst at index " + std::to_string(m.index) + ": got " +
                      format_number(m.actual) + ", expected " + format_number(m.expected);
  }
  outcome.mismatch = m;
  return outcome;
}

double Verifier::candidate_seconds(const ShapeBinding& sizes) const {
  auto it = candidate_seconds_.find(sizes);
  return it == candidate_seconds_.end() ? 0.0 : it->second;
}

// One shape's verification, step by step (Verifier::verify_shape is the script). A verdict on
// the candidate ends it early; errors (the task's or the worker's) are errors.
class ShapeVerification {
 public:
  using Step = Result<std::optional<CheckOutcome>>;

  ShapeVerification(Verifier& v, const ShapeBinding& sizes, int rounds, uint64_t seed,
                    const std::string& phase, const StressRound* stress)
      : device_(v.device_),
        support_(v.support_),
        reference_(v.reference_),
        candidate_(v.candidate_),
        options_(v.options_),
        phases_(v.phases_),
        pool_(v.pool_),
        pool_key_(v.pool_key_),
        candidate_seconds_(v.candidate_seconds_),
        co_run_(v.co_run_),
        // The step's variant of the task (drawn constants, an input family's tolerance).
        task_(v.step_task_ ? *v.step_task_ : v.task_),
        sizes_(sizes),
        rounds_(rounds),
        seed_(seed),
        phase_(phase),
        stress_(stress),
        // A holdout's or a drawn shape's sizes never reach a verdict: the text goes to the
        // model, which would learn the shape to special-case (tasks/README.md, "Drawn shapes").
        hidden_(shape_is_hidden(phase)),
        shape_text_(hidden_ ? "a " + phase + " shape" : describe_shape(sizes)) {}

  // The plans of reference and candidate at this shape.
  Step resolve_plans() {
    auto ref_plan = reference_.resolve(task_, sizes_);
    if (auto* f = std::get_if<PlanFailure>(&ref_plan))
      return make_error("reference plan at " + shape_text_ + ": " + f->detail);
    auto cand_plan = candidate_.resolve(task_, sizes_);
    if (auto* f = std::get_if<PlanFailure>(&cand_plan))
      return verdict({f->verdict, f->detail + " (at " + shape_text_ + ")", std::nullopt});
    candidate_plan_ = std::get<ResolvedPlan>(std::move(cand_plan));
    return go_on();
  }

  // The rounds' inputs and the reference's outputs on them: drawn from the pool, or one set of
  // this shape refilled from the request's seed every round.
  Step draw_inputs() {
    last_ = std::chrono::steady_clock::now();
    maker_.emplace(device_, support_, task_, reference_, sizes_, stress_);
    double made_before = phases_.inputs_ms + phases_.reference_ms;
    auto drawn = draw_sets(pool_, pool_key_, *maker_, rounds_, options_, &phases_);
    if (!drawn) return make_error(drawn.error());
    pooled_ = drawn->has_value();
    if (pooled_) {
      sets_ = std::move(**drawn);
      phases_.setup_ms += lap() - (phases_.inputs_ms + phases_.reference_ms - made_before);
    } else {
      auto allocated = maker_->allocate();
      if (!allocated) return make_error(allocated.error());
      own_ = std::move(*allocated);
      sets_.assign(size_t(rounds_), own_.get());
    }
    return go_on();
  }

  // What the candidate runs on: copies of each round's inputs, its outputs and scratch
  // (candidate_buffers.h); and where its first run's outputs wait for the second's.
  Step make_buffers() {
    auto buffers = CandidateBuffers::create(device_, task_, sizes_, &*candidate_plan_);
    if (!buffers) return make_error(buffers.error());
    buffers_.emplace(std::move(*buffers));
    if (auto s =
            allocate_tensors(device_, task_, task_.outputs, sizes_, first_storage_, first_run_);
        !s)
      return make_error(s.error());
    phases_.setup_ms += lap();
    return go_on();
  }

  Step run_rounds() {
    for (int round = 0; round < rounds_; ++round) {
      auto end = run_round(round);
      if (!end || *end) return end;
    }
    return go_on();
  }

 private:
  static std::optional<CheckOutcome> go_on() { return std::nullopt; }
  static std::optional<CheckOutcome> verdict(CheckOutcome o) { return o; }

  // Host wall time since the last sync point (the per-phase breakdown).
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }

  uint64_t round_seed(int round) const {
    return seed_ * 6364136223846793005ULL + uint64_t(round) * 1442695040888963407ULL;
  }

  // One round: its inputs, then the candidate twice on them.
  Step run_round(int round) {
    InputSet* set = sets_[size_t(round)];
    if (!pooled_) {
      last_ = std::chrono::steady_clock::now();
      if (auto s = maker_->fill(*set, round_seed(round), &phases_); !s)
        return make_error(s.error());
      lap();
    } else {
      ++phases_.pooled_rounds;
    }
    ++phases_.rounds;
    if (stress_) ++phases_.stress_rounds;
    RunLimit limit = candidate_run_limit(options_, set->reference_seconds, "the reference");
    if (auto s = buffers_->load(*set, support_); !s) return make_error(s.error());
    const BufferMap cand_buffers = buffers_->bindings();
    for (int run = 0; run < 2; ++run) {
      auto end = run_candidate(round, run, *set, limit, cand_buffers);
      if (!end || *end) return end;
    }
    return go_on();
  }

  // One run of the candidate on poisoned outputs, then its checks.
  Step run_candidate(int round, int run, const InputSet& set, const RunLimit& limit,
                     const BufferMap& cand_buffers) {
    // After the first round, the first run starts from the previous round's verified answer
    // (right for other inputs: a stale answer) instead of NaN bytes.
    auto poisoned = run == 0 && round > 0
                        ? buffers_->poison_with(first_run_, device_.stream())
                        : buffers_->poison(run == 0 ? kPoisonFirstRun
                                                    : second_run_poison_byte(round_seed(round)),
                                           device_.stream());
    if (!poisoned) return make_error(poisoned.error());
    phases_.checks_ms += lap();
    double seconds = 0;
    auto failure = run_once(cand_buffers, limit, &seconds);
    if (!failure) return make_error(failure.error());
    phases_.candidate_ms += lap();
    // A run slowed by a co-runner says nothing about the candidate's own time.
    double& slowest = candidate_seconds_[sizes_];
    if (!co_run_) slowest = std::max(slowest, seconds);
    if (*failure) return fail({(*failure)->verdict, (*failure)->detail, std::nullopt}, round);
    auto end = check_run(round, run, set);
    if (!end || *end) return end;
    phases_.checks_ms += lap();
    return go_on();
  }

  // The candidate's plan once, alone or beside the step's co-runner.
  Result<std::optional<PlanFailure>> run_once(const BufferMap& buffers, const RunLimit& limit,
                                              double* seconds) {
    if (!co_run_)
      return run_plan(device_, candidate_, *candidate_plan_, buffers, task_, device_.stream(),
                      limit, seconds);
    return co_run_->runner->run(
        co_run_->share, co_run_->seed, device_.stream(), limit, candidate_.file().origin,
        [&] {
          return launch_plan(device_, candidate_, *candidate_plan_, buffers, task_,
                             device_.stream());
        },
        seconds);
  }

  Step check_run(int round, int run, const InputSet& set) {
    // Guard zones, the input copies, the kept set itself: checked before any comparison is
    // trusted (a damaged kept set is dropped there).
    auto intact = check_integrity(support_, task_, {&*buffers_}, pooled_ ? pool_ : nullptr);
    if (!intact) return make_error(intact.error());
    if (intact->verdict != Verdict::kOk) return fail(*intact, round);
    // A second run that disagrees with the reference, after a first that agreed, means the
    // result depends on something other than the inputs: stale memory, races.
    auto o = check_outputs(support_, task_, buffers_->outputs(), set,
                           run == 0 ? Verdict::kIncorrect : Verdict::kNondeterministic);
    if (!o) return make_error(o.error());
    if (o->verdict != Verdict::kOk) {
      if (run == 1) o->detail = "second run on the same inputs differs: " + o->detail;
      return fail(*o, round);
    }
    return keep_or_compare_first_run(round, run);
  }

  // The first run's outputs are kept; the second run's must equal them.
  Step keep_or_compare_first_run(int round, int run) {
    for (const auto& t : task_.outputs) {
      const BufferRef& actual = buffers_->outputs().at(t.name);
      if (run == 0) {
        if (auto s = copy_buffer(device_, actual, first_run_[t.name]); !s)
          return make_error(s.error());
        continue;
      }
      auto same =
          check_output(support_, task_, t, actual, first_run_[t.name], Verdict::kNondeterministic);
      if (!same) return make_error(same.error());
      if (same->verdict != Verdict::kOk) {
        same->detail = "two runs on the same inputs disagree: " + same->detail;
        return fail(*same, round);
      }
    }
    return go_on();
  }

  // A failure's detail names the shape (unless hidden), the round and the stress round.
  std::optional<CheckOutcome> fail(CheckOutcome o, int round) const {
    if (hidden_ && o.mismatch) o.detail = describe_hidden_mismatch(*o.mismatch, o.verdict);
    o.detail += " (" + (hidden_ ? shape_text_ : phase_ + " shape " + shape_text_) + ", round " +
                std::to_string(round + 1) + ")";
    if (o.mismatch) {
      o.mismatch->shape = shape_text_;
      o.mismatch->round = round + 1;
      o.mismatch->phase = phase_;
      if (stress_) o.mismatch->stress = stress_->name;
    }
    if (stress_ && hidden_) {
      o.detail = verdict_name(o.verdict) + " on stress round '" + stress_->name + "' (" +
                 shape_text_ + "): " + o.detail;
    } else if (stress_) {
      o.detail = describe_stress_failure(task_, *stress_, sizes_, o);
    }
    return o;
  }

  Device& device_;
  SupportKernels& support_;
  const LoadedKernel& reference_;
  const LoadedKernel& candidate_;
  const EvalOptions& options_;
  VerifyPhases& phases_;
  InputPool* pool_;
  const std::string& pool_key_;
  std::map<ShapeBinding, double>& candidate_seconds_;
  const std::optional<CoRun> co_run_;
  const TaskSpec& task_;
  const ShapeBinding& sizes_;
  const int rounds_;
  const uint64_t seed_;
  const std::string& phase_;
  const StressRound* stress_;
  const bool hidden_;
  const std::string shape_text_;

  std::optional<ResolvedPlan> candidate_plan_;
  std::chrono::steady_clock::time_point last_;
  // Declared in the order they are made, so that they are freed in reverse.
  std::optional<InputSetMaker> maker_;
  bool pooled_ = false;
  std::vector<InputSet*> sets_;
  std::unique_ptr<InputSet> own_;
  std::optional<CandidateBuffers> buffers_;
  std::vector<GuardedBuffer> first_storage_;
  BufferMap first_run_;
};

Result<CheckOutcome> Verifier::verify_shape(const ShapeBinding& sizes, int rounds, uint64_t seed,
                                            const std::string& phase, const StressRound* stress) {
  ShapeVerification shape(*this, sizes, rounds, seed, phase, stress);
  for (auto step : {&ShapeVerification::resolve_plans, &ShapeVerification::draw_inputs,
                    &ShapeVerification::make_buffers, &ShapeVerification::run_rounds}) {
    auto end = (shape.*step)();
    if (!end) return make_error(end.error());
    if (*end) return std::move(**end);
  }
  return CheckOutcome{};
}

}  // namespace kopt::worker
