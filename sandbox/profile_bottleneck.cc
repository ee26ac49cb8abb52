#include "sandbox/profile_bottleneck.h"

#include "common/enum_names.h"

namespace kopt {

namespace {

// A unit at or above 60% of its peak limits the kernel: Nsight Compute's Speed Of Light rule uses
// the same line ("utilized more than 60%" -> look at that unit; below it on both compute and
// memory -> "latency issues"). The suite's copies reach 85-92% of DRAM peak on an H100, so a
// kernel at 60% is already mostly paying for bytes.
constexpr double kBusyPercent = 60;

// Bank conflicts limit a kernel when they are a large share of its shared-memory wavefronts (a
// quarter: on average a 1.33-way conflict or worse on every request) and the replays are a real
// part of its work (one per twenty warp instructions: each replay holds the shared pipe for a
// cycle). A tree reduction with one conflicted step stays below the second bar.
constexpr double kConflictSharePercent = 25;
constexpr double kConflictsPerInstruction = 0.05;

// Below a quarter of the SM's warp slots (16 of 64 on Hopper and Ampere) a scheduler has too
// few warps to switch to while one waits for memory: more warps in flight (fewer registers or
// less shared memory per block, more blocks) is the first cure, whatever the stall.
constexpr double kLowOccupancyPercent = 25;

// Distinct profiles a BottleneckMemo keeps (about 0.7 KB each) before it starts over: far more
// than one retrieval's candidates, so a query's own repeats always hit.
constexpr size_t kMemoEntries = 8192;

// The largest stall reason other than "selected" (issuing), or "" when none was recorded.
std::string top_stall(const KernelProfile& profile) {
  auto top = profile.top_stalls(1);
  return top.empty() ? std::string() : top.front().reason;
}

std::string percent(double value) { return std::to_string(static_cast<int>(value)) + "%"; }

bool conflict_bound(const KernelProfile& p) {
  return p.bank_conflict_percent() >= kConflictSharePercent &&
         p.bank_conflicts >= kConflictsPerInstruction * p.instructions;
}

}  // namespace

Bottleneck classify_bottleneck(const KernelProfile& p) {
  if (p.kernels <= 0) return Bottleneck::kUnknown;
  // Speed Of Light: the busiest of DRAM and the SM's units names the limit. DRAM first when it
  // is the busier: conflicts or a busy SM behind a saturated DRAM are not what costs the time.
  if (p.dram_percent >= kBusyPercent && p.dram_percent >= p.sm_percent)
    return Bottleneck::kDramBandwidth;
  // Conflicts before compute: their replays load the shared pipe, which makes the SM look busy.
  if (conflict_bound(p)) return Bottleneck::kSharedBankConflicts;
  if (p.tensor_percent >= kBusyPercent) return Bottleneck::kTensor;
  if (p.sm_percent >= kBusyPercent) return Bottleneck::kCompute;
  // Nothing near its peak: latency-bound. Occupancy first (too few warps is the cause, the stall
  // only its symptom); then the warps' main wait: long scoreboard is L1TEX (global, local,
  // texture) data not yet back, every other leading stall is some other latency.
  if (p.occupancy_percent < kLowOccupancyPercent) return Bottleneck::kOccupancyLatency;
  if (top_stall(p) == "long_scoreboard") return Bottleneck::kMemoryLatency;
  return Bottleneck::kLatency;
}

constexpr EnumNames<Bottleneck, 8> kBottleneckNames = {
    {"unknown", "dram_bandwidth", "shared_bank_conflicts", "tensor", "compute", "occupancy_latency",
     "memory_latency", "latency"}};
static_assert(names_each_enumerator(kBottleneckNames, Bottleneck::kLatency));

std::string bottleneck_name(Bottleneck bottleneck) {
  return enum_name(kBottleneckNames, bottleneck, "unknown");
}

std::string bottleneck_description(Bottleneck bottleneck) {
  switch (bottleneck) {
    case Bottleneck::kUnknown:
      return "";
    case Bottleneck::kDramBandwidth:
      return "DRAM bandwidth";
    case Bottleneck::kSharedBankConflicts:
      return "shared-memory bank conflicts";
    case Bottleneck::kTensor:
      return "tensor-pipe throughput";
    case Bottleneck::kCompute:
      return "SM throughput (its busiest pipe: math, load/store or L1; DRAM below " +
             percent(kBusyPercent) + " of peak)";
    case Bottleneck::kOccupancyLatency:
      return "latency with too few warps resident (achieved occupancy below " +
             percent(kLowOccupancyPercent) + ")";
    case Bottleneck::kMemoryLatency:
      return "memory latency (warps wait on global loads, DRAM below " + percent(kBusyPercent) +
             " of peak)";
    case Bottleneck::kLatency:
      return "latency (no unit near its peak; warps wait on barriers, math or dependencies)";
  }
  return "";
}

std::string describe_profile_and_bottleneck(const KernelProfile& profile) {
  std::string line = describe_profile(profile);
  Bottleneck bottleneck = classify_bottleneck(profile);
  if (bottleneck != Bottleneck::kUnknown)
    line += " -> bound by " + bottleneck_description(bottleneck);
  return line;
}

std::string bottleneck_of_profile_json(const std::string& profile_json) {
  auto profile = stored_kernel_profile(profile_json);
  return bottleneck_name(profile ? classify_bottleneck(*profile) : Bottleneck::kUnknown);
}

std::string BottleneckMemo::operator()(const std::string& profile_json) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = classes_.find(profile_json); it != classes_.end()) return it->second;
  }
  std::string name = bottleneck_of_profile_json(profile_json);  // outside the lock: the slow part
  std::lock_guard lock(mutex_);
  if (classes_.size() >= kMemoEntries) classes_.clear();
  classes_.emplace(profile_json, name);
  return name;
}

}  // namespace kopt
