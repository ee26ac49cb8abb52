// The templates of `kopt tasks new --kind`: small, correct tasks whose every line is meant to be
// edited. NAME is replaced by the new task's name. Each passes `kopt tasks check` as written.
#include <map>

#include "common/strings.h"
#include "sandbox/task_scaffold.h"

namespace kopt {

namespace {

struct Template {
  const char* task_json;
  const char* reference;
  const char* baseline;
};

constexpr const char* kElementwiseTask = R"JSON({
  "format": 2,
  "name": "NAME",
  "description": "TODO: what NAME computes, exactly (the formula, the dtype, how it rounds). Template: SiLU, out = x / (1 + exp(-x)) over n float32 elements.",
  "tags": ["elementwise", "memory-bound", "fp32"],
  "sizes": {"n": 16777216},
  "inputs": [{"name": "x", "dtype": "f32", "shape": ["n"], "init": {"dist": "normal", "mean": 0, "std": 2}}],
  "outputs": [{"name": "out", "dtype": "f32", "shape": ["n"]}],
  "shapes": [{"n": 1}, {"n": 1023}, {"n": 4097}, {"n": 1048577}, {}],
  "holdout": [{"n": 1000003}],
  "stress": [{"name": "large activations", "inputs": {"x": {"dist": "normal", "mean": 0, "std": 100}}}],
  "tolerance": {"atol": 1e-6, "rtol": 1e-5, "max_error": 1e-4},
  "flops": "4*n",
  "bytes": "8*n",
  "peak": "fp32"
}
)JSON";

constexpr const char* kElementwiseReference =
    R"CU(// TODO: the plainest correct oracle of NAME, in double, rounded once.
/* kopt:plan
{
  "launches": [{"kernel": "NAME_reference", "grid": ["ceil_div(n, 256)"], "block": [256],
                "args": ["x", "out", "i64:n"]}]
}
*/
extern "C" __global__ void NAME_reference(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)((double)x[i] / (1.0 + exp(-(double)x[i])));
}
)CU";

constexpr const char* kElementwiseBaseline =
    R"CU(// TODO: the plain, correct kernel a competent engineer writes first for NAME.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128, 512]},
  "launches": [{"kernel": "NAME", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "out", "n"]}]
}
*/
extern "C" __global__ void NAME(const float* x, float* out, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = x[i] / (1.0f + expf(-x[i]));
}
)CU";

constexpr const char* kRowReductionTask = R"JSON({
  "format": 2,
  "name": "NAME",
  "description": "TODO: what NAME computes per row, exactly. Template: log-sum-exp of each row of float32 x[rows, cols], out[r] = log(sum_c exp(x[r, c])), computed stably (subtract the row max).",
  "tags": ["row-reduction", "memory-bound", "fp32"],
  "sizes": {"rows": 4096, "cols": 8192},
  "inputs": [{"name": "x", "dtype": "f32", "shape": ["rows", "cols"], "init": {"dist": "normal", "mean": 0, "std": 3}}],
  "outputs": [{"name": "out", "dtype": "f32", "shape": ["rows"]}],
  "shapes": [{"rows": 1, "cols": 1}, {"rows": 1, "cols": 1023}, {"rows": 7, "cols": 4097}, {"rows": 128, "cols": 32000}, {}],
  "holdout": [{"rows": 33, "cols": 50257}],
  "stress": [
    {"name": "std 40", "inputs": {"x": {"dist": "normal", "mean": 0, "std": 40}}},
    {"name": "equal rows", "inputs": {"x": {"dist": "normal", "mean": 0, "std": 10, "repeat": "cols"}}}
  ],
  "tolerance": {"atol": 1e-5, "rtol": 1e-5, "max_error": 1e-3},
  "flops": "3*rows*cols",
  "bytes": "4*rows*cols + 4*rows",
  "peak": "fp32"
}
)JSON";

constexpr const char* kRowReductionReference =
    R"CU(// TODO: the plainest correct oracle of NAME: a thread per row, in double.
/* kopt:plan
{
  "launches": [{"kernel": "NAME_reference", "grid": ["ceil_div(rows, 128)"], "block": [128],
                "args": ["x", "out", "rows", "cols"]}]
}
*/
extern "C" __global__ void NAME_reference(const float* x, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  double m = row[0];
  for (int c = 1; c < cols; ++c) m = fmax(m, (double)row[c]);
  double sum = 0.0;
  for (int c = 0; c < cols; ++c) sum += exp((double)row[c] - m);
  out[r] = (float)(m + log(sum));
}
)CU";

constexpr const char* kRowReductionBaseline =
    R"CU(// TODO: the plain, correct kernel for NAME: a block per row, a tree reduction in shared memory.
/* kopt:plan
{
  "launches": [{"kernel": "NAME", "grid": ["rows"], "block": [256],
                "args": ["x", "out", "cols"]}]
}
*/
__device__ float block_reduce(float v, float* shared, bool take_max) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      float other = shared[threadIdx.x + stride];
      shared[threadIdx.x] = take_max ? fmaxf(shared[threadIdx.x], other) : shared[threadIdx.x] + other;
    }
    __syncthreads();
  }
  float result = shared[0];
  __syncthreads();
  return result;
}

extern "C" __global__ void NAME(const float* x, float* out, int cols) {
  __shared__ float shared[256];
  const float* row = x + (long long)blockIdx.x * cols;
  float m = -3.402823466e38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, shared, true);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
  sum = block_reduce(sum, shared, false);
  if (threadIdx.x == 0) out[blockIdx.x] = m + logf(sum);
}
)CU";

constexpr const char* kGemmTask = R"JSON({
  "format": 2,
  "name": "NAME",
  "description": "TODO: what NAME computes, its layouts and the accumulation precision. Template: C[m, n] = A[m, k] B[k, n], row-major float32, fp32 accuracy.",
  "tags": ["gemm", "compute-bound", "fp32"],
  "sizes": {"m": 2048, "n": 2048, "k": 2048},
  "inputs": [
    {"name": "A", "dtype": "f32", "shape": ["m", "k"], "init": {"dist": "normal", "mean": 0, "std": 1}},
    {"name": "B", "dtype": "f32", "shape": ["k", "n"], "init": {"dist": "uniform", "low": -1, "high": 1}}
  ],
  "outputs": [{"name": "C", "dtype": "f32", "shape": ["m", "n"]}],
  "shapes": [{"m": 1, "n": 1, "k": 1}, {"m": 33, "n": 65, "k": 1023}, {"m": 1000, "n": 1000, "k": 1000}, {}],
  "holdout": [{"m": 2047, "n": 3001, "k": 513}],
  "stress": [{"name": "outliers", "inputs": {"A": {"dist": "normal", "mean": 0, "std": 100}}}],
  "tolerance": {"atol": 1e-3, "rtol": 1e-4, "max_error": 1.0},
  "flops": "2*m*n*k",
  "bytes": "4*(m*k + k*n + m*n)",
  "peak": "fp32"
}
)JSON";

constexpr const char* kGemmReference =
    R"CU(// TODO: the plainest correct oracle of NAME: a thread per output element, in double.
/* kopt:plan
{
  "launches": [{"kernel": "NAME_reference", "grid": ["ceil_div(n, 16)", "ceil_div(m, 16)"],
                "block": [16, 16], "args": ["A", "B", "C", "m", "n", "k"]}]
}
*/
extern "C" __global__ void NAME_reference(const float* A, const float* B, float* C, int m, int n,
                                          int k) {
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  if (row >= m || col >= n) return;
  double sum = 0.0;
  for (int i = 0; i < k; ++i) sum += (double)A[(long long)row * k + i] * (double)B[(long long)i * n + col];
  C[(long long)row * n + col] = (float)sum;
}
)CU";

constexpr const char* kGemmBaseline =
    R"CU(// TODO: the plain, correct kernel for NAME: 16x16 shared-memory tiles, fp32 accumulation.
/* kopt:plan
{
  "launches": [{"kernel": "NAME", "grid": ["ceil_div(n, 16)", "ceil_div(m, 16)"], "block": [16, 16],
                "args": ["A", "B", "C", "m", "n", "k"]}]
}
*/
extern "C" __global__ void NAME(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ float a_tile[16][16], b_tile[16][16];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < k; t += 16) {
    a_tile[threadIdx.y][threadIdx.x] =
        row < m && t + threadIdx.x < k ? A[(long long)row * k + t + threadIdx.x] : 0.0f;
    b_tile[threadIdx.y][threadIdx.x] =
        col < n && t + threadIdx.y < k ? B[(long long)(t + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < 16; ++i) sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[(long long)row * n + col] = sum;
}
)CU";

const std::map<std::string, Template>& templates() {
  static const std::map<std::string, Template> all = {
      {"elementwise", {kElementwiseTask, kElementwiseReference, kElementwiseBaseline}},
      {"row_reduction", {kRowReductionTask, kRowReductionReference, kRowReductionBaseline}},
      {"gemm", {kGemmTask, kGemmReference, kGemmBaseline}}};
  return all;
}

std::string with_name(const char* text, const std::string& name) {
  std::string out = text;
  for (size_t at = out.find("NAME"); at != std::string::npos;
       at = out.find("NAME", at + name.size()))
    out.replace(at, 4, name);
  return out;
}

}  // namespace

const std::vector<std::string>& task_template_kinds() {
  static const std::vector<std::string> kinds = {"elementwise", "row_reduction", "gemm"};
  return kinds;
}

Result<std::vector<std::pair<std::string, std::string>>> task_template(const std::string& kind,
                                                                       const std::string& name) {
  auto it = templates().find(kind);
  if (it == templates().end())
    return make_error("unknown template kind '" + kind + "'" +
                      did_you_mean(kind, task_template_kinds()) +
                      " (kinds: " + join(task_template_kinds(), ", ") + ")");
  // Kernel names are C identifiers: a task called "my-op" gets kernels called "my_op".
  std::string identifier = name;
  for (char& c : identifier)
    if (c == '-') c = '_';
  if (!identifier.empty() && std::isdigit(static_cast<unsigned char>(identifier[0])))
    identifier = "k_" + identifier;
  std::string json = with_name(it->second.task_json, identifier);
  json = json.replace(json.find("\"name\": \"" + identifier + "\""), 10 + identifier.size(),
                      "\"name\": \"" + name + "\"");
  return std::vector<std::pair<std::string, std::string>>{
      {"task.json", json},
      {"reference.cu", with_name(it->second.reference, identifier)},
      {"baseline.cu", with_name(it->second.baseline, identifier)}};
}

}  // namespace kopt
