// task.json's stress rounds (issue 15): parsing, derived names, and every mistake reported in one
// pass with the file and the JSON path.
#include "sandbox/stress_round.h"

#include <gtest/gtest.h>

#include "sandbox/task_spec.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using nlohmann::json;
using testing::contains;
using testing::good_task_json;

constexpr const char* kOrigin = "tasks/t/task.json";

json stressed_task(json stress) {
  json t = good_task_json();
  t["format"] = 2;
  t["stress"] = std::move(stress);
  return t;
}

std::string errors_of(const json& t) {
  auto parsed = parse_task(t.dump(2), kOrigin);
  EXPECT_FALSE(parsed.ok()) << t.dump();
  return parsed.ok() ? "" : parsed.error();
}

void expect_line(const std::string& errors, const std::string& path, const std::string& what) {
  std::string prefix = std::string(kOrigin) + ": " + path + ": ";
  bool found = false;
  for (size_t start = 0; start <= errors.size();) {
    size_t end = errors.find('\n', start);
    std::string line = errors.substr(start, end - start);
    found = found || (line.rfind(prefix, 0) == 0 && contains(line, what));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  EXPECT_TRUE(found) << "no line '" << prefix << "...' saying '" << what << "' in:\n" << errors;
}

TEST(StressRounds, ParseWithGivenAndDerivedNames) {
  json t = stressed_task(json::parse(R"([
    {"name": "std 40 on x", "inputs": {"x": {"dist": "normal", "std": 40}}},
    {"inputs": {"x": {"dist": "uniform", "low": 500, "high": 600}}},
    {"inputs": {"x": {"dist": "constant", "value": 3, "repeat": "n"}, "y": {"dist": "normal", "std": 2, "neg_inf": 0.25}},
     "shapes": [{"n": 4097}]},
    {"inputs": {"y": {"dist": "randint", "low": 0, "high": 8}}}
  ])"));
  auto task = parse_task(t.dump(2), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  ASSERT_EQ(task->stress.size(), 4u);
  EXPECT_EQ(task->stress[0].name, "std 40 on x");
  EXPECT_DOUBLE_EQ(task->stress[0].inputs.at("x").stddev, 40);
  EXPECT_EQ(task->stress[1].name, "uniform 500..600");
  EXPECT_EQ(task->stress[2].name, "x constant 3, equal runs of n, y std 2, 25% -inf");
  EXPECT_EQ(task->stress[2].shapes, (std::vector<ShapeBinding>{{{"n", 4097}}}));
  EXPECT_EQ(task->stress[3].name, "integers 0..8-1");
  // An input a round does not override keeps its own init.
  EXPECT_EQ(stress_init(&task->stress[0], task->inputs[1]).dist, "uniform");
  EXPECT_EQ(stress_init(&task->stress[0], task->inputs[0]).stddev, 40);
  EXPECT_EQ(stress_init(nullptr, task->inputs[0]).stddev, 1);
}

TEST(StressRounds, RunOnTheCheapSweepShapesAndTheirOwn) {
  json t = stressed_task(json::parse(R"([
    {"inputs": {"x": {"dist": "normal", "std": 40}}},
    {"inputs": {"x": {"dist": "normal", "std": 50}}, "shapes": [{"n": 100000}]}
  ])"));
  t["shapes"] = json::parse(R"([{"n": 1}, {"n": 1023}, {"n": 9000000}, {}])");
  auto task = parse_task(t.dump(2), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  // 9000000 elements x 3 tensors x 4 bytes is over 64 MiB: not a stress shape.
  auto shapes = stress_shapes(*task, task->stress[0], int64_t(64) << 20);
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].at("n"), 1);
  EXPECT_EQ(shapes[2].at("n"), 4096);
  // A round's own shapes come first and add to the cheap sweep shapes (issue 32: a trap named
  // for long rows still springs at the short ones).
  auto own = stress_shapes(*task, task->stress[1], int64_t(64) << 20);
  ASSERT_EQ(own.size(), 4u);
  EXPECT_EQ(own[0].at("n"), 100000);
  EXPECT_EQ(own[1].at("n"), 1);
}

TEST(StressRounds, EveryMistakeIsReportedInOnePassWithItsPath) {
  json t = stressed_task(json::parse(R"([
    {"name": "a", "inputs": {"z": {"dist": "normal", "std": 40}}},
    {"name": "a", "inputs": {"x": {"dist": "normal", "stdev": 4}}},
    {"inputs": {"x": {"dist": "uniform", "low": 5, "high": 1, "neg_inf": 1.5}}},
    {"inputs": {}, "shapes": [{"m": 3}], "seed": 1},
    {"inputs": {"x": {"dist": "constant", "value": 1, "repeat": "rows"}}},
    "std 40"
  ])"));
  std::string errors = errors_of(t);
  expect_line(errors, "$.stress[0].inputs.z", "not an input of this task");
  expect_line(errors, "$.stress[1].inputs.x.stdev", "unknown key (did you mean 'std'?)");
  expect_line(errors, "$.stress[1].name", "is used twice");
  expect_line(errors, "$.stress[2].inputs.x", "low must be below high");
  expect_line(errors, "$.stress[2].inputs.x.neg_inf", "must be a share in [0, 1)");
  expect_line(errors, "$.stress[3].inputs", "override at least one input");
  expect_line(errors, "$.stress[3].shapes[0].m", "not a size of this task");
  expect_line(errors, "$.stress[3].seed", "unknown key");
  expect_line(errors, "$.stress[4].inputs.x.repeat", "unknown symbol 'rows'");
  expect_line(errors, "$.stress[5]", "expected an object");
}

TEST(StressRounds, NeedFormat2AndIntegerInputsStayIntegers) {
  json t = stressed_task(json::parse(R"([{"inputs": {"x": {"dist": "normal", "std": 40}}}])"));
  t["format"] = 1;
  expect_line(errors_of(t), "$.stress", "need \"format\": 2");
  json one = good_task_json();
  one["inputs"][0]["init"] = json::parse(R"({"dist": "normal", "std": 1, "neg_inf": 0.1})");
  expect_line(errors_of(one), "$.inputs[0].init", "need \"format\": 2");

  json ints =
      stressed_task(json::parse(R"([{"inputs": {"ids": {"dist": "normal", "neg_inf": 0.5}}}])"));
  ints["inputs"].push_back(json::parse(
      R"({"name": "ids", "dtype": "i32", "shape": ["n"], "init": {"dist": "randint", "low": 0, "high": 9}})"));
  std::string errors = errors_of(ints);
  expect_line(errors, "$.stress[0].inputs.ids", "integer inputs need \"dist\": \"randint\"");
  expect_line(errors, "$.stress[0].inputs.ids.neg_inf", "only float inputs can hold -inf");
}

TEST(StressRounds, ARunLengthMustBePositiveAtEveryShapeItRunsOn) {
  json t = stressed_task(
      json::parse(R"([{"inputs": {"x": {"dist": "normal", "repeat": "n - 1023"}}}])"));
  // n - 1023 is 0 at the sweep shape n=1023 (and negative at n=1).
  std::string errors = errors_of(t);
  expect_line(errors, "$.stress[0] at $.shapes[1]", "repeat 'n - 1023' must be a positive length");
}

TEST(StressRounds, OldTasksReadAsBefore) {
  auto task = parse_task(good_task_json().dump(2), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(task->format, 1);
  EXPECT_TRUE(task->stress.empty());
}

TEST(InitSpec, DescribesItself) {
  InitSpec init;
  EXPECT_EQ(describe_init(init), "std 1");
  init.mean = 1000;
  EXPECT_EQ(describe_init(init), "mean 1000 std 1");
  init.repeat = "cols";
  init.neg_inf = 0.25;
  EXPECT_EQ(describe_init(init), "mean 1000 std 1, equal runs of cols, 25% -inf");
  EXPECT_TRUE(init.needs_format_2(DType::kF32));
  EXPECT_FALSE(InitSpec{}.needs_format_2(DType::kF32));
}

}  // namespace
}  // namespace kopt
