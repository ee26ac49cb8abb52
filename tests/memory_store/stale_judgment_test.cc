// A kernel judged under an older task spec or verifier is never passed off as verified under the
// current ones: `kopt memory wins` and `kopt report` say so, `kopt export` refuses it unless
// --allow-stale-judgment (schema version 4 records what each verdict was judged under). Runs the
// real kopt binary on a real database.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "memory_store/judging_staleness.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt(std::vector<std::string> args) {
  return run_kopt(KOPT_BINARY, std::move(args), std::chrono::seconds(120));
}

class StaleJudgmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "memory.db").string();
    auto store = open_store(db_);
    fill_sample_memory(store);
    // The tasks as the user has them now: a copy of the source tree's.
    std::filesystem::create_directories(tasks_);
    for (const char* task : {"axpy", "softmax"}) {
      std::filesystem::copy(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks" / task, tasks_ / task,
                            std::filesystem::copy_options::recursive);
    }
  }

  void execute(const std::string& sql) {
    auto store = open_store(db_);
    ASSERT_TRUE(store.database().execute(sql).ok());
  }

  TempDir dir_;
  std::string db_;
  std::filesystem::path tasks_ = dir_ / "tasks";
  std::filesystem::path out_ = dir_ / "kernels";
};

TEST(StaleJudgmentRule, SaysWhatChanged) {
  EvaluationRecord e;
  EXPECT_TRUE(contains(stale_judgment(e, "", 1), "unknown spec"));
  e.judging_spec_sha256 = "a";
  e.verifier_version = 2;
  EXPECT_EQ(stale_judgment(e, "a", 2), "");
  EXPECT_EQ(stale_judgment(e, "", 2), "");  // current spec unknown: only the verifier is checked
  EXPECT_TRUE(contains(stale_judgment(e, "b", 2), "older task spec"));
  EXPECT_TRUE(contains(stale_judgment(e, "a", 3), "verifier version 2 (this kopt's is 3)"));
  EXPECT_TRUE(contains(stale_judgment(e, "b", 3),
                       "older task spec (task.json or reference.cu "
                       "changed since), and judged by verifier"));
}

TEST_F(StaleJudgmentTest, ExportRefusesAKernelJudgedUnderAnOlderReference) {
  // Reformatting task.json changes nothing a verdict depends on.
  auto text = read_file(tasks_ / "axpy" / "task.json");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(write_file_atomic(tasks_ / "axpy" / "task.json", "\n  " + *text + "\n\n").ok());
  // A new reference does: the softmax verdicts were reached under the old one.
  auto reference = read_file(tasks_ / "softmax" / "reference.cu");
  ASSERT_TRUE(reference.ok());
  ASSERT_TRUE(write_file_atomic(tasks_ / "softmax" / "reference.cu",
                                *reference + "\n// a stricter oracle\n")
                  .ok());
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--tasks", tasks_.string()});
  EXPECT_EQ(out.exit_code, 1) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "refused softmax: the best kernel")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "older task spec")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "re-judge it")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "--allow-stale-judgment")) << out.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(out_ / "axpy.cu"));
  EXPECT_FALSE(std::filesystem::exists(out_ / "softmax.cu"));

  out = kopt({"export", "--db", db_, "--out", out_.string(), "--tasks", tasks_.string(),
              "--allow-stale-judgment"});
  EXPECT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(out_ / "softmax.cu"));
}

TEST_F(StaleJudgmentTest, ExportRefusesAKernelOfAnOlderVerifier) {
  execute(
      "UPDATE evaluations SET verifier_version = 0 WHERE task_id ="
      " (SELECT id FROM tasks WHERE name = 'axpy')");
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--tasks", tasks_.string(),
                   "--task", "axpy"});
  EXPECT_EQ(out.exit_code, 1) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "judged by verifier version 0")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "no currently verified kernel")) << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_ / "axpy.cu"));
}

TEST_F(StaleJudgmentTest, WinsAndTheReportSayWhichVerdictsAreStale) {
  // A later run saw a new softmax spec; its kernels were judged under the old one.
  execute("UPDATE tasks SET judging_spec_sha256 = 'newer' WHERE name = 'softmax'");
  auto out = kopt({"memory", "wins", "--db", db_, "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto wins = nlohmann::json::parse(out.stdout_text);
  ASSERT_EQ(wins.size(), 2u);
  for (const auto& win : wins) {
    if (win["task"] == "softmax") {
      EXPECT_TRUE(contains(win["stale_judgment"].get<std::string>(), "older task spec"));
    } else {
      EXPECT_TRUE(win["stale_judgment"].is_null()) << win.dump();
    }
  }
  out = kopt({"memory", "wins", "--db", db_});
  EXPECT_TRUE(contains(out.stdout_text, "2.00x*")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "older task spec")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "re-judge it")) << out.stdout_text;

  out = kopt({"report", "--db", db_, "--run", "all", "--markdown", "-"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "**softmax**: its best kernel was judged under an older"))
      << out.stdout_text;
  EXPECT_FALSE(contains(out.stdout_text, "**axpy**: its best kernel")) << out.stdout_text;
}

}  // namespace
}  // namespace kopt::memory
