// CI half of the sanitizer suite: every kernel in tests/sandbox/sanitizer/ is a well-formed kernel
// file for its task that compiles, expects `sanitizer` (naming the tool that must find it) or
// `ok` (a twin every tool must pass), and each finding kernel has a twin. The GPU half is
// sanitizer_gpu_test.cc.
#include <gtest/gtest.h>

#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "tests/sandbox/adversarial_files.h"

namespace kopt::testing {
namespace {

TEST(SanitizerSuite, EachToolsKernelHasACorrectTwin) {
  auto kernels = kernels_in(KOPT_SANITIZER_DIR);
  ASSERT_TRUE(kernels.ok()) << kernels.error();
  int finding = 0, twins = 0;
  bool memcheck = false, racecheck = false;
  for (const auto& k : *kernels) {
    if (k.expected == std::vector<Verdict>{Verdict::kSanitizer}) {
      ++finding;
      memcheck = memcheck || k.source.find("// tool: memcheck\n") != std::string::npos;
      racecheck = racecheck || k.source.find("// tool: racecheck\n") != std::string::npos;
    } else {
      EXPECT_EQ(k.expected, std::vector<Verdict>{Verdict::kOk}) << k.name;
      ++twins;
    }
  }
  EXPECT_TRUE(memcheck);
  EXPECT_TRUE(racecheck);
  EXPECT_GE(twins, finding);
}

class SanitizerFile : public ::testing::TestWithParam<std::string> {};

TEST_P(SanitizerFile, ParsesForItsTaskAndCompiles) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_SANITIZER_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  auto task = load_task(adversarial_task_dir(kernel->task));
  ASSERT_TRUE(task.ok()) << task.error();
  auto file = parse_kernel_file(kernel->source, kernel->path.string(), &*task);
  ASSERT_TRUE(file.ok()) << file.error();
  auto compiled = compile_kernel(make_compile_request(*file, {}, "sm_90a"), nullptr);
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  EXPECT_TRUE(compiled->ok) << compiled->log;
}

INSTANTIATE_TEST_SUITE_P(Kernels, SanitizerFile,
                         ::testing::ValuesIn(kernel_names_in(KOPT_SANITIZER_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

}  // namespace
}  // namespace kopt::testing
