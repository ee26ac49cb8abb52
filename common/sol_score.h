// Where a kernel stands against what users run and against physics: the speedup over the task's
// baseline.cu, the speedup over the best production baseline (cuBLASLt, PyTorch eager or
// torch.compile, measured on the same GPU model), the share of the speed-of-light bound, and
// SOL-ExecBench's score S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)): 0.5 at the reference T_b,
// 1.0 at the speed of light, below 0.5 when slower than the reference. One place computes all
// four, so every printer (eval, status, memory wins, the report, the export) says the same.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt {

// S for a kernel of `kernel_us` against the reference `reference_us`, both bounded below by
// `sol_us`. An error (never a number) when a time is not positive and finite, when the kernel
// is faster than the bound (a broken bound or a cheating kernel: suspicious), or when the
// reference is at or below the bound (the formula divides by T_b - T_SOL <= 0, so no S exists:
// the bound is too low for this task, or the reference was mis-measured).
Result<double> sol_score(double kernel_us, double reference_us, double sol_us);

// The best production baseline of a task on one GPU model, as the memory records it.
struct ProductionReference {
  std::string name;  // "cublaslt_autotuned", "torch_compile", ...
  double median_us = 0;
};

struct Standing {
  double speedup_vs_baseline = 0;    // baseline.cu / kernel; 0 when unknown
  double speedup_vs_production = 0;  // production / kernel; 0 when none measured
  std::string production_name;       // the production baseline named, "" when none measured
  double sol_percent = 0;            // sol / kernel * 100; 0 when no bound
  std::optional<double> score;       // S; empty when it cannot be computed (score_note says why)
  std::string score_reference;       // what T_b is: the production name, or "baseline.cu"
  std::string score_note;            // why S is missing, or "" when it is there
  // Production libraries the task declares that did not import on the GPU machine when
  // `kopt baselines` ran ("flashinfer", "vllm"): said plainly beside the baseline that stands in.
  std::vector<std::string> not_installed;
};

// All four numbers for a kernel. S uses the production baseline as T_b when one is given, else
// baseline.cu (and score_reference says which). Zero times mean "unknown".
Standing standing(double kernel_us, double baseline_us, double sol_us,
                  const std::optional<ProductionReference>& production);

// "1.52x" or "-"; "0.83x cublaslt_autotuned" or "none measured", followed by "; flashinfer, vllm
// not installed (torch_compile stands in)" where declared libraries are missing; "S 0.47 vs
// baseline.cu" or "S - (why)". Plain text shared by the terminal, markdown and the export's
// README.
std::string format_production_speedup(const Standing& s);
std::string format_score(const Standing& s);
// {"speedup_vs_baseline", "speedup_vs_production", "production_baseline" (null: none measured),
//  "sol_percent", "sol_score" (null: see "sol_score_note"), "sol_score_reference"}, and
//  "libraries_not_installed" (names) where some are.
nlohmann::json standing_json(const Standing& s);

}  // namespace kopt
