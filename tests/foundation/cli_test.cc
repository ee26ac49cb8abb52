// The real `kopt` binary as a user meets it: bad inputs exit non-zero and say which file and
// JSON path is wrong; every subcommand has --help; the shipped task suite passes its compile check.
#include <gtest/gtest.h>

#include <sstream>

#include "common/files.h"
#include "sandbox/cuda_driver.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

class Cli : public ::testing::Test {
 protected:
  CommandOutput kopt(const std::vector<std::string>& args,
                     std::chrono::seconds timeout = std::chrono::seconds(120)) {
    return testing::run_kopt(args, cache_.path(), timeout);
  }
  static std::string describe(const CommandOutput& out) {
    return "exit " + std::to_string(out.exit_code) + "\n--- stdout:\n" + out.stdout_text +
           "--- stderr:\n" + out.stderr_text;
  }
  TempDir cache_;
  TempDir work_;
};

TEST_F(Cli, EvalOfAnUnknownTask) {
  CommandOutput out = kopt({"eval", "nosuchtask", "--compile-only"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "no task 'nosuchtask'")) << describe(out);
  CommandOutput typo = kopt({"eval", "axpi", "--compile-only"});
  EXPECT_NE(typo.exit_code, 0) << describe(typo);
  EXPECT_TRUE(contains(typo.stderr_text, "did you mean 'axpy'?")) << describe(typo);
}

TEST_F(Cli, EvalOfAKernelFileWithPlanErrors) {
  auto broken = work_ / "broken.cu";
  testing::write_text(broken, R"~(/* kopt:plan
{"launches": [{"kernel": "axpy", "grid": ["ceil_div(nn, 256)"], "block": [256],
               "args": ["x", "yy", "out", "n", "alpha"]}]}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float a) {}
)~");
  CommandOutput out = kopt({"eval", "axpy", broken.string(), "--compile-only"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, broken.string())) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "$.launches[0].grid[0]: unknown symbol 'nn'"))
      << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "$.launches[0].args[1]")) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "did you mean 'y'?")) << describe(out);
}

TEST_F(Cli, EvalOfAMissingKernelFile) {
  auto missing = work_ / "missing.cu";
  CommandOutput out = kopt({"eval", "axpy", missing.string(), "--compile-only"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, missing.string())) << describe(out);
}

TEST_F(Cli, EvalCompileOnlyOfTheBaseline) {
  CommandOutput out = kopt({"eval", "axpy", "--compile-only", "--arch", "sm_90a"});
  EXPECT_EQ(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text, "compiled")) << describe(out);
  CommandOutput json = kopt({"eval", "axpy", "--compile-only", "--arch", "sm_90a", "--json"});
  EXPECT_EQ(json.exit_code, 0) << describe(json);
  auto parsed = nlohmann::json::parse(json.stdout_text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << describe(json);
  EXPECT_EQ(parsed.value("verdict", ""), "compiled");
  EXPECT_TRUE(parsed.value("cache_hit", false)) << "the second compile comes from the cache";
  EXPECT_GT(parsed.value("cubin_bytes", 0), 0);
}

TEST_F(Cli, EvalOfAKernelThatDoesNotCompile) {
  auto bad = work_ / "bad.cu";
  testing::write_text(bad, R"~(/* kopt:plan
{"launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
               "args": ["x", "y", "out", "n", "alpha"]}]}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float a) {
  out[0] = undefined_name;
}
)~");
  CommandOutput out = kopt({"eval", "axpy", bad.string(), "--compile-only", "--arch", "sm_90a"});
  EXPECT_EQ(out.exit_code, 1) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text + out.stderr_text, "undefined_name")) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text + out.stderr_text, "compile_error")) << describe(out);
}

TEST_F(Cli, EvalWithAnInvalidArch) {
  CommandOutput out = kopt({"eval", "axpy", "--compile-only", "--arch", "sm_9"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "invalid architecture 'sm_9'")) << describe(out);
}

TEST_F(Cli, EvalOfABrokenTask) {
  auto t = testing::good_task_json();
  t["inputs"][0]["dtype"] = "f33";
  testing::write_task_dir(work_ / "tasks" / "broken", t);
  CommandOutput out =
      kopt({"eval", "broken", "--compile-only", "--tasks", (work_ / "tasks").string()});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text,
                       (work_ / "tasks" / "broken" / "task.json").string() +
                           ": $.inputs[0].dtype: unknown dtype 'f33' (did you mean 'f32'?)"))
      << describe(out);
}

TEST_F(Cli, TasksCheckOfADirectoryWithOneBrokenTask) {
  auto root = work_ / "tasks";
  testing::write_task_dir(root / "good", testing::good_task_json());
  auto t = testing::good_task_json();
  t["name"] = "broken";
  t["flops"] = "2*m";
  testing::write_task_dir(root / "broken", t);
  CommandOutput out =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  std::string all = out.stdout_text + out.stderr_text;
  EXPECT_TRUE(
      contains(all, (root / "broken" / "task.json").string() + ": $.flops: unknown symbol 'm'"))
      << describe(out);
  EXPECT_TRUE(contains(all, "1 failed")) << describe(out);
}

TEST_F(Cli, TasksCheckOfATaskWithABrokenKernelFile) {
  auto root = work_ / "tasks";
  std::string broken_plan = R"(/* kopt:plan
{"launches": [{"kernel": "axpyy", "grid": [1], "block": [1], "args": []}]}
*/
extern "C" __global__ void axpy() {}
)";
  testing::write_task_dir(root / "t", testing::good_task_json(), testing::good_kernel_source(),
                          broken_plan);
  CommandOutput out =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  std::string all = out.stdout_text + out.stderr_text;
  EXPECT_TRUE(contains(all, (root / "t" / "baseline.cu").string())) << describe(out);
  EXPECT_TRUE(contains(all, "$.launches[0].kernel")) << describe(out);
}

TEST_F(Cli, TasksCheckOfAnUnknownTaskName) {
  CommandOutput out = kopt({"tasks", "check", "--compile-only", "nosuchtask"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "nosuchtask")) << describe(out);
}

TEST_F(Cli, TasksListOfABrokenTask) {
  auto t = testing::good_task_json();
  t.erase("bytes");
  testing::write_task_dir(work_ / "tasks" / "t", t);
  CommandOutput out = kopt({"tasks", "list", "--tasks", (work_ / "tasks").string()});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, (work_ / "tasks" / "t" / "task.json").string() +
                                            ": $.bytes: required field is missing"))
      << describe(out);
}

TEST_F(Cli, TasksWithAnUnknownAction) {
  CommandOutput out = kopt({"tasks", "chek"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "'chek'")) << describe(out);
}

TEST_F(Cli, UnknownSubcommandSuggestsTheClosest) {
  CommandOutput out = kopt({"evl", "axpy"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "unknown command 'evl'")) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "did you mean 'eval'?")) << describe(out);
}

TEST_F(Cli, UnknownOptionIsAnError) {
  CommandOutput out = kopt({"eval", "axpy", "--compile-onyl"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "compile-onyl")) << describe(out);
}

// The commands listed by `kopt --help` (the table grows as areas land).
std::vector<std::string> listed_commands(const CommandOutput& help) {
  std::vector<std::string> names;
  std::istringstream in(help.stdout_text);
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("commands:", 0) == 0) {
      in_list = true;
      continue;
    }
    if (in_list && line.rfind("  ", 0) == 0) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      if (!name.empty()) names.push_back(name);
    }
  }
  return names;
}

TEST_F(Cli, EverySubcommandHasHelp) {
  CommandOutput top = kopt({"--help"});
  EXPECT_EQ(top.exit_code, 0) << describe(top);
  std::vector<std::string> names = listed_commands(top);
  for (const char* required : {"doctor", "tasks", "eval"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end())
        << required << " is not listed:\n"
        << describe(top);
  for (const auto& name : names) {
    CommandOutput out = kopt({name, "--help"});
    EXPECT_EQ(out.exit_code, 0) << name << ": " << describe(out);
    EXPECT_TRUE(contains(out.stdout_text, "kopt " + name)) << name << ": " << describe(out);
    EXPECT_TRUE(contains(out.stdout_text, "--help")) << name << ": " << describe(out);
  }
}

TEST_F(Cli, NoArgumentsPrintsUsageAndFails) {
  CommandOutput out = kopt({});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_TRUE(contains(out.stdout_text + out.stderr_text, "usage")) << describe(out);
}

bool machine_has_gpu() {
  auto driver = load_cuda_driver();
  if (!driver.ok()) return false;
  int count = 0;
  return (*driver)->cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
}

TEST_F(Cli, DoctorWithoutAGpuSaysSoOnce) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  CommandOutput out = kopt({"doctor"});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  // Findings are lines "  MISSING  WHAT  WHY"; the GPU is missing once, however many of the
  // driver, device and CUPTI checks fail because of it.
  int gpu_lines = 0;
  std::istringstream in(out.stdout_text + out.stderr_text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string status, what;
    words >> status >> what;
    if (status == "MISSING" && what == "GPU") ++gpu_lines;
  }
  EXPECT_EQ(gpu_lines, 1) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text, "NVRTC")) << describe(out);
}

// `kopt eval --profile` follows eval's no-GPU convention: no verdict, exit 3, a line that says a
// GPU is needed (and nothing that reads like a profile).
TEST_F(Cli, EvalProfileWithoutAGpuFailsClearly) {
  if (machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  CommandOutput out = kopt({"eval", "axpy", "--profile"});
  EXPECT_EQ(out.exit_code, 3) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "kopt eval: ")) << describe(out);
  EXPECT_TRUE(contains(out.stderr_text, "needs a GPU")) << describe(out);
  EXPECT_FALSE(contains(out.stdout_text, "profile")) << describe(out);
}

TEST_F(Cli, EvalProfileFlagsThatCannotGoTogether) {
  CommandOutput both = kopt({"eval", "axpy", "--profile", "--profile-bracket"});
  EXPECT_EQ(both.exit_code, 2) << describe(both);
  EXPECT_TRUE(contains(both.stderr_text, "--profile and --profile-bracket")) << describe(both);
  CommandOutput compile_only = kopt({"eval", "axpy", "--profile", "--compile-only"});
  EXPECT_EQ(compile_only.exit_code, 2) << describe(compile_only);
  EXPECT_TRUE(contains(compile_only.stderr_text, "--compile-only")) << describe(compile_only);
}

TEST_F(Cli, TasksCheckCompileOnlyOnTheRealSuite) {
  // Every task's reference and baseline with every tunable value: minutes on a busy machine.
  CommandOutput out = kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks",
                            std::string(KOPT_SOURCE_DIR) + "/tasks"},
                           std::chrono::seconds(540));
  EXPECT_EQ(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text, "axpy")) << describe(out);
  EXPECT_TRUE(contains(out.stdout_text, "0 failed")) << describe(out);
}

// `kopt tasks new` (issue 15): each template, and a copy of a suite task, is a task folder that
// passes `kopt tasks check --compile-only` (real NVRTC) as written.
TEST_F(Cli, TasksNewWritesAFolderThatPassesTheCompileCheck) {
  auto root = work_ / "tasks";
  std::filesystem::create_directories(root);
  for (const std::string kind : {"elementwise", "row_reduction", "gemm"}) {
    CommandOutput made =
        kopt({"tasks", "new", "my-" + kind, "--kind", kind, "--tasks", root.string()});
    ASSERT_EQ(made.exit_code, 0) << describe(made);
    EXPECT_TRUE(std::filesystem::exists(root / ("my-" + kind) / "baseline.cu")) << describe(made);
  }
  // --like looks the task up in the suite (a path works too) and writes under --tasks.
  CommandOutput like =
      kopt({"tasks", "new", "my_softmax", "--like", std::string(KOPT_SOURCE_DIR) + "/tasks/softmax",
            "--tasks", root.string()});
  ASSERT_EQ(like.exit_code, 0) << describe(like);
  auto copied = read_file(root / "my_softmax" / "task.json");
  ASSERT_TRUE(copied.ok());
  EXPECT_TRUE(contains(*copied, "\"name\": \"my_softmax\"")) << *copied;
  EXPECT_TRUE(contains(*copied, "TODO")) << *copied;
  EXPECT_TRUE(contains(*copied, "\"stress\"")) << *copied;
  CommandOutput check =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()},
           std::chrono::seconds(300));
  EXPECT_EQ(check.exit_code, 0) << describe(check);
  EXPECT_TRUE(contains(check.stdout_text, "4 tasks, 0 failed")) << describe(check);
}

TEST_F(Cli, TasksNewRefusesToOverwriteAndBadNames) {
  auto root = work_ / "tasks";
  ASSERT_EQ(kopt({"tasks", "new", "op", "--kind", "gemm", "--tasks", root.string()}).exit_code, 0);
  ASSERT_TRUE(write_file_atomic(root / "op" / "baseline.cu", "// edited\n").ok());
  CommandOutput again =
      kopt({"tasks", "new", "op", "--kind", "elementwise", "--tasks", root.string()});
  EXPECT_NE(again.exit_code, 0) << describe(again);
  EXPECT_TRUE(contains(again.stderr_text, "never overwrites")) << describe(again);
  EXPECT_EQ(*read_file(root / "op" / "baseline.cu"), "// edited\n");
  CommandOutput bad = kopt({"tasks", "new", "Op!", "--kind", "gemm", "--tasks", root.string()});
  EXPECT_NE(bad.exit_code, 0) << describe(bad);
  CommandOutput kind = kopt({"tasks", "new", "op2", "--kind", "gem", "--tasks", root.string()});
  EXPECT_NE(kind.exit_code, 0) << describe(kind);
  EXPECT_TRUE(contains(kind.stderr_text, "did you mean 'gemm'")) << describe(kind);
  CommandOutput neither = kopt({"tasks", "new", "op3", "--tasks", root.string()});
  EXPECT_NE(neither.exit_code, 0) << describe(neither);
  EXPECT_FALSE(std::filesystem::exists(root / "op3"));
}

// Every problem in one pass: a task.json with two errors, a missing baseline and a reference
// whose plan is broken are all reported together.
TEST_F(Cli, TasksCheckReportsEveryProblemOfATaskAtOnce) {
  auto root = work_ / "tasks";
  auto t = testing::good_task_json();
  t["flops"] = "2*m";
  t["peak"] = "fp33";
  std::string broken_plan = R"(/* kopt:plan
{"launches": [{"kernel": "axpyy", "grid": [1], "block": [1], "args": []}]}
*/
extern "C" __global__ void axpy() {}
)";
  testing::write_task_dir(root / "t", t, broken_plan);
  std::filesystem::remove(root / "t" / "baseline.cu");
  CommandOutput out =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_NE(out.exit_code, 0) << describe(out);
  std::string all = out.stdout_text + out.stderr_text;
  EXPECT_TRUE(contains(all, "$.flops: unknown symbol 'm'")) << describe(out);
  EXPECT_TRUE(contains(all, "$.peak: unknown peak 'fp33'")) << describe(out);
  EXPECT_TRUE(contains(all, (root / "t" / "baseline.cu").string() + ": missing")) << describe(out);
  EXPECT_TRUE(contains(all, "$.launches[0].kernel")) << describe(out);
}

}  // namespace
}  // namespace kopt
