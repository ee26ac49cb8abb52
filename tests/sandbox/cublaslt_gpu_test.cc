// cuBLASLt production baselines timed by the real kopt-sandbox worker (sandbox/worker/
// cublaslt_baseline.h) for the suite's GEMM tasks: two rows each (heuristic, autotuned) with
// CUPTI's kernel count, and a mapping that does not compute the task's op refused with the
// mismatch named, never timed. Skipped without a driver or a GPU.
//
//   ctest --test-dir BUILD -L gpu -R CublasLt --output-on-failure
#include <gtest/gtest.h>

#include <cstdio>

#include "common/files.h"
#include "sandbox/evaluator.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/support/worker_options.h"

namespace kopt::testing {
namespace {

using nlohmann::json;

const std::filesystem::path kTasks = KOPT_TASKS_DIR;

class CublasLtGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = missing_gpu(); !why.empty()) GTEST_SKIP() << why;
    evaluator_.emplace(worker_options());
  }

  // The worker's answer for `task`, its task.json changed by `edit` first.
  Result<json> measure(const std::string& task, const std::function<void(json&)>& edit = {}) {
    json spec = json::parse(*read_file(kTasks / task / "task.json"));
    if (edit) edit(spec);
    json body = {
        {"task_json", spec.dump()},
        {"reference",
         {{"source", *read_file(kTasks / task / "reference.cu")}, {"origin", "reference.cu"}}}};
    auto answer = evaluator_->call("cublaslt", body, 600);
    if (!answer) return make_error(answer.error());
    std::printf("%s: %s\n", task.c_str(), (*answer)["result"].value("rows", json()).dump().c_str());
    std::fflush(stdout);
    return (*answer)["result"];
  }

  std::optional<SandboxEvaluator> evaluator_;
};

TEST_F(CublasLtGpuTest, EachGemmTaskGetsAHeuristicAndAnAutotunedRow) {
  for (const char* task : {"sgemm", "bf16_gemm", "gemm_bias_relu", "matvec"}) {
    auto result = measure(task);
    ASSERT_TRUE(result) << task << ": " << result.error();
    const json& rows = (*result)["rows"];
    ASSERT_EQ(rows.size(), 2u) << rows.dump();
    EXPECT_EQ(rows[0]["name"], "cublaslt_heuristic");
    EXPECT_EQ(rows[1]["name"], "cublaslt_autotuned");
    for (const auto& row : rows) {
      EXPECT_GT(row["median_us"].get<double>(), 0) << row.dump();
      EXPECT_GE(row["kernels"].get<int>(), 1) << row.dump();
      EXPECT_GE(row["samples"].get<int>(), 5) << row.dump();
      EXPECT_FALSE(row["library_versions"]["path"].get<std::string>().empty());
    }
    EXPECT_TRUE((*result)["gpu_check"].contains("after")) << result->dump();
  }
}

// sgemm's B is [k, n]: called as a weight [n, k] the product is wrong (the element counts still
// fit), and the heuristic's first algorithm shows it before anything is timed.
TEST_F(CublasLtGpuTest, AMappingThatComputesAnotherProductIsRefused) {
  auto result = measure("sgemm", [](json& spec) { spec["cublaslt"]["b_layout"] = "nk"; });
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("cuBLASLt disagrees with the task's reference"), std::string::npos)
      << result.error();
}

// Without its epilogue the GEMM misses the bias and the ReLU.
TEST_F(CublasLtGpuTest, AMissingEpilogueIsRefused) {
  auto result = measure("gemm_bias_relu", [](json& spec) {
    spec["cublaslt"].erase("epilogue");
    spec["cublaslt"].erase("bias");
  });
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("disagrees"), std::string::npos) << result.error();
}

}  // namespace
}  // namespace kopt::testing
