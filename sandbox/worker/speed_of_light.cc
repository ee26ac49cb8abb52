#include "sandbox/worker/speed_of_light.h"

#include <algorithm>
#include <ctime>

#include "common/files.h"

namespace kopt::worker {
namespace {

// Dense tensor-core peaks from the datasheets, flop/s (bf16/fp16, tf32, fp8). The A100 has no
// fp8 tensor cores: an fp8 task there is bounded by the bf16 peak it would convert to.
struct TensorPeak {
  const char* name_part;
  double bf16, tf32, fp8;
};
constexpr TensorPeak kTensorPeaks[] = {
    {"H200", 989e12, 495e12, 1979e12}, {"H100", 989e12, 495e12, 1979e12},
    {"H800", 989e12, 495e12, 1979e12}, {"B200", 2250e12, 1100e12, 4500e12},
    {"A100", 312e12, 156e12, 312e12},  {"L40S", 362e12, 183e12, 733e12},
};

std::string cache_key(const DeviceInfo& info) {
  std::string key = info.name + "_v3";  // v2: peak of memcpy and a vectorized copy; v3: fp8
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return key;
}

// The best of the driver's copy and kopt's vectorized copy kernel: either alone can miss the peak
// by a few percent, and a kernel beating the "peak" would then show over 100% of speed of light.
Result<double> measure_dram_bandwidth(Device& device, SupportKernels& support) {
  const CudaDriver& d = device.driver();
  size_t bytes = size_t(1) << 30;
  auto a = allocate(device, bytes);
  if (!a) return make_error(a.error());
  auto b = allocate(device, bytes);
  if (!b) return make_error(b.error());
  auto times = time_with_events(device, nullptr, 6, [&](int) {
    d.cuMemcpyDtoD(b->ptr(), a->ptr(), bytes);
    return ok_status();
  });
  if (!times) return make_error(times.error());
  double best_ms = *std::min_element(times->begin() + 1, times->end());  // rep 0 warms up
  double memcpy_rate = 2.0 * double(bytes) / (best_ms * 1e-3);
  auto kernel_rate = support.measure_copy_bandwidth(a->ptr(), b->ptr(), bytes);
  if (!kernel_rate) return make_error(kernel_rate.error());
  return std::max(memcpy_rate, *kernel_rate);
}

}  // namespace

double DevicePeaks::compute_peak(const std::string& peak) const {
  if (peak == "bf16_tensor" || peak == "fp16_tensor") return bf16_tensor_flops;
  if (peak == "tf32_tensor") return tf32_tensor_flops;
  if (peak == "fp8_tensor") return fp8_tensor_flops;
  return fp32_flops;
}

nlohmann::json DevicePeaks::to_json() const {
  return {{"dram_bytes_per_s", dram_bytes_per_s},   {"fp32_flops", fp32_flops},
          {"tf32_tensor_flops", tf32_tensor_flops}, {"bf16_tensor_flops", bf16_tensor_flops},
          {"fp8_tensor_flops", fp8_tensor_flops},   {"source", source}};
}

Result<DevicePeaks> device_peaks(Device& device, SupportKernels& support) {
  static std::optional<DevicePeaks> memo;
  if (memo) return *memo;
  auto path = cache_directory() / "peaks" / (cache_key(device.info()) + ".json");
  if (auto text = read_file(path)) {
    try {
      auto j = nlohmann::json::parse(*text);
      DevicePeaks p;
      p.dram_bytes_per_s = j.at("dram_bytes_per_s");
      p.fp32_flops = j.at("fp32_flops");
      p.tf32_tensor_flops = j.at("tf32_tensor_flops");
      p.bf16_tensor_flops = j.at("bf16_tensor_flops");
      p.fp8_tensor_flops = j.at("fp8_tensor_flops");
      p.source = "cached " + j.value("source", std::string());
      if (p.dram_bytes_per_s > 0 && p.fp32_flops > 0) return *(memo = p);
    } catch (const std::exception&) {
      // A corrupt cache file is measured again and replaced.
    }
  }
  DevicePeaks p;
  auto bw = measure_dram_bandwidth(device, support);
  if (!bw) return make_error("measuring DRAM bandwidth: " + bw.error());
  p.dram_bytes_per_s = *bw;
  auto flops = support.measure_fp32_flops();
  if (!flops) return make_error("measuring FP32 throughput: " + flops.error());
  p.fp32_flops = *flops;
  // Unknown GPUs: a conservative tensor peak of 8x FP32 (only %SOL of tensor tasks depends on it).
  p.bf16_tensor_flops = 8 * p.fp32_flops;
  p.tf32_tensor_flops = 4 * p.fp32_flops;
  p.fp8_tensor_flops = 16 * p.fp32_flops;
  for (const auto& t : kTensorPeaks) {
    if (device.info().name.find(t.name_part) != std::string::npos) {
      p.bf16_tensor_flops = t.bf16;
      p.tf32_tensor_flops = t.tf32;
      p.fp8_tensor_flops = t.fp8;
      break;
    }
  }
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  p.source = std::string("measured ") + date;
  (void)write_file_atomic(path, p.to_json().dump(2));
  return *(memo = p);
}

double speed_of_light_us(double flops, double bytes, const DevicePeaks& peaks,
                         const std::string& peak) {
  double compute = peaks.compute_peak(peak);
  double t_compute = compute > 0 ? flops / compute : 0;
  double t_memory = peaks.dram_bytes_per_s > 0 ? bytes / peaks.dram_bytes_per_s : 0;
  return std::max(t_compute, t_memory) * 1e6;
}

}  // namespace kopt::worker
