#include "src/orchestrator/work_context.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "memory_store/line_diff.h"
#include "memory_store/techniques.h"
#include "sandbox/profile_bottleneck.h"

namespace kopt::orchestrator {

namespace {

// A diff longer than this is cut: the lesson says what matters, the diff only illustrates it.
constexpr size_t kMaxDiffChars = 3000;

std::string binding_text(const ShapeBinding& binding) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : binding) parts.push_back(name + "=" + std::to_string(value));
  return parts.empty() ? std::string("the default") : join(parts, " ");
}

}  // namespace

agents::TaskBrief make_brief(const TaskSpec& task, const GpuIdentity& gpu, double sol_us) {
  agents::TaskBrief brief;
  brief.name = task.name;
  brief.description = task.description;
  brief.tags = task.tags;
  std::vector<std::string> sweep;
  for (const auto& shape : task.shapes) sweep.push_back(binding_text(shape));
  std::string constants;
  for (const auto& [name, value] : task.constants) {
    constants += fmt::format("{}{}={}", constants.empty() ? "" : " ", name, value);
  }
  brief.sizes = "timed at " + binding_text(task.sizes) + "; correctness checked at " +
                join(sweep, ", ") + " (overrides of the timed sizes) and at hidden shapes" +
                (constants.empty() ? std::string() : "; constants " + constants);
  brief.gpu = gpu.model.empty() ? std::string("an NVIDIA GPU") : gpu.model;
  if (!gpu.arch.empty()) {
    brief.gpu += " (" + gpu.arch + (gpu.sms > 0 ? fmt::format(", {} SMs", gpu.sms) : "") + ")";
  }
  bool compute = std::find(task.tags.begin(), task.tags.end(), "compute-bound") != task.tags.end();
  brief.bound = compute ? "compute-bound" : "memory-bound";
  if (sol_us > 0) {
    brief.bound +=
        fmt::format(" (speed of light {:.2f} us = max(flops / peak {}, bytes / DRAM bandwidth))",
                    sol_us, task.peak);
  }
  return brief;
}

agents::Measurements measurements_of(const VerifiedKernel& kernel,
                                     const std::optional<ProductionReference>& production) {
  agents::Measurements m;
  m.median_us = kernel.median_us;
  m.noise = kernel.noise;
  m.baseline_us = kernel.baseline_us;
  m.speedup = kernel.speedup;
  m.sol_us = kernel.sol_us;
  m.sol_percent = kernel.sol_percent;
  if (production) {
    m.production_name = production->name;
    m.production_us = production->median_us;
  }
  if (kernel.resources) {
    m.registers = kernel.resources->registers;
    m.local_bytes = kernel.resources->local_bytes;
    m.static_shared_bytes = kernel.resources->static_shared_bytes;
    m.dynamic_shared_bytes = kernel.resources->dynamic_shared_bytes;
    m.occupancy = kernel.resources->occupancy;
  }
  if (kernel.profile) m.where_time_goes = describe_profile_and_bottleneck(*kernel.profile);
  return m;
}

std::vector<std::string> beam_lines(const Beam& beam, int64_t current) {
  std::vector<std::string> lines;
  for (const VerifiedKernel& k : beam.members()) {
    if (k.kernel_id == current) continue;
    lines.push_back(
        fmt::format("kernel {} ({}): {:.2f} us, {:.2f}x over the baseline, {:.1f}% of "
                    "speed of light",
                    k.kernel_id, origin_name(k.origin), k.median_us, k.speedup, k.sol_percent));
  }
  return lines;
}

void add_memory_examples(const std::vector<memory::RetrievedPair>& pairs, RunRecorder& recorder,
                         agents::WorkContext& context) {
  for (const memory::RetrievedPair& retrieved : pairs) {
    const memory::PairRecord& pair = retrieved.pair;
    agents::MemoryExample example;
    example.pair_id = pair.id;
    example.task = pair.task;
    example.speedup = pair.speedup;
    example.summary = pair.summary;
    example.tags = pair.tags;
    // The techniques it teaches (techniques.h), so the model sees what kind of change it is.
    for (const auto& technique : retrieved.techniques) {
      if (std::find(example.tags.begin(), example.tags.end(), technique) == example.tags.end()) {
        example.tags.push_back(technique);
      }
    }
    if (retrieved.reached_production()) {
      example.reached_production = fmt::format(
          "its result ({:.2f} us) is as fast as {} ({:.2f} us) or faster on {}", retrieved.fast_us,
          retrieved.production_name, retrieved.production_us, pair.gpu_model);
    }
    auto slow = recorder.kernel(pair.slow_kernel_id);
    auto fast = recorder.kernel(pair.fast_kernel_id);
    if (slow && fast) {
      example.diff = agents::shorten(
          memory::unified_diff(slow->source, fast->source, "before.cu", "after.cu", 2),
          kMaxDiffChars);
    }
    (pair.is_negative ? context.warnings : context.examples).push_back(std::move(example));
  }
}

std::vector<int64_t> pairs_used_by_plan(const std::vector<memory::RetrievedPair>& shown,
                                        const std::vector<std::string>& plan_techniques) {
  std::vector<int64_t> used;
  for (const auto& example : shown) {
    bool applied = std::any_of(
        example.techniques.begin(), example.techniques.end(), [&](const std::string& t) {
          return std::count(plan_techniques.begin(), plan_techniques.end(), t) > 0;
        });
    if (applied) used.push_back(example.pair.id);
  }
  return used;
}

std::vector<std::string> plan_techniques(const agents::Plan& plan) {
  return memory::techniques_in(plan.title + "\n" + plan.detail);
}

void put_plan_techniques_first(std::vector<memory::RetrievedPair>& pairs,
                               const std::vector<std::string>& plan_techniques) {
  auto used = pairs_used_by_plan(pairs, plan_techniques);
  std::stable_partition(pairs.begin(), pairs.end(), [&](const memory::RetrievedPair& p) {
    return std::find(used.begin(), used.end(), p.pair.id) != used.end();
  });
}

}  // namespace kopt::orchestrator
