#include "tests/foundation/test_support.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace kopt::testing {

void write_text(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

nlohmann::json good_task_json() {
  return nlohmann::json::parse(R"({
    "format": 1,
    "name": "axpy_test",
    "description": "out = alpha * x + y",
    "tags": ["elementwise", "memory-bound", "fp32"],
    "sizes": {"n": 4096},
    "constants": {"alpha": 1.5},
    "inputs": [
      {"name": "x", "dtype": "f32", "shape": ["n"], "init": {"dist": "normal", "mean": 0, "std": 1}},
      {"name": "y", "dtype": "f32", "shape": ["n"], "init": {"dist": "uniform", "low": -2, "high": 2}}
    ],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["n"]}],
    "shapes": [{"n": 1}, {"n": 1023}, {}],
    "holdout": [{"n": 4097}],
    "tolerance": {"atol": 1e-6, "rtol": 1e-6, "max_error": 1e-4},
    "flops": "2*n",
    "bytes": "12*n"
  })");
}

std::string good_kernel_source() {
  return R"~(// axpy for the tests
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128]},
  "launches": [{"kernel": "axpy", "grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"],
                "args": ["x", "y", "out", "n", "alpha"]}]
}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
)~";
}

void write_task_dir(const std::filesystem::path& dir, const nlohmann::json& task,
                    const std::string& reference, const std::string& baseline) {
  write_text(dir / "task.json", task.dump(2));
  write_text(dir / "reference.cu", reference);
  write_text(dir / "baseline.cu", baseline);
}

CommandOutput run_kopt(const std::vector<std::string>& args, const std::filesystem::path& cache_dir,
                       std::chrono::seconds timeout) {
  // The binary inherits our environment: keep its cache and data out of the user's home.
  ::setenv("KOPT_CACHE_DIR", cache_dir.c_str(), 1);
  ::setenv("KOPT_HOME", (cache_dir / "home").c_str(), 1);
  std::vector<std::string> argv = {KOPT_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = run_command(argv, "", timeout);
  if (!out) throw std::runtime_error("cannot run kopt: " + out.error());
  return *out;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace kopt::testing
