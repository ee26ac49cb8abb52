// Launch plans: the /* kopt:plan */ block of a kernel file, checked against its source and task.
#include "sandbox/kernel_file.h"

#include <gtest/gtest.h>

#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;

constexpr const char* kOrigin = "cands/k.cu";

// A task with sizes rows/cols, a constant eps, input x and output out.
TaskSpec rows_task() {
  auto task = parse_task(R"({
    "format": 1, "name": "rows", "description": "d", "tags": ["t"],
    "sizes": {"rows": 64, "cols": 1000},
    "constants": {"eps": 1e-5},
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["rows", "cols"]}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["rows"]}],
    "shapes": [{}],
    "tolerance": {"atol": 1e-5, "rtol": 1e-5, "max_error": 1e-3},
    "flops": "rows*cols", "bytes": "4*rows*cols + 4*rows"})",
                         "rows/task.json");
  if (!task.ok()) throw std::runtime_error(task.error());
  return *task;
}

const std::string kKernels = R"(
__global__ void row_partials(const float* x, float* partial, int rows, int cols) {}
extern "C" __global__ void __launch_bounds__(256) finish(const float* partial, float* out,
    int rows, long long total, float eps, double eps2) {}
)";

// A kernel file whose plan is `plan` (a JSON object) followed by kKernels.
std::string with_plan(const std::string& plan) {
  return "// test kernel\n/* kopt:plan\n" + plan + "\n*/\n" + kKernels;
}

std::string plan_error(const std::string& source, const TaskSpec* task) {
  auto file = parse_kernel_file(source, kOrigin, task);
  EXPECT_FALSE(file.ok()) << "parsed:\n" << source;
  return file.ok() ? "" : file.error();
}

// The error names the .cu file and the plan's JSON path, and says `what`.
void expect_plan_error(const std::string& error, const std::string& path, const std::string& what) {
  EXPECT_TRUE(contains(error, kOrigin)) << error;
  bool found = false;
  for (size_t start = 0; start <= error.size();) {
    size_t end = error.find('\n', start);
    std::string line = error.substr(start, end - start);
    if (contains(line, kOrigin) && contains(line, ": " + path + ": ") && contains(line, what))
      found = true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  EXPECT_TRUE(found) << "expected '" << path << ": ..." << what << "' in:\n" << error;
}

const char* kGoodPlan = R"~({
  "tunables": {"BLOCK": [256, 128, 512]},
  "scratch": [{"name": "partial", "dtype": "f32", "count": "rows * 64", "zero": true},
              {"name": "flags", "dtype": "i32", "count": "ceil_div(rows, 32)"}],
  "compile_options": ["--use_fast_math", "-maxrregcount=64"],
  "launches": [
    {"kernel": "row_partials", "grid": ["rows", 64], "block": ["BLOCK"],
     "shared_bytes": "BLOCK * 4", "args": ["x", "partial", "rows", "cols"]},
    {"kernel": "finish", "grid": ["ceil_div(rows, 256)", 1, 1], "block": [256],
     "args": ["partial", "out", "i32:rows*2", "i64:rows*cols", "f32:eps", "f64:eps"]}
  ]
})~";

TEST(KernelFile, GoodPlanWithTunablesScratchAndSeveralLaunches) {
  TaskSpec task = rows_task();
  auto file = parse_kernel_file(with_plan(kGoodPlan), kOrigin, &task);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->origin, kOrigin);
  EXPECT_EQ(file->plan_line, 2);
  ASSERT_EQ(file->tunables.size(), 1u);
  EXPECT_EQ(file->tunables[0].name, "BLOCK");
  EXPECT_EQ(file->tunables[0].values, (std::vector<int64_t>{256, 128, 512}));
  EXPECT_EQ(file->tunable_values({}).at("BLOCK"), 256);
  EXPECT_EQ(file->tunable_values({{"BLOCK", 512}}).at("BLOCK"), 512);

  ASSERT_EQ(file->scratch.size(), 2u);
  EXPECT_EQ(file->scratch[0].name, "partial");
  EXPECT_EQ(file->scratch[0].count, "rows * 64");
  EXPECT_TRUE(file->scratch[0].zero);
  EXPECT_EQ(file->scratch[1].dtype, DType::kI32);
  EXPECT_FALSE(file->scratch[1].zero);
  EXPECT_EQ(file->compile_options,
            (std::vector<std::string>{"--use_fast_math", "-maxrregcount=64"}));

  ASSERT_EQ(file->launches.size(), 2u);
  const Launch& first = file->launches[0];
  EXPECT_EQ(first.kernel, "row_partials");
  EXPECT_EQ(first.grid, (std::vector<std::string>{"rows", "64"}));
  EXPECT_EQ(first.block, (std::vector<std::string>{"BLOCK"}));
  EXPECT_EQ(first.shared_bytes, "BLOCK * 4");
  ASSERT_EQ(first.args.size(), 4u);
  EXPECT_EQ(first.args[0].kind, ArgBinding::Kind::kBuffer);
  EXPECT_EQ(first.args[0].buffer, "x");
  EXPECT_EQ(first.args[1].kind, ArgBinding::Kind::kBuffer);  // scratch is a buffer
  EXPECT_EQ(first.args[1].buffer, "partial");
  EXPECT_EQ(first.args[2].kind, ArgBinding::Kind::kInt32);  // a bare size is an int
  EXPECT_EQ(first.args[2].expression, "rows");

  const Launch& second = file->launches[1];
  EXPECT_EQ(second.kernel, "finish");
  EXPECT_EQ(second.grid.size(), 3u);
  EXPECT_EQ(second.shared_bytes, "0");  // the default
  ASSERT_EQ(second.args.size(), 6u);
  EXPECT_EQ(second.args[2].kind, ArgBinding::Kind::kInt32);
  EXPECT_EQ(second.args[2].expression, "rows*2");
  EXPECT_EQ(second.args[3].kind, ArgBinding::Kind::kInt64);
  EXPECT_EQ(second.args[3].expression, "rows*cols");
  EXPECT_EQ(second.args[3].text, "i64:rows*cols");
  EXPECT_EQ(second.args[4].kind, ArgBinding::Kind::kFloat32);
  EXPECT_EQ(second.args[4].expression, "eps");
  EXPECT_EQ(second.args[5].kind, ArgBinding::Kind::kFloat64);
}

TEST(KernelFile, BareConstantIsAFloatAndBareTunableAnInt) {
  TaskSpec task = rows_task();
  auto file = parse_kernel_file(with_plan(R"({"tunables": {"BLOCK": [128]},
    "launches": [{"kernel": "finish", "grid": [1], "block": [1],
                  "args": ["x", "out", "BLOCK", "i64:rows", "eps", "f64:eps"]}]})"),
                                kOrigin, &task);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->launches[0].args[2].kind, ArgBinding::Kind::kInt32);
  EXPECT_EQ(file->launches[0].args[4].kind, ArgBinding::Kind::kFloat32);
}

TEST(KernelFile, WithoutATaskOnlyTheSourceIsChecked) {
  auto file = parse_kernel_file(with_plan(kGoodPlan), kOrigin, nullptr);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->launches.size(), 2u);
}

TEST(KernelFile, TheSuiteKernelFilesParse) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks")) {
    if (!std::filesystem::exists(entry.path() / "task.json")) continue;
    auto task = load_task(entry.path());
    ASSERT_TRUE(task.ok()) << task.error();
    for (const char* file_name : {"reference.cu", "baseline.cu"}) {
      auto file = load_kernel_file(entry.path() / file_name, &*task);
      EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error());
      ++files;
    }
  }
  EXPECT_GE(files, 4);
}

TEST(KernelFile, NoPlanBlock) {
  std::string error = plan_error(kKernels, nullptr);
  EXPECT_TRUE(contains(error, std::string(kOrigin) + ": no launch plan")) << error;
}

TEST(KernelFile, UnclosedPlan) {
  std::string error = plan_error("// one\n\n/* kopt:plan\n{\"launches\": []}\n", nullptr);
  EXPECT_TRUE(contains(error, std::string(kOrigin) + ":3: the kopt:plan comment is not closed"))
      << error;
}

TEST(KernelFile, TwoPlanBlocks) {
  std::string source = with_plan(kGoodPlan) + "\n/* kopt:plan\n{}\n*/\n";
  int second_line = 1;
  for (char c : with_plan(kGoodPlan)) second_line += c == '\n';
  second_line += 1;
  std::string error = plan_error(source, nullptr);
  EXPECT_TRUE(contains(error, "more than one kopt:plan block")) << error;
  EXPECT_TRUE(contains(error, std::string(kOrigin) + ":" + std::to_string(second_line) + ":"))
      << "names the line of the second block: " << error;
}

TEST(KernelFile, InvalidJsonNamesTheLineInTheCuFile) {
  // The plan opens on line 3; the stray comma before '}' is on line 6 of the .cu file.
  std::string source =
      "// line 1\n"
      "// line 2\n"
      "/* kopt:plan\n"
      "{\n"
      "  \"launches\": [{\"kernel\": \"finish\", \"grid\": [1], \"block\": [1],\n"
      "                \"args\": []},]\n"
      "}\n"
      "*/\n" +
      kKernels;
  std::string error = plan_error(source, nullptr);
  EXPECT_TRUE(contains(error, std::string(kOrigin) + ":6:")) << error;
  EXPECT_TRUE(contains(error, "invalid JSON")) << error;
}

TEST(KernelFile, PlanMustBeAnObject) {
  std::string error = plan_error(with_plan("[1, 2]"), nullptr);
  EXPECT_TRUE(contains(error, std::string(kOrigin) + ":2: the plan must be a JSON object"))
      << error;
}

TEST(KernelFile, KernelNotDefinedInTheSource) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({"launches": [
      {"kernel": "row_partial", "grid": [1], "block": [1], "args": []}]})"),
                                 &task);
  expect_plan_error(error, "$.launches[0].kernel", "kernel 'row_partial' is not defined");
}

TEST(KernelFile, KernelDefinedOnlyInACommentIsUndefined) {
  const std::string plan = R"(/* kopt:plan
{"launches": [{"kernel": "ghost", "grid": [1], "block": [1], "args": []}]}
*/
)";
  for (const std::string& body : {
           std::string("// __global__ void ghost(float* x) {}\n"),
           std::string("/* __global__ void ghost(float* x) {} */\n"),
           std::string("/*\n * extern \"C\" __global__ void ghost(int n)\n * { }\n */\n"),
           std::string("__global__ void not_ghost(int n) {} // ghost(\n"),
       }) {
    std::string error = plan_error(plan + body + "__global__ void other() {}\n", nullptr);
    expect_plan_error(error, "$.launches[0].kernel", "kernel 'ghost' is not defined");
  }
}

TEST(KernelFile, KernelOnlyDeclaredIsUndefined) {
  std::string source = R"(/* kopt:plan
{"launches": [{"kernel": "decl", "grid": [1], "block": [1], "args": []}]}
*/
extern "C" __global__ void decl(const float* x, int n);
)";
  expect_plan_error(plan_error(source, nullptr), "$.launches[0].kernel",
                    "kernel 'decl' is not defined");
}

TEST(KernelFile, KernelDefinitionsThatCount) {
  const std::string plan = R"(/* kopt:plan
{"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]}
*/
)";
  for (const std::string& body : {
           std::string("__global__ void k() {}\n"),
           std::string("extern \"C\" __global__ void __launch_bounds__(128, 2) k(float* x)\n{}\n"),
           std::string("__global__\nvoid\nk (const float* __restrict__ x,\n int n) { }\n"),
           std::string("template <int B>\n__device__ int f() { return B; }\n"
                       "__global__ void k(int (*table)[4]) {}\n"),
           std::string("static const char* s = \"/* not a comment\";\n__global__ void k() {}\n"),
       }) {
    auto file = parse_kernel_file(plan + body, kOrigin, nullptr);
    EXPECT_TRUE(file.ok()) << body << "\n" << (file.ok() ? "" : file.error());
  }
}

TEST(KernelFile, UnknownSymbolInGridBlockAndSharedBytes) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"~({"tunables": {"BLOCK": [128]}, "launches": [
      {"kernel": "finish", "grid": ["ceil_div(row, BLOCK)"], "block": ["BLOKC"],
       "shared_bytes": "THREADS * 4", "args": []}]})~"),
                                 &task);
  expect_plan_error(error, "$.launches[0].grid[0]", "unknown symbol 'row' (did you mean 'rows'?)");
  expect_plan_error(error, "$.launches[0].block[0]",
                    "unknown symbol 'BLOKC' (did you mean 'BLOCK'?)");
  expect_plan_error(error, "$.launches[0].shared_bytes", "unknown symbol 'THREADS'");
}

TEST(KernelFile, MalformedGridAndBlock) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({"launches": [
      {"kernel": "finish", "grid": [1, 1, 1, 1], "block": [], "args": []},
      {"kernel": "finish", "grid": ["rows +"], "block": [true], "shared_bytes": [4], "args": []},
      {"kernel": "finish", "block": [1], "args": []}]})"),
                                 &task);
  expect_plan_error(error, "$.launches[0].grid", "1 to 3 expressions");
  expect_plan_error(error, "$.launches[0].block", "1 to 3 expressions");
  expect_plan_error(error, "$.launches[1].grid[0]", "unexpected end at column 7");
  expect_plan_error(error, "$.launches[1].block[0]", "expected an expression");
  expect_plan_error(error, "$.launches[1].shared_bytes", "expected an expression");
  expect_plan_error(error, "$.launches[2].grid", "required field is missing");
}

TEST(KernelFile, UnknownArgNameSuggestsTheClosest) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({"launches": [
      {"kernel": "finish", "grid": [1], "block": [1], "args": ["xx", "ot", "rows*2"]}]})"),
                                 &task);
  expect_plan_error(error, "$.launches[0].args[0]", "'xx' is not a buffer");
  expect_plan_error(error, "$.launches[0].args[0]", "(did you mean 'x'?)");
  expect_plan_error(error, "$.launches[0].args[1]", "(did you mean 'out'?)");
  expect_plan_error(error, "$.launches[0].args[2]", "use i32:EXPR or i64:EXPR");
}

TEST(KernelFile, TypedArgsAreChecked) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({"launches": [
      {"kernel": "finish", "grid": [1], "block": [1],
       "args": ["i32:rows*colz", "i64:(rows", "f32:esp", "f64:rows", "i32:eps"]}]})"),
                                 &task);
  expect_plan_error(error, "$.launches[0].args[0]", "unknown symbol 'colz' (did you mean 'cols'?)");
  expect_plan_error(error, "$.launches[0].args[1]", "expected ')'");
  expect_plan_error(error, "$.launches[0].args[2]",
                    "'esp' is not a constant of the task (did you mean 'eps'?)");
  expect_plan_error(error, "$.launches[0].args[3]", "'rows' is not a constant");
  expect_plan_error(error, "$.launches[0].args[4]", "unknown symbol 'eps'");
}

TEST(KernelFile, DisallowedCompileOptions) {
  for (const char* option :
       {"-I/etc", "--include-path=/home", "-arch=sm_52", "--use_fast_math -I/etc",
        "-maxrregcount=", "-maxrregcount=1234", "--pre-include=/etc/passwd", "-DBLOCK=1"}) {
    EXPECT_FALSE(is_allowed_compile_option(option)) << option;
  }
  for (const char* option :
       {"--use_fast_math", "--extra-device-vectorization", "--ftz=true", "--prec-div=false",
        "--prec-sqrt=false", "--fmad=true", "-maxrregcount=128"}) {
    EXPECT_TRUE(is_allowed_compile_option(option)) << option;
  }
  std::string error = plan_error(with_plan(R"({"compile_options": ["--use_fast_math", "-I/etc"],
      "launches": [{"kernel": "finish", "grid": [1], "block": [1], "args": []}]})"),
                                 nullptr);
  expect_plan_error(error, "$.compile_options[1]", "option '-I/etc' is not allowed");
}

TEST(KernelFile, TunablesClashingWithSizesOrConstants) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({"tunables": {"rows": [4], "eps": [1]},
      "launches": [{"kernel": "finish", "grid": [1], "block": [1], "args": []}]})"),
                                 &task);
  expect_plan_error(error, "$.tunables.rows", "clashes with a size or constant");
  expect_plan_error(error, "$.tunables.eps", "clashes with a size or constant");
}

TEST(KernelFile, BadTunablesAndScratch) {
  TaskSpec task = rows_task();
  std::string error = plan_error(with_plan(R"({
      "tunables": {"BLOCK": [], "VEC": [4, "8"], "BAD NAME": [1], "x": [2]},
      "scratch": [{"name": "x", "dtype": "f32", "count": "rows"},
                  {"name": "tmp", "dtype": "f31", "count": "rowz"},
                  {"name": "cols", "dtype": "f32", "count": "1"},
                  {"name": "", "dtype": "f32", "count": "1", "zeros": true}],
      "launchs": [],
      "launches": [{"kernel": "finish", "grid": [1], "block": [1], "args": []}]})"),
                                 &task);
  expect_plan_error(error, "$.tunables.BLOCK", "non-empty array");
  expect_plan_error(error, "$.tunables.VEC", "expected integers");
  expect_plan_error(error, "$.tunables.BAD NAME", "not an identifier");
  expect_plan_error(error, "$.tunables.x", "clashes");
  expect_plan_error(error, "$.scratch[0].name", "'x' is already a buffer name");
  expect_plan_error(error, "$.scratch[1].dtype", "unknown dtype 'f31' (did you mean 'f32'?)");
  expect_plan_error(error, "$.scratch[1].count", "unknown symbol 'rowz'");
  expect_plan_error(error, "$.scratch[2].name", "clashes with a size or constant");
  expect_plan_error(error, "$.scratch[3].name", "not an identifier");
  expect_plan_error(error, "$.scratch[3].zeros", "unknown key (did you mean 'zero'?)");
  expect_plan_error(error, "$.launchs", "unknown key (did you mean 'launches'?)");
}

TEST(KernelFile, MissingOrEmptyLaunches) {
  expect_plan_error(plan_error(with_plan("{}"), nullptr), "$.launches",
                    "required field is missing");
  expect_plan_error(plan_error(with_plan(R"({"launches": []})"), nullptr), "$.launches",
                    "at least one launch");
}

TEST(KernelFile, LoadKernelFileErrorsNameThePath) {
  testing::TempDir dir;
  auto missing = load_kernel_file(dir / "nope.cu", nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error(), (dir / "nope.cu").string() + ": cannot open"))
      << missing.error();
  testing::write_text(dir / "k.cu", with_plan(R"({"launches": [
      {"kernel": "nope", "grid": [1], "block": [1], "args": []}]})"));
  auto bad = load_kernel_file(dir / "k.cu", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), (dir / "k.cu").string() + ":2")) << bad.error();
  EXPECT_TRUE(contains(bad.error(), "$.launches[0].kernel")) << bad.error();
}

}  // namespace
}  // namespace kopt
