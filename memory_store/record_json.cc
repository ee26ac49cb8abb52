#include "memory_store/record_json.h"

namespace kopt::memory {

nlohmann::json origin_json(const KernelOrigin& origin) {
  return {{"agent", origin_name(origin.agent)},
          {"model", origin.model},
          {"prompt_template", origin.prompt_template},
          {"tuner", origin.tuner}};
}

nlohmann::json gpu_json(const GpuInfo& gpu) {
  return {{"model", gpu.model},
          {"compute_capability", gpu.compute_capability},
          {"driver_version", gpu.driver_version},
          {"cuda_version", gpu.cuda_version}};
}

}  // namespace kopt::memory
