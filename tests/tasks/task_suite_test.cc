// The task suite under tasks/: its coverage of the families an LLM team runs, the hygiene of each
// task.json (edge shapes, holdouts, signed inputs, positive speed-of-light formulas), launch plans
// that resolve within CUDA's limits at every shape, and reference and baseline that compile with
// real NVRTC. No GPU needed; the GPU half (reference hygiene, baseline agreement) is
// `kopt tasks check` on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/strings.h"
#include "sandbox/expr.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

const std::filesystem::path kTasksRoot = std::filesystem::path(KOPT_SOURCE_DIR) / "tasks";

// Each entry must be a subset of one task's tags: the families of issue 4.
const std::vector<std::vector<std::string>> kRequiredFamilies = {{"axpy"},
                                                                 {"gelu"},
                                                                 {"swiglu"},
                                                                 {"softmax"},
                                                                 {"cross_entropy"},
                                                                 {"layernorm"},
                                                                 {"rmsnorm"},
                                                                 {"residual_rmsnorm"},
                                                                 {"sum"},
                                                                 {"mse_loss"},
                                                                 {"transpose"},
                                                                 {"embedding"},
                                                                 {"rope"},
                                                                 {"matvec"},
                                                                 {"gemm", "fp32"},
                                                                 {"gemm", "bf16", "tensor-core"},
                                                                 {"gemm", "relu"},
                                                                 {"causal_attention"},
                                                                 {"decode_attention"},
                                                                 {"topk"},
                                                                 {"moe_gating"},
                                                                 {"prefix_sum"}};

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& dir : find_task_dirs(kTasksRoot)) names.push_back(dir.filename().string());
  return names;
}

bool has_tag(const TaskSpec& task, const std::string& tag) {
  return std::find(task.tags.begin(), task.tags.end(), tag) != task.tags.end();
}

std::vector<ShapeBinding> all_shapes(const TaskSpec& task) {
  std::vector<ShapeBinding> shapes;
  for (const auto& s : task.shapes) shapes.push_back(task.bind(s));
  for (const auto& s : task.holdout) shapes.push_back(task.bind(s));
  return shapes;
}

TEST(TaskSuite, HasAtLeastTwentyTasksThatAllLoad) {
  auto dirs = find_task_dirs(kTasksRoot);
  EXPECT_GE(dirs.size(), 20u) << "the suite under " << kTasksRoot << " is too small";
  for (const auto& dir : dirs) {
    auto task = load_task(dir);
    ASSERT_TRUE(task.ok()) << task.error();
    EXPECT_EQ(task->name, dir.filename().string()) << "a task's name must match its directory";
  }
}

TEST(TaskSuite, CoversEveryRequiredFamily) {
  std::vector<TaskSpec> tasks;
  for (const auto& dir : find_task_dirs(kTasksRoot)) {
    auto task = load_task(dir);
    ASSERT_TRUE(task.ok()) << task.error();
    tasks.push_back(std::move(*task));
  }
  for (const auto& family : kRequiredFamilies) {
    bool covered = std::any_of(tasks.begin(), tasks.end(), [&](const TaskSpec& t) {
      return std::all_of(family.begin(), family.end(),
                         [&](const std::string& tag) { return has_tag(t, tag); });
    });
    EXPECT_TRUE(covered) << "no task is tagged with all of: " << join(family, ", ");
  }
}

class EachTask : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = kTasksRoot / GetParam();
    auto task = load_task(dir_);
    ASSERT_TRUE(task.ok()) << task.error();
    task_ = std::move(*task);
  }
  std::filesystem::path dir_;
  TaskSpec task_;
};

TEST_P(EachTask, TagsNameBoundAndDtype) {
  int bounds = has_tag(task_, "memory-bound") + has_tag(task_, "compute-bound");
  EXPECT_EQ(bounds, 1) << "tag exactly one of memory-bound, compute-bound";
  EXPECT_TRUE(has_tag(task_, "fp32") || has_tag(task_, "bf16") || has_tag(task_, "fp16"))
      << "tag the dtype";
  EXPECT_GE(task_.tags.size(), 3u) << "tags: the operation family, the bound and the dtype";
  if (has_tag(task_, "tensor-core")) {
    EXPECT_EQ(task_.peak, "bf16_tensor");
  }
}

TEST_P(EachTask, SweepHasEdgeShapesAndTheDefault) {
  bool size_one = false, odd_size = false, default_shape = false;
  for (const auto& overrides : task_.shapes) {
    ShapeBinding s = task_.bind(overrides);
    if (s == task_.sizes) default_shape = true;
    for (const auto& [name, value] : overrides) {
      size_one = size_one || value == 1;
      odd_size = odd_size || (value > 1 && value % 32 != 0);
    }
  }
  EXPECT_TRUE(size_one) << "the sweep needs a shape with a size of 1";
  EXPECT_TRUE(odd_size) << "the sweep needs a size that is not a multiple of 32";
  EXPECT_TRUE(default_shape) << "the sweep needs the default shape ({})";
  EXPECT_FALSE(task_.holdout.empty()) << "the task needs holdout shapes";
}

TEST_P(EachTask, InputsAreSignedOrIntegers) {
  for (const auto& input : task_.inputs) {
    const InitSpec& init = input.init;
    bool signed_values =
        init.dist == "normal" || (init.dist == "uniform" && init.low < 0) || init.dist == "randint";
    EXPECT_TRUE(signed_values) << "input '" << input.name
                               << "': all-nonnegative inputs let a plain copy pass ReLU";
  }
}

TEST_P(EachTask, StressRoundsAreCheapAndReviewed) {
  // Issue 15: the tasks whose operation has a numerical trap declare stress rounds; the others
  // were reviewed and have none (tasks/README.md, "The suite's stress rounds").
  static const std::set<std::string> kNoTrap = {"axpy",           "transpose", "embedding",
                                                "rope",           "sgemm",     "bf16_gemm",
                                                "gemm_bias_relu", "matvec",    "swiglu"};
  EXPECT_EQ(task_.stress.empty(), kNoTrap.count(task_.name) > 0)
      << "stress rounds where the operation has a numerical trap, none where it has not";
  // Stress rounds run on cheap shapes, so verification time grows little.
  for (const auto& round : task_.stress) {
    auto shapes = stress_shapes(task_, round, int64_t(64) << 20);
    EXPECT_FALSE(shapes.empty()) << "stress round '" << round.name << "' runs on no shape";
    for (const auto& sizes : shapes)
      EXPECT_LE(*task_.tensor_bytes(sizes), int64_t(64) << 20)
          << "stress round '" << round.name << "' at a shape over 64 MiB";
  }
}

TEST_P(EachTask, SpeedOfLightFormulasArePositiveAtTheDefaultShape) {
  auto bytes = evaluate_expression(task_.bytes, task_.sizes);
  ASSERT_TRUE(bytes.ok()) << bytes.error();
  EXPECT_GT(*bytes, 0) << "bytes: " << task_.bytes;
  auto flops = evaluate_expression(task_.flops, task_.sizes);
  ASSERT_TRUE(flops.ok()) << flops.error();
  // Pure data movement (transpose, gather) has no arithmetic to count.
  if (has_tag(task_, "data-movement")) {
    EXPECT_GE(*flops, 0) << "flops: " << task_.flops;
  } else {
    EXPECT_GT(*flops, 0) << "flops: " << task_.flops;
  }
  // Minimum traffic reads every output at least once: at least 2 bytes per output element.
  int64_t output_elements = 0;
  for (const auto& out : task_.outputs) output_elements += *task_.element_count(out, task_.sizes);
  EXPECT_GE(*bytes, 2 * output_elements) << "bytes must count every output written";
}

// Evaluates `text` under `bindings` and checks it lies in [low, high].
void expect_in_range(const std::string& what, const std::string& text, const Bindings& bindings,
                     int64_t low, int64_t high) {
  auto v = evaluate_expression(text, bindings);
  ASSERT_TRUE(v.ok()) << what << ": " << v.error();
  EXPECT_GE(*v, low) << what << " = " << text << " = " << *v;
  EXPECT_LE(*v, high) << what << " = " << text << " = " << *v;
}

// The limits the worker enforces at launch (grid, block, shared memory, 32-bit arguments), checked
// here for every shape and every tunable value, so a plan that cannot launch fails without a GPU.
TEST_P(EachTask, PlansLaunchWithinCudaLimitsAtEveryShape) {
  constexpr int64_t kMaxSharedPerBlock = 227 * 1024;  // H100, after the opt-in attribute
  for (const char* name : {"reference.cu", "baseline.cu"}) {
    auto file = load_kernel_file(dir_ / name, &task_);
    ASSERT_TRUE(file.ok()) << file.error();
    std::vector<std::map<std::string, int64_t>> variants = {{}};
    for (const auto& t : file->tunables)
      for (size_t i = 1; i < t.values.size(); ++i) variants.push_back({{t.name, t.values[i]}});
    for (const auto& chosen : variants) {
      for (const auto& sizes : all_shapes(task_)) {
        Bindings b = sizes;
        for (const auto& [k, v] : file->tunable_values(chosen)) b[k] = v;
        SCOPED_TRACE(std::string(name) + " at " + [&] {
          std::string s;
          for (const auto& [k, v] : b) s += k + "=" + std::to_string(v) + " ";
          return s;
        }());
        for (const auto& s : file->scratch)
          expect_in_range("scratch " + s.name, s.count, b, 1, int64_t(1) << 36);
        for (const auto& launch : file->launches) {
          for (size_t d = 0; d < launch.grid.size(); ++d)
            expect_in_range(launch.kernel + " grid", launch.grid[d], b, 1,
                            d == 0 ? INT32_MAX : 65535);
          int64_t threads = 1;
          for (const auto& dim : launch.block) {
            auto v = evaluate_expression(dim, b);
            ASSERT_TRUE(v.ok()) << v.error();
            threads *= *v;
          }
          EXPECT_GE(threads, 1);
          EXPECT_LE(threads, 1024) << launch.kernel << ": block too large";
          expect_in_range(launch.kernel + " shared_bytes", launch.shared_bytes, b, 0,
                          kMaxSharedPerBlock);
          for (const auto& arg : launch.args)
            if (arg.kind == ArgBinding::Kind::kInt32)
              expect_in_range(launch.kernel + " argument " + arg.text, arg.expression, b, INT32_MIN,
                              INT32_MAX);
        }
      }
    }
  }
}

TEST_P(EachTask, ReferenceAndBaselineCompileForEveryTunable) {
  CompileCache cache{std::filesystem::path(KOPT_TASKS_COMPILE_CACHE)};
  auto items = compile_check_task(dir_, "sm_90a", &cache);
  ASSERT_FALSE(items.empty());
  int compiled = 0;
  for (const auto& item : items) {
    EXPECT_TRUE(item.ok) << item.subject << ": " << item.message;
    if (item.subject != "task.json") ++compiled;
  }
  EXPECT_GE(compiled, 3) << "a reference and at least two baseline variants (a tunable)";
}

// Test names carry the task name; '-' (allowed in task names) is not allowed in test names.
std::string test_name(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string name = param_info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Tasks, EachTask, ::testing::ValuesIn(task_names()), test_name);

}  // namespace
}  // namespace kopt
