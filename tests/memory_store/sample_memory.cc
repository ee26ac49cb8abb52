#include "tests/memory_store/sample_memory.h"

#include <stdexcept>

#include "common/files.h"
#include "common/sha256.h"
#include "sandbox/judging_spec.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory::testing {

namespace {

std::string task_file(const std::string& task, const std::string& file) {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks" / task / file);
  if (!text) throw std::runtime_error(text.error());
  return *text;
}

template <typename T>
T must(Result<T> result) {
  if (!result) throw std::runtime_error(result.error());
  return std::move(*result);
}

// What the source tree's task is judged under now (sandbox/judging_spec.h).
std::string current_judging_spec(const std::string& task) {
  return judging_spec_sha256(
      must(load_task(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks" / task)));
}

int64_t evaluate(MemoryStore& store, int64_t kernel, const std::string& task, double median_us,
                 double baseline_us, const std::string& tunables, const std::string& verdict) {
  EvaluationRecord e;
  e.kernel_id = kernel;
  e.task = task;
  e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
  e.verdict = parse_verdict(verdict).value();  // a misspelt name throws
  e.detail = verdict == "ok" ? "5 rounds x 7 shapes, holdout ok" : "out[17] = 3.1, expected 2.9";
  e.tunables_json = tunables;
  e.median_us = median_us;
  e.noise = 0.004;
  e.baseline_us = baseline_us;
  e.speedup = baseline_us / median_us;
  e.sol_percent = 100.0 * 240.0 / median_us;
  e.created_at = "2026-11-22T04:05:06Z";
  e.judging_spec_sha256 = current_judging_spec(task);
  e.verifier_version = kVerifierVersion;
  return must(store.add_evaluation(e));
}

}  // namespace

std::string fast_axpy_source() {
  return R"cu(// axpy with float4 loads: four elements per thread.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 512]},
  "launches": [{"kernel": "axpy_vec4", "grid": ["ceil_div(ceil_div(n, 4), BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy_vec4(const float* x, const float* y, float* out, int n, float alpha) {
  int i = (blockIdx.x * BLOCK + threadIdx.x) * 4;
  if (i + 3 < n) {
    float4 a = *reinterpret_cast<const float4*>(x + i);
    float4 b = *reinterpret_cast<const float4*>(y + i);
    *reinterpret_cast<float4*>(out + i) = make_float4(alpha * a.x + b.x, alpha * a.y + b.y,
                                                      alpha * a.z + b.z, alpha * a.w + b.w);
  } else {
    for (; i < n; ++i) out[i] = alpha * x[i] + y[i];
  }
}
)cu";
}

SampleMemory fill_sample_memory(MemoryStore& store) {
  SampleMemory m;
  for (const char* name : {"axpy", "softmax"}) {
    TaskRecord task;
    task.name = name;
    task.spec_json = task_file(name, "task.json");
    task.spec_hash = sha256_hex(task.spec_json);
    task.judging_spec_sha256 = current_judging_spec(name);
    task.tags = std::string(name) == "axpy"
                    ? std::vector<std::string>{"elementwise", "axpy", "memory-bound", "fp32"}
                    : std::vector<std::string>{"reduction", "softmax", "memory-bound", "fp32"};
    must(store.upsert_task(task));
  }
  m.axpy_baseline = add_kernel(store, "axpy", task_file("axpy", "baseline.cu"));
  m.axpy_fast = add_kernel(store, "axpy", fast_axpy_source(), m.axpy_baseline);
  m.softmax_baseline = add_kernel(store, "softmax", task_file("softmax", "baseline.cu"));
  std::string softmax_fast = task_file("softmax", "baseline.cu") + "// __shfl_xor_sync variant\n";
  m.softmax_fast = add_kernel(store, "softmax", softmax_fast, m.softmax_baseline);
  evaluate(store, m.axpy_baseline, "axpy", 310, 310, "{\"BLOCK\":256}", "ok");
  evaluate(store, m.axpy_fast, "axpy", 280, 310, "{\"BLOCK\":512}", "ok");
  evaluate(store, m.softmax_baseline, "softmax", 900, 900, "{\"BLOCK\":256}", "ok");
  evaluate(store, m.softmax_fast, "softmax", 450, 900, "{\"BLOCK\":1024}", "ok");
  evaluate(store, m.softmax_fast, "softmax", 100, 900, "{\"BLOCK\":128}", "incorrect");
  m.axpy_pair =
      add_pair(store, "axpy", m.axpy_baseline, m.axpy_fast, 310.0 / 280.0,
               "float4 loads cut the load instructions by four", {"elementwise", "vectorize"});
  m.softmax_pair =
      add_pair(store, "softmax", m.softmax_baseline, m.softmax_fast, 2.0,
               "warp shuffles replace the shared-memory tree", {"reduction", "warp-shuffle"});
  m.negative_pair = add_pair(store, "softmax", m.softmax_fast, m.softmax_baseline, 0.5,
                             "going back to the tree halves the speed", {"reduction"});
  return m;
}

}  // namespace kopt::memory::testing
