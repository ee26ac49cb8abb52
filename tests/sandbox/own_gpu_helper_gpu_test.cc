// The busy-GPU check with a helper of kopt's own running (issue 26's proof), on a real GPU
// (label gpu): a process holding a CUDA context beside the worker, idle like the PyTorch helper
// that times production baselines between its ops, makes the worker refuse to time (gpu_busy)
// until the starter names it in KOPT_OWN_GPU_PIDS (sandbox/own_gpu_processes.h); then the same
// evaluation is timed and the helper is listed as kopt's own. Skipped without a driver or a GPU.
//
//   ctest --test-dir BUILD -L gpu -R OwnGpuHelper --output-on-failure
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "common/files.h"
#include "common/subprocess.h"
#include "sandbox/evaluator.h"
#include "sandbox/own_gpu_processes.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/support/worker_options.h"

namespace kopt::testing {
namespace {

// The axpy task's own baseline as the candidate: a verdict of ok says the timing ran.
EvalRequest axpy_baseline_request() {
  EvalRequest r;
  r.task_json = *read_file(adversarial_task_dir("axpy") / "task.json");
  r.reference = adversarial_task_file("axpy", "reference.cu");
  r.candidate = adversarial_task_file("axpy", "baseline.cu");
  return r;
}

// One evaluation by a fresh worker on GPU 0, which reads KOPT_OWN_GPU_PIDS as it is now (the
// worker's environment is taken when it starts), and is gone before the next one starts: two
// workers would see each other as another user.
Result<EvalResult> evaluate_once() {
  SandboxEvaluator evaluator(worker_options());
  if (auto started = evaluator.start(); !started) return make_error(started.error());
  return evaluator.evaluate(axpy_baseline_request());
}

// Whether the quiet check before timing listed `pid` among kopt's own processes.
bool listed_as_own(const EvalResult& result, int pid) {
  const auto& before = result.gpu_check.value("before", nlohmann::json::object());
  for (const auto& p : before.value("own_processes", nlohmann::json::array())) {
    if (p.is_string() && p.get<std::string>().find("pid " + std::to_string(pid) + " ") == 0) {
      return true;
    }
  }
  return false;
}

TEST(OwnGpuHelperOnGpu, AnIdleHelperIsAnotherUserUntilDeclaredAsKoptsOwn) {
  if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  ::unsetenv(kOwnGpuPidsVariable);
  auto quiet = evaluate_once();
  ASSERT_TRUE(quiet.ok()) << quiet.error();
  ASSERT_EQ(quiet->verdict, Verdict::kOk)
      << "the GPU is not quiet to begin with: " << quiet->detail;

  auto helper = Subprocess::start({KOPT_GPU_CONTEXT_HOLDER, "0"});
  ASSERT_TRUE(helper.ok()) << helper.error();
  auto line = helper->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(line.ok()) << line.error();
  ASSERT_TRUE(line->has_value()) << "the helper exited without a word";
  ASSERT_EQ(line->value().rfind("ready ", 0), 0u) << line->value();
  const int pid = helper->pid();

  // Undeclared, the helper is another user of the GPU: no time at all.
  auto busy = evaluate_once();
  ASSERT_TRUE(busy.ok()) << busy.error();
  std::printf("own GPU helper, undeclared: %s: %s\n", verdict_name(busy->verdict).c_str(),
              busy->detail.c_str());
  EXPECT_EQ(busy->verdict, Verdict::kGpuBusy) << busy->detail;
  EXPECT_FALSE(busy->candidate_time.has_value());
  EXPECT_NE(busy->detail.find("pid " + std::to_string(pid)), std::string::npos) << busy->detail;

  // Declared as kopt's own (as `kopt baselines` declares its PyTorch helper): timed, and listed.
  ::setenv(kOwnGpuPidsVariable, std::to_string(pid).c_str(), 1);
  auto declared = evaluate_once();
  ::unsetenv(kOwnGpuPidsVariable);
  ASSERT_TRUE(declared.ok()) << declared.error();
  std::printf("own GPU helper, declared in %s: %s: %s\n", kOwnGpuPidsVariable,
              verdict_name(declared->verdict).c_str(), declared->detail.c_str());
  EXPECT_EQ(declared->verdict, Verdict::kOk) << declared->detail;
  EXPECT_TRUE(declared->candidate_time.has_value());
  EXPECT_TRUE(listed_as_own(*declared, pid)) << declared->gpu_check.dump();

  // Declaring another PID does not excuse this one.
  ::setenv(kOwnGpuPidsVariable, std::to_string(pid + 1000000).c_str(), 1);
  auto wrong = evaluate_once();
  ::unsetenv(kOwnGpuPidsVariable);
  ASSERT_TRUE(wrong.ok()) << wrong.error();
  EXPECT_EQ(wrong->verdict, Verdict::kGpuBusy) << wrong->detail;

  helper->close_stdin();
  auto status = helper->wait_for(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << "the helper did not exit when its stdin closed";
  EXPECT_EQ(describe_wait_status(*status), "exit 0");
}

}  // namespace
}  // namespace kopt::testing
