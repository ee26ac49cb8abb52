// The CLI as a newcomer meets it (issue 37): `kopt tasks check` refuses two folders that give
// one task name (the daemon would refuse the second at start), and `kopt doctor --json` is one
// document that also reports compute-sanitizer and PyTorch. Through the real kopt binary.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

class Cli : public ::testing::Test {
 protected:
  CommandOutput kopt(const std::vector<std::string>& args) {
    return testing::run_kopt(args, cache_.path(), std::chrono::seconds(120));
  }
  static std::string describe(const CommandOutput& out) {
    return "exit " + std::to_string(out.exit_code) + "\n--- stdout:\n" + out.stdout_text +
           "--- stderr:\n" + out.stderr_text;
  }
  TempDir cache_;
  TempDir work_;
};

TEST_F(Cli, TasksCheckRefusesTwoFoldersGivingOneTaskName) {
  auto root = work_ / "tasks";
  testing::write_task_dir(root / "good", testing::good_task_json());
  testing::write_task_dir(root / "good_copy", testing::good_task_json());  // the same name
  CommandOutput out =
      kopt({"tasks", "check", "--compile-only", "--arch", "sm_90a", "--tasks", root.string()});
  EXPECT_EQ(out.exit_code, 1) << describe(out);
  std::string name = testing::good_task_json()["name"].get<std::string>();
  EXPECT_TRUE(contains(out.stdout_text, "the task name \"" + name + "\" is also given by " +
                                            (root / "good_copy").string()))
      << describe(out);
  EXPECT_TRUE(contains(out.stdout_text, "2 tasks, 2 failed compile checks")) << describe(out);
}

TEST_F(Cli, DoctorJsonIsOneDocumentWithTheOptionalTools) {
  // A Python without torch: PyTorch is a note (kopt runs without it), never MISSING.
  ::setenv("KOPT_PYTHON", "/bin/false", 1);
  CommandOutput out = kopt({"doctor", "--json"});
  ::unsetenv("KOPT_PYTHON");
  auto json = nlohmann::json::parse(out.stdout_text, nullptr, false);
  ASSERT_TRUE(json.is_object()) << describe(out);
  EXPECT_EQ(json["exit_code"], out.exit_code);
  std::map<std::string, std::string> states;
  for (const auto& f : json["findings"]) states[f["what"]] = f["state"];
  EXPECT_EQ(states["NVRTC"], "ok") << out.stdout_text;
  EXPECT_EQ(states["PyTorch"], "note") << out.stdout_text;
  EXPECT_TRUE(states["compute-sanitizer"] == "ok" || states["compute-sanitizer"] == "note")
      << out.stdout_text;
  EXPECT_FALSE(contains(out.stdout_text, "kopt " KOPT_VERSION "\n"));  // no text line before it
}

}  // namespace
}  // namespace kopt
