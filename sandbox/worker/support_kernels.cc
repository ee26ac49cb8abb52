#include "sandbox/worker/support_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/e4m3.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/support_kernels_source.h"

namespace kopt::worker {
namespace {

struct DeviceStats {
  uint64_t failed, non_finite, expected_non_finite, actual_nonzero, expected_unlike_zero, worst,
      worst_index;
};

// The unsigned type of an element's size, as xor_mask<W> is instantiated.
const char* word_name(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1:
      return "unsigned char";
    case 2:
      return "unsigned short";
    case 8:
      return "unsigned long long";
    default:
      return "unsigned int";
  }
}

}  // namespace

std::vector<std::string> SupportKernels::kernel_names() {
  std::vector<std::string> names = {"checksum",
                                    "clock_probe",
                                    "fma_peak",
                                    "copy_peak",
                                    "corun_occupy",
                                    "corun_gate",
                                    "corun_release",
                                    "guard_scan",
                                    "guard_fill",
                                    "xor_mask<unsigned char>",
                                    "xor_mask<unsigned short>",
                                    "xor_mask<unsigned int>",
                                    "xor_mask<unsigned long long>"};
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kE4M3}) {
    std::string ty = dtype_cpp_type(t);
    names.push_back("compare<" + ty + ">");
    names.push_back("fill_randint<" + ty + ">");
    names.push_back("fill_sorted<" + ty + ">");
    if (dtype_is_float(t)) {
      names.push_back("fill_normal<" + ty + ">");
      names.push_back("fill_uniform<" + ty + ">");
      names.push_back("plant_maxima<" + ty + ">");
      names.push_back("plant_rows<" + ty + ">");
    }
  }
  return names;
}

Result<SupportKernels> SupportKernels::load(Device& device, const std::string& arch) {
  CompileRequest request;
  request.source = kSupportKernelSource;
  request.origin = "kopt_support.cu";
  request.arch = arch;
  request.kernel_names = kernel_names();
  CompileCache cache(cache_directory() / "compile");
  auto compiled = compile_kernel(request, &cache);
  if (!compiled) return make_error("support kernels: " + compiled.error());
  if (!compiled->ok) return make_error("support kernels failed to compile:\n" + compiled->log);
  SupportKernels k;
  k.device_ = &device;
  CUmodule module = nullptr;
  CudaFailure failure;
  if (!device.check(device.driver().cuModuleLoadData(&module, compiled->cubin.data()),
                    "cuModuleLoadData", &failure))
    return make_error("support kernels: " + failure.message);
  k.module_ = std::make_shared<Module>(&device.driver(), module);
  for (const auto& [name, lowered] : compiled->lowered_names) {
    CUfunction fn = nullptr;
    if (!device.check(device.driver().cuModuleGetFunction(&fn, module, lowered.c_str()),
                      "cuModuleGetFunction", &failure))
      return make_error("support kernel " + name + ": " + failure.message);
    k.functions_[name] = fn;
  }
  auto stats = allocate(device, sizeof(DeviceStats));
  if (!stats) return make_error(stats.error());
  k.stats_ = std::move(*stats);
  auto slots = allocate(device, kMaxChecksums * sizeof(uint64_t));
  if (!slots) return make_error(slots.error());
  k.checksum_slots_ = std::move(*slots);
  auto guards = allocate(device, kMaxGuardScan * 2 * sizeof(uint64_t));
  if (!guards) return make_error(guards.error());
  k.guard_results_ = std::move(*guards);
  auto probe = allocate(device, 4 * sizeof(uint64_t));  // clock_probe's or fma_peak's results
  if (!probe) return make_error(probe.error());
  k.probe_ = std::move(*probe);
  std::random_device random;  // /dev/urandom
  for (uint64_t* key : {&k.checksum_key_, &k.mask_key_.k0, &k.mask_key_.k1})
    *key = (uint64_t(random()) << 32) ^ uint64_t(random());
  // Guarded buffers made from here on are painted by guard_fill; the painter holds the module
  // weakly, so a buffer outliving these kernels falls back to the host's copy of the pattern.
  std::weak_ptr<Module> held_module = k.module_;
  CUfunction fill = k.functions_.at("guard_fill");
  Device* dev = &device;
  set_guard_painter([held_module, fill, dev](CUdeviceptr base, size_t bytes,
                                             uint64_t seed) -> Status {
    auto held = held_module.lock();
    if (!held) return make_error("the support kernels are unloaded");
    if (bytes % 8 != 0) return make_error("a guarded allocation of odd size");
    uint64_t words = bytes / 8;
    void* args[] = {&base, &words, &seed};
    unsigned grid =
        unsigned(std::clamp<uint64_t>((words + 255) / 256, 1, uint64_t(dev->info().sm_count) * 8));
    CudaFailure launch_failure;
    if (!dev->check(dev->driver().cuLaunchKernel(fill, grid, 1, 1, 256, 1, 1, 0, dev->stream(),
                                                 args, nullptr),
                    "cuLaunchKernel(guard_fill)", &launch_failure))
      return make_error(launch_failure.message);
    return ok_status();
  });
  return k;
}

Status SupportKernels::launch(const std::string& name, unsigned grid, unsigned block, void** args,
                              bool sync) {
  auto it = functions_.find(name);
  if (it == functions_.end()) return make_error("no support kernel " + name);
  CudaFailure failure;
  const CudaDriver& d = device_->driver();
  if (!device_->check(d.cuLaunchKernel(it->second, grid, 1, 1, block, 1, 1, 0, device_->stream(),
                                       args, nullptr),
                      "cuLaunchKernel(support)", &failure) ||
      (sync &&
       !device_->check(d.cuStreamSynchronize(device_->stream()), "cuStreamSynchronize", &failure)))
    return make_error(failure.message);
  return ok_status();
}

Result<CUfunction> SupportKernels::function(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) return make_error("no support kernel " + name);
  return it->second;
}

Status SupportKernels::read_back(void* host, CUdeviceptr from, size_t bytes) {
  return copy_to_host(*device_, host, from, bytes);
}

namespace {
unsigned grid_for(const Device& device, uint64_t n) {
  uint64_t blocks = (n + 255) / 256;
  uint64_t cap = uint64_t(device.info().sm_count) * 16;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(blocks, cap)));
}
}  // namespace

Status SupportKernels::fill(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
                            const FillBounds& bounds, uint64_t seed) {
  if (n == 0) return ok_status();
  if (!init.sorted.empty()) return fill_sorted(data, dtype, n, init, bounds, seed);
  if (auto s = fill_plain(data, dtype, n, init, bounds, seed); !s || init.repeated_max.empty())
    return s;
  // Repeated maxima: one value above everything the distribution draws, planted over the fill.
  uint64_t count = static_cast<uint64_t>(n);
  uint64_t row = uint64_t(std::max<int64_t>(1, bounds.row));
  uint64_t spacing = uint64_t(std::max<int64_t>(1, bounds.max_spacing));
  double top = init.dist == "normal"     ? init.mean + 9 * init.stddev
               : init.dist == "uniform"  ? init.high
               : init.dist == "constant" ? init.value + 1
                                         : double(bounds.int_high);
  void* args[] = {&data, &count, &seed, &row, &spacing, &top};
  return launch("plant_maxima<" + std::string(dtype_cpp_type(dtype)) + ">",
                grid_for(*device_, count), 256, args, false);
}

Status SupportKernels::plant_rows(CUdeviceptr data, DType dtype, int64_t n,
                                  const RowPattern& pattern, int64_t row, uint64_t seed) {
  if (n == 0 || !dtype_is_float(dtype)) return ok_status();
  uint64_t count = static_cast<uint64_t>(n);
  uint64_t row_length = uint64_t(std::max<int64_t>(1, row));
  int kind = static_cast<int>(pattern.kind);
  double value = pattern.value, share = pattern.share;
  void* args[] = {&data, &count, &seed, &row_length, &kind, &value, &share};
  return launch("plant_rows<" + std::string(dtype_cpp_type(dtype)) + ">", grid_for(*device_, count),
                256, args, false);
}

Status SupportKernels::fill_sorted(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
                                   const FillBounds& bounds, uint64_t seed) {
  // Monotone rows from the distribution's quantiles: 0 normal (mean, std), 1 uniform or
  // constant (low, high), 2 whole numbers (low, high exclusive).
  uint64_t count = static_cast<uint64_t>(n);
  uint64_t row = uint64_t(std::max<int64_t>(1, bounds.row));
  int descending = init.sorted == "descending" ? 1 : 0;
  int kind = 0;
  double a = init.mean, b = init.stddev;
  if (init.dist == "randint" || !dtype_is_float(dtype)) {
    kind = 2;
    a = double(bounds.int_low);
    b = double(bounds.int_high);
  } else if (init.dist != "normal") {
    kind = 1;
    a = init.dist == "constant" ? init.value : init.low;
    b = init.dist == "constant" ? init.value : init.high;
  }
  void* args[] = {&data, &count, &seed, &row, &descending, &kind, &a, &b};
  return launch("fill_sorted<" + std::string(dtype_cpp_type(dtype)) + ">",
                grid_for(*device_, count), 256, args, false);
}

Status SupportKernels::fill_plain(CUdeviceptr data, DType dtype, int64_t n, const InitSpec& init,
                                  const FillBounds& bounds, uint64_t seed) {
  uint64_t count = static_cast<uint64_t>(n);
  std::string ty = dtype_cpp_type(dtype);
  uint64_t repeat = static_cast<uint64_t>(std::max<int64_t>(1, bounds.repeat));
  double neg_inf = dtype_is_float(dtype) ? init.neg_inf : 0.0;
  if (!dtype_is_float(dtype) || init.dist == "randint") {
    if (bounds.int_high <= bounds.int_low)
      return make_error("randint bounds are empty: [" + std::to_string(bounds.int_low) + ", " +
                        std::to_string(bounds.int_high) + ")");
    long long lo = bounds.int_low, hi = bounds.int_high;
    void* args[] = {&data, &count, &seed, &lo, &hi, &repeat, &neg_inf};
    return launch("fill_randint<" + ty + ">", grid_for(*device_, count), 256, args, false);
  }
  if (init.dist == "uniform" || init.dist == "constant") {
    double lo = init.dist == "constant" ? init.value : init.low;
    double hi = init.dist == "constant" ? init.value : init.high;
    void* args[] = {&data, &count, &seed, &lo, &hi, &repeat, &neg_inf};
    return launch("fill_uniform<" + ty + ">", grid_for(*device_, count), 256, args, false);
  }
  double mean = init.mean, stddev = init.stddev;
  void* args[] = {&data, &count, &seed, &mean, &stddev, &repeat, &neg_inf};
  return launch("fill_normal<" + ty + ">", grid_for(*device_, count), 256, args, false);
}

Result<CompareStats> SupportKernels::compare(CUdeviceptr actual, CUdeviceptr expected, DType dtype,
                                             int64_t n, double atol, double rtol,
                                             bool expected_masked) {
  const CudaDriver& d = device_->driver();
  CudaFailure failure;
  CUdeviceptr stats = stats_.ptr();
  if (!device_->check(d.cuMemsetD8Async(stats, 0, sizeof(DeviceStats), device_->stream()),
                      "cuMemsetD8Async", &failure))
    return make_error(failure.message);
  uint64_t count = static_cast<uint64_t>(n);
  uint64_t k0 = mask_key_.k0, k1 = mask_key_.k1;
  int masked = expected_masked ? 1 : 0;
  void* args[] = {&actual, &expected, &count, &atol, &rtol, &k0, &k1, &masked, &stats};
  if (auto s = launch(std::string("compare<") + dtype_cpp_type(dtype) + ">",
                      grid_for(*device_, count), 256, args, false);
      !s)
    return make_error(s.error());
  DeviceStats host{};
  if (auto s = read_back(&host, stats, sizeof host); !s) return make_error(s.error());
  CompareStats out;
  out.failed = host.failed;
  out.non_finite = host.non_finite;
  out.expected_non_finite = host.expected_non_finite;
  out.actual_nonzero = host.actual_nonzero;
  out.expected_unlike_zero = host.expected_unlike_zero;
  uint32_t err_bits = static_cast<uint32_t>(host.worst >> 32);
  float err = 0;
  std::memcpy(&err, &err_bits, sizeof err);
  out.max_error = n ? err : 0;
  out.worst_index = n ? static_cast<int64_t>(host.worst_index) : -1;
  return out;
}

Status SupportKernels::mask(CUdeviceptr data, DType dtype, int64_t n) {
  if (n == 0) return ok_status();
  uint64_t count = uint64_t(n), k0 = mask_key_.k0, k1 = mask_key_.k1;
  void* args[] = {&data, &count, &k0, &k1};
  return launch(std::string("xor_mask<") + word_name(dtype) + ">", grid_for(*device_, count), 256,
                args, false);
}

Result<uint64_t> SupportKernels::checksum(CUdeviceptr data, size_t bytes) {
  auto sums = checksums({{data, bytes}});
  if (!sums) return make_error(sums.error());
  return sums->front();
}

Result<std::vector<uint64_t>> SupportKernels::checksums(
    const std::vector<std::pair<CUdeviceptr, size_t>>& buffers) {
  const CudaDriver& d = device_->driver();
  CudaFailure failure;
  std::vector<uint64_t> sums(buffers.size());
  for (size_t first = 0; first < buffers.size(); first += kMaxChecksums) {
    size_t count = std::min(buffers.size() - first, kMaxChecksums);
    if (!device_->check(d.cuMemsetD8Async(checksum_slots_.ptr(), 0, count * sizeof(uint64_t),
                                          device_->stream()),
                        "cuMemsetD8Async", &failure))
      return make_error(failure.message);
    for (size_t i = 0; i < count; ++i) {
      CUdeviceptr data = buffers[first + i].first;
      uint64_t bytes = buffers[first + i].second;
      CUdeviceptr out = checksum_slots_.ptr() + i * sizeof(uint64_t);
      uint64_t key = checksum_key_;
      void* args[] = {&data, &bytes, &key, &out};
      if (auto s = launch("checksum", grid_for(*device_, bytes), 256, args, false); !s)
        return make_error(s.error());
    }
    if (auto s = read_back(sums.data() + first, checksum_slots_.ptr(), count * sizeof(uint64_t));
        !s)
      return make_error(s.error());
  }
  return sums;
}

Result<std::vector<GuardDamage>> SupportKernels::scan_guards(
    const std::vector<GuardZones>& regions) {
  const CudaDriver& d = device_->driver();
  CudaFailure failure;
  std::vector<GuardDamage> damage(regions.size());
  auto it = functions_.find("guard_scan");
  for (size_t first = 0; first < regions.size(); first += kMaxGuardScan) {
    size_t count = std::min(regions.size() - first, kMaxGuardScan);
    // Head slots start at 0 (atomicMax), tail slots at all ones (atomicMin).
    std::vector<uint64_t> init(2 * count);
    for (size_t i = 0; i < count; ++i) init[2 * i + 1] = ~uint64_t(0);
    if (!device_->check(d.cuMemcpyHtoDAsync(guard_results_.ptr(), init.data(),
                                            init.size() * sizeof(uint64_t), device_->stream()),
                        "cuMemcpyHtoDAsync(guards)", &failure))
      return make_error(failure.message);
    // One launch per buffer, one read-back for all of them: no sync per buffer.
    for (size_t i = 0; i < count; ++i) {
      GuardZones r = regions[first + i];
      CUdeviceptr out = guard_results_.ptr() + 2 * i * sizeof(uint64_t);
      void* args[] = {&r.base, &r.head_bytes, &r.tail_start, &r.end, &r.seed, &out};
      uint64_t words = std::max(r.head_bytes, r.end - r.tail_start) / 8;
      unsigned blocks = unsigned(std::min<uint64_t>(128, (words + 255) / 256));
      if (!device_->check(d.cuLaunchKernel(it->second, std::max(1u, blocks), 1, 1, 256, 1, 1, 0,
                                           device_->stream(), args, nullptr),
                          "cuLaunchKernel(guard_scan)", &failure))
        return make_error(failure.message);
    }
    if (!device_->check(d.cuMemcpyDtoHAsync(init.data(), guard_results_.ptr(),
                                            init.size() * sizeof(uint64_t), device_->stream()),
                        "cuMemcpyDtoHAsync(guards)", &failure) ||
        !device_->check(d.cuStreamSynchronize(device_->stream()), "cuStreamSynchronize", &failure))
      return make_error(failure.message);
    for (size_t i = 0; i < count; ++i) {
      damage[first + i].head_distance =
          init[2 * i] ? regions[first + i].head_bytes - (init[2 * i] - 1) : 0;
      damage[first + i].tail_offset = init[2 * i + 1] != ~uint64_t(0) ? init[2 * i + 1] : 0;
    }
  }
  return damage;
}

Result<double> SupportKernels::probe_clock_mhz() {
  CUdeviceptr out = probe_.ptr();
  void* args[] = {&out};
  if (auto s = launch("clock_probe", 1, 1, args); !s) return make_error(s.error());
  double mhz = 0;
  CudaFailure failure;
  if (!device_->check(device_->driver().cuMemcpyDtoH(&mhz, out, sizeof mhz), "cuMemcpyDtoH",
                      &failure))
    return make_error(failure.message);
  return mhz;
}

Result<double> SupportKernels::measure_fp32_flops() {
  const int iterations = 4096;
  auto times = time_fma(iterations, 4);
  if (!times) return make_error(times.error());
  double best_ms = 1e30;
  for (size_t rep = 1; rep < times->size(); ++rep)  // rep 0 warms up
    best_ms = std::min(best_ms, (*times)[rep].ms);
  double blocks = double(device_->info().sm_count) * 8, threads = 256;
  double flops = 2.0 * 8 * iterations * blocks * threads;
  return flops / (best_ms * 1e-3);
}

Result<double> SupportKernels::measure_copy_bandwidth(CUdeviceptr from, CUdeviceptr to,
                                                      size_t bytes) {
  const CudaDriver& d = device_->driver();
  constexpr int kBlocksPerSm[] = {4, 8, 16};
  constexpr int kReps = 4;  // per grid size; the first of each warms up
  uint64_t n = bytes / 16;
  void* args[] = {&from, &to, &n};
  auto it = functions_.find("copy_peak");
  auto times = time_with_events(*device_, device_->stream(), 3 * kReps, [&](int rep) -> Status {
    unsigned blocks = unsigned(device_->info().sm_count * kBlocksPerSm[rep / kReps]);
    CudaFailure failure;
    if (!device_->check(d.cuLaunchKernel(it->second, blocks, 1, 1, 512, 1, 1, 0, device_->stream(),
                                         args, nullptr),
                        "cuLaunchKernel(copy_peak)", &failure))
      return make_error(failure.message);
    return ok_status();
  });
  if (!times) return make_error(times.error());
  double best_ms = 1e30;
  for (size_t rep = 0; rep < times->size(); ++rep)
    if (rep % kReps > 0) best_ms = std::min<double>(best_ms, (*times)[rep]);
  return 2.0 * double(n * 16) / (best_ms * 1e-3);
}

Result<std::vector<FmaRep>> SupportKernels::time_fma(int iterations, int reps) {
  const CudaDriver& d = device_->driver();
  CUdeviceptr out = probe_.ptr();
  CUdeviceptr clocks = probe_.ptr() + sizeof(uint64_t);  // cycles, nanoseconds (fma_peak)
  float seed = 1.0f;
  void* args[] = {&out, &iterations, &seed, &clocks};
  unsigned blocks = unsigned(device_->info().sm_count) * 8, threads = 256;
  auto it = functions_.find("fma_peak");
  uint64_t last[2] = {0, 0};
  if (auto s = read_back(last, clocks, sizeof last); !s) return make_error(s.error());
  std::vector<FmaRep> timed;
  for (int rep = 0; rep < reps; ++rep) {
    // One launch per event pair, then its clock sums read back: a read between the events would
    // be timed with the kernel.
    auto times = time_with_events(*device_, device_->stream(), 1, [&](int) -> Status {
      CudaFailure failure;
      if (!device_->check(d.cuLaunchKernel(it->second, blocks, 1, 1, threads, 1, 1, 0,
                                           device_->stream(), args, nullptr),
                          "cuLaunchKernel(fma_peak)", &failure))
        return make_error(failure.message);
      return ok_status();
    });
    if (!times) return make_error(times.error());
    uint64_t now[2] = {0, 0};
    if (auto s = read_back(now, clocks, sizeof now); !s) return make_error(s.error());
    uint64_t cycles = now[0] - last[0], ns = now[1] - last[1];
    timed.push_back(
        {.ms = double(times->front()), .sm_mhz = ns > 0 ? 1e3 * double(cycles) / double(ns) : 0});
    std::copy(now, now + 2, last);
  }
  return timed;
}

Result<double> SupportKernels::read_element(CUdeviceptr data, DType dtype, int64_t index,
                                            bool masked) {
  unsigned char raw[8] = {};
  size_t size = dtype_size(dtype);
  CudaFailure failure;
  if (!device_->check(device_->driver().cuMemcpyDtoH(raw, data + index * size, size),
                      "cuMemcpyDtoH", &failure))
    return make_error(failure.message);
  if (masked) {  // xor_mask's keystream, little-endian like the device
    uint64_t word = mask_bits(mask_key_, uint64_t(index), size);
    for (size_t b = 0; b < size; ++b) raw[b] ^= static_cast<unsigned char>(word >> (8 * b));
  }
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, raw, 4);
      return double(v);
    }
    case DType::kBF16: {
      uint32_t bits = uint32_t(raw[0] | (raw[1] << 8)) << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return double(v);
    }
    case DType::kF16: {
      uint16_t h = uint16_t(raw[0] | (raw[1] << 8));
      int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
      double v = exp == 0    ? std::ldexp(mant, -24)
                 : exp == 31 ? (mant ? NAN : INFINITY)
                             : std::ldexp(mant + 1024, exp - 25);
      return (h & 0x8000) ? -v : v;
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, raw, 4);
      return double(v);
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, raw, 8);
      return double(v);
    }
    case DType::kE4M3:
      return e4m3_to_double(raw[0]);
  }
  return 0.0;
}

}  // namespace kopt::worker
