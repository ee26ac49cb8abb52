// The beam's ranking and diversity, and the built-in tuner's sweep and kernel rewriting.
#include <gtest/gtest.h>

#include "common/files.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "src/orchestrator/beam.h"
#include "src/orchestrator/tuner.h"
#include "tests/orchestrator/orchestrator_test_support.h"

namespace kopt::orchestrator {
namespace {

VerifiedKernel kernel(int64_t id, double speedup, std::string source) {
  VerifiedKernel k;
  k.kernel_id = id;
  k.speedup = speedup;
  k.source = std::move(source);
  return k;
}

std::string axpy_baseline() {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy/baseline.cu");
  if (!text) throw std::runtime_error(text.error());
  return *text;
}

TEST(CodeSimilarity, IgnoresCommentsAndThePlanButNotCode) {
  std::string a = axpy_baseline();
  auto tuned = with_default_tunables(a, {{"BLOCK", 512}});
  ASSERT_TRUE(tuned) << tuned.error();
  EXPECT_DOUBLE_EQ(code_similarity(a, *tuned), 1.0);
  std::string vec4 = kopt::testing::replay_kernel("01_axpy_vec4.txt");
  EXPECT_LT(code_similarity(a, vec4), 0.7);
  EXPECT_DOUBLE_EQ(code_similarity("", ""), 1.0);
}

TEST(Beam, KeepsTheFastestDistinctKernels) {
  std::string a = axpy_baseline();
  std::string b = kopt::testing::replay_kernel("01_axpy_vec4.txt");
  std::string c = kopt::testing::replay_kernel("05_axpy_unrolled.txt");
  std::string d = kopt::testing::replay_kernel("02_softmax_online.txt");
  Beam beam(3, 0.92);
  EXPECT_TRUE(beam.offer(kernel(1, 1.0, a)));
  EXPECT_TRUE(beam.offer(kernel(2, 1.3, b)));
  EXPECT_TRUE(beam.offer(kernel(3, 1.1, c)));
  EXPECT_FALSE(beam.offer(kernel(3, 1.1, c)));  // already a member
  // Full: a slower kernel stays out, a faster one pushes the slowest out.
  EXPECT_FALSE(beam.offer(kernel(4, 0.9, d)));
  EXPECT_TRUE(beam.offer(kernel(5, 1.2, d)));
  ASSERT_EQ(beam.members().size(), 3u);
  EXPECT_EQ(beam.members()[0].kernel_id, 2);
  EXPECT_EQ(beam.members()[1].kernel_id, 5);
  EXPECT_EQ(beam.members()[2].kernel_id, 3);
  EXPECT_FALSE(beam.contains(1));
}

TEST(Beam, ANearCopyTakesTheSlotOnlyWhenFaster) {
  std::string a = axpy_baseline();
  auto tuned = with_default_tunables(a, {{"BLOCK", 512}});
  ASSERT_TRUE(tuned);
  Beam beam(4, 0.92);
  ASSERT_TRUE(beam.offer(kernel(1, 1.0, a)));
  EXPECT_FALSE(beam.offer(kernel(2, 0.95, *tuned)));  // a slower copy of a member
  EXPECT_TRUE(beam.offer(kernel(3, 1.1, *tuned)));    // a faster copy replaces it
  ASSERT_EQ(beam.members().size(), 1u);
  EXPECT_EQ(beam.best()->kernel_id, 3);
}

TEST(Tuner, RewritingDefaultsKeepsAValidKernelFile) {
  auto task = load_task(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy");
  ASSERT_TRUE(task) << task.error();
  std::string unrolled = kopt::testing::replay_kernel("05_axpy_unrolled.txt");
  auto tuned = with_default_tunables(unrolled, {{"BLOCK", 512}, {"ITEMS", 8}});
  ASSERT_TRUE(tuned) << tuned.error();
  auto file = parse_kernel_file(*tuned, "tuned.cu", &*task);
  ASSERT_TRUE(file) << file.error() << "\n" << *tuned;
  EXPECT_EQ(file->tunable_values({}), (TunableConfig{{"BLOCK", 512}, {"ITEMS", 8}}));
  ASSERT_EQ(file->tunables.size(), 2u);
  EXPECT_EQ(file->tunables[1].values, (std::vector<int64_t>{8, 4, 2}));  // nothing lost
  // The code itself is untouched, and rewriting is deterministic.
  EXPECT_NE(tuned->find("axpy_unrolled(const float* __restrict__ x"), std::string::npos);
  EXPECT_EQ(*tuned, *with_default_tunables(unrolled, {{"BLOCK", 512}, {"ITEMS", 8}}));
  EXPECT_FALSE(with_default_tunables(unrolled, {{"BLOCK", 384}}));
  EXPECT_FALSE(with_default_tunables(unrolled, {{"VEC", 4}}));
  EXPECT_FALSE(with_default_tunables("no plan here", {}));
}

TEST(Tuner, SmallSpacesAreSweptWhole) {
  TunerSweep sweep({{"BLOCK", {256, 128, 512}}, {"ITEMS", {4, 2}}}, 24);
  EXPECT_TRUE(sweep.has_space());
  EXPECT_EQ(sweep.defaults(), (TunableConfig{{"BLOCK", 256}, {"ITEMS", 4}}));
  auto batch = sweep.next_batch({});
  EXPECT_EQ(batch.size(), 5u);  // 3 x 2 minus the defaults
  EXPECT_TRUE(sweep.next_batch({{"BLOCK", 512}, {"ITEMS", 2}}).empty());
}

// Each tunable changed alone from `from`: how many differ.
int changed_from(const TunableConfig& config, const TunableConfig& from) {
  int changed = 0;
  for (const auto& [name, value] : from) changed += config.at(name) != value;
  return changed;
}

TEST(Tuner, LargeSpacesAreSearchedInRungsThatHalveAndGrowFromTheBest) {
  std::vector<Tunable> tunables = {{"A", {1, 2, 3, 4}}, {"B", {1, 2, 3, 4}}, {"C", {1, 2, 3, 4}}};
  TunerSweep sweep(tunables, 10);
  EXPECT_EQ(sweep.space(), 64);
  EXPECT_EQ(describe_space(sweep), "64 configurations");
  const TunableConfig defaults = {{"A", 1}, {"B", 1}, {"C", 1}};
  // The first rung: half the cap, one-tunable moves from the defaults for two thirds of it.
  auto first = sweep.next_batch({});
  ASSERT_EQ(first.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(changed_from(first[i], defaults), 1) << i;
  for (const auto& config : first) sweep.record(config, config.at("A") == 3 ? 2.0 : 1.0);
  // The next rung: half of what is left, grown from the best (A=3) first.
  auto second = sweep.next_batch({});
  ASSERT_EQ(second.size(), 3u);
  for (const auto& config : second) {
    EXPECT_EQ(config.at("A"), 3) << describe_config(config);
    EXPECT_EQ(changed_from(config, {{"A", 3}, {"B", 1}, {"C", 1}}), 1) << describe_config(config);
  }
  for (const auto& config : second) sweep.record(config, 1.5);
  EXPECT_EQ(sweep.next_batch({}).size(), 1u);
  EXPECT_EQ(sweep.next_batch({}).size(), 1u);
  EXPECT_EQ(sweep.proposed(), 10);
  EXPECT_TRUE(sweep.next_batch({}).empty());
}

TEST(Tuner, ManyTunablesStillDrawFromTheWholeProduct) {
  // 6 tunables of 6 values: 30 one-tunable moves, more than a rung of 12 holds.
  std::vector<Tunable> tunables;
  for (std::string name : {"A", "B", "C", "D", "E", "F"})
    tunables.push_back({name, {1, 2, 3, 4, 5, 6}});
  TunerSweep sweep(tunables, 24);
  TunableConfig defaults;
  for (const auto& t : tunables) defaults[t.name] = 1;
  auto first = sweep.next_batch({});
  ASSERT_EQ(first.size(), 12u);
  int moves = 0, drawn = 0;
  for (const auto& config : first) (changed_from(config, defaults) == 1 ? moves : drawn)++;
  EXPECT_EQ(moves, 8);
  EXPECT_GE(drawn, 3);  // a draw may itself be a one-tunable move, rarely
}

TEST(Tuner, ASecondNightAsksForTheSameConfigurationsAndSkipsWhatItJudged) {
  std::vector<Tunable> tunables = {{"A", {1, 2, 3, 4, 5}}, {"B", {8, 16, 32, 64}}, {"C", {1, 2}}};
  TunerSweep night1(tunables, 12), night2(tunables, 12);
  auto first = night1.next_batch({});
  EXPECT_EQ(night2.next_batch({}), first);  // the draws depend on the space alone
  TunerSweep night2_again(tunables, 12);
  for (const auto& config : first) night2_again.record(config, 1.0);
  for (const auto& config : night2_again.next_batch({}))
    EXPECT_EQ(std::count(first.begin(), first.end(), config), 0) << describe_config(config);
}

TEST(Tuner, NothingToSweepWithoutChoices) {
  TunerSweep none({}, 24);
  EXPECT_FALSE(none.has_space());
  TunerSweep single({{"BLOCK", {256}}}, 24);
  EXPECT_FALSE(single.has_space());
  EXPECT_TRUE(single.next_batch({}).empty());
  EXPECT_EQ(describe_config({}), "defaults");
  EXPECT_EQ(describe_config({{"BLOCK", 256}, {"ITEMS", 2}}), "BLOCK=256 ITEMS=2");
  EXPECT_EQ(config_json({{"BLOCK", 256}}), "{\"BLOCK\":256}");
}

}  // namespace
}  // namespace kopt::orchestrator
