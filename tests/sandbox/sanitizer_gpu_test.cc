// GPU half of the sanitizer suite: each kernel in tests/sandbox/sanitizer/ runs under the real
// compute-sanitizer through run_sanitizers (sandbox/sanitizer_runner.h) with the real worker.
// A kernel whose header says "expect: sanitizer" must get a finding from the tool its "tool:"
// line names, in its own kernel; its twin ("expect: ok") must pass all four tools. Each line
// printed (verdict under the ordinary evaluation, the finding, seconds per tool) goes to
// docs/gpu-runs/. Skipped without a GPU or without compute-sanitizer.
//
//   ctest --test-dir BUILD -L gpu -R Sanitizer --output-on-failure
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "common/files.h"
#include "sandbox/evaluator.h"
#include "sandbox/sanitizer_runner.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/support/worker_options.h"

namespace kopt::testing {
namespace {

// KOPT_SANITIZER_REPORT_DIR keeps every tool's full report (for docs/gpu-runs/).
SanitizerOptions sanitizer_options() {
  SanitizerOptions options;
  if (const char* dir = std::getenv("KOPT_SANITIZER_REPORT_DIR")) options.report_dir = dir;
  return options;
}

// "racecheck" from a "// tool: racecheck" header line; empty without one.
std::string expected_tool(const AdversarialKernel& kernel) {
  size_t at = kernel.source.find("// tool: ");
  if (at == std::string::npos) return "";
  size_t end = kernel.source.find('\n', at);
  return kernel.source.substr(at + 9, end - at - 9);
}

// A kernel whose header says "// finding: no shape finished": it hides from the tool (it spins
// once slow), so the finding is that no shape finished under it, with no kernel or line.
bool checks_nothing_under_a_tool(const AdversarialKernel& kernel) {
  return kernel.source.find("// finding: no shape finished\n") != std::string::npos;
}

EvalRequest request_for(const AdversarialKernel& kernel) {
  EvalRequest request;
  request.task_json = *read_file(adversarial_task_dir(kernel.task) / "task.json");
  request.reference = adversarial_task_file(kernel.task, "reference.cu");
  request.baseline = adversarial_task_file(kernel.task, "baseline.cu");
  request.candidate = {kernel.source, kernel.path.filename().string(), {}};
  request.options.max_wall_seconds = 5;
  return request;
}

class SanitizerOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
    if (!find_compute_sanitizer()) GTEST_SKIP() << "no compute-sanitizer on this machine";
  }
};

TEST_P(SanitizerOnGpu, FindsWhatItsHeaderSaysAndPassesTheTwin) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_SANITIZER_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  EvalRequest request = request_for(*kernel);
  // What the ordinary gate says, for the record: the holes these kernels use are the ones the
  // guard zones and repeated runs cannot see.
  std::string ordinary = "?";
  {
    SandboxEvaluator evaluator(worker_options());
    auto result = evaluator.evaluate(request);
    ordinary = result ? verdict_name(result->verdict) : "error: " + result.error();
  }
  SanitizerOutcome outcome = run_sanitizers(request, worker_options(), sanitizer_options());
  std::printf("sanitizer %-24s ordinary gate: %-13s sanitizer: %s (%.1f s; %s)\n",
              kernel->name.c_str(), ordinary.c_str(),
              outcome.finding ? outcome.finding->describe().c_str() : "no finding", outcome.seconds,
              outcome.note.c_str());
  std::fflush(stdout);
  ASSERT_TRUE(outcome.ran) << outcome.note;
  if (kernel->expected == std::vector<Verdict>{Verdict::kSanitizer}) {
    ASSERT_TRUE(outcome.finding.has_value()) << outcome.note;
    if (checks_nothing_under_a_tool(*kernel)) {
      // The tool reports nothing: the runs that never finish a shape are the finding. Which tool
      // first slows every shape's blocks past the kernel's threshold depends on the GPU (memcheck
      // at the timed shape, else racecheck at the smallest), so any tool may be the one.
      EXPECT_NE(outcome.finding->kind.find("no shape finished under the tool"), std::string::npos)
          << outcome.finding->describe();
      return;
    }
    EXPECT_EQ(outcome.finding->tool, expected_tool(*kernel));
    EXPECT_FALSE(outcome.finding->kernel.empty());
    EXPECT_NE(outcome.finding->location.find(".cu:"), std::string::npos)
        << outcome.finding->describe();
  } else {
    EXPECT_FALSE(outcome.finding.has_value()) << outcome.finding->describe();
    EXPECT_NE(outcome.note.find("initcheck"), std::string::npos) << outcome.note;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, SanitizerOnGpu,
                         ::testing::ValuesIn(kernel_names_in(KOPT_SANITIZER_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

// No false finding on trusted kernels, and the cost of one new best on real tasks: each task's
// baseline under all four tools (KOPT_SANITIZER_TASKS="softmax,sgemm" picks the tasks).
TEST(SanitizerBaselinesOnGpu, EveryToolPassesTheBaselines) {
  if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  if (!find_compute_sanitizer()) GTEST_SKIP() << "no compute-sanitizer on this machine";
  const char* chosen = std::getenv("KOPT_SANITIZER_TASKS");
  std::string tasks = chosen && *chosen ? chosen : "softmax,layernorm,sgemm";
  size_t start = 0;
  while (start <= tasks.size()) {
    size_t comma = tasks.find(',', start);
    std::string task = tasks.substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? tasks.size() + 1 : comma + 1;
    EvalRequest request;
    request.task_json = *read_file(adversarial_task_dir(task) / "task.json");
    request.reference = adversarial_task_file(task, "reference.cu");
    request.candidate = adversarial_task_file(task, "baseline.cu");
    SanitizerOutcome outcome = run_sanitizers(request, worker_options(), sanitizer_options());
    std::printf("sanitizer baseline %-14s %s (%.1f s; %s)\n", task.c_str(),
                outcome.finding ? outcome.finding->describe().c_str() : "no finding",
                outcome.seconds, outcome.note.c_str());
    std::fflush(stdout);
    EXPECT_TRUE(outcome.ran) << task << ": " << outcome.note;
    EXPECT_FALSE(outcome.finding.has_value()) << task << ": " << outcome.finding->describe();
  }
}

// Through the evaluator interface the orchestrator calls on each new best.
TEST(SanitizerEvaluatorOnGpu, SandboxEvaluatorSanitizesOnItsOwnGpu) {
  if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  if (!find_compute_sanitizer()) GTEST_SKIP() << "no compute-sanitizer on this machine";
  auto kernel = read_adversarial_kernel(std::filesystem::path(KOPT_SANITIZER_DIR) /
                                        "writes_far_past_at_timed_shape.cu");
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  SandboxEvaluator evaluator(worker_options());
  ASSERT_TRUE(evaluator.start().ok());
  SanitizerOutcome outcome = evaluator.sanitize(request_for(*kernel));
  ASSERT_TRUE(outcome.finding.has_value()) << outcome.note;
  EXPECT_EQ(outcome.finding->tool, "memcheck");
  // The evaluator's own worker is still there for the next candidate.
  auto after = evaluator.evaluate(request_for(*kernel));
  ASSERT_TRUE(after.ok()) << after.error();
}

}  // namespace
}  // namespace kopt::testing
