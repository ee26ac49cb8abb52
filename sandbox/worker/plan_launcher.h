// Runs a kernel file's launch plan: kopt's own host code resolves grid, block, shared memory and
// arguments from the plan and launches the candidate's kernels. LLM-written code only ever runs
// here, as device code.
#pragma once

#include <memory>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/compiler.h"
#include "sandbox/kernel_file.h"
#include "sandbox/protocol.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/device.h"

namespace kopt::worker {

struct ResolvedLaunch {
  CUfunction function = nullptr;
  std::string kernel;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  std::vector<const ArgBinding*> args;
};

struct ResolvedScratch {
  std::string name;
  DType dtype;
  int64_t elements;
  bool zero;
};

// A launch plan bound to one shape: every expression evaluated and checked against the device.
struct ResolvedPlan {
  std::vector<ResolvedLaunch> launches;
  std::vector<ResolvedScratch> scratch;
  Bindings bindings;  // sizes and tunables
};

// Why a plan could not run, as a verdict with a readable line.
struct PlanFailure {
  Verdict verdict;
  std::string detail;
  bool fatal = false;  // the CUDA context is lost
};

// Why the compiled kernel's parameters (count and byte sizes, from cuFuncGetParamInfo) differ
// from what the launch passes, or nullopt when they match or the driver cannot tell.
std::optional<std::string> parameter_mismatch(const CudaDriver& driver,
                                              const ResolvedLaunch& launch);

class LoadedKernel {
 public:
  static Result<LoadedKernel> load(Device& device, KernelFile file, const CompileOutput& compiled,
                                   std::map<std::string, int64_t> tunables);

  // Evaluates the plan at `sizes`; failures are invalid_plan.
  std::variant<ResolvedPlan, PlanFailure> resolve(const TaskSpec& task,
                                                  const ShapeBinding& sizes) const;
  // Launches every kernel of the plan on `stream` (no synchronisation).
  std::optional<PlanFailure> launch(const ResolvedPlan& plan, const BufferMap& buffers,
                                    const TaskSpec& task, CUstream stream) const;
  // Registers, spills, shared memory and occupancy of the heaviest launch of `plan`.
  KernelResources resources(const ResolvedPlan& plan) const;
  const KernelFile& file() const { return file_; }
  // Kernel symbols in the CUBIN (as CUPTI names them).
  std::vector<std::string> symbols() const;
  // Whether the module holds __device__ data, which outlives a launch (sandbox/cubin_state.h).
  bool keeps_state() const { return keeps_state_; }
  // The same CUBIN in a module of its own, its __device__ data as the image defines it.
  Result<LoadedKernel> reloaded() const;

 private:
  Status load_module();  // a new module from cubin_, with its functions

  Device* device_ = nullptr;
  KernelFile file_;
  std::shared_ptr<Module> module_;
  std::shared_ptr<const std::string> cubin_;
  bool keeps_state_ = false;
  std::map<std::string, CUfunction> functions_;
  std::map<std::string, std::string> lowered_;
  std::map<std::string, int64_t> tunables_;
};

}  // namespace kopt::worker
