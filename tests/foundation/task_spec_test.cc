// task.json parsing and validation: every bad input names the file and the JSON path.
#include "sandbox/task_spec.h"

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using nlohmann::json;
using testing::contains;
using testing::good_task_json;
using testing::TempDir;

constexpr const char* kOrigin = "tasks/t/task.json";

// Parses a mutated good task and returns the error text (the test fails if it parsed).
std::string task_error(const json& task) {
  auto parsed = parse_task(task.dump(2), kOrigin);
  EXPECT_FALSE(parsed.ok()) << "parsed: " << task.dump();
  return parsed.ok() ? "" : parsed.error();
}

// The error names the file and the JSON path on one line, and says `what`.
void expect_error_at(const std::string& error, const std::string& path, const std::string& what) {
  std::string prefix = std::string(kOrigin) + ": " + path + ": ";
  bool found = false;
  size_t line_start = 0;
  while (line_start <= error.size()) {
    size_t end = error.find('\n', line_start);
    std::string line = error.substr(line_start, end - line_start);
    if (line.rfind(prefix, 0) == 0 && contains(line, what)) found = true;
    if (end == std::string::npos) break;
    line_start = end + 1;
  }
  EXPECT_TRUE(found) << "expected a line '" << prefix << "...' saying '" << what << "' in:\n"
                     << error;
}

TEST(TaskSpec, GoodTaskParses) {
  std::string text = good_task_json().dump(2);
  auto task = parse_task(text, kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(task->format, 1);
  EXPECT_EQ(task->name, "axpy_test");
  EXPECT_EQ(task->tags, (std::vector<std::string>{"elementwise", "memory-bound", "fp32"}));
  EXPECT_EQ(task->sizes.at("n"), 4096);
  EXPECT_DOUBLE_EQ(task->constants.at("alpha"), 1.5);
  ASSERT_EQ(task->inputs.size(), 2u);
  EXPECT_EQ(task->inputs[0].dtype, DType::kF32);
  EXPECT_EQ(task->inputs[0].init.dist, "normal");
  EXPECT_EQ(task->inputs[1].init.dist, "uniform");
  EXPECT_DOUBLE_EQ(task->inputs[1].init.low, -2.0);
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(task->outputs[0].name, "out");
  ASSERT_EQ(task->shapes.size(), 3u);
  EXPECT_EQ(task->shapes[1].at("n"), 1023);
  EXPECT_TRUE(task->shapes[2].empty());
  ASSERT_EQ(task->holdout.size(), 1u);
  EXPECT_DOUBLE_EQ(task->tolerance.max_error, 1e-4);
  EXPECT_DOUBLE_EQ(task->tolerance.min_pass_fraction, 1.0);  // the default
  EXPECT_EQ(task->peak, "fp32");
  EXPECT_DOUBLE_EQ(task->priority, 1.0);
  EXPECT_EQ(task->spec_hash, sha256_hex(text));
  EXPECT_EQ(task->raw_json, text);

  EXPECT_EQ(task->bind({{"n", 7}}).at("n"), 7);
  EXPECT_EQ(task->bind({}).at("n"), 4096);
  auto count = task->element_count(task->inputs[0], task->bind({{"n", 1023}}));
  ASSERT_TRUE(count.ok()) << count.error();
  EXPECT_EQ(*count, 1023);
  ASSERT_NE(task->find_tensor("out"), nullptr);
  EXPECT_EQ(task->find_tensor("nope"), nullptr);
}

TEST(TaskSpec, IntegerInputsWithRandintBoundsOverSizes) {
  json t = good_task_json();
  t["sizes"]["vocab"] = 1000;
  t["inputs"].push_back({{"name", "ids"},
                         {"dtype", "i32"},
                         {"shape", {"n"}},
                         {"init", {{"dist", "randint"}, {"low", 0}, {"high", "vocab"}}}});
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(task->inputs[2].dtype, DType::kI32);
  EXPECT_EQ(task->inputs[2].init.int_low, "0");
  EXPECT_EQ(task->inputs[2].init.int_high, "vocab");
}

TEST(TaskSpec, InvalidJsonNamesLineAndColumn) {
  std::string text = "{\n  \"format\": 1,\n  \"name\": ,\n  \"tags\": []\n}\n";
  auto task = parse_task(text, kOrigin);
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), std::string(kOrigin) + ":3:11: invalid JSON")) << task.error();
}

TEST(TaskSpec, InvalidJsonOnTheFirstLine) {
  auto task = parse_task("[1, 2", kOrigin);
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), std::string(kOrigin) + ":1:")) << task.error();
  auto empty = parse_task("", kOrigin);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(contains(empty.error(), std::string(kOrigin) + ":1:1: invalid JSON"))
      << empty.error();
}

TEST(TaskSpec, TopLevelMustBeAnObject) {
  auto task = parse_task("[1, 2]", kOrigin);
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), std::string(kOrigin) + ": $: expected an object"))
      << task.error();
}

TEST(TaskSpec, MissingRequiredFields) {
  for (const char* key : {"format", "name", "description", "tags", "sizes", "inputs", "outputs",
                          "shapes", "tolerance", "flops", "bytes"}) {
    json t = good_task_json();
    t.erase(key);
    expect_error_at(task_error(t), std::string("$.") + key, "required field is missing");
  }
  json t = good_task_json();
  t["tolerance"].erase("max_error");
  expect_error_at(task_error(t), "$.tolerance.max_error", "required field is missing");
  t = good_task_json();
  t["inputs"][1].erase("dtype");
  expect_error_at(task_error(t), "$.inputs[1].dtype", "required field is missing");
}

TEST(TaskSpec, WrongTypes) {
  json t = good_task_json();
  t["sizes"] = json::array();
  expect_error_at(task_error(t), "$.sizes", "expected an object, found an array");
  t = good_task_json();
  t["format"] = "1";
  expect_error_at(task_error(t), "$.format", "expected an integer, found a string");
  t = good_task_json();
  t["tags"] = "elementwise";
  expect_error_at(task_error(t), "$.tags", "expected an array, found a string");
  t = good_task_json();
  t["tags"][1] = 3;
  expect_error_at(task_error(t), "$.tags[1]", "expected a string, found an integer");
  t = good_task_json();
  t["inputs"][0]["shape"] = "n";
  expect_error_at(task_error(t), "$.inputs[0].shape", "expected an array");
  t = good_task_json();
  t["tolerance"]["atol"] = "tight";
  expect_error_at(task_error(t), "$.tolerance.atol", "expected a number, found a string");
  t = good_task_json();
  t["constants"]["alpha"] = "big";
  expect_error_at(task_error(t), "$.constants.alpha", "expected a number");
  t = good_task_json();
  t["inputs"][0] = "x";
  expect_error_at(task_error(t), "$.inputs[0]", "expected an object");
}

TEST(TaskSpec, UnknownKeysSuggestTheClosest) {
  json t = good_task_json();
  t["toleranse"] = t["tolerance"];
  expect_error_at(task_error(t), "$.toleranse", "unknown key (did you mean 'tolerance'?)");
  t = good_task_json();
  t["inputs"][0]["dtpe"] = "f32";
  expect_error_at(task_error(t), "$.inputs[0].dtpe", "unknown key (did you mean 'dtype'?)");
  t = good_task_json();
  t["outputs"][0]["init"] = {{"dist", "normal"}};  // outputs are not initialized
  expect_error_at(task_error(t), "$.outputs[0].init", "unknown key");
  t = good_task_json();
  t["tolerance"]["rtoll"] = 1e-3;
  expect_error_at(task_error(t), "$.tolerance.rtoll", "unknown key (did you mean 'rtol'?)");
  t = good_task_json();
  t["inputs"][0]["init"]["stdev"] = 2;
  expect_error_at(task_error(t), "$.inputs[0].init.stdev", "unknown key (did you mean 'std'?)");
}

TEST(TaskSpec, UnknownDtype) {
  json t = good_task_json();
  t["inputs"][0]["dtype"] = "f33";
  expect_error_at(task_error(t), "$.inputs[0].dtype", "unknown dtype 'f33' (did you mean 'f32'?)");
  t = good_task_json();
  t["outputs"][0]["dtype"] = "float";
  expect_error_at(task_error(t), "$.outputs[0].dtype", "unknown dtype 'float'");
}

// e4m3 (one byte, saturating at +-448, no infinities), and the fp8 tensor-core peak.
TEST(TaskSpec, E4m3InputsAndTheFp8Peak) {
  json t = good_task_json();
  t["format"] = 3;
  t["inputs"][0]["dtype"] = "e4m3";
  t["inputs"][0]["init"] = {{"dist", "normal"}, {"std", 100}};  // tails saturate: allowed
  t["inputs"][1]["dtype"] = "e4m3";
  t["inputs"][1]["init"] = {{"dist", "uniform"}, {"low", -448}, {"high", 448}};
  t["peak"] = "fp8_tensor";
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(task->inputs[0].dtype, DType::kE4M3);
  EXPECT_EQ(task->peak, "fp8_tensor");
  auto bytes = task->tensor_bytes(task->bind({}));  // one byte an element: 4096 + 4096 + 4 * 4096
  ASSERT_TRUE(bytes.ok()) << bytes.error();
  EXPECT_EQ(*bytes, 6 * 4096);

  json bad = t;
  bad["inputs"][0]["dtype"] = "e4m4";
  expect_error_at(task_error(bad), "$.inputs[0].dtype",
                  "unknown dtype 'e4m4' (did you mean 'e4m3'?)");
  bad = t;
  bad["peak"] = "fp8_tensr";
  expect_error_at(task_error(bad), "$.peak",
                  "unknown peak 'fp8_tensr' (did you mean 'fp8_tensor'?)");
  bad = t;
  bad["inputs"][1]["init"]["high"] = 449;
  expect_error_at(task_error(bad), "$.inputs[1].init.high", "outside e4m3's finite range");
  bad = t;
  bad["inputs"][1]["init"] = {{"dist", "constant"}, {"value", -500}};
  expect_error_at(task_error(bad), "$.inputs[1].init.value", "outside e4m3's finite range");
  bad = t;
  bad["inputs"][0]["init"]["neg_inf"] = 0.25;
  expect_error_at(task_error(bad), "$.inputs[0].init.neg_inf", "e4m3 has no infinities");
  bad = t;  // stress rounds are read with the input's dtype too
  bad["stress"] = {{{"name", "hot"}, {"inputs", {{"y", {{"dist", "constant"}, {"value", 1000}}}}}}};
  expect_error_at(task_error(bad), "$.stress[0].inputs.y.value", "outside e4m3's finite range");
}

TEST(TaskSpec, UnknownSymbolInExpressions) {
  json t = good_task_json();
  t["inputs"][1]["shape"] = {"n", "m"};
  expect_error_at(task_error(t), "$.inputs[1].shape[1]", "unknown symbol 'm'");
  t = good_task_json();
  t["flops"] = "2*nn";
  expect_error_at(task_error(t), "$.flops", "unknown symbol 'nn' in '2*nn' (did you mean 'n'?)");
  t = good_task_json();
  t["bytes"] = "12*n +";
  expect_error_at(task_error(t), "$.bytes", "unexpected end at column 7");
  t = good_task_json();
  t["inputs"][0]["dtype"] = "i64";
  t["inputs"][0]["init"] = {{"dist", "randint"}, {"low", 0}, {"high", "vocab"}};
  expect_error_at(task_error(t), "$.inputs[0].init.high", "unknown symbol 'vocab'");
}

TEST(TaskSpec, ShapeOverrideOfAnUnknownSize) {
  json t = good_task_json();
  t["shapes"].push_back({{"N", 5}});
  expect_error_at(task_error(t), "$.shapes[3].N", "not a size of this task (did you mean 'n'?)");
  t = good_task_json();
  t["holdout"] = {{{"rows", 5}}};
  expect_error_at(task_error(t), "$.holdout[0].rows", "not a size of this task");
}

TEST(TaskSpec, NonPositiveSizes) {
  json t = good_task_json();
  t["sizes"]["n"] = 0;
  expect_error_at(task_error(t), "$.sizes.n", "positive integer");
  t = good_task_json();
  t["sizes"]["n"] = -3;
  expect_error_at(task_error(t), "$.sizes.n", "positive integer");
  t = good_task_json();
  t["sizes"]["n"] = 2.5;
  expect_error_at(task_error(t), "$.sizes.n", "positive integer");
  t = good_task_json();
  t["shapes"][0]["n"] = 0;
  expect_error_at(task_error(t), "$.shapes[0].n", "positive integer");
  t = good_task_json();
  t["holdout"][0]["n"] = -1;
  expect_error_at(task_error(t), "$.holdout[0].n", "positive integer");
}

TEST(TaskSpec, ShapeThatMakesADimensionNegative) {
  json t = good_task_json();
  t["outputs"][0]["shape"] = {"n - 2"};
  expect_error_at(task_error(t), "$.shapes[0]", "negative dimension");
}

TEST(TaskSpec, BadTolerance) {
  struct Case {
    const char* key;
    double value;
  };
  for (const Case& c : {Case{"atol", -1e-6}, Case{"rtol", -1}, Case{"max_error", 0},
                        Case{"min_pass_fraction", 1.5}, Case{"min_pass_fraction", 0}}) {
    json t = good_task_json();
    t["tolerance"][c.key] = c.value;
    expect_error_at(task_error(t), std::string("$.tolerance.") + c.key, "must be");
  }
}

TEST(TaskSpec, FormatNewerThanSupported) {
  json t = good_task_json();
  t["format"] = kTaskFormatVersion + 1;
  expect_error_at(task_error(t), "$.format", "is newer than this kopt");
}

TEST(TaskSpec, FormatMustBePositive) {
  json t = good_task_json();
  t["format"] = 0;
  expect_error_at(task_error(t), "$.format", "at least 1");
  t["format"] = 18446744073709551615ull;  // wraps to -1 as int64
  expect_error_at(task_error(t), "$.format", "at least 1");
}

TEST(TaskSpec, DuplicateTensorNames) {
  json t = good_task_json();
  t["outputs"][0]["name"] = "x";
  expect_error_at(task_error(t), "$.outputs[0].name", "tensor name 'x' is used twice");
  t = good_task_json();
  t["inputs"][1]["name"] = "x";
  expect_error_at(task_error(t), "$.inputs[1].name", "tensor name 'x' is used twice");
  t = good_task_json();
  t["outputs"][0]["name"] = "n";
  expect_error_at(task_error(t), "$.outputs[0].name", "also a size or constant");
}

TEST(TaskSpec, IntegerInputWithoutRandint) {
  json t = good_task_json();
  t["inputs"][0]["dtype"] = "i32";
  expect_error_at(task_error(t), "$.inputs[0].init", "randint");
  t["inputs"][0].erase("init");  // the default (normal) is not an integer distribution either
  expect_error_at(task_error(t), "$.inputs[0].init", "randint");
}

TEST(TaskSpec, BadRandintBounds) {
  json t = good_task_json();
  t["inputs"][0]["dtype"] = "i32";
  t["inputs"][0]["init"] = {{"dist", "randint"}, {"low", 5}, {"high", 5}};
  expect_error_at(task_error(t), "$.inputs[0].init", "low must be below high");
  t["inputs"][0]["init"] = {{"dist", "randint"}, {"low", 0}};
  expect_error_at(task_error(t), "$.inputs[0].init.high", "required field is missing");
  t["inputs"][0]["init"] = {{"dist", "randint"}, {"low", 0}, {"high", 1.5}};
  expect_error_at(task_error(t), "$.inputs[0].init.high", "expected an integer");
}

TEST(TaskSpec, BadDistributions) {
  json t = good_task_json();
  t["inputs"][0]["init"] = {{"dist", "gauss"}};
  expect_error_at(task_error(t), "$.inputs[0].init.dist", "unknown distribution 'gauss'");
  t["inputs"][0]["init"] = {{"dist", "normal"}, {"std", 0}};
  expect_error_at(task_error(t), "$.inputs[0].init.std", "must be positive");
  t["inputs"][0]["init"] = {{"dist", "uniform"}, {"low", 1}, {"high", -1}};
  expect_error_at(task_error(t), "$.inputs[0].init", "low must be below high");
}

TEST(TaskSpec, BadNamesPeakAndPriority) {
  json t = good_task_json();
  t["name"] = "Axpy Test";
  expect_error_at(task_error(t), "$.name", "lower-case");
  t = good_task_json();
  t["name"] = "";
  expect_error_at(task_error(t), "$.name", "empty");
  t = good_task_json();
  t["peak"] = "fp33";
  expect_error_at(task_error(t), "$.peak", "unknown peak 'fp33' (did you mean 'fp32'?)");
  t = good_task_json();
  t["priority"] = 0;
  expect_error_at(task_error(t), "$.priority", "must be positive");
  t = good_task_json();
  t["inputs"][0]["name"] = "2x";
  expect_error_at(task_error(t), "$.inputs[0].name", "not an identifier");
  t = good_task_json();
  t["constants"]["n"] = 1.0;
  expect_error_at(task_error(t), "$.constants.n", "also declared as a size");
  t = good_task_json();
  t["outputs"] = json::array();
  expect_error_at(task_error(t), "$.outputs", "at least one");
}

TEST(TaskSpec, EveryProblemIsReportedInOnePass) {
  json t = good_task_json();
  t["inputs"][0]["dtype"] = "f33";
  t["flops"] = "2*m";
  t["tolerance"]["atoll"] = 1;
  std::string error = task_error(t);
  expect_error_at(error, "$.inputs[0].dtype", "unknown dtype");
  expect_error_at(error, "$.flops", "unknown symbol 'm'");
  expect_error_at(error, "$.tolerance.atoll", "unknown key");
}

TEST(TaskSpec, LoadTaskFromADirectory) {
  TempDir dir;
  testing::write_task_dir(dir.path(), good_task_json());
  auto task = load_task(dir.path());
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(task->dir, dir.path());
  EXPECT_EQ(task->name, "axpy_test");
}

TEST(TaskSpec, LoadTaskErrorsNameTheTaskJsonFile) {
  TempDir dir;
  json t = good_task_json();
  t["inputs"][0]["dtype"] = "f33";
  testing::write_task_dir(dir.path(), t);
  auto task = load_task(dir.path());
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), (dir.path() / "task.json").string() + ": $.inputs[0].dtype"))
      << task.error();
}

TEST(TaskSpec, MissingReferenceOrBaseline) {
  for (const char* missing : {"reference.cu", "baseline.cu"}) {
    TempDir dir;
    testing::write_task_dir(dir.path(), good_task_json());
    std::filesystem::remove(dir.path() / missing);
    auto task = load_task(dir.path());
    ASSERT_FALSE(task.ok()) << missing;
    EXPECT_TRUE(contains(task.error(), (dir.path() / missing).string() + ": missing"))
        << task.error();
  }
}

TEST(TaskSpec, DirectoryWithoutTaskJson) {
  TempDir dir;
  testing::write_text(dir / "reference.cu", testing::good_kernel_source());
  auto task = load_task(dir.path());
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), (dir.path() / "task.json").string() + ": cannot open"))
      << task.error();
  auto none = load_task(dir / "no-such-dir");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(contains(none.error(), (dir / "no-such-dir").string())) << none.error();
}

TEST(TaskSpec, TaskJsonThatIsADirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir / "task.json");
  auto task = load_task(dir.path());
  ASSERT_FALSE(task.ok());
  EXPECT_TRUE(contains(task.error(), (dir.path() / "task.json").string())) << task.error();
  EXPECT_FALSE(contains(task.error(), "invalid JSON")) << task.error();
}

TEST(TaskSpec, TheSuiteTasksParse) {
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks")) {
    if (!std::filesystem::exists(entry.path() / "task.json")) continue;
    auto task = load_task(entry.path());
    EXPECT_TRUE(task.ok()) << (task.ok() ? "" : task.error());
    ++seen;
  }
  EXPECT_GE(seen, 2);
}

}  // namespace
}  // namespace kopt
