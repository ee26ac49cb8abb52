// task.json's "production_baselines" and "cublaslt" (sandbox/task_baselines.h): accepted when
// well formed, every bad value named with file and JSON path and a "did you mean", the suite's
// tasks declaring theirs, and the judging spec blind to both keys.
#include "sandbox/task_baselines.h"

#include <gtest/gtest.h>

#include "sandbox/judging_spec.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

using nlohmann::json;

constexpr const char* kOrigin = "tasks/g/task.json";

json gemm_task() {
  return json::parse(R"~({
    "format": 3,
    "name": "g",
    "description": "C = relu(A @ W^T + bias)",
    "tags": ["gemm"],
    "sizes": {"m": 64, "n": 32, "k": 16},
    "inputs": [
      {"name": "A", "dtype": "f32", "shape": ["m", "k"], "init": {"dist": "normal"}},
      {"name": "W", "dtype": "f32", "shape": ["n", "k"], "init": {"dist": "normal"}},
      {"name": "bias", "dtype": "f32", "shape": ["n"], "init": {"dist": "normal"}}
    ],
    "outputs": [{"name": "C", "dtype": "f32", "shape": ["m", "n"]}],
    "shapes": [{}],
    "tolerance": {"atol": 1e-3, "rtol": 1e-3, "max_error": 1e-2},
    "flops": "2*m*n*k",
    "bytes": "4*(m*k + n*k + m*n)",
    "production_baselines": ["cublaslt", "torch_eager"],
    "cublaslt": {"a": "A", "b": "W", "out": "C", "m": "m", "n": "n", "k": "k",
                 "b_layout": "nk", "epilogue": "bias_relu", "bias": "bias"}
  })~");
}

std::string error_of(const json& task) {
  auto parsed = parse_task(task.dump(2), kOrigin);
  EXPECT_FALSE(parsed.ok()) << task.dump();
  return parsed.ok() ? "" : parsed.error();
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(TaskBaselines, AWellFormedDeclarationIsRead) {
  auto task = parse_task(gemm_task().dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  TaskBaselines b = task_baselines(task->raw_json);
  EXPECT_EQ(b.names, (std::vector<std::string>{"cublaslt", "torch_eager"}));
  EXPECT_TRUE(b.wants("cublaslt"));
  EXPECT_FALSE(b.wants("torch_compile"));
  ASSERT_TRUE(b.cublaslt);
  const CublasLtMapping& m = *b.cublaslt;
  EXPECT_EQ(m.a, "A");
  EXPECT_EQ(m.b, "W");
  EXPECT_EQ(m.out, "C");
  EXPECT_EQ(m.m, "m");
  EXPECT_EQ(m.k, "k");
  EXPECT_EQ(m.b_layout, "nk");
  EXPECT_EQ(m.epilogue, "bias_relu");
  EXPECT_EQ(m.bias, "bias");
  EXPECT_EQ(m.to_json()["bias"], "bias");
}

TEST(TaskBaselines, AbsentKeysMeanNoProductionBaseline) {
  json t = gemm_task();
  t.erase("production_baselines");
  t.erase("cublaslt");
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  EXPECT_TRUE(task_baselines(task->raw_json).names.empty());
  EXPECT_FALSE(task_baselines(task->raw_json).cublaslt);
}

TEST(TaskBaselines, AMatvecIsAGemmWithANumberForN) {
  json t = gemm_task();
  t["cublaslt"] = {{"a", "A"}, {"b", "bias"}, {"out", "C"}, {"m", "m"}, {"n", 1}, {"k", "k"}};
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  TaskBaselines b = task_baselines(task->raw_json);
  ASSERT_TRUE(b.cublaslt);
  EXPECT_EQ(b.cublaslt->n, "1");
  EXPECT_EQ(b.cublaslt->b_layout, "kn");  // the default
  EXPECT_EQ(b.cublaslt->epilogue, "none");
}

TEST(TaskBaselines, AnUnknownNameIsRefusedWithASuggestion) {
  json t = gemm_task();
  t["production_baselines"] = {"cublaslt", "torch_compiled"};
  std::string e = error_of(t);
  EXPECT_TRUE(has(e,
                  "tasks/g/task.json: $.production_baselines[1]: unknown production baseline "
                  "'torch_compiled' (did you mean 'torch_compile'?)"))
      << e;
}

TEST(TaskBaselines, ANameListedTwiceIsRefused) {
  json t = gemm_task();
  t["production_baselines"] = {"cublaslt", "torch_eager", "cublaslt"};
  EXPECT_TRUE(has(error_of(t), "$.production_baselines[2]: 'cublaslt' is listed twice"));
}

TEST(TaskBaselines, NotAListIsRefused) {
  json t = gemm_task();
  t["production_baselines"] = "cublaslt";
  EXPECT_TRUE(has(error_of(t), "$.production_baselines"));
}

TEST(TaskBaselines, CublasLtWithoutAMappingIsRefused) {
  json t = gemm_task();
  t.erase("cublaslt");
  EXPECT_TRUE(has(error_of(t), "$.cublaslt: \"production_baselines\" lists cublaslt"));
}

TEST(TaskBaselines, AMappingWithoutCublasLtListedIsRefused) {
  json t = gemm_task();
  t["production_baselines"] = {"torch_eager"};
  EXPECT_TRUE(has(error_of(t), "$.cublaslt: a cuBLASLt mapping without"));
}

TEST(TaskBaselines, BadMappingValuesNameTheirPaths) {
  json t = gemm_task();
  t["cublaslt"]["a"] = "AA";
  t["cublaslt"]["n"] = "nn";
  t["cublaslt"]["k"] = 0;
  t["cublaslt"]["b_layout"] = "kk";
  t["cublaslt"]["epilog"] = "relu";
  std::string e = error_of(t);
  EXPECT_TRUE(has(e, "$.cublaslt.a: no tensor named 'AA' (did you mean 'A'?)")) << e;
  EXPECT_TRUE(has(e, "$.cublaslt.n: no size named 'nn'")) << e;
  EXPECT_TRUE(has(e, "$.cublaslt.k: expected a size name or a positive integer")) << e;
  EXPECT_TRUE(has(e, "$.cublaslt.b_layout: unknown b_layout 'kk'")) << e;
  EXPECT_TRUE(has(e, "$.cublaslt.epilog")) << e;
  EXPECT_TRUE(has(e, "did you mean 'epilogue'")) << e;
}

TEST(TaskBaselines, TheBiasAndTheEpilogueGoTogether) {
  json t = gemm_task();
  t["cublaslt"].erase("bias");
  EXPECT_TRUE(has(error_of(t), "$.cublaslt.bias: epilogue bias_relu needs the bias"));
  t = gemm_task();
  t["cublaslt"]["epilogue"] = "none";
  EXPECT_TRUE(has(error_of(t), "$.cublaslt.bias: a bias needs"));
}

TEST(TaskBaselines, TheJudgingSpecIgnoresBothKeys) {
  json with = gemm_task();
  json without = gemm_task();
  without.erase("production_baselines");
  without.erase("cublaslt");
  auto a = parse_task(with.dump(), kOrigin);
  auto b = parse_task(without.dump(), kOrigin);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(judging_spec_sha256(*a), judging_spec_sha256(*b));
  json other = without;
  other["flops"] = "3*m*n*k";  // a key that does count, so the comparison can fail
  auto c = parse_task(other.dump(), kOrigin);
  ASSERT_TRUE(c);
  EXPECT_NE(judging_spec_sha256(*b), judging_spec_sha256(*c));
}

TEST(TaskBaselines, TheSuiteDeclaresItsBaselines) {
  std::filesystem::path root = KOPT_TASKS_DIR;
  int tasks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (!std::filesystem::exists(entry.path() / "task.json")) continue;
    auto task = load_task(entry.path());
    ASSERT_TRUE(task) << task.error();
    ++tasks;
    TaskBaselines b = task_baselines(task->raw_json);
    EXPECT_TRUE(b.wants("torch_eager")) << task->name;
    EXPECT_TRUE(b.wants("torch_compile")) << task->name;
    bool gemm = task->name == "sgemm" || task->name == "bf16_gemm" ||
                task->name == "gemm_bias_relu" || task->name == "matvec";
    EXPECT_EQ(b.wants("cublaslt"), gemm) << task->name;
    EXPECT_EQ(b.cublaslt.has_value(), gemm) << task->name;
  }
  EXPECT_EQ(tasks, 22);
}

// The cuBLAS call the worker makes (sandbox/task_baselines.h, cublaslt_call): row-major
// C[m, n] = A[m, k] @ W^T is column-major C^T[n, m] = op(W) @ A^T, so cuBLAS's A is W.
TEST(TaskBaselines, AWeightMapsToATransposedColumnMajorA) {
  auto task = parse_task(gemm_task().dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  auto call = cublaslt_call(*task, *task_baselines(task->raw_json).cublaslt, task->bind({}));
  ASSERT_TRUE(call) << call.error();
  EXPECT_EQ(call->m, 64);
  EXPECT_EQ(call->n, 32);
  EXPECT_EQ(call->k, 16);
  EXPECT_TRUE(call->transpose_a);
  EXPECT_EQ(call->a_rows, 16);  // W [n, k] row-major is column-major [k, n]
  EXPECT_EQ(call->a_cols, 32);
  EXPECT_EQ(call->b_rows, 16);  // A [m, k] row-major is column-major [k, m]
  EXPECT_EQ(call->b_cols, 64);
  EXPECT_EQ(call->d_rows, 32);
  EXPECT_EQ(call->d_cols, 64);
}

TEST(TaskBaselines, AKnMatrixIsAnUntransposedColumnMajorA) {
  json t = gemm_task();
  t["inputs"][1]["shape"] = {"k", "n"};
  t["cublaslt"]["b_layout"] = "kn";
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  auto call = cublaslt_call(*task, *task_baselines(task->raw_json).cublaslt, task->bind({}));
  ASSERT_TRUE(call) << call.error();
  EXPECT_FALSE(call->transpose_a);
  EXPECT_EQ(call->a_rows, 32);  // B [k, n] row-major is column-major [n, k]
  EXPECT_EQ(call->a_cols, 16);
}

TEST(TaskBaselines, AMappingWhoseSizesDoNotFitItsTensorsIsRefusedNamingTheTensor) {
  json t = gemm_task();
  t["cublaslt"]["n"] = "k";  // W is [n, k]: 32 x 16, not 16 x 16
  auto task = parse_task(t.dump(), kOrigin);
  ASSERT_TRUE(task) << task.error();
  auto call = cublaslt_call(*task, *task_baselines(task->raw_json).cublaslt, task->bind({}));
  ASSERT_FALSE(call);
  EXPECT_TRUE(has(call.error(), "tensor 'W' has 512 elements")) << call.error();
}

TEST(TaskBaselines, TheSuitesGemmMappingsFitTheirTensorsAtEveryShape) {
  for (const char* name : {"sgemm", "bf16_gemm", "gemm_bias_relu", "matvec"}) {
    auto task = load_task(std::filesystem::path(KOPT_TASKS_DIR) / name);
    ASSERT_TRUE(task) << task.error();
    auto mapping = task_baselines(task->raw_json).cublaslt;
    ASSERT_TRUE(mapping) << name;
    std::vector<ShapeBinding> shapes = {task->bind({})};
    for (const auto& s : task->shapes) shapes.push_back(task->bind(s));
    for (const auto& sizes : shapes) {
      auto call = cublaslt_call(*task, *mapping, sizes);
      EXPECT_TRUE(call) << name << ": " << call.error();
    }
  }
}

}  // namespace
}  // namespace kopt
