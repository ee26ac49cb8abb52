// The task contract (task_contract.h) of every shipped task: what it states, what it never
// states (hidden shapes), its size, and that it opens the planner's and the coder's prompts.
#include "src/orchestrator/task_contract.h"

#include <gtest/gtest.h>

#include "agents/agent_context.h"
#include "agents/prompt_library.h"
#include "common/strings.h"

namespace kopt::orchestrator {
namespace {

const std::filesystem::path kTasks = std::filesystem::path(KOPT_SOURCE_DIR) / "tasks";

GpuIdentity h100() {
  GpuIdentity gpu;
  gpu.model = "NVIDIA H100 80GB HBM3";
  gpu.cc = "9.0";
  gpu.arch = "sm_90a";
  gpu.sms = 132;
  gpu.device = {{"name", gpu.model}, {"sms", 132}, {"l2_bytes", 52428800}};
  return gpu;
}

std::vector<TaskSpec> shipped_tasks() {
  std::vector<TaskSpec> tasks;
  for (const auto& entry : std::filesystem::directory_iterator(kTasks)) {
    if (!std::filesystem::exists(entry.path() / "task.json")) continue;
    auto spec = load_task(entry.path());
    if (!spec) throw std::runtime_error(spec.error());
    tasks.push_back(std::move(*spec));
  }
  return tasks;
}

TEST(TaskContract, StatesTheContractOfEveryTask) {
  auto tasks = shipped_tasks();
  ASSERT_GE(tasks.size(), 10u);
  for (const TaskSpec& task : tasks) {
    std::string text = task_contract(task, h100(), 100.0);
    SCOPED_TRACE(task.name + ":\n" + text);
    for (const auto& t : task.inputs) EXPECT_NE(text.find(t.name + " "), std::string::npos);
    for (const auto& t : task.outputs) EXPECT_NE(text.find(t.name + " "), std::string::npos);
    for (const auto& r : task.stress) EXPECT_NE(text.find(r.name), std::string::npos);
    EXPECT_NE(text.find("132 SMs"), std::string::npos);
    EXPECT_NE(text.find("L2 50 MB"), std::string::npos);
    EXPECT_NE(text.find("228 KB shared memory"), std::string::npos);
    EXPECT_NE(text.find("speed of light 100.00 us"), std::string::npos);
    EXPECT_NE(text.find("measured "), std::string::npos);  // DRAM bandwidth or peak FLOP/s
    EXPECT_NE(text.find("above 48 KB"), std::string::npos);
    EXPECT_NE(text.find("no host code"), std::string::npos);
    // Hidden shapes are never told: no holdout binding appears as text.
    for (const auto& shape : task.holdout) {
      for (const auto& [name, value] : shape) {
        if (task.bind({}).at(name) == value) continue;  // the timed size is public
        EXPECT_EQ(text.find(name + "=" + std::to_string(value)), std::string::npos);
      }
    }
    // About 600 tokens at most (English and code run at about 4 characters a token).
    EXPECT_LE(text.size(), 2400u);
  }
}

TEST(TaskContract, TheSameTextForEveryKernelOfTheTask) {
  auto spec = load_task(kTasks / "softmax");
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(task_contract(*spec, h100(), 40.0), task_contract(*spec, h100(), 40.0));
  // Memory-bound: the DRAM bandwidth is bytes over the speed-of-light time.
  std::string text = task_contract(*spec, h100(), 40.0);
  EXPECT_NE(text.find("measured DRAM bandwidth"), std::string::npos) << text;
}

// Where the worker reported its peaks, the contract gives both roofs at the timed size and
// every peak, saying which were measured; on Hopper it says which features a plan can use.
TEST(TaskContract, BothRoofsAndEveryPeakWhereTheWorkerMeasuredThem) {
  GpuIdentity gpu = h100();
  gpu.device["peaks"] = {{"dram_bytes_per_s", 3.0e12},   {"fp32_flops", 5.0e13},
                         {"tf32_tensor_flops", 4.95e14}, {"bf16_tensor_flops", 9.89e14},
                         {"fp8_tensor_flops", 1.979e15}, {"source", "measured 2026-11-27"}};
  auto gemm = load_task(kTasks / "bf16_gemm");
  ASSERT_TRUE(gemm) << gemm.error();
  std::string text = task_contract(*gemm, gpu, 0);
  SCOPED_TRACE(text);
  EXPECT_NE(text.find("memory roof "), std::string::npos);
  EXPECT_NE(text.find("compute roof "), std::string::npos);
  EXPECT_NE(text.find("compute-bound"), std::string::npos);
  EXPECT_NE(text.find("measured DRAM bandwidth 3 TB/s"), std::string::npos);
  for (const char* peak : {"FP32 50 TFLOP/s (measured)", "TF32 495 TFLOP/s",
                           "BF16/FP16 989 TFLOP/s", "FP8 1.98 PFLOP/s"}) {
    EXPECT_NE(text.find(peak), std::string::npos) << peak;
  }
  EXPECT_NE(text.find("Hopper features: usable"), std::string::npos);
  EXPECT_NE(text.find("TMA tensor copies"), std::string::npos);
  // A memory-bound task at the same GPU is bound by its memory roof.
  auto softmax = load_task(kTasks / "softmax");
  ASSERT_TRUE(softmax) << softmax.error();
  EXPECT_NE(task_contract(*softmax, gpu, 0).find("-bound"), std::string::npos);
  EXPECT_NE(task_contract(*softmax, gpu, 0).find("): memory-bound"), std::string::npos);
  // Not Hopper: no Hopper line.
  gpu.cc = "8.0";
  EXPECT_EQ(task_contract(*softmax, gpu, 0).find("Hopper"), std::string::npos);
}

TEST(TaskContract, OpensThePlannerAndCoderPrompts) {
  auto library = agents::PromptLibrary::load(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts");
  ASSERT_TRUE(library) << library.error();
  for (const char* name : {"planner.txt", "coder.txt", "repair.txt"}) {
    std::map<std::string, std::string> values;
    for (const auto& spec : agents::template_specs()) {
      if (spec.file != name) continue;
      for (const auto& placeholder : spec.known) values[placeholder] = "x";
    }
    values["task_contract"] = "# Contract of task softmax\n";
    std::string text = library->get(name).render(values);
    EXPECT_EQ(text.rfind("# Contract of task softmax", 0), 0u) << name;
  }
}

}  // namespace
}  // namespace kopt::orchestrator
