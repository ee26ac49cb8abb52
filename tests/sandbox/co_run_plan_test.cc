// Races between blocks, planned on the CPU (issue 32, class 7): which sources show communication
// between blocks (sandbox/inter_block_scan.h), and which co-run rounds the verification plan
// gives them (sandbox/worker/verify_plan.h, add_co_runs): how many, at which shapes, beside which
// share of the SMs (sandbox/worker/co_runner.h's held_sms).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "common/files.h"
#include "sandbox/inter_block_scan.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/co_runner.h"
#include "sandbox/worker/verifier.h"
#include "sandbox/worker/verify_plan.h"

namespace kopt {
namespace {

std::set<std::string> sign_names(const std::string& source) {
  std::set<std::string> names;
  for (const auto& s : inter_block_signs(source)) names.insert(s.what);
  return names;
}

TEST(InterBlockScan, EachKindOfCommunicationIsASign) {
  struct Case {
    std::string body, sign;
  };
  for (const auto& c : std::vector<Case>{
           {"__global__ void k(float* p) { p[0] = 1; __threadfence(); }", "__threadfence"},
           {"__global__ void k(int* n) { atomicAdd(&n[blockIdx.x], 1); }", "atomicAdd"},
           {"__global__ void k(int* n) { atomicCAS((unsigned*)n, 0u, 1u); }", "atomicCAS"},
           {"__global__ void k(volatile int* f) { while (f[0] == 0) {} }", "volatile"},
           {"__global__ void k(int* f) { while (((volatile int*)f)[0] == 0) {} }", "volatile"},
           {"__global__ void k(int* f) { cuda::atomic_ref<int, cuda::thread_scope_device> a(*f); }",
            "cuda::atomic_ref"},
           {"__global__ void k(int* f) { int v; asm volatile(\"ld.acquire.gpu.b32 %0, [%1];\" : "
            "\"=r\"(v) : \"l\"(f)); }",
            "asm ld.acquire"},
           {"__global__ void k(int* f) { asm(\"red.release.gpu.global.add.s32 [%0], 1;\" :: "
            "\"l\"(f)); }",
            "asm red.global"},
           {"__global__ void k(float* p) { cooperative_groups::this_grid().sync(); }", "this_grid"},
           {"__global__ void k(float* p) { float v = __ldcg(p); p[1] = v; }", "__ldcg"}}) {
    auto names = sign_names(c.body);
    EXPECT_TRUE(names.count(c.sign)) << c.body;
  }
}

TEST(InterBlockScan, CommunicationWithinABlockIsNoSign) {
  for (const std::string body :
       {"__global__ void k(int* out) { __shared__ int h[256]; atomicAdd(&h[threadIdx.x], 1);"
        " __syncthreads(); out[threadIdx.x] = h[threadIdx.x]; }",
        "__global__ void k(int* out) { extern __shared__ int h[]; int* mine = h + 32;"
        " atomicMax(mine, 3); out[0] = mine[0]; }",
        "__global__ void k(int* out) { atomicAdd_block(out, 1); }",
        "__global__ void k(float* out) { __shared__ float sdata[64];"
        " volatile float* s = sdata; s[threadIdx.x] += s[threadIdx.x + 32]; }",
        "__global__ void k(float* out) { unsigned t; asm volatile(\"mov.u32 %0, %%laneid;\" :"
        " \"=r\"(t)); out[t] = 0; }",
        "__global__ void k(int* out) { int v; asm volatile(\"atom.shared.add.u32 %0, [%1], 1;\""
        " : \"=r\"(v) : \"r\"(0)); out[0] = v; }",
        "__global__ void k(int* out) { asm volatile(\"ld.shared.u32 %0, [%1];\" : \"=r\"(*out) :"
        " \"r\"(0)); }",
        "// no __threadfence or atomicAdd is needed here\n"
        "__global__ void k(float* p) { p[threadIdx.x] = 1; __threadfence_block(); }",
        "__global__ void k(float* p) { printf(\"ld.acquire %d\", 1); }"}) {
    EXPECT_TRUE(inter_block_signs(body).empty())
        << body << "\n-> " << describe_inter_block_signs(inter_block_signs(body));
  }
}

TEST(InterBlockScan, SignsNameTheirLinesAndStopAtTheCap) {
  std::string body = "__global__ void k(int* n) {\n";
  for (int i = 0; i < 10; ++i) body += "  atomicAdd(n, 1);\n";
  body += "}\n";
  auto signs = inter_block_signs(body);
  ASSERT_EQ(signs.size(), kMaxInterBlockSigns);
  EXPECT_EQ(signs[0].line, 2);
  EXPECT_EQ(describe_inter_block_signs({signs[0], signs[1]}),
            "atomicAdd (line 2), atomicAdd (line 3)");
  // An unreadable source (an unterminated comment) is judged as communicating.
  EXPECT_FALSE(inter_block_signs("__global__ void k() { /* never closed").empty());
}

// The suite's chained scans communicate; so does the session-8 survivor, the twin with its
// acquire fence removed (mutant 3d036cf4dcfb): its volatile flag and total remain.
TEST(InterBlockScan, TheSuitesChainedScansAndTheFenceMutantHaveSigns) {
  std::filesystem::path dir = std::filesystem::path(KOPT_SOURCE_DIR) / "tests/sandbox/adversarial";
  for (const char* name : {"scan_publishes_flag_first.cu", "scan_publishes_flag_first_twin.cu",
                           "scan_trusts_scratch_fill_twin.cu"}) {
    auto text = read_file(dir / name);
    ASSERT_TRUE(text.ok()) << text.error();
    EXPECT_FALSE(inter_block_signs(*text).empty()) << name;
  }
  auto twin = read_file(dir / "scan_trusts_scratch_fill_twin.cu");
  ASSERT_TRUE(twin.ok());
  std::string mutant = *twin;
  size_t fence = mutant.find("__threadfence();");
  ASSERT_NE(fence, std::string::npos);
  mutant.erase(fence, std::string("__threadfence();").size());
  EXPECT_TRUE(sign_names(mutant).count("volatile")) << mutant;
  auto baseline = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy/baseline.cu");
  ASSERT_TRUE(baseline.ok());
  EXPECT_TRUE(inter_block_signs(*baseline).empty());
}

TEST(CoRunner, HeldSmsAreAtLeastOneAndNeverAll) {
  EXPECT_EQ(worker::held_sms(0.25, 132), 33);
  EXPECT_EQ(worker::held_sms(0.5, 132), 66);
  EXPECT_EQ(worker::held_sms(0.75, 132), 99);
  EXPECT_EQ(worker::held_sms(0.01, 132), 1);
  EXPECT_EQ(worker::held_sms(1.0, 132), 131);
  EXPECT_EQ(worker::held_sms(0.5, 1), 0);  // a one-SM GPU: no co-runner, the round runs alone
}

struct PrefixSumPlan {
  TaskSpec task;
  KernelFile kernel;
};

PrefixSumPlan prefix_sum_with(const std::string& kernel_file) {
  PrefixSumPlan p;
  auto task = load_task(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/prefix_sum");
  EXPECT_TRUE(task.ok()) << task.error();
  if (task.ok()) p.task = std::move(*task);
  auto kernel = load_kernel_file(std::filesystem::path(KOPT_SOURCE_DIR) / kernel_file, &p.task);
  EXPECT_TRUE(kernel.ok()) << kernel.error();
  if (kernel.ok()) p.kernel = std::move(*kernel);
  return p;
}

// Co-run rounds are off by default (protocol.h says why); these tests turn them on.
EvalOptions corun_on() {
  EvalOptions options;
  options.corun = true;
  return options;
}

Result<worker::VerifyPlan> plan_for(const PrefixSumPlan& p, const EvalOptions& options,
                                    uint64_t seed) {
  worker::PlanInputs inputs;
  inputs.candidate = &p.kernel;
  inputs.free_bytes = inputs.total_bytes = int64_t(80) << 30;
  return worker::plan_verification(p.task, options, seed, inputs);
}

TEST(CoRunPlan, ACommunicatingKernelGetsFourRoundsAtTheTimedAndALargerShape) {
  auto p = prefix_sum_with("tests/sandbox/adversarial/scan_publishes_flag_first_twin.cu");
  const ShapeBinding timed = p.task.bind({});
  const int64_t timed_bytes = *p.task.tensor_bytes(timed);
  for (uint64_t seed : {1, 2, 3, 4}) {
    auto plan = plan_for(p, corun_on(), seed);
    ASSERT_TRUE(plan.ok()) << plan.error();
    EXPECT_EQ(plan->corun_rounds, 4);
    EXPECT_NE(plan->corun_signs.find("__threadfence (line"), std::string::npos)
        << plan->corun_signs;
    std::multiset<double> timed_shares;
    int larger = 0;
    size_t last_threshold = 0, first_corun = plan->steps.size(), first_holdout = 0;
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      const auto& s = plan->steps[i];
      if (s.phase == "threshold" || s.phase == "drawn") last_threshold = i;
      if (s.phase == "holdout" && !s.stress && !first_holdout) first_holdout = i;
      if (s.corun_share == 0) {
        EXPECT_NE(s.phase.substr(0, 5), "corun");
        continue;
      }
      first_corun = std::min(first_corun, i);
      EXPECT_EQ(s.rounds, 1);
      EXPECT_EQ(s.stress, nullptr);
      if (s.phase == "corun") {
        EXPECT_EQ(s.sizes, timed);
        EXPECT_TRUE(s.pooled);  // the timed shape's kept sets, as the sweep's
        timed_shares.insert(s.corun_share);
      } else {
        ASSERT_EQ(s.phase, "corun_drawn");
        ++larger;
        EXPECT_FALSE(s.pooled);
        EXPECT_TRUE(worker::shape_is_hidden(s.phase));
        EXPECT_NE(s.sizes, timed);
        EXPECT_LE(*p.task.tensor_bytes(s.sizes), timed_bytes);
        EXPECT_TRUE(s.corun_share == 0.25 || s.corun_share == 0.5 || s.corun_share == 0.75);
      }
    }
    EXPECT_EQ(timed_shares, (std::multiset<double>{0.25, 0.5, 0.75}));
    EXPECT_EQ(larger, 1);
    // After the drawn and threshold shapes (the larger one is theirs), before the holdouts (the
    // input families at the smallest holdout come earlier).
    EXPECT_GT(first_corun, last_threshold);
    EXPECT_LT(first_corun, first_holdout);
  }
}

TEST(CoRunPlan, TheLargerShapeIsTheLargestDrawnOrThresholdShapeWithinTheCap) {
  auto p = prefix_sum_with("tests/sandbox/adversarial/scan_publishes_flag_first.cu");
  auto plan = plan_for(p, corun_on(), 7);
  ASSERT_TRUE(plan.ok()) << plan.error();
  int64_t largest = 0, chosen = -1;
  const int64_t cap = *p.task.tensor_bytes(p.task.bind({}));
  for (const auto& s : plan->steps) {
    int64_t bytes = *p.task.tensor_bytes(s.sizes);
    if ((s.phase == "drawn" || s.phase == "threshold") && !s.stress && bytes <= cap)
      largest = std::max(largest, bytes);
    if (s.phase == "corun_drawn") chosen = bytes;
  }
  EXPECT_EQ(chosen, largest);
}

TEST(CoRunPlan, NoRoundsWithoutSignsOrByDefault) {
  auto quiet = prefix_sum_with("tasks/prefix_sum/baseline.cu");
  ASSERT_TRUE(inter_block_signs(quiet.kernel.source).empty())
      << describe_inter_block_signs(inter_block_signs(quiet.kernel.source));
  auto plan = plan_for(quiet, corun_on(), 3);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->corun_rounds, 0);
  EXPECT_TRUE(plan->corun_signs.empty());

  auto racy = prefix_sum_with("tests/sandbox/adversarial/scan_publishes_flag_first.cu");
  auto none = plan_for(racy, EvalOptions{}, 3);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->corun_rounds, 0);
  for (const auto& s : none->steps) EXPECT_EQ(s.corun_share, 0) << s.phase;
}

}  // namespace
}  // namespace kopt
