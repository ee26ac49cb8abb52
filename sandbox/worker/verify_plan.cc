#include "sandbox/worker/verify_plan.h"

#include <sys/file.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "sandbox/input_families.h"
#include "sandbox/inter_block_scan.h"
#include "sandbox/source_thresholds.h"
#include "sandbox/stress_bounds.h"
#include "sandbox/worker/evaluation.h"

namespace kopt::worker {
namespace {

// splitmix64, as the draw (std's distributions differ between platforms).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double unit(uint64_t bits) { return double(bits >> 11) * (1.0 / 9007199254740992.0); }

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
}

// `variant` owned by the plan (its steps point at it).
const TaskSpec* keep_variant(VerifyPlan& plan, TaskSpec variant) {
  plan.variants.push_back(std::move(variant));
  return &plan.variants.back();
}

// The task with its constants drawn, owned by the plan; the task itself where none has a range.
const TaskSpec* constants_variant(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                                  VerifyPlan& plan) {
  if (!options.vary_constants || task.constant_ranges.empty()) return nullptr;
  TaskSpec variant = task;
  variant.constants = draw_constants(task, seed);
  return keep_variant(plan, std::move(variant));
}

Status add_fixed(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                 const std::string& phase, const std::vector<ShapeBinding>& list, uint64_t salt,
                 VerifyPlan& plan) {
  for (size_t i = 0; i < list.size(); ++i) {
    ShapeBinding sizes = task.bind(list[i]);
    auto rounds = verification_rounds(options, task, sizes);
    if (!rounds) return make_error(rounds.error());
    plan.steps.push_back({phase, sizes, *rounds, seed + 7919 * (i + 1) + salt});
  }
  return ok_status();
}

// One round per (stress round, shape): its own shapes and the small sweep shapes, then one
// drawn shape when shapes are drawn (hidden, never kept), so that a trap springs at sizes no one
// listed too.
void add_stress(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                const std::vector<ShapeBinding>& drawn, VerifyPlan& plan) {
  for (size_t r = 0; r < task.stress.size(); ++r) {
    auto shapes = stress_shapes(task, task.stress[r], options.large_shape_bytes);
    uint64_t base = seed + 15485863 * (r + 1);
    for (size_t i = 0; i < shapes.size(); ++i)
      plan.steps.push_back({"stress", shapes[i], 1, base + 7919 * (i + 1), &task.stress[r]});
    if (drawn.empty()) continue;
    // Within the round's own shapes where it has them (its tolerance was sized there); a drawn
    // shape that no longer keeps the draw's constraints once cut down is left out.
    ShapeBinding sizes = clamp_to_round(task, task.stress[r], drawn[r % drawn.size()]);
    bool valid = true;
    for (const auto& c : task.draws.constraints) {
      auto holds = constraint_holds(c, sizes);
      valid = valid && holds && *holds;
    }
    if (!valid) continue;
    plan.steps.push_back({"drawn", sizes, 1, base + 611953, &task.stress[r], nullptr, false});
    ++plan.drawn_stress;
  }
}

// The sweep shape the families run at: the largest within large_shape_bytes (where a kernel's
// wide path runs), else the smallest.
ShapeBinding family_shape(const TaskSpec& task, const EvalOptions& options) {
  ShapeBinding best, smallest;
  int64_t best_bytes = -1, smallest_bytes = -1;
  for (const auto& s : task.shapes) {
    ShapeBinding sizes = task.bind(s);
    auto bytes = task.tensor_bytes(sizes);
    if (!bytes) continue;
    if (*bytes <= options.large_shape_bytes && *bytes > best_bytes) {
      best = sizes;
      best_bytes = *bytes;
    }
    if (smallest_bytes < 0 || *bytes < smallest_bytes) {
      smallest = sizes;
      smallest_bytes = *bytes;
    }
  }
  return best_bytes >= 0 ? best : smallest;
}

// Whether a family round at `sizes` fits the time budget: at most 1 GiB of inputs and outputs
// and 2^34 flops (the reference's work; a memory-bound task's flops are about its elements).
bool affordable(const TaskSpec& task, const ShapeBinding& sizes) {
  auto bytes = task.tensor_bytes(sizes);
  auto flops = evaluate_expression(task.flops, sizes);
  return bytes && flops && *bytes <= kFamilyBigShapeBytes && *flops <= kFamilyBigShapeFlops;
}

// The task judged with its tolerance's absolute parts (atol, max_error) scaled by `scale`.
const TaskSpec* scaled_variant(const TaskSpec& task, double scale, VerifyPlan& plan) {
  if (scale <= 1) return nullptr;
  TaskSpec scaled = task;
  scaled.tolerance.atol *= scale;
  scaled.tolerance.max_error *= scale;
  return keep_variant(plan, std::move(scaled));
}

// The tolerance of family `f` at `sizes`: its own scale, and for constant rows the square root
// of the row's length there (input_families.h, coherent_row).
const TaskSpec* family_variant(const TaskSpec& task, const FamilyRound& f,
                               const ShapeBinding& sizes, VerifyPlan& plan) {
  double scale = f.tolerance_scale;
  if (!f.coherent_row.empty()) {
    if (auto n = evaluate_expression(f.coherent_row, sizes); n && *n > 1)
      scale = std::max(scale, std::sqrt(double(*n)));
  }
  return scaled_variant(task, scale, plan);
}

// The shapes where a rotating few families also run, besides the small one: the timed shape and
// the smallest holdout, where the reference's work there stays within the budget (a naive
// reference of a GEMM's timed shape takes seconds).
std::vector<std::pair<std::string, ShapeBinding>> big_family_shapes(const TaskSpec& task,
                                                                    const EvalOptions& options) {
  std::vector<std::pair<std::string, ShapeBinding>> big;
  if (affordable(task, task.bind({}))) big.push_back({"stress", task.bind({})});
  if (!options.check_holdout) return big;
  std::optional<ShapeBinding> smallest;
  int64_t smallest_bytes = 0;
  for (const auto& h : task.holdout) {
    auto bytes = task.tensor_bytes(task.bind(h));
    if (bytes && (!smallest || *bytes < smallest_bytes)) {
      smallest = task.bind(h);
      smallest_bytes = *bytes;
    }
  }
  if (smallest && affordable(task, *smallest)) big.push_back({"holdout", *smallest});
  return big;
}

void add_families(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                  VerifyPlan& plan) {
  if (!options.families) return;
  std::vector<FamilyRound> families = input_family_rounds(task);
  if (families.empty()) return;
  const size_t first = plan.rounds.size();
  for (const auto& f : families) plan.rounds.push_back(f.round);
  ShapeBinding small = family_shape(task, options);
  for (size_t i = 0; i < families.size(); ++i) {
    plan.steps.push_back({"stress", small, 1, seed + 2750159 * (i + 1), &plan.rounds[first + i],
                          family_variant(task, families[i], small, plan), true});
    ++plan.family_rounds;
    // Rows scaled to 1e-4 are where a norm's eps decides the output (a row's mean square 1e-8
    // against eps 1e-7 to 1e-2): at the task's own eps a kernel that folds eps in as a literal
    // gives the same answer, so these rows run once more with the constants drawn (fresh
    // inputs, never kept: other constants, other reference outputs).
    if (families[i].family == "tiny_rows" && options.vary_constants &&
        !task.constant_ranges.empty()) {
      const TaskSpec* scaled = family_variant(task, families[i], small, plan);
      TaskSpec drawn = scaled ? *scaled : task;
      drawn.constants = draw_constants(task, seed ^ (0x5bd1e995ULL * (i + 1)));
      const TaskSpec* variant = keep_variant(plan, std::move(drawn));
      plan.steps.push_back({"stress", small, 1, seed + 2750159 * (i + 1) + 17,
                            &plan.rounds[first + i], variant, false});
      ++plan.family_rounds;
    }
  }
  std::vector<std::pair<std::string, ShapeBinding>> big = big_family_shapes(task, options);
  for (int k = 0; k < kFamiliesAtBigShapes && !big.empty(); ++k) {
    size_t i = (mix(seed ^ 0x7a3d) + size_t(k)) % families.size();
    for (const auto& [phase, sizes] : big) {
      plan.steps.push_back({phase, sizes, 1, seed + 3021377 * (i + 1) + uint64_t(k),
                            &plan.rounds[first + i], family_variant(task, families[i], sizes, plan),
                            true});
      ++plan.family_rounds;
    }
  }
}

// Bytes a threshold's crossing shape may take when max_bytes cannot hold it (a cap at the task's
// largest listed size): twice the largest listed shape's (the task verifies that one anyway, so
// the time stays of its order), within a quarter of the GPU's memory less a GiB (a round holds
// its inputs twice and its outputs three times). 0 without a GPU's memory to go by.
int64_t threshold_reach_bytes(const TaskSpec& task, const PlanInputs& inputs, int64_t max_bytes) {
  int64_t room = inputs.free_bytes > 0 ? inputs.free_bytes : inputs.total_bytes;
  if (room <= 0) return 0;
  int64_t listed = 0;
  for (const auto* list : {&task.shapes, &task.holdout})
    for (const auto& s : *list)
      if (auto bytes = task.tensor_bytes(task.bind(s)); bytes) listed = std::max(listed, *bytes);
  int64_t budget = std::min(2 * listed, (room - (int64_t(1) << 30)) / 4);
  return budget > max_bytes ? budget : 0;
}

// A cap at a size's largest listed value that only a max passes through (softmax's and
// cross-entropy's row max over the first 393216 columns) is exact on random rows at the shape past
// it: the max of the columns it saw is as good as the whole row's. The first kThresholdSpikeShapes
// threshold shapes (the crossings of the sizes a literal bounds by name come first) run once more
// with the spike_rows family of the task's first input that has it, its spike moved to every
// row's last column (RowPattern::kTailSpikes): past any cap on the row, so a capped max misses
// it and exp() overflows; its tolerance is the family's. Plain inputs
// stay at every threshold shape: a spike makes every other output of a softmax row about zero,
// where a capped sum is what is wrong.
constexpr size_t kThresholdSpikeShapes = 2;

void add_threshold_spikes(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                          const std::vector<ShapeBinding>& shapes, VerifyPlan& plan) {
  if (!options.families || shapes.empty()) return;
  for (auto& f : input_family_rounds(task)) {
    if (f.family != "spike_rows") continue;
    for (auto& [input, pattern] : f.round.patterns) pattern.kind = RowPattern::Kind::kTailSpikes;
    f.round.name = "tail spikes in " + f.input;
    plan.rounds.push_back(f.round);
    const StressRound* round = &plan.rounds.back();
    for (size_t i = 0; i < shapes.size() && i < kThresholdSpikeShapes; ++i) {
      plan.steps.push_back({"threshold", shapes[i], 1, seed + 7919 * (i + 1) + 1299721, round,
                            family_variant(task, f, shapes[i], plan), false});
      ++plan.threshold_shapes;
    }
    return;
  }
}

// The last-spike round's tolerance: atol times F, the spike's factor over the input's scale, not
// the family's F^2 (1e10: atol 1e4 would pass any answer); and no absolute cap on one element's
// error, because that element's output can be the spike squared (mse_loss on the H200: 2e9, where
// a correct fp32 sum was 130 off, over max_error 1e-3 * F = 100: a false reject). atol + rtol *
// |ref| still judges every element, and a capped kernel's error there is most of the output.
const TaskSpec* last_spike_variant(const TaskSpec& task, double scale, VerifyPlan& plan) {
  TaskSpec scaled = task;
  scaled.tolerance.atol *= std::max(scale, 1.0);
  scaled.tolerance.max_error = std::numeric_limits<double>::infinity();
  return keep_variant(plan, std::move(scaled));
}

// A cap on a flat index (mse_loss's `i < min(n, 2^30)`) drops only the elements past it: one at
// the crossing n = 2^30 + 1. The tail spikes above sit at every row's last column (rows of 4096
// for a 1-D input), not at the element past the cap, and the element they would put there is one
// spike among 262145 (4e-6 of the output, below rtol). So the first kThresholdSpikeShapes
// threshold shapes run once more with one spike alone, at the tensor's last element
// (RowPattern::kLastElement) of the input the tail spikes go to: a capped kernel loses it whole.
void add_threshold_last_spike(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                              const std::vector<ShapeBinding>& shapes, VerifyPlan& plan) {
  if (!options.families || shapes.empty()) return;
  for (auto& f : input_family_rounds(task)) {
    if (f.family != "spike_rows") continue;
    for (auto& [input, pattern] : f.round.patterns) pattern.kind = RowPattern::Kind::kLastElement;
    f.round.name = "a spike at the last element of " + f.input;
    plan.rounds.push_back(f.round);
    const StressRound* round = &plan.rounds.back();
    const TaskSpec* variant = last_spike_variant(task, std::sqrt(f.tolerance_scale), plan);
    for (size_t i = 0; i < shapes.size() && i < kThresholdSpikeShapes; ++i) {
      plan.steps.push_back(
          {"threshold", shapes[i], 1, seed + 7919 * (i + 1) + 1299827, round, variant, false});
      ++plan.threshold_shapes;
    }
    return;
  }
}

// A cap that drops a small share of a reduction (fused_moe's softmax sum or its expert loop over
// the first 16 of top_k = 17 experts) passes on random inputs: the dropped term is the smallest
// one, within rtol. The task's own trap rounds make every term count (every token's logits equal:
// each expert weighs 1 / top_k, so the 17th is 6% of the output; tasks_realworld/fused_moe's
// "... weights std 0.2" also makes the output large enough at the small threshold shapes for
// atol not to hide it), so they run at the threshold shapes that cross a size a literal bounds
// by name (`min(top_k, 16)`: top_k = 17; they come first), at most kThresholdStressShapes of them,
// and at the first threshold shape where none is named. Unclamped: clamping to the round's own
// shapes would undo the crossing. Off with the stress rounds.
constexpr size_t kThresholdStressShapes = 3;

void add_threshold_stress(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                          const std::vector<ShapeBinding>& shapes, size_t named, VerifyPlan& plan) {
  if (!options.stress || shapes.empty()) return;
  const size_t count =
      std::clamp<size_t>(named, 1, std::min(kThresholdStressShapes, shapes.size()));
  for (size_t i = 0; i < count; ++i) {
    for (size_t r = 0; r < task.stress.size(); ++r) {
      plan.steps.push_back({"threshold", shapes[i], 1,
                            seed + 15485863 * (r + 1) + 7927 + 104723 * i, &task.stress[r], nullptr,
                            false});
      ++plan.threshold_shapes;
    }
  }
}

void add_thresholds(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                    const PlanInputs& inputs, VerifyPlan& plan) {
  if (!options.thresholds || !inputs.candidate) return;
  auto thresholds = source_thresholds(*inputs.candidate, inputs.tunables);
  ThresholdShapeLimits limits;
  limits.max_bytes = std::max<int64_t>(task.draws.max_bytes, options.large_shape_bytes);
  limits.reach_bytes = threshold_reach_bytes(task, inputs, limits.max_bytes);
  size_t named = 0;
  auto shapes = threshold_shapes(task, thresholds, draw_seed(seed) ^ 0x1b873593ULL, limits, &named);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const TaskSpec* variant = constants_variant(task, options, seed ^ (i * 0x3c6ef372ULL), plan);
    plan.steps.push_back(
        {"threshold", shapes[i], 1, seed + 7919 * (i + 1) + 1299709, nullptr, variant, false});
    ++plan.threshold_shapes;
  }
  add_threshold_spikes(task, options, seed, shapes, plan);
  add_threshold_last_spike(task, options, seed, shapes, plan);
  add_threshold_stress(task, options, seed, shapes, named, plan);
}

void add_wide(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
              const PlanInputs& inputs, VerifyPlan& plan) {
  if (!options.wide || !task.wide_round) return;
  ShapeBinding sizes = task.bind(task.wide_round->shape);
  // Where the whole GPU is too small the round never runs; memory another worker holds for now
  // (its own wide round) is waited for at run time instead (WideRoundTurn), so not checked here.
  int64_t room = inputs.total_bytes > 0 ? inputs.total_bytes : inputs.free_bytes;
  if (auto skip = wide_round_skipped(task, room)) {
    plan.notes.push_back(*skip);
    return;
  }
  plan.steps.push_back({"wide", sizes, 1, seed + 48611, nullptr, nullptr, false});
  plan.wide = true;
}

// The largest drawn or threshold shape already planned within `cap` bytes, with its variant:
// where a co-run round reaches sizes the timed shape does not (more blocks, a partial tile).
const VerifyStep* larger_co_run_shape(const TaskSpec& task, const VerifyPlan& plan, int64_t cap) {
  const VerifyStep* best = nullptr;
  int64_t best_bytes = -1;
  for (const auto& step : plan.steps) {
    if ((step.phase != "drawn" && step.phase != "threshold") || step.stress) continue;
    auto bytes = task.tensor_bytes(step.sizes);
    if (bytes && *bytes <= cap && *bytes > best_bytes) {
      best = &step;
      best_bytes = *bytes;
    }
  }
  return best;
}

// Co-run rounds (co_runner.h) for a candidate whose source shows communication between blocks
// (inter_block_scan.h): one round beside each of kCoRunShares at the timed shape (on kept input
// sets, as the sweep's), and one at the largest drawn or threshold shape within the timed
// shape's bytes (or large_shape_bytes, if more). Their cost is bounded: four rounds, eight runs
// of the candidate and at most one reference run and input fill at a shape no larger than the
// timed one; the occupier ends when the candidate does.
void add_co_runs(const TaskSpec& task, const EvalOptions& options, uint64_t seed,
                 const PlanInputs& inputs, VerifyPlan& plan) {
  if (!options.corun || !inputs.candidate) return;
  auto signs = inter_block_signs(inputs.candidate->source);
  if (signs.empty()) return;
  plan.corun_signs = describe_inter_block_signs(signs);
  ShapeBinding timed = task.bind({});
  size_t k = 0;
  for (double share : kCoRunShares) {
    plan.steps.push_back({"corun", timed, 1, seed + 7919 * (++k) + 3021413});
    plan.steps.back().corun_share = share;
    ++plan.corun_rounds;
  }
  auto timed_bytes = task.tensor_bytes(timed);
  int64_t cap = std::max(timed_bytes ? *timed_bytes : 0, options.large_shape_bytes);
  if (const VerifyStep* larger = larger_co_run_shape(task, plan, cap)) {
    VerifyStep step{"corun_drawn", larger->sizes,   1,    seed + 3021451,
                    nullptr,       larger->variant, false};
    step.corun_share = kCoRunShares[mix(seed ^ 0xc0) % std::size(kCoRunShares)];
    plan.steps.push_back(step);
    ++plan.corun_rounds;
  }
}

}  // namespace

std::map<std::string, double> draw_constants(const TaskSpec& task, uint64_t seed) {
  std::map<std::string, double> out = task.constants;
  uint64_t state = seed ^ 0xa54ff53a5f1d36f1ULL;
  for (const auto& [name, range] : task.constant_ranges) {
    state = mix(state);
    double u = unit(state);
    out[name] =
        range.log ? std::exp(std::log(range.min) + u * (std::log(range.max) - std::log(range.min)))
                  : range.min + u * (range.max - range.min);
  }
  return out;
}

Result<int64_t> round_bytes(const TaskSpec& task, const ShapeBinding& shape) {
  auto inputs_and_outputs = task.tensor_bytes(shape, 3);
  if (!inputs_and_outputs) return make_error(inputs_and_outputs.error());
  auto once = task.tensor_bytes(shape, 0);  // the inputs alone: their copies
  if (!once) return make_error(once.error());
  return *inputs_and_outputs + *once;
}

std::optional<std::string> wide_round_skipped(const TaskSpec& task, int64_t free_bytes) {
  if (!task.wide_round) return std::string("the task declares no round past 2^31 elements");
  auto bytes = round_bytes(task, task.bind(task.wide_round->shape));
  if (!bytes) return "the round past 2^31 elements: " + bytes.error();
  // A quarter GiB of room besides: the reference's scratch, the guards, the support kernels.
  int64_t needed = *bytes + (int64_t(1) << 28);
  if (free_bytes >= needed) return std::nullopt;
  return "the round past 2^31 elements (" + task.wide_round->why + ") skipped: it needs " +
         gib(needed) + ", the GPU has " + gib(free_bytes) + " free";
}

WideRoundTurn::WideRoundTurn(const std::string& gpu_id)
    : lock_(TurnLock::wait(gpu_turn_key(gpu_id) + ".wide-round", LOCK_EX)) {}

Result<VerifyPlan> plan_verification(const TaskSpec& task, const EvalOptions& options,
                                     uint64_t seed, const PlanInputs& inputs) {
  VerifyPlan plan;
  if (auto s = add_fixed(task, options, seed, "sweep", task.shapes, 0, plan); !s)
    return make_error(s.error());
  std::vector<ShapeBinding> drawn;
  if (options.draws) {
    auto d = draw_shapes(task, draw_seed(seed));
    // Derived draws (no `draws` in task.json) may miss a seed: then this evaluation has none.
    if (!d && task.draws.derived.empty()) return make_error("drawing shapes: " + d.error());
    if (d) drawn = std::move(*d);
  }
  if (options.stress) add_stress(task, options, seed, drawn, plan);
  add_families(task, options, seed, plan);
  // Drawn shapes: one round each, small (within draws.max_bytes) and never kept (a shape seldom
  // comes back); the task's constants drawn from their ranges there.
  if (options.draws) {
    for (size_t i = 0; i < drawn.size(); ++i) {
      const TaskSpec* variant = constants_variant(task, options, seed + 31 * (i + 1), plan);
      plan.steps.push_back(
          {"drawn", drawn[i], 1, seed + 7919 * (i + 1) + 611953, nullptr, variant, false});
    }
  }
  add_thresholds(task, options, seed, inputs, plan);
  add_co_runs(task, options, seed, inputs, plan);
  if (options.check_holdout)
    if (auto s = add_fixed(task, options, seed, "holdout", task.holdout, 104729, plan); !s)
      return make_error(s.error());
  add_wide(task, options, seed, inputs, plan);
  return plan;
}

}  // namespace kopt::worker
