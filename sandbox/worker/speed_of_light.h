// The device's peaks, measured once per GPU model and cached on disk: DRAM bandwidth from a large
// device-to-device copy (bytes read + written), FP32 FMA throughput from a probe kernel, and the
// tensor-core rates from the datasheet table (a WMMA probe reaches well under the wgmma peak, so
// measuring it would inflate every %SOL).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "sandbox/worker/device.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

struct DevicePeaks {
  double dram_bytes_per_s = 0;
  double fp32_flops = 0;
  double tf32_tensor_flops = 0;
  double bf16_tensor_flops = 0;
  double fp8_tensor_flops = 0;  // e4m3/e5m2 inputs, fp32 accumulation
  std::string source;           // "measured 2026-11-22" or "cache"
  // The compute peak a task's "peak" names.
  double compute_peak(const std::string& peak) const;
  nlohmann::json to_json() const;
};

Result<DevicePeaks> device_peaks(Device& device, SupportKernels& support);

// t_sol = max(flops / peak_flops, bytes / peak_bandwidth), in microseconds.
double speed_of_light_us(double flops, double bytes, const DevicePeaks& peaks,
                         const std::string& peak);

}  // namespace kopt::worker
