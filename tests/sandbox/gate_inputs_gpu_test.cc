// GPU proof of issue 32's shapes and inputs a kernel cannot anticipate: every kernel in
// tests/sandbox/gate_inputs/ names the one mechanism that must expose it (`// mechanism:`
// thresholds | draws | wide | families | vary_constants; `// needs:` mechanisms it works
// through). A planted bug passes the gate without any of the new mechanisms (its cover), and is
// caught with its mechanism alone; its correct twin passes with every mechanism on.
//
//   ctest --test-dir BUILD -L gpu -R GateInputs --output-on-failure
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/files.h"
#include "sandbox/evaluator.h"
#include "tests/sandbox/adversarial_files.h"

namespace kopt::testing {
namespace {

// `// key: a b` of a kernel's header, as a set of words.
std::set<std::string> header_words(const std::string& source, const std::string& key) {
  std::set<std::string> words;
  std::istringstream lines(source);
  std::string line, prefix = "// " + key + ":";
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream rest(line.substr(prefix.size()));
    for (std::string w; rest >> w;) words.insert(w);
  }
  return words;
}

// Verification only, the new mechanisms in `on` and no other (the old gate's sweep, stress
// rounds and holdouts always).
EvalRequest request(const AdversarialKernel& kernel, const std::set<std::string>& on) {
  EvalRequest r;
  auto task_json = read_file(adversarial_task_dir(kernel.task) / "task.json");
  if (!task_json) throw std::runtime_error(task_json.error());
  r.task_json = *task_json;
  r.reference = adversarial_task_file(kernel.task, "reference.cu");
  r.candidate = {kernel.source, kernel.path.string(), {}};
  r.options.time = false;
  // The suite's largest holdouts hold no trap here (the wide round is a mechanism of its own).
  r.options.check_holdout = false;
  r.options.max_wall_seconds = 20;
  r.options.seed = 20261127;
  r.options.draws = on.count("draws") > 0;
  r.options.thresholds = on.count("thresholds") > 0;
  r.options.families = on.count("families") > 0;
  r.options.wide = on.count("wide") > 0;
  r.options.vary_constants = on.count("vary_constants") > 0;
  return r;
}

class GateInputsOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(GateInputsOnGpu, CaughtByItsMechanismAloneAndTwinAccepted) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_GATE_INPUTS_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  auto mechanism = header_words(kernel->source, "mechanism");
  auto needs = header_words(kernel->source, "needs");
  ASSERT_EQ(mechanism.size(), 1u) << "name one mechanism";
  SandboxOptions options;
  options.worker = KOPT_SANDBOX_WORKER;
  options.device = 0;
  SandboxEvaluator evaluator(options);
  ASSERT_TRUE(evaluator.start().ok());
  bool planted = kernel->expected != std::vector<Verdict>{Verdict::kOk};
  std::set<std::string> on = needs;
  if (planted) {
    on.insert(*mechanism.begin());
  } else {
    on = {"draws", "thresholds", "families", "wide", "vary_constants"};
  }
  auto begin = std::chrono::steady_clock::now();
  auto result = evaluator.evaluate(request(*kernel, on));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_TRUE(result.ok()) << result.error();
  std::printf("gate-inputs %-36s [%s] -> %-12s (expected %s) %.1f s, verify %.0f ms: %s\n",
              kernel->name.c_str(), mechanism.begin()->c_str(),
              verdict_name(result->verdict).c_str(), describe_verdicts(kernel->expected).c_str(),
              seconds, result->verify_ms, result->detail.substr(0, 400).c_str());
  std::fflush(stdout);
  EXPECT_NE(std::find(kernel->expected.begin(), kernel->expected.end(), result->verdict),
            kernel->expected.end())
      << "got " << verdict_name(result->verdict) << ": " << result->detail;
  if (result->mismatch &&
      (result->mismatch->phase == "drawn" || result->mismatch->phase == "threshold")) {
    // The text that reaches the model names no size of a hidden shape.
    EXPECT_EQ(result->detail.find('='), std::string::npos) << result->detail;
  }
  if (!planted) return;
  auto cover = evaluator.evaluate(request(*kernel, needs));
  ASSERT_TRUE(cover.ok()) << cover.error();
  std::printf("gate-inputs %-36s -> %-12s without it\n", kernel->name.c_str(),
              verdict_name(cover->verdict).c_str());
  EXPECT_EQ(cover->verdict, Verdict::kOk)
      << "the planted bug shows without its mechanism: " << cover->detail;
}

// No false rejects: every task's baseline passes the worker's task check (`kopt tasks check` on a
// GPU: hygiene, the sweep, holdouts and stress rounds), which now also runs it through the drawn
// shapes, the shapes at its own thresholds, the input families with drawn constants, and the
// round past 2^31 elements.
class SuiteOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(SuiteOnGpu, BaselinePassesEveryNewRound) {
  std::filesystem::path dir = std::filesystem::path(KOPT_SOURCE_DIR) / GetParam();
  auto task_json = read_file(dir / "task.json");
  auto reference = read_file(dir / "reference.cu");
  auto baseline = read_file(dir / "baseline.cu");
  ASSERT_TRUE(task_json.ok() && reference.ok() && baseline.ok());
  SandboxOptions options;
  options.worker = KOPT_SANDBOX_WORKER;
  options.device = 0;
  SandboxEvaluator evaluator(options);
  ASSERT_TRUE(evaluator.start().ok());
  nlohmann::json body = {{"task_json", *task_json},
                         {"reference", {{"source", *reference}, {"origin", "reference.cu"}}},
                         {"baseline", {{"source", *baseline}, {"origin", "baseline.cu"}}}};
  auto begin = std::chrono::steady_clock::now();
  auto answer = evaluator.call("check_task", std::move(body), 600);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_TRUE(answer.ok()) << answer.error();
  const nlohmann::json& result = (*answer)["result"];
  std::printf("task-check %-40s %-8s %.1f s %s %s\n", GetParam().c_str(),
              result.value("baseline_verdict", "?").c_str(), seconds,
              result["findings"].dump().substr(0, 300).c_str(),
              result.value("baseline_detail", "").substr(0, 400).c_str());
  std::fflush(stdout);
  EXPECT_EQ(result.value("baseline_verdict", ""), "ok") << result.value("baseline_detail", "");
  EXPECT_TRUE(result["findings"].empty()) << result["findings"].dump();
}

std::vector<std::string> suite_tasks() {
  std::vector<std::string> out;
  for (const char* suite : {"tasks", "tasks_realworld"}) {
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / suite, ec))
      if (e.is_directory()) out.push_back(std::string(suite) + "/" + e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "tasks/axpy" as a test name: "tasks_axpy".
std::string task_test_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Tasks, SuiteOnGpu, ::testing::ValuesIn(suite_tasks()), task_test_name);

INSTANTIATE_TEST_SUITE_P(Kernels, GateInputsOnGpu,
                         ::testing::ValuesIn(kernel_names_in(KOPT_GATE_INPUTS_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

}  // namespace
}  // namespace kopt::testing
