// The real `kopt` binary where a folder of tasks holds a bad entry, where a script reads its
// output, and where a plan or a flag is wrong: one bad entry is one failed task, --json prints
// one JSON document in every outcome, plans are checked at every shape on the CPU, and flag
// errors name the flag.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

class CliScripts : public ::testing::Test {
 protected:
  CommandOutput kopt(const std::vector<std::string>& args) {
    return testing::run_kopt(args, cache_.path());
  }
  static std::string describe(const CommandOutput& out) {
    return "exit " + std::to_string(out.exit_code) + "\n--- stdout:\n" + out.stdout_text +
           "--- stderr:\n" + out.stderr_text;
  }
  // Exactly one JSON document on stdout (nlohmann's parse refuses trailing text).
  static nlohmann::json only_json(const CommandOutput& out) {
    auto parsed = nlohmann::json::parse(out.stdout_text, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout is not one JSON document\n" << describe(out);
    return parsed.is_discarded() ? nlohmann::json::object() : parsed;
  }
  // A tasks folder with the good task and a symlink loop beside it.
  std::filesystem::path tasks_with_a_loop() {
    auto root = work_ / "tasks";
    testing::write_task_dir(root / "good", testing::good_task_json());
    std::filesystem::create_directory_symlink(root / "loop", root / "loop");
    testing::write_text(root / "README.md", "not a task\n");
    return root;
  }
  TempDir cache_;
  TempDir work_;
};

TEST_F(CliScripts, ASymlinkLoopAmongTasksIsOneFailedTask) {
  auto root = tasks_with_a_loop();
  auto listed = kopt({"tasks", "list", "--tasks", root.string()});
  EXPECT_EQ(listed.exit_code, 1) << describe(listed);
  EXPECT_TRUE(contains(listed.stdout_text, "axpy_test")) << describe(listed);
  EXPECT_TRUE(contains(listed.stderr_text, (root / "loop").string() + ": cannot read"))
      << describe(listed);
  EXPECT_FALSE(contains(listed.stderr_text, "internal error")) << describe(listed);

  auto checked =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_EQ(checked.exit_code, 1) << describe(checked);
  EXPECT_TRUE(contains(checked.stdout_text, "ok   good")) << describe(checked);
  EXPECT_TRUE(contains(checked.stdout_text, "FAIL loop")) << describe(checked);
  EXPECT_TRUE(contains(checked.stdout_text, "2 tasks, 1 failed")) << describe(checked);

  auto submitted = kopt({"submit", (root / "loop").string(), "--db", (work_ / "m.db").string()});
  EXPECT_EQ(submitted.exit_code, 2) << describe(submitted);
  EXPECT_TRUE(contains(submitted.stderr_text, (root / "loop").string() + ": cannot read"))
      << describe(submitted);
  auto file = kopt({"submit", (root / "README.md").string(), "--db", (work_ / "m.db").string()});
  EXPECT_EQ(file.exit_code, 2) << describe(file);
  EXPECT_TRUE(contains(file.stderr_text, "a file, not a task folder")) << describe(file);
}

TEST_F(CliScripts, ABrokenEntryInsideATaskIsThatTasksError) {
  auto root = work_ / "tasks";
  testing::write_task_dir(root / "good", testing::good_task_json());
  testing::write_task_dir(root / "bad", testing::good_task_json());
  std::filesystem::remove(root / "bad" / "reference.cu");
  std::filesystem::create_symlink(root / "bad" / "reference.cu", root / "bad" / "reference.cu");
  auto listed = kopt({"tasks", "list", "--tasks", root.string()});
  EXPECT_EQ(listed.exit_code, 1) << describe(listed);
  EXPECT_TRUE(contains(listed.stderr_text, (root / "bad" / "reference.cu").string()))
      << describe(listed);
  EXPECT_FALSE(contains(listed.stderr_text, "internal error")) << describe(listed);
}

TEST_F(CliScripts, AnUnreadableFolderAmongTasksIsOneFailedTask) {
  auto root = work_ / "tasks";
  testing::write_task_dir(root / "good", testing::good_task_json());
  testing::write_task_dir(root / "locked", testing::good_task_json());
  ASSERT_EQ(::chmod((root / "locked").c_str(), 0), 0);
  if (::access((root / "locked" / "task.json").c_str(), R_OK) == 0) {
    ::chmod((root / "locked").c_str(), 0755);
    GTEST_SKIP() << "running as root: modes do not bind";
  }
  auto listed = kopt({"tasks", "list", "--tasks", root.string()});
  ::chmod((root / "locked").c_str(), 0755);
  EXPECT_EQ(listed.exit_code, 1) << describe(listed);
  EXPECT_TRUE(contains(listed.stdout_text, "axpy_test")) << describe(listed);
  EXPECT_TRUE(contains(listed.stderr_text, "locked")) << describe(listed);
  EXPECT_TRUE(contains(listed.stderr_text, "Permission denied")) << describe(listed);
}

TEST_F(CliScripts, AFileWhereTheTasksFolderIsExpected) {
  auto file = work_ / "tasks.txt";
  testing::write_text(file, "x\n");
  auto listed = kopt({"tasks", "list", "--tasks", file.string()});
  EXPECT_EQ(listed.exit_code, 1) << describe(listed);
  EXPECT_TRUE(contains(listed.stderr_text, file.string() + ": cannot list the tasks folder"))
      << describe(listed);
}

TEST_F(CliScripts, EvalJsonPrintsOneDocumentInEveryOutcome) {
  // No verdict at all (the worker cannot be started): exit 3, the reason as JSON.
  auto no_worker = kopt({"eval", "axpy", "--json", "--worker", (work_ / "no-worker").string()});
  EXPECT_EQ(no_worker.exit_code, 3) << describe(no_worker);
  auto json = only_json(no_worker);
  EXPECT_EQ(json.value("exit_code", 0), 3);
  EXPECT_FALSE(json.value("error", "").empty()) << describe(no_worker);
  // A plan that does not parse: exit 2, the file and JSON path in the error.
  auto broken = work_ / "broken.cu";
  testing::write_text(broken, R"~(/* kopt:plan
{"launches": [{"kernel": "axpy", "grid": ["ceil_div(nn, 256)"], "block": [256],
               "args": ["x", "y", "out", "n", "alpha"]}]}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float a) {}
)~");
  auto plan_error = kopt({"eval", "axpy", broken.string(), "--json"});
  EXPECT_EQ(plan_error.exit_code, 2) << describe(plan_error);
  json = only_json(plan_error);
  EXPECT_TRUE(contains(json.value("error", ""), "$.launches[0].grid[0]")) << describe(plan_error);
  // A flag that does not parse, and an unknown task.
  auto bad_flag = kopt({"eval", "axpy", "--json", "--rounds", "nan"});
  EXPECT_EQ(bad_flag.exit_code, 2) << describe(bad_flag);
  EXPECT_TRUE(contains(only_json(bad_flag).value("error", ""), "--rounds: 'nan' is not a number"))
      << describe(bad_flag);
  auto unknown = kopt({"eval", "nosuchtask", "--json"});
  EXPECT_EQ(unknown.exit_code, 2) << describe(unknown);
  EXPECT_TRUE(contains(only_json(unknown).value("error", ""), "no task 'nosuchtask'"));
}

// With a worker that dies or finds the GPU busy (the fake worker of tests/sandbox), the evaluator
// logs a warning: on stderr, never before the JSON on stdout.
TEST_F(CliScripts, EvalJsonStaysOneDocumentWhenTheWorkerWarns) {
  for (const auto& [word, code] : std::vector<std::pair<std::string, int>>{{"DIE", 1},
                                                                           {"BUSY 1", 4}}) {
    auto kernel = work_ / "k.cu";
    testing::write_text(kernel, "// " + word + "\n" + testing::good_kernel_source());
    testing::write_task_dir(work_ / "tasks" / "t", testing::good_task_json());
    auto out = kopt({"eval", "t", kernel.string(), "--json", "--arch", "sm_90a", "--tasks",
                     (work_ / "tasks").string(), "--worker", KOPT_FAKE_WORKER});
    EXPECT_EQ(out.exit_code, code) << word << "\n" << describe(out);
    auto json = only_json(out);
    EXPECT_TRUE(json.contains("verdict")) << describe(out);
    EXPECT_FALSE(out.stderr_text.empty()) << "the warning is on stderr\n" << describe(out);
  }
}

TEST_F(CliScripts, TasksCheckJsonIsJson) {
  auto root = tasks_with_a_loop();
  auto out = kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--json", "--tasks",
                   root.string()});
  EXPECT_EQ(out.exit_code, 1) << describe(out);
  auto json = only_json(out);
  ASSERT_TRUE(json.contains("tasks")) << describe(out);
  ASSERT_EQ(json["tasks"].size(), 2u) << describe(out);
  EXPECT_EQ(json["tasks"][0]["task"], "good");
  EXPECT_EQ(json["tasks"][0]["ok"], true);
  EXPECT_EQ(json["tasks"][1]["task"], "loop");
  EXPECT_EQ(json["tasks"][1]["ok"], false);
  EXPECT_EQ(json["failed_compile_checks"], 1);
  EXPECT_EQ(json["exit_code"], 1);
}

// Plans that cannot launch at some shape fail the CPU checks, with the file and JSON path.
TEST_F(CliScripts, BrokenPlansFailCompileOnly) {
  auto root = work_ / "tasks";
  for (const auto& [block, grid] : std::vector<std::pair<std::string, std::string>>{
           {"0", "\"ceil_div(n, 256)\""},
           {"4096", "\"ceil_div(n, 256)\""},
           {"2147483648", "\"ceil_div(n, 256)\""},
           {"256", "\"n/0\""},
           {"256", "\"n/256\""}}) {  // 0 blocks at the sweep's n=1
    std::string source = testing::good_kernel_source();
    source.replace(source.find("[\"ceil_div(n, BLOCK)\"]"), 22, "[" + grid + "]");
    source.replace(source.find("[\"BLOCK\"]"), 9, "[" + block + "]");
    auto kernel = work_ / "plan.cu";
    testing::write_text(kernel, source);
    testing::write_task_dir(root / "t", testing::good_task_json());
    auto eval = kopt({"eval", "t", kernel.string(), "--compile-only", "--arch", "sm_90a",
                      "--tasks", root.string()});
    EXPECT_EQ(eval.exit_code, 1) << block << " " << grid << "\n" << describe(eval);
    EXPECT_TRUE(contains(eval.stdout_text, "verdict: invalid_plan")) << describe(eval);
    EXPECT_TRUE(contains(eval.stdout_text, kernel.string() + ":2 (kopt:plan): $.launches[0]."))
        << describe(eval);
    testing::write_task_dir(root / "t", testing::good_task_json(), source, source);
    auto check = kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks",
                       root.string()});
    EXPECT_EQ(check.exit_code, 1) << describe(check);
    EXPECT_TRUE(contains(check.stdout_text, "baseline.cu plan: ")) << describe(check);
  }
  auto task = testing::good_task_json();
  task["flops"] = "2*n/0";
  testing::write_task_dir(root / "t", task);
  auto check =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_EQ(check.exit_code, 1) << describe(check);
  EXPECT_TRUE(contains(check.stdout_text, (root / "t" / "task.json").string() + ": $.flops"))
      << describe(check);
  auto eval = kopt({"eval", "t", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_EQ(eval.exit_code, 2) << describe(eval);
  EXPECT_TRUE(contains(eval.stderr_text, "$.flops: \"2*n/0\"")) << describe(eval);
}

TEST_F(CliScripts, FlagErrorsNameTheFlag) {
  auto hours = kopt({"run", "--hours", "nan"});
  EXPECT_EQ(hours.exit_code, 2) << describe(hours);
  EXPECT_TRUE(contains(hours.stderr_text, "--hours: 'nan' is not a number")) << describe(hours);
  auto negative = kopt({"run", "--hours=-1"});
  EXPECT_EQ(negative.exit_code, 2) << describe(negative);
  EXPECT_TRUE(contains(negative.stderr_text, "--hours: must be a number above 0"))
      << describe(negative);
  auto rounds = kopt({"eval", "axpy", "--rounds", "1.5"});
  EXPECT_EQ(rounds.exit_code, 2) << describe(rounds);
  EXPECT_TRUE(contains(rounds.stderr_text, "--rounds: '1.5' is not a whole number"))
      << describe(rounds);
  auto gpus = kopt({"run", "--gpus", "0,0"});
  EXPECT_EQ(gpus.exit_code, 2) << describe(gpus);
  EXPECT_TRUE(contains(gpus.stderr_text, "--gpus: GPU 0 is named twice")) << describe(gpus);
  auto level = kopt({"run", "--log-level", "foo"});
  EXPECT_EQ(level.exit_code, 2) << describe(level);
  EXPECT_TRUE(contains(level.stderr_text, "--log-level: 'foo' is not a level (trace, debug, "
                                          "info, warn, error)"))
      << describe(level);
  auto score = kopt({"run", "--score", "sol"});
  EXPECT_EQ(score.exit_code, 2) << describe(score);
  EXPECT_TRUE(
      contains(score.stderr_text, "--score: 'sol' is not one of auto, sol_score, sol_percent"))
      << describe(score);
  auto help = kopt({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0) << describe(help);
  EXPECT_TRUE(contains(help.stdout_text, "--tasks")) << describe(help);
  EXPECT_TRUE(contains(help.stdout_text, "--score")) << describe(help);
}

}  // namespace
}  // namespace kopt
