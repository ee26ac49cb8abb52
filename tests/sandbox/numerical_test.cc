// GPU half of the numerical suite (issue 15): every kernel in tests/sandbox/numerical/ carries a
// planted numerical bug (softmax without the max, one-pass variance, a float running sum, ties
// broken the wrong way...). Through the real SandboxEvaluator and kopt-sandbox worker each must be
// - caught with stress rounds on: the verdict its header names, the detail naming its stress round;
// - accepted with stress rounds off (the inputs kopt used before issue 15 let it through);
// and the task's baseline, a plain correct kernel in the task's precision, must pass every stress
// round. The baseline's verification time with and without stress rounds is printed (the cost).
//
//   ctest --test-dir BUILD -L gpu -R Numerical --output-on-failure
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "common/files.h"
#include "sandbox/evaluator.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/support/worker_options.h"

namespace kopt::testing {
namespace {

// Verification only, sweep and stress rounds: holdouts hold the biggest shapes and no trap.
EvalRequest request(const std::string& task, const KernelSource& candidate, bool stress) {
  EvalRequest r;
  auto task_json = read_file(adversarial_task_dir(task) / "task.json");
  if (!task_json) throw std::runtime_error(task_json.error());
  r.task_json = *task_json;
  r.reference = adversarial_task_file(task, "reference.cu");
  r.candidate = candidate;
  r.options.time = false;
  r.options.check_holdout = false;
  r.options.stress = stress;
  // One fixed seed: the regular rounds draw from the task's own distributions, and a planted bug
  // can show there too, rarely. gelu_tanh_through_exp overflows for |x| > 9.4, 6.3 standard
  // deviations of gelu's inputs: a 134M-element sweep holds such a value for a few percent of
  // fresh seeds (seen once on an H100, 2026-11-25: caught by sweep round 1, not 'std 40'). With
  // the seed fixed, "caught by its stress round" is a reproducible claim.
  r.options.seed = 20261125;
  // Drawn shapes are proven by shapes_test.cc; here the planted bug's cover is the fixed sweep
  // (a float running sum also drifts on a drawn long row).
  r.options.draws = false;
  // So are the shapes and inputs of issue 32 (gate_inputs_gpu_test.cc): an input family of
  // outlier rows overflows a softmax without the max too.
  r.options.thresholds = r.options.families = r.options.wide = r.options.vary_constants = false;
  return r;
}

EvalResult evaluate_or_fail(Evaluator& evaluator, const EvalRequest& r) {
  auto result = evaluator.evaluate(r);
  if (!result) throw std::runtime_error(result.error());
  return *result;
}

bool among(const std::vector<Verdict>& verdicts, Verdict v) {
  return std::find(verdicts.begin(), verdicts.end(), v) != verdicts.end();
}

class NumericalOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(NumericalOnGpu, CaughtByItsStressRoundAndAcceptedWithout) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_NUMERICAL_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  SandboxEvaluator evaluator(worker_options());
  auto device = evaluator.start();
  ASSERT_TRUE(device.ok()) << device.error();
  KernelSource planted{kernel->source, kernel->path.string(), {}};

  EvalResult caught = evaluate_or_fail(evaluator, request(kernel->task, planted, true));
  std::printf("numerical %-34s stress on  -> %-10s %s\n", kernel->name.c_str(),
              verdict_name(caught.verdict).c_str(), caught.detail.substr(0, 400).c_str());
  EXPECT_TRUE(among(kernel->expected, caught.verdict))
      << "got " << verdict_name(caught.verdict) << ": " << caught.detail;
  EXPECT_NE(caught.detail.find("on stress round '" + kernel->stress + "'"), std::string::npos)
      << caught.detail;
  ASSERT_TRUE(caught.mismatch.has_value());
  EXPECT_EQ(caught.mismatch->stress, kernel->stress);

  EvalResult missed = evaluate_or_fail(evaluator, request(kernel->task, planted, false));
  std::printf("numerical %-34s stress off -> %-10s %s\n", kernel->name.c_str(),
              verdict_name(missed.verdict).c_str(), missed.detail.substr(0, 200).c_str());
  EXPECT_TRUE(among(kernel->without_stress, missed.verdict))
      << "got " << verdict_name(missed.verdict) << ": " << missed.detail;

  // The baseline passes; its verification time without and with stress rounds, each measured
  // on a second evaluation (the first of each made kept input sets).
  KernelSource baseline = adversarial_task_file(kernel->task, "baseline.cu");
  double verify_ms[2] = {0, 0};
  for (bool stress : {false, true}) {
    for (int pass = 0; pass < 2; ++pass) {
      EvalResult r = evaluate_or_fail(evaluator, request(kernel->task, baseline, stress));
      EXPECT_EQ(r.verdict, Verdict::kOk) << "baseline, stress " << stress << ": " << r.detail;
      verify_ms[stress] = r.verify_ms;
      if (pass == 1)
        std::printf("baseline  %-34s stress %-3s verify %8.1f ms phases %s\n", kernel->task.c_str(),
                    stress ? "on" : "off", r.verify_ms, r.verify_phases.dump().c_str());
    }
  }
  std::printf("cost      %-34s stress rounds add %.1f ms (%.0f%%) to the baseline's verification\n",
              kernel->task.c_str(), verify_ms[1] - verify_ms[0],
              verify_ms[0] > 0 ? 100 * (verify_ms[1] - verify_ms[0]) / verify_ms[0] : 0.0);
  std::fflush(stdout);
}

INSTANTIATE_TEST_SUITE_P(Kernels, NumericalOnGpu,
                         ::testing::ValuesIn(kernel_names_in(KOPT_NUMERICAL_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

}  // namespace
}  // namespace kopt::testing
