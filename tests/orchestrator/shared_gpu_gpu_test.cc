// Two timing workers on one GPU (issue 35, daemon.workers_per_gpu 2: kopt-sandbox --share-gpu)
// judge one kernel at the same time: both verdicts are ok (no quiet-GPU check calls the other
// worker another process), and the times they report are within noise of a lone worker's, since
// each times in the GPU's timing turn while the other computes only between turns. Skipped
// without a GPU.
//
//   ctest --test-dir BUILD -L gpu -R SharedGpuWorkersOnGpu --output-on-failure
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "common/files.h"
#include "sandbox/evaluator.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/support/worker_options.h"

namespace kopt::testing {
namespace {

EvalRequest baseline_request(const std::string& task) {
  EvalRequest request;
  request.task_json = *read_file(adversarial_task_dir(task) / "task.json");
  request.reference = adversarial_task_file(task, "reference.cu");
  request.baseline = adversarial_task_file(task, "baseline.cu");
  request.candidate = adversarial_task_file(task, "baseline.cu");
  request.options.max_wall_seconds = 10;
  return request;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

SandboxOptions co_worker() {
  SandboxOptions options = worker_options();
  options.extra_args = {"--share-gpu"};
  options.environment = {"KOPT_WORKERS_PER_GPU=2"};
  return options;
}

constexpr int kRounds = 5;

TEST(SharedGpuWorkersOnGpu, BothOkAndTimedWithinNoiseOfALoneWorker) {
  if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
  EvalRequest request = baseline_request("softmax");
  std::vector<double> lone;
  {
    SandboxEvaluator alone(worker_options());
    ASSERT_TRUE(alone.start().ok());
    for (int i = 0; i <= kRounds; ++i) {
      auto result = alone.evaluate(request);
      ASSERT_TRUE(result.ok()) << result.error();
      ASSERT_EQ(result->verdict, Verdict::kOk) << result->detail;
      if (i > 0) lone.push_back(result->candidate_time->median_us);  // the first one warms up
    }
  }
  SandboxEvaluator first(co_worker()), second(co_worker());
  ASSERT_TRUE(first.start().ok());
  ASSERT_TRUE(second.start().ok());
  std::vector<double> shared[2];
  int not_ok[2] = {0, 0};
  double most_waited_ms = 0;
  std::mutex mutex;
  auto judge = [&](SandboxEvaluator& worker, int index) {
    for (int i = 0; i <= kRounds; ++i) {
      auto result = worker.evaluate(request);
      ASSERT_TRUE(result.ok()) << result.error();
      std::lock_guard lock(mutex);
      if (result->verdict != Verdict::kOk) {
        ++not_ok[index];
        std::printf("worker %d: %s: %s\n", index, verdict_name(result->verdict).c_str(),
                    result->detail.c_str());
        continue;
      }
      if (i > 0) shared[index].push_back(result->candidate_time->median_us);
      if (result->phases.contains("time.turn_wait"))
        most_waited_ms = std::max(most_waited_ms, result->phases["time.turn_wait"].get<double>());
    }
  };
  std::thread a([&] { judge(first, 0); });
  std::thread b([&] { judge(second, 1); });
  a.join();
  b.join();
  double alone_us = median(lone);
  std::printf(
      "softmax baseline: lone worker %.2f us; two co-workers %.2f us and %.2f us; longest wait "
      "for the timing turn %.0f ms\n",
      alone_us, median(shared[0]), median(shared[1]), most_waited_ms);
  std::fflush(stdout);
  EXPECT_EQ(not_ok[0] + not_ok[1], 0) << "a co-worker's evaluation was not ok (busy?)";
  for (const auto& times : shared) {
    ASSERT_FALSE(times.empty());
    // Timing that overlapped the other worker's kernels shares the SMs and DRAM with them, so it
    // can only come out slower. Faster is no overlap: on 4 x H200 (sessions 9 and 10) both
    // co-workers timed softmax 8.0-8.1% below a lone worker, twice, the GPU kept busy by two
    // workers against one that leaves it idle between evaluations. Noise: a few percent.
    EXPECT_LT(median(times) / alone_us, 1.08)
        << "a co-worker's time is over a lone worker's: timing overlapped the other's kernels";
  }
}

}  // namespace
}  // namespace kopt::testing
