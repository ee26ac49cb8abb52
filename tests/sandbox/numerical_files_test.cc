// CI half of the numerical suite (issue 15): every planted-bug kernel in tests/sandbox/numerical/
// names a stress round its task declares, and is a well-formed kernel file that compiles. The GPU
// half, numerical_test.cc, runs them through the real worker.
#include <gtest/gtest.h>

#include <set>

#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "tests/sandbox/adversarial_files.h"

namespace kopt::testing {
namespace {

TEST(NumericalSuite, EveryTaskWithStressRoundsHasAPlantedBug) {
  auto kernels = kernels_in(KOPT_NUMERICAL_DIR);
  ASSERT_TRUE(kernels.ok()) << kernels.error();
  std::set<std::string> covered;
  for (const auto& k : *kernels) covered.insert(k.task);
  for (const auto& dir :
       std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks")) {
    if (!dir.is_directory()) continue;
    auto task = load_task(dir.path());
    ASSERT_TRUE(task.ok()) << task.error();
    if (!task->stress.empty()) {
      EXPECT_TRUE(covered.count(task->name))
          << task->name << " has stress rounds but no planted bug in tests/sandbox/numerical/";
    }
  }
}

class NumericalFile : public ::testing::TestWithParam<std::string> {};

TEST_P(NumericalFile, NamesAStressRoundOfItsTaskAndCompiles) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_NUMERICAL_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  EXPECT_EQ(kernel->expected, std::vector<Verdict>{Verdict::kIncorrect});
  EXPECT_EQ(kernel->without_stress, std::vector<Verdict>{Verdict::kOk});
  auto task = load_task(adversarial_task_dir(kernel->task));
  ASSERT_TRUE(task.ok()) << task.error();
  bool named = false;
  for (const auto& round : task->stress) named = named || round.name == kernel->stress;
  EXPECT_TRUE(named) << kernel->name << ": task " << kernel->task << " has no stress round '"
                     << kernel->stress << "'";
  auto file = parse_kernel_file(kernel->source, kernel->path.string(), &*task);
  ASSERT_TRUE(file.ok()) << file.error();
  auto compiled = compile_kernel(make_compile_request(*file, {}, "sm_90a"), nullptr);
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  EXPECT_TRUE(compiled->ok) << compiled->log;
}

INSTANTIATE_TEST_SUITE_P(Kernels, NumericalFile,
                         ::testing::ValuesIn(kernel_names_in(KOPT_NUMERICAL_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

}  // namespace
}  // namespace kopt::testing
