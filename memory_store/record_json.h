// The JSON forms of record parts that more than one output writes (the JSONL export, the kernel
// export's manifest, `kopt memory show`): one spelling each, so the files cannot drift apart.
#pragma once

#include <nlohmann/json.hpp>

#include "memory_store/records.h"

namespace kopt::memory {

// {"agent", "model", "prompt_template", "tuner"}
nlohmann::json origin_json(const KernelOrigin& origin);
// {"model", "compute_capability", "driver_version", "cuda_version"}
nlohmann::json gpu_json(const GpuInfo& gpu);

}  // namespace kopt::memory
