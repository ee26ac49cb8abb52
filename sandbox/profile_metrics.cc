#include "sandbox/profile_metrics.h"

#include <algorithm>

namespace kopt {
namespace {

// Positions of the named metrics in profile_metric_names(). The stall counters follow them.
enum Metric : size_t {
  kDuration,
  kDramRead,
  kDramWrite,
  kDramPercent,
  kL2Hit,
  kL1Hit,
  kSmPercent,
  kOccupancy,
  kInstructions,
  kTensorPercent,
  kHmmaInstructions,
  kGmmaInstructions,
  kImmaInstructions,
  kSharedWavefronts,
  kBankConflicts,
  kFirstStall,
};

// Warp states of smsp__warps_issue_stalled_<reason>: together they cover every cycle of every
// active warp, so each one's share is "where the warps' time went" (Nsight Compute's Warp State
// Statistics). "selected" is issuing, kept so shares add up to 100%.
const std::vector<std::string>& stall_reasons() {
  static const std::vector<std::string> reasons = {
      "long_scoreboard", "short_scoreboard",   "mio_throttle", "lg_throttle",  "barrier",
      "membar",          "math_pipe_throttle", "wait",         "not_selected", "selected",
      "no_instruction",  "dispatch_stall",     "drain",        "sleeping",     "tex_throttle",
      "imc_miss",        "branch_resolving",   "misc",         "gmma"};
  return reasons;
}

}  // namespace

const std::vector<std::string>& profile_metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {
        // The kernel's time under the profiler: the base of every rate, and a check that the
        // profiled run is the timed one (it must sit near the timed median).
        "gpu__time_duration.sum",
        // DRAM bytes each way: what a memory-bound kernel must minimise, and what the task's
        // "bytes" formula predicts (more means re-reads or write-allocate traffic).
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        // Achieved DRAM bandwidth as % of peak: near 90% a memory-bound kernel is done.
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        // L2 and L1 hit rates: whether tiling/reuse works (GEMM, attention) or data streams.
        "lts__t_sector_hit_rate.pct",
        "l1tex__t_sector_hit_rate.pct",
        // SM throughput: the busiest SM unit as % of its peak (Nsight's "Compute (SM)
        // Throughput"); high with low DRAM % means compute-bound. Alone it needs 8 passes.
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        // Achieved occupancy: warps resident per SM over active cycles, against the theoretical
        // occupancy the worker already reports; a gap means tail effects or imbalance.
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        // Warp instructions executed: work done, to compare two versions of one kernel.
        "smsp__inst_executed.sum",
        // Tensor pipes busy with matrix instructions (HMMA/mma.sync, HGMMA/QGMMA/wgmma, IMMA,
        // BMMA): for matmul kernels the real ceiling. Not sm__pipe_tensor_cycles_active, which
        // on an H100 read 0.5-0.7% for softmax and axpy kernels that issue no matrix
        // instruction (ncu agrees; the pipe also carries other work).
        "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg."
        "pct_of_peak_sustained_active",
        // Matrix instructions issued, by family: tells "no tensor work" (value omitted) from
        // "idle pipes", and mma.sync (hmma) from Hopper's warpgroup wgmma (gmma). FP64 DMMA is
        // left out: it would cost a 16th replay pass, and no task is FP64.
        "sm__inst_executed_pipe_tensor_op_hmma.sum",
        "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "sm__inst_executed_pipe_tensor_op_imma.sum",
        // Shared-memory wavefronts and the bank-conflict part of them: a 32-way conflict makes
        // 32 wavefronts of one request, 31 of them conflicts.
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    };
    for (const auto& r : stall_reasons()) n.push_back("smsp__warps_issue_stalled_" + r + ".sum");
    return n;
  }();
  return names;
}

KernelProfile summarize_ranges(const std::vector<RangeValues>& ranges) {
  KernelProfile p;
  p.kernels = int(ranges.size());
  const size_t count = profile_metric_names().size();
  double weight = 0, tensor_instructions = 0, tensor_weighted = 0;
  std::vector<double> stall_cycles(stall_reasons().size(), 0.0);
  for (const auto& v : ranges) {
    if (v.size() != count) continue;
    double w = v[kDuration];
    weight += w;
    p.duration_us += v[kDuration] * 1e-3;
    p.dram_read_bytes += v[kDramRead];
    p.dram_write_bytes += v[kDramWrite];
    p.dram_percent += w * v[kDramPercent];
    p.l2_hit_percent += w * v[kL2Hit];
    p.l1_hit_percent += w * v[kL1Hit];
    p.sm_percent += w * v[kSmPercent];
    p.occupancy_percent += w * v[kOccupancy];
    tensor_weighted += w * v[kTensorPercent];
    p.instructions += v[kInstructions];
    tensor_instructions += v[kHmmaInstructions] + v[kGmmaInstructions] + v[kImmaInstructions];
    p.shared_wavefronts += v[kSharedWavefronts];
    p.bank_conflicts += v[kBankConflicts];
    for (size_t s = 0; s < stall_cycles.size(); ++s) stall_cycles[s] += v[kFirstStall + s];
  }
  if (weight > 0) {
    for (double* rate : {&p.dram_percent, &p.l2_hit_percent, &p.l1_hit_percent, &p.sm_percent,
                         &p.occupancy_percent})
      *rate /= weight;
    if (tensor_instructions > 0) p.tensor_percent = tensor_weighted / weight;
  }
  double total = 0;
  for (double c : stall_cycles) total += c;
  for (size_t s = 0; s < stall_cycles.size() && total > 0; ++s) {
    if (stall_cycles[s] <= 0) continue;
    p.stalls.push_back({stall_reasons()[s], 100.0 * stall_cycles[s] / total});
  }
  std::stable_sort(p.stalls.begin(), p.stalls.end(),
                   [](const StallShare& a, const StallShare& b) { return a.percent > b.percent; });
  return p;
}

}  // namespace kopt
