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
  bool compute = std::find(task.tags.begin(), task.tags.end(), "compute-bound") != task.tags.end();
  if (flops && bytes) {
    out += fmt::format("- work at the timed size: at least {} moved to and from DRAM, {}",
                       amount(static_cast<double>(*bytes), "B"),
                       amount(static_cast<double>(*flops), "FLOP"));
    if (sol_us > 0) {
      out += fmt::format("; speed of light {:.2f} us ({}-bound: {} / peak)", sol_us,
                         compute ? "compute" : "memory", compute ? "flops" : "bytes");
    }
    out += "\n";
  }
  // The peak that bounds the task, as measured (the worker's), else from the speed of light.
  double dram = device_number(gpu, "dram_bytes_per_s");
  double peak = device_number(gpu, "peak_flops");
  if (dram <= 0 && !compute && sol_us > 0 && bytes)
    dram = static_cast<double>(*bytes) / sol_us * 1e6;
  if (peak <= 0 && compute && sol_us > 0 && flops)
    peak = static_cast<double>(*flops) / sol_us * 1e6;
  ArchLimits limits = arch_limits(gpu.cc);
  out += "- GPU: " + (gpu.model.empty() ? std::string("an NVIDIA GPU") : gpu.model);
  if (!gpu.arch.empty()) out += ", " + gpu.arch;
  if (gpu.sms > 0) out += fmt::format(", {} SMs", gpu.sms);
  if (double l2 = device_number(gpu, "l2_bytes"); l2 > 0) {
    out += fmt::format(", L2 {:.0f} MB", l2 / (1 << 20));
  }
  if (dram > 0) out += fmt::format(", measured DRAM bandwidth {}/s", amount(dram, "B"));
  if (peak > 0) out += fmt::format(", measured peak {}/s ({})", amount(peak, "FLOP"), task.peak);
  out += "\n";
  if (limits.shared_per_sm_kb > 0) {
    out += fmt::format(
        "- per SM: {} KB shared memory, {} 32-bit registers, {} threads; per block: up to {} KB "
        "shared memory, 1024 threads, 255 registers per thread\n",
        limits.shared_per_sm_kb, limits.registers_per_sm, limits.threads_per_sm,
        limits.shared_per_block_kb);
  }
  out +=
      "- sandbox: one .cu kernel file compiled by NVRTC for this GPU; no host code (no main, no "
      "host functions, no kernel launching another); #include only CUDA toolkit headers; dynamic "
      "shared memory above 48 KB works (kopt sets the opt-in from the launch plan); "
      "the launch plan in the file's kopt:plan block is the only launch\n";
  return out;
}

}  // namespace kopt::orchestrator
