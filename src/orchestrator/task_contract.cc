#include "src/orchestrator/task_contract.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "common/strings.h"
#include "sandbox/expr.h"

namespace kopt::orchestrator {

namespace {

// Per-SM limits of an architecture (CUDA C++ Programming Guide, "Technical Specifications per
// Compute Capability"), for a GPU whose worker did not report them.
struct ArchLimits {
  int major = 0, minor = 0;
  int shared_per_sm_kb = 0;
  int shared_per_block_kb = 0;  // with the opt-in
  int registers_per_sm = 65536;
  int threads_per_sm = 2048;
};

ArchLimits arch_limits(const std::string& cc) {
  static const ArchLimits kTable[] = {
      {7, 0, 96, 96, 65536, 2048},    {7, 5, 64, 64, 65536, 1024},  {8, 0, 164, 163, 65536, 2048},
      {8, 6, 100, 99, 65536, 1536},   {8, 9, 100, 99, 65536, 1536}, {9, 0, 228, 227, 65536, 2048},
      {10, 0, 228, 227, 65536, 2048}, {12, 0, 100, 99, 65536, 1536}};
  int major = 0, minor = 0;
  if (std::sscanf(cc.c_str(), "%d.%d", &major, &minor) != 2) return {};
  const ArchLimits* best = nullptr;
  for (const auto& row : kTable) {
    if (row.major == major && row.minor <= minor && (!best || row.minor > best->minor)) best = &row;
  }
  return best ? *best : ArchLimits{};
}

std::string tensor_line(const TensorSpec& t) {
  return fmt::format("{} {} [{}]", t.name, dtype_name(t.dtype), join(t.shape, ", "));
}

std::string binding_text(const ShapeBinding& b) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : b) parts.push_back(name + "=" + std::to_string(value));
  return join(parts, " ");
}

// "1.34 GB", "268 MB", "4.1 KB".
std::string amount(double value, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (value >= 1000 && i < 5) {
    value /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", value, prefixes[i], unit);
}

double device_number(const GpuIdentity& gpu, const char* key) {
  const auto& d = gpu.device;
  if (d.is_object() && d.contains(key) && d[key].is_number()) return d[key].get<double>();
  return 0;
}

// The two roofs of a task on this GPU: DRAM bandwidth and the compute peak the task names, as
// the worker measured or took from the datasheet (its "peaks" in the device it reported). An
// older worker reports none: then the one that bounds the task is derived from the speed of
// light (bytes / time or flops / time).
struct Roofs {
  double dram = 0;     // bytes/s
  double compute = 0;  // flop/s at the task's peak
  const nlohmann::json* peaks = nullptr;
};

double peak_number(const nlohmann::json* peaks, const char* key) {
  if (!peaks || !peaks->contains(key) || !(*peaks)[key].is_number()) return 0;
  return (*peaks)[key].get<double>();
}

// The key of DevicePeaks (sandbox/worker/speed_of_light.h) that a task's "peak" names.
const char* peak_key(const std::string& peak) {
  if (peak == "bf16_tensor" || peak == "fp16_tensor") return "bf16_tensor_flops";
  if (peak == "tf32_tensor") return "tf32_tensor_flops";
  if (peak == "fp8_tensor") return "fp8_tensor_flops";
  return "fp32_flops";
}

bool is_compute_bound(const TaskSpec& task) {
  return std::find(task.tags.begin(), task.tags.end(), "compute-bound") != task.tags.end();
}

Roofs roofs_of(const TaskSpec& task, const GpuIdentity& gpu, double sol_us, double flops,
               double bytes) {
  Roofs r;
  const auto& d = gpu.device;
  if (d.is_object() && d.contains("peaks") && d["peaks"].is_object()) r.peaks = &d["peaks"];
  r.dram = peak_number(r.peaks, "dram_bytes_per_s");
  r.compute = peak_number(r.peaks, peak_key(task.peak));
  bool compute = is_compute_bound(task);
  if (r.dram <= 0 && !compute && sol_us > 0 && bytes > 0) r.dram = bytes / sol_us * 1e6;
  if (r.compute <= 0 && compute && sol_us > 0 && flops > 0) r.compute = flops / sol_us * 1e6;
  return r;
}

// "- work at the timed size: ...; memory roof 80.1 us (...), compute roof 2.2 us (...)".
std::string work_line(const TaskSpec& task, const Roofs& roofs, double flops, double bytes,
                      double sol_us) {
  std::string out = fmt::format("- work at the timed size: at least {} moved to and from DRAM, {}",
                                amount(bytes, "B"), amount(flops, "FLOP"));
  if (roofs.peaks && roofs.dram > 0 && roofs.compute > 0) {
    double memory_us = bytes / roofs.dram * 1e6, compute_us = flops / roofs.compute * 1e6;
    out += fmt::format(
        "; memory roof {:.2f} us (bytes / DRAM bandwidth), compute roof {:.2f} us (flops / {} "
        "peak): {}-bound",
        memory_us, compute_us, task.peak, memory_us >= compute_us ? "memory" : "compute");
  } else if (sol_us > 0) {
    bool compute = is_compute_bound(task);
    out += fmt::format("; speed of light {:.2f} us ({}-bound: {} / peak)", sol_us,
                       compute ? "compute" : "memory", compute ? "flops" : "bytes");
  }
  return out + "\n";
}

// The GPU, its measured bandwidth and every peak the worker knows, and its per-SM limits.
std::string gpu_lines(const TaskSpec& task, const GpuIdentity& gpu, const Roofs& roofs) {
  std::string out = "- GPU: " + (gpu.model.empty() ? std::string("an NVIDIA GPU") : gpu.model);
  if (!gpu.arch.empty()) out += ", " + gpu.arch;
  if (gpu.sms > 0) out += fmt::format(", {} SMs", gpu.sms);
  if (double l2 = device_number(gpu, "l2_bytes"); l2 > 0) {
    out += fmt::format(", L2 {:.0f} MB", l2 / (1 << 20));
  }
  if (roofs.dram > 0) out += fmt::format(", measured DRAM bandwidth {}/s", amount(roofs.dram, "B"));
  if (roofs.peaks) {
    out += fmt::format(
        ", FP32 {}/s (measured); tensor cores, dense, from the datasheet: TF32 {}/s, BF16/FP16 "
        "{}/s, FP8 {}/s",
        amount(peak_number(roofs.peaks, "fp32_flops"), "FLOP"),
        amount(peak_number(roofs.peaks, "tf32_tensor_flops"), "FLOP"),
        amount(peak_number(roofs.peaks, "bf16_tensor_flops"), "FLOP"),
        amount(peak_number(roofs.peaks, "fp8_tensor_flops"), "FLOP"));
  } else if (roofs.compute > 0) {
    out += fmt::format(", measured peak {}/s ({})", amount(roofs.compute, "FLOP"), task.peak);
  }
  out += "\n";
  ArchLimits limits = arch_limits(gpu.cc);
  if (limits.shared_per_sm_kb > 0) {
    out += fmt::format(
        "- per SM: {} KB shared memory, {} 32-bit registers, {} threads; per block: up to {} KB "
        "shared memory, 1024 threads, 255 registers per thread\n",
        limits.shared_per_sm_kb, limits.registers_per_sm, limits.threads_per_sm,
        limits.shared_per_block_kb);
  }
  return out;
}

// What a kernel file can and cannot use in kopt's sandbox, and on Hopper which of its features
// (a plan that needs host code or a launch kopt does not make cannot be written).
std::string sandbox_lines(const GpuIdentity& gpu) {
  std::string out =
      "- sandbox: one .cu kernel file compiled by NVRTC for this GPU; no host code (no main, no "
      "host functions, no kernel launching another); #include only CUDA toolkit headers; dynamic "
      "shared memory above 48 KB works (kopt sets the opt-in from the launch plan); "
      "the launch plan in the file's kopt:plan block is the only launch\n";
  if (gpu.cc.rfind("9.", 0) == 0) {
    out +=
        "- Hopper features: usable: tensor cores through mma.h (WMMA) or inline PTX (mma.sync; "
        "wgmma on sm_90a), cp.async, cp.async.bulk with mbarrier, warp shuffles and CUB; not "
        "usable: TMA tensor copies (cp.async.bulk.tensor needs a CUtensorMap made by host code), "
        "thread-block clusters and distributed shared memory (`__cluster_dims__` is refused, the "
        "plan sets no cluster size), grid-wide sync (no cooperative launch), programmatic "
        "dependent launch\n";
  }
  return out;
}
}  // namespace

std::string task_contract(const TaskSpec& task, const GpuIdentity& gpu, double sol_us) {
  std::string out =
      fmt::format("# Contract of task {} (the same in every prompt of this task)\n", task.name);
  std::vector<std::string> ins, outs;
  for (const auto& t : task.inputs) ins.push_back(tensor_line(t));
  for (const auto& t : task.outputs) outs.push_back(tensor_line(t));
  out += "- inputs: " + join(ins, "; ") + "\n- outputs: " + join(outs, "; ") +
         "\n- layout: every tensor dense, row-major, contiguous, in the order of its shape\n";
  ShapeBinding timed = task.bind({});
  out += "- timed at " + binding_text(timed);
  if (!task.constants.empty()) {
    std::vector<std::string> constants;
    for (const auto& [name, value] : task.constants) {
      constants.push_back(fmt::format("{}={}", name, value));
    }
    out += "; constants " + join(constants, " ");
  }
  out += "\n";
  const Tolerance& tol = task.tolerance;
  out += fmt::format(
      "- correct means: |out - ref| <= {:g} + {:g} x |ref| for {:g}% of elements and no element "
      "off by more than {:g}, at the timed size, at the sweep shapes, at hidden shapes",
      tol.atol, tol.rtol, tol.min_pass_fraction * 100, tol.max_error);
  std::vector<std::string> rounds;
  for (const auto& r : task.stress) rounds.push_back(r.name);
  out +=
      rounds.empty()
          ? std::string(".\n")
          : ", and in the stress rounds (extreme but valid inputs): " + join(rounds, ", ") + ".\n";
  auto flops = evaluate_expression(task.flops, timed);
  auto bytes = evaluate_expression(task.bytes, timed);
  Roofs roofs = roofs_of(task, gpu, sol_us, flops ? double(*flops) : 0, bytes ? double(*bytes) : 0);
  if (flops && bytes) out += work_line(task, roofs, double(*flops), double(*bytes), sol_us);
  out += gpu_lines(task, gpu, roofs);
  out += sandbox_lines(gpu);
  return out;
}

}  // namespace kopt::orchestrator
