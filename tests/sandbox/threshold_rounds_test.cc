// The rounds at a kernel's thresholds that a capped kernel cannot pass, planned on the CPU from
// the mutation harness's own survivors (bench/mutation/, bound_cap): which rounds run at which
// threshold shapes, where the spike goes and what tolerance judges it (sandbox/worker/
// verify_plan.cc). tests/sandbox/realworld/ holds the kernels the GPU judges.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include "common/files.h"
#include "sandbox/kernel_file.h"
#include "sandbox/source_thresholds.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/verify_plan.h"

namespace kopt {
namespace {

const std::filesystem::path kRoot = KOPT_SOURCE_DIR;

TaskSpec task_at(const std::string& dir) {
  auto task = load_task(kRoot / dir);
  EXPECT_TRUE(task.ok()) << task.error();
  return task.ok() ? *task : TaskSpec{};
}

// `file` with `from` replaced by `to` once: the harness's mutant, as its diff reads.
KernelFile mutant(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = read_file(kRoot / file).value();
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << file << ": " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  auto parsed = parse_kernel_file(text, file, nullptr);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : KernelFile{};
}

worker::VerifyPlan plan_for(const TaskSpec& task, const KernelFile& k, uint64_t seed,
                            const EvalOptions& options = {}) {
  worker::PlanInputs inputs;
  inputs.candidate = &k;
  inputs.free_bytes = inputs.total_bytes = int64_t(140) << 30;  // an H200
  auto plan = worker::plan_verification(task, options, seed, inputs);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : worker::VerifyPlan{};
}

// Survivors 569e9752b07e (fused_moe's softmax sum over min(top_k, 16)), 41e674c9a250 (its expert
// loop so), and 0d14afa67c1c (fused_moe_grouped_topk's sigmoid sum over min(top_k, 13)). The
// threshold shape at top_k = cap + 1 was planned and the task's stress rounds ran there (session
// 8), but with the weights' std 0.02 at the drawn hidden 128-512 and ffn 128-896 the outputs are
// about 0.003 (a CPU model of the layer at top_k 17, hidden 128, ffn 384: rms 0.0026, the
// dropped expert's error at most 0.003) under atol 0.02. The round with weights std 0.2 makes them
// about 2-8 there (the model: 90% of the elements fail for both caps), so it must run past the cap.
TEST(ThresholdRounds, ACappedTopKMeetsEqualWeightsLargeEnoughForAtol) {
  struct Case {
    std::string dir, file, from, to;
    int64_t cap;
  };
  const std::string sum16 = "for (int s = 0; s < min(top_k, (decltype(top_k))16); ++s) sum +=";
  for (const auto& c : std::vector<Case>{
           {"tasks_realworld/fused_moe", "tasks_realworld/fused_moe/baseline.cu",
            "for (int s = 0; s < top_k; ++s) sum +=", sum16, 16},
           {"tasks_realworld/fused_moe", "tasks_realworld/fused_moe/baseline.cu",
            "  for (int s = 0; s < top_k; ++s) {\n    long long slot",
            "  for (int s = 0; s < min(top_k, (decltype(top_k))16); ++s) {\n    long long slot",
            16},
           // The planted kernel of tests/sandbox/realworld/: its limit is a constexpr, named
           // in `min(top_k, kMaxSlots)` as a #define would be.
           {"tasks_realworld/fused_moe", "tests/sandbox/realworld/fused_moe_slots_in_registers.cu",
            "kMaxSlots = 16", "kMaxSlots = 16", 16},
           {"tasks_realworld/fused_moe_grouped_topk",
            "tasks_realworld/fused_moe_grouped_topk/baseline.cu",
            "for (int s = 0; s < top_k; ++s) sum += sigmoid",
            "for (int s = 0; s < min(top_k, (decltype(top_k))13); ++s) sum += sigmoid", 13}}) {
    TaskSpec task = task_at(c.dir);
    KernelFile k = mutant(c.file, c.from, c.to);
    const std::string round = "every token to the same experts, weights std 0.2";
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      worker::VerifyPlan plan = plan_for(task, k, seed);
      int past = 0;
      for (const auto& s : plan.steps) {
        if (s.phase != "threshold" || !s.stress || s.stress->name != round) continue;
        EXPECT_EQ(s.variant, nullptr);  // the task's own tolerance
        EXPECT_LE(s.sizes.at("top_k"), s.sizes.at("experts"));
        if (s.sizes.at("top_k") == c.cap + 1) ++past;
      }
      EXPECT_GE(past, 1) << c.dir << " seed " << seed;
    }
    // The round itself: equal logits and weights ten times the task's (its inputs, not a family).
    bool found = false;
    for (const auto& r : task.stress) {
      if (r.name != round) continue;
      found = true;
      EXPECT_EQ(r.inputs.at("router_logits").dist, "constant");
      EXPECT_DOUBLE_EQ(r.inputs.at("w_gate_up").stddev, 0.2);
      EXPECT_DOUBLE_EQ(r.inputs.at("w_down").stddev, 0.2);
    }
    EXPECT_TRUE(found) << c.dir;
  }
}

// Each size a literal bounds by name gets the stress rounds at its crossing, not only the first:
// a fused_moe kernel that caps top_k at 16 and hidden at 4096 has both crossings (top_k = 17,
// hidden >= 4097) ahead of the other threshold shapes, and the task's rounds run at each. At most
// three such shapes (a task has up to 13 rounds with their mirrors).
TEST(ThresholdRounds, StressRoundsRunAtTheCrossingOfEachNamedSize) {
  TaskSpec task = task_at("tasks_realworld/fused_moe");
  KernelFile k =
      mutant("tasks_realworld/fused_moe/baseline.cu", "for (int s = 0; s < top_k; ++s) sum +=",
             "for (int s = 0; s < min(top_k, (decltype(top_k))16); ++s) sum +=");
  k.source += "\n__device__ int capped_hidden(int hidden) { return min(hidden, 4096); }\n";
  auto thresholds = source_thresholds(k, {});
  ThresholdShapeLimits limits;
  limits.max_bytes = int64_t(64) << 20;
  limits.reach_bytes = int64_t(4) << 30;  // hidden 4224 with top_k 17 needs more than 64 MiB
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    size_t named = 0;
    auto shapes = threshold_shapes(task, thresholds, seed, limits, &named);
    ASSERT_GE(named, 2u) << "seed " << seed;
    bool top_k = false, hidden = false;
    for (size_t i = 0; i < named; ++i) {
      top_k = top_k || shapes[i].at("top_k") == 17;
      hidden = hidden || shapes[i].at("hidden") > 4096;
    }
    EXPECT_TRUE(top_k && hidden) << "seed " << seed;
    // Past them the shapes are not named crossings (`named` counts only the leading ones).
    EXPECT_LE(named, shapes.size());

    worker::VerifyPlan plan = plan_for(task, k, seed);
    std::set<ShapeBinding> with_rounds;
    for (const auto& s : plan.steps)
      if (s.phase == "threshold" && s.stress && s.stress->patterns.empty())
        with_rounds.insert(s.sizes);
    EXPECT_GE(with_rounds.size(), 2u) << "seed " << seed;
    EXPECT_LE(with_rounds.size(), 3u) << "seed " << seed;
    bool rounds_past_hidden = false;
    for (const auto& s : with_rounds)
      rounds_past_hidden = rounds_past_hidden || s.at("hidden") > 4096;
    EXPECT_TRUE(rounds_past_hidden) << "seed " << seed;
  }
}

// Survivors 85cdf8c75f71 (mse_loss's baseline, `i < min(n, 2^30)`) and 24bfd04a3e20, dea71a720414
// (the vectorised twin's two bounds): at n = 2^30 + 1 they drop one element. The tail spikes put
// one spike in every row of 4096 (262145 of them; the dropped element holds none, being column 0
// of its row) under atol * F^2 = 1e4. The round with a spike at the last element alone, where the
// capped kernel loses it whole, judged with atol times F = 1e5, not F^2, and no absolute cap on one
// element's error (on the H200 the baseline's correct fp32 sum there was 2.0000168e9 against
// 2.0000169e9: 130 off, over max_error * F = 100; rtol judges it).
TEST(ThresholdRounds, ACappedFlatIndexMeetsASpikeAtTheLastElement) {
  TaskSpec task = task_at("tasks/mse_loss");
  struct Case {
    std::string file, from, to;
  };
  for (const auto& c : std::vector<Case>{
           {"tasks/mse_loss/baseline.cu", "i < n ?", "i < min(n, (decltype(n))1073741824) ?"},
           {"tests/sandbox/adversarial/overreads_both_inputs_twin.cu", "if (4 * v + 3 < n)",
            "if (4 * v + 3 < min(n, (decltype(n))1073741824))"},
           {"tests/sandbox/adversarial/overreads_both_inputs_twin.cu", "i < n; ++i",
            "i < min(n, (decltype(n))1073741824); ++i"}}) {
    KernelFile k = mutant(c.file, c.from, c.to);
    for (uint64_t seed : {1, 2, 3}) {
      worker::VerifyPlan plan = plan_for(task, k, seed);
      int last = 0;
      for (const auto& s : plan.steps) {
        if (s.phase != "threshold" || !s.stress || s.stress->patterns.empty()) continue;
        const RowPattern& p = s.stress->patterns.begin()->second;
        if (p.kind != RowPattern::Kind::kLastElement) continue;
        EXPECT_EQ(s.stress->patterns.begin()->first, "pred");
        EXPECT_DOUBLE_EQ(p.value, 1e5);
        ASSERT_NE(s.variant, nullptr);
        EXPECT_DOUBLE_EQ(s.variant->tolerance.atol, task.tolerance.atol * 1e5);
        EXPECT_EQ(s.variant->tolerance.max_error, std::numeric_limits<double>::infinity());
        EXPECT_DOUBLE_EQ(s.variant->tolerance.rtol, task.tolerance.rtol);
        EXPECT_FALSE(s.pooled);
        if (s.sizes.at("n") == (int64_t(1) << 30) + 1) ++last;
      }
      EXPECT_EQ(last, 1) << c.file << " seed " << seed;
    }
  }
  // What the tolerance decides there, with the reference's mean square: 2 for pred ~ N(0, 1) and
  // target ~ U(-1, 2), plus the spike's 1e10 / n. A kernel that drops the spike is off by 9.3;
  // the allowance is atol * F + rtol * |ref|.
  const double n = double(int64_t(1) << 30) + 1, spike = 1e10 / n, ref = 2.0 + spike;
  const double allowed = task.tolerance.atol * 1e5 + task.tolerance.rtol * ref;
  EXPECT_GT(spike, 50 * allowed);
  // F^2 (the tail spikes' scale) would allow 1e4: the capped kernel passed.
  EXPECT_LT(spike, task.tolerance.atol * 1e10);
  // A correct fp32 sum's worst rounding there (the finishing thread that holds the spike's 1e10
  // absorbs its 1024 block sums one by one, half an ulp of 1e10 = 512 each, over n) stays inside
  // the allowance.
  EXPECT_LT(512.0 * 1024 / n, allowed);
}

// Without the families (EvalOptions::families off) the spike rounds are left out; with the stress
// rounds off, the task's rounds are.
TEST(ThresholdRounds, OptionsTurnThemOff) {
  TaskSpec task = task_at("tasks/mse_loss");
  KernelFile k =
      mutant("tasks/mse_loss/baseline.cu", "i < n ?", "i < min(n, (decltype(n))1073741824) ?");
  EvalOptions options;
  options.families = false;
  options.stress = false;
  worker::VerifyPlan plan = plan_for(task, k, 1, options);
  int threshold = 0;
  for (const auto& s : plan.steps) {
    if (s.phase != "threshold") continue;
    ++threshold;
    EXPECT_EQ(s.stress, nullptr);
  }
  EXPECT_GT(threshold, 0);
}

}  // namespace
}  // namespace kopt
