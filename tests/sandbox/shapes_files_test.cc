// CI half of the shapes suite (tests/sandbox/shapes/): every file is a well-formed kernel of its
// task that compiles, every planted bug has its correct twin, and at the GPU test's seed the
// suite's drawn shapes hold each trap (the GPU half, shapes_test.cc, runs them on the worker).
#include <gtest/gtest.h>

#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/shape_draw.h"
#include "sandbox/task_spec.h"
#include "tests/sandbox/adversarial_files.h"
#include "tests/sandbox/shape_trap_seed.h"

namespace kopt::testing {
namespace {

TEST(ShapesSuite, EveryPlantedBugHasACorrectTwinOfItsTask) {
  auto kernels = kernels_in(KOPT_SHAPES_DIR);
  ASSERT_TRUE(kernels.ok()) << kernels.error();
  std::map<std::string, int> planted, twins;
  for (const auto& k : *kernels)
    ++(k.expected == std::vector<Verdict>{Verdict::kOk} ? twins : planted)[k.task];
  EXPECT_EQ(planted.size(), 6u);
  EXPECT_EQ(planted, twins);
}

std::vector<ShapeBinding> drawn_at_test_seed(const std::string& name) {
  auto task = load_task(adversarial_task_dir(name));
  EXPECT_TRUE(task.ok()) << task.error();
  if (!task.ok()) return {};
  auto shapes = draw_shapes(*task, draw_seed(kShapeTrapSeed));
  EXPECT_TRUE(shapes.ok()) << shapes.error();
  return shapes.ok() ? *shapes : std::vector<ShapeBinding>{};
}

TEST(ShapesSuite, SuiteDrawsAtTheTestSeedSpringEveryTrap) {
  bool two_mod_four = false;
  for (const auto& s : drawn_at_test_seed("softmax"))
    two_mod_four = two_mod_four || (s.at("cols") % 4 == 2 && s.at("cols") >= 4);
  EXPECT_TRUE(two_mod_four) << "softmax: no row length 2 mod 4 (and >= 4)";
  bool long_row = false;
  for (const auto& s : drawn_at_test_seed("prefix_sum"))
    long_row = long_row || s.at("cols") > (1 << 18);
  EXPECT_TRUE(long_row) << "prefix_sum: no row past 2^18";
  bool odd_ratio = false;
  for (const auto& s : drawn_at_test_seed("decode_attention")) {
    int64_t ratio = s.at("q_heads") / s.at("kv_heads");
    EXPECT_EQ(s.at("q_heads") % s.at("kv_heads"), 0);
    EXPECT_EQ(s.at("d"), 128);
    odd_ratio = odd_ratio || (ratio & (ratio - 1)) != 0;
  }
  EXPECT_TRUE(odd_ratio) << "decode_attention: every group ratio a power of two";
}

TEST(ShapesSuite, MirroredAndStructuredRoundsOfTheSuite) {
  auto ce = load_task(adversarial_task_dir("cross_entropy"));
  ASSERT_TRUE(ce.ok()) << ce.error();
  bool mirrored = false;
  for (const auto& r : ce->stress)
    mirrored = mirrored || (r.mirror_of == "mean 1000" && r.inputs.at("logits").mean == -1000);
  EXPECT_TRUE(mirrored) << "cross_entropy has no 'mean -1000' twin";
  auto topk = load_task(adversarial_task_dir("topk"));
  ASSERT_TRUE(topk.ok()) << topk.error();
  bool repeated = false;
  for (const auto& r : topk->stress) repeated = repeated || !r.inputs.at("x").repeated_max.empty();
  EXPECT_TRUE(repeated);
  auto embedding = load_task(adversarial_task_dir("embedding"));
  ASSERT_TRUE(embedding.ok()) << embedding.error();
  bool big_table = false;
  for (const auto& h : embedding->holdout) {
    ShapeBinding s = embedding->bind(h);
    big_table = big_table || s.at("vocab") * s.at("hidden") * 2 > (int64_t(1) << 31);
  }
  EXPECT_TRUE(big_table) << "embedding has no holdout table over 2 GiB";
}

class ShapesFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapesFile, ParsesForItsTaskAndCompiles) {
  auto kernel =
      read_adversarial_kernel(std::filesystem::path(KOPT_SHAPES_DIR) / (GetParam() + ".cu"));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  auto task = load_task(adversarial_task_dir(kernel->task));
  ASSERT_TRUE(task.ok()) << task.error();
  auto file = parse_kernel_file(kernel->source, kernel->path.string(), &*task);
  ASSERT_TRUE(file.ok()) << file.error();
  auto compiled = compile_kernel(make_compile_request(*file, {}, "sm_90a"), nullptr);
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  EXPECT_TRUE(compiled->ok) << compiled->log;
}

INSTANTIATE_TEST_SUITE_P(Kernels, ShapesFile, ::testing::ValuesIn(kernel_names_in(KOPT_SHAPES_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           return file.param;
                         });

}  // namespace
}  // namespace kopt::testing
