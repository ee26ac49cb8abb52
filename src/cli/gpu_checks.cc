#include "src/cli/gpu_checks.h"

#include <iostream>

#include "sandbox/cuda_driver.h"

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

int run_gpu_task_checks(const std::vector<std::filesystem::path>& task_dirs) {
  auto driver = load_cuda_driver();
  if (!driver) {
    std::cerr << "kopt tasks check: " << driver.error()
              << "\n  (use --compile-only on machines without a GPU)\n";
    return 3;
  }
  std::cerr << "kopt tasks check: the GPU checks of " << task_dirs.size()
            << " tasks need the sandbox evaluator, which is not built yet\n";
  return 3;
}

}  // namespace kopt::cli
