// Plans and a task's formulas evaluated on the CPU at every shape of the task
// (sandbox/kernel_file_check.h): each broken plan is refused with the file, the plan's line, the
// JSON path and the shape where it breaks; every plan of the suite passes.
#include <gtest/gtest.h>

#include "sandbox/kernel_file_check.h"
#include "sandbox/task_catalog.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;

TaskSpec good_task() {
  auto task = parse_task(testing::good_task_json().dump(), "task.json");
  if (!task) throw std::runtime_error(task.error());
  return *task;
}

// The good kernel file with its launch's grid and block replaced.
std::string plan_with(const std::string& grid, const std::string& block,
                      const std::string& extra = "") {
  return R"~(/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128]},)~" +
         extra + R"~(
  "launches": [{"kernel": "axpy", "grid": [)~" +
         grid + "], \"block\": [" + block + R"~(],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {}
)~";
}

Status check(const std::string& source, const TaskSpec& task) {
  auto file = parse_kernel_file(source, "k.cu", &task);
  if (!file) throw std::runtime_error("the plan should parse: " + file.error());
  return check_plan_variants(*file, task);
}

TEST(KernelFileCheck, TheGoodPlanPasses) {
  TaskSpec task = good_task();
  auto checked = check(testing::good_kernel_source(), task);
  EXPECT_TRUE(checked) << checked.error();
}

TEST(KernelFileCheck, BlockDimensionsOutsideCudasLimits) {
  TaskSpec task = good_task();
  for (std::string block : {"0", "4096", "2147483648", "\"BLOCK*0\""}) {
    auto checked = check(plan_with("\"ceil_div(n, 256)\"", block), task);
    ASSERT_FALSE(checked) << block;
    EXPECT_TRUE(contains(checked.error(), "k.cu:1 (kopt:plan): $.launches[0].block[0]"))
        << checked.error();
    EXPECT_TRUE(contains(checked.error(), "outside 1..1024")) << checked.error();
    EXPECT_TRUE(contains(checked.error(), "at the default sizes (n=4096)")) << checked.error();
  }
  // Each dimension within limits, the block over 1024 threads.
  auto big = check(plan_with("\"ceil_div(n, 256)\"", "64, 32"), task);
  ASSERT_FALSE(big);
  EXPECT_TRUE(contains(big.error(), "$.launches[0].block: a block of 2048 threads")) << big.error();
}

TEST(KernelFileCheck, GridsThatDivideByZeroOrAreZeroAtSomeShape) {
  TaskSpec task = good_task();
  auto zero_division = check(plan_with("\"n/0\"", "256"), task);
  ASSERT_FALSE(zero_division);
  EXPECT_TRUE(contains(zero_division.error(), "$.launches[0].grid[0]: \"n/0\""))
      << zero_division.error();
  EXPECT_TRUE(contains(zero_division.error(), "division by zero")) << zero_division.error();
  // n / 256 is 16 at the default sizes but 0 at the sweep's n=1: named with that shape.
  auto empty = check(plan_with("\"n/256\"", "256"), task);
  ASSERT_FALSE(empty);
  EXPECT_TRUE(contains(empty.error(), "\"n/256\" = 0 at $.shapes[0] (n=1)")) << empty.error();
  // Past 2^31 - 1 blocks in x, and 65536 in y.
  auto wide = check(plan_with("2147483648", "256"), task);
  ASSERT_FALSE(wide);
  EXPECT_TRUE(contains(wide.error(), "outside 1..2147483647")) << wide.error();
  auto tall = check(plan_with("1, 65536", "256"), task);
  ASSERT_FALSE(tall);
  EXPECT_TRUE(contains(tall.error(), "$.launches[0].grid[1]")) << tall.error();
}

TEST(KernelFileCheck, ATunableValueThatBreaksThePlanIsNamed) {
  TaskSpec task = good_task();
  std::string source = plan_with("\"ceil_div(n, BLOCK)\"", "\"BLOCK\"");
  source.replace(source.find("[256, 128]"), 10, "[256, 2048]");
  auto checked = check(source, task);
  ASSERT_FALSE(checked);
  EXPECT_TRUE(contains(checked.error(), "(BLOCK=2048) $.launches[0].block[0]")) << checked.error();
}

TEST(KernelFileCheck, ScratchCountsAndIntegerArguments) {
  TaskSpec task = good_task();
  auto negative = check(
      plan_with("1", "256", R"( "scratch": [{"name": "tmp", "dtype": "f32", "count": "n - 2"}],)"),
      task);
  ASSERT_FALSE(negative);
  EXPECT_TRUE(contains(negative.error(), "$.scratch[0].count: \"n - 2\" = -1 at $.shapes[0]"))
      << negative.error();
  std::string wide_arg = plan_with("1", "256");
  wide_arg.replace(wide_arg.find("\"n\", \"alpha\""), 12, "\"i32:n*1048576\", \"alpha\"");
  auto too_wide = check(wide_arg, task);
  ASSERT_FALSE(too_wide);
  EXPECT_TRUE(contains(too_wide.error(), "$.launches[0].args[3]")) << too_wide.error();
  EXPECT_TRUE(contains(too_wide.error(), "does not fit in 32 bits")) << too_wide.error();
}

TEST(KernelFileCheck, TaskFormulasAtEveryShape) {
  auto json = testing::good_task_json();
  json["flops"] = "2*n/0";
  json["bytes"] = "12*(n - 2)";
  auto task = parse_task(json.dump(), "task.json");
  ASSERT_TRUE(task) << task.error();
  task->dir = "tasks/t";
  auto checked = check_task_formulas(*task);
  ASSERT_FALSE(checked);
  EXPECT_TRUE(contains(checked.error(), "tasks/t/task.json: $.flops: \"2*n/0\""))
      << checked.error();
  EXPECT_TRUE(contains(checked.error(), "division by zero")) << checked.error();
  EXPECT_TRUE(contains(checked.error(), "$.bytes: \"12*(n - 2)\" = -12 at $.shapes[0] (n=1)"))
      << checked.error();
  EXPECT_TRUE(check_task_formulas(good_task()));
}

// Every task of the suite and both its kernel files pass, at every tunable value.
TEST(KernelFileCheck, TheWholeSuitePasses) {
  auto dirs = find_task_dirs(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks");
  ASSERT_GE(dirs.size(), 22u);
  for (const auto& dir : dirs) {
    auto task = load_task(dir);
    ASSERT_TRUE(task) << task.error();
    auto formulas = check_task_formulas(*task);
    EXPECT_TRUE(formulas) << formulas.error();
    for (const char* name : {"reference.cu", "baseline.cu"}) {
      auto file = load_kernel_file(dir / name, &*task);
      ASSERT_TRUE(file) << file.error();
      auto plan = check_plan_variants(*file, *task);
      EXPECT_TRUE(plan) << plan.error();
    }
  }
}

}  // namespace
}  // namespace kopt
