#include "src/cli/gpu_checks.h"

#include <iostream>

#include "common/files.h"
#include "sandbox/cuda_driver.h"
#include "sandbox/task_spec.h"

namespace kopt::cli {

std::optional<std::string> detect_gpu_arch() {
  auto driver = load_cuda_driver();
  if (!driver) return std::nullopt;
  const CudaDriver& d = **driver;
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return std::nullopt;
  CUdevice dev;
  if (d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return std::nullopt;
  int major = 0, minor = 0;
  d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  // Hopper's wgmma/setmaxnreg need the "a" (architecture-specific) target.
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major >= 9) arch += "a";
  return arch;
}

int run_gpu_task_checks(const std::vector<std::filesystem::path>& task_dirs,
                        const SandboxOptions& worker) {
  auto driver = load_cuda_driver();
  if (!driver) {
    std::cerr << "kopt tasks check: " << driver.error()
              << "\n  (use --compile-only on machines without a GPU)\n";
    return 3;
  }
  SandboxEvaluator evaluator(worker);
  if (auto started = evaluator.start(); !started) {
    std::cerr << "kopt tasks check: " << started.error() << "\n";
    return 3;
  }
  int unsound = 0;
  for (const auto& dir : task_dirs) {
    auto task = load_task(dir);
    auto reference = read_file(dir / "reference.cu");
    auto baseline = read_file(dir / "baseline.cu");
    if (!task || !reference || !baseline) {
      std::printf("FAIL %s: %s\n", dir.filename().c_str(),
                  !task ? task.error().c_str()
                        : (!reference ? reference.error() : baseline.error()).c_str());
      ++unsound;
      continue;
    }
    nlohmann::json body = {{"task_json", task->raw_json},
                           {"reference", {{"source", *reference}, {"origin", "reference.cu"}}},
                           {"baseline", {{"source", *baseline}, {"origin", "baseline.cu"}}}};
    auto answer = evaluator.call("check_task", std::move(body), 600);
    if (!answer) {
      std::printf("FAIL %s: %s\n", dir.filename().c_str(), answer.error().c_str());
      ++unsound;
      continue;
    }
    const nlohmann::json& result = (*answer)["result"];
    std::vector<std::string> problems;
    for (const auto& f : result["findings"])
      problems.push_back(f.value("problem", "") + " (" + f.value("shape", "") + ")");
    if (result.value("baseline_verdict", "ok") != "ok")
      problems.push_back("the baseline disagrees with the reference: " +
                         result.value("baseline_verdict", "") + ": " +
                         result.value("baseline_detail", ""));
    std::printf("%-4s %s (GPU hygiene)\n", problems.empty() ? "ok" : "FAIL",
                dir.filename().c_str());
    for (const auto& p : problems) std::printf("     %s\n", p.c_str());
    unsound += problems.empty() ? 0 : 1;
  }
  std::printf("%zu tasks, %d refused by the GPU hygiene checks\n", task_dirs.size(), unsound);
  return unsound ? 1 : 0;
}

}  // namespace kopt::cli
