#include "sandbox/worker/plan_launcher.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "sandbox/cubin_state.h"

namespace kopt::worker {
namespace {

// Bytes the launch passes for one plan argument (its slot holds at most 8).
size_t argument_bytes(const ArgBinding& arg) {
  switch (arg.kind) {
    case ArgBinding::Kind::kInt32:
    case ArgBinding::Kind::kFloat32:
      return 4;
    case ArgBinding::Kind::kBuffer:
    case ArgBinding::Kind::kInt64:
    case ArgBinding::Kind::kFloat64:
      return 8;
  }
  return 8;
}

}  // namespace

std::optional<std::string> parameter_mismatch(const CudaDriver& driver,
                                              const ResolvedLaunch& launch) {
  // The driver copies as many parameter bytes as the compiled kernel declares, whatever the launch
  // passes: a kernel declaring more, or larger, parameters than the plan gives would read the
  // worker's host memory beyond the argument slots.
  if (!driver.cuFuncGetParamInfo) return std::nullopt;  // a driver older than CUDA 12.4
  std::vector<size_t> sizes;
  while (true) {
    size_t offset = 0, size = 0;
    CUresult rc = driver.cuFuncGetParamInfo(launch.function, sizes.size(), &offset, &size);
    // An index past the last parameter is CUDA_ERROR_INVALID_VALUE; any other error means this
    // driver cannot tell (no verdict from a check that did not run).
    if (rc == CUDA_ERROR_INVALID_VALUE) break;
    if (rc != CUDA_SUCCESS) return std::nullopt;
    sizes.push_back(size);
    if (sizes.size() > 4096) break;  // the ABI's parameter space is 32 KiB; never loop forever
  }
  if (sizes.size() != launch.args.size()) {
    return "kernel " + launch.kernel + " declares " + std::to_string(sizes.size()) +
           " parameters but the plan passes " + std::to_string(launch.args.size()) +
           (sizes.size() > launch.args.size()
                ? " (parameter " + std::to_string(launch.args.size()) + " has no argument)"
                : "");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    size_t passed = argument_bytes(*launch.args[i]);
    if (sizes[i] != passed) {
      return "kernel " + launch.kernel + ": parameter " + std::to_string(i) + " is " +
             std::to_string(sizes[i]) + " bytes but the plan passes '" + launch.args[i]->text +
             "' as " + std::to_string(passed) +
             " bytes (i32:/f32: pass 4 bytes, i64:/f64: and buffers 8)";
    }
  }
  return std::nullopt;
}

Result<LoadedKernel> LoadedKernel::load(Device& device, KernelFile file,
                                        const CompileOutput& compiled,
                                        std::map<std::string, int64_t> tunables) {
  LoadedKernel k;
  k.device_ = &device;
  k.file_ = std::move(file);
  k.tunables_ = k.file_.tunable_values(tunables);
  k.lowered_ = compiled.lowered_names;
  k.cubin_ = std::make_shared<const std::string>(compiled.cubin);
  auto state = read_cubin_state(*k.cubin_);
  if (!state) return make_error("the CUBIN: " + state.error());
  k.keeps_state_ = state->writable_global_bytes > 0;
  if (auto s = k.load_module(); !s) return make_error(s.error());
  return k;
}

Result<LoadedKernel> LoadedKernel::reloaded() const {
  LoadedKernel k = *this;
  if (auto s = k.load_module(); !s) return make_error(s.error());
  return k;
}

Status LoadedKernel::load_module() {
  CUmodule module = nullptr;
  CudaFailure failure;
  if (!device_->check(device_->driver().cuModuleLoadData(&module, cubin_->data()),
                      "cuModuleLoadData", &failure))
    return make_error(failure.message);
  module_ = std::make_shared<Module>(&device_->driver(), module);
  functions_.clear();
  for (const auto& [name, lowered] : lowered_) {
    CUfunction fn = nullptr;
    if (!device_->check(device_->driver().cuModuleGetFunction(&fn, module, lowered.c_str()),
                        "cuModuleGetFunction", &failure))
      return make_error("kernel " + name + ": " + failure.message);
    functions_[name] = fn;
  }
  return ok_status();
}

std::vector<std::string> LoadedKernel::symbols() const {
  std::vector<std::string> out;
  for (const auto& [name, lowered] : lowered_) out.push_back(lowered);
  return out;
}

std::variant<ResolvedPlan, PlanFailure> LoadedKernel::resolve(const TaskSpec& /*task: sizes are already bound*/,
                                                               const ShapeBinding& sizes) const {
  ResolvedPlan plan;
  plan.bindings = sizes;
  for (const auto& [k, v] : tunables_) plan.bindings[k] = v;
  auto invalid = [](std::string detail) { return PlanFailure{Verdict::kInvalidPlan, detail}; };
  const DeviceInfo& info = device_->info();

  for (const auto& s : file_.scratch) {
    auto n = evaluate_expression(s.count, plan.bindings);
    if (!n) return invalid("scratch '" + s.name + "': " + n.error());
    if (*n < 0) return invalid("scratch '" + s.name + "' has a negative size");
    if (*n > (int64_t(1) << 36)) return invalid("scratch '" + s.name + "' is unreasonably large");
    plan.scratch.push_back({s.name, s.dtype, *n, s.zero});
  }
  for (size_t i = 0; i < file_.launches.size(); ++i) {
    const Launch& l = file_.launches[i];
    std::string where = "launch " + std::to_string(i) + " (" + l.kernel + "): ";
    ResolvedLaunch r;
    r.kernel = l.kernel;
    auto fn = functions_.find(l.kernel);
    if (fn == functions_.end()) return invalid(where + "kernel not found in the module");
    r.function = fn->second;
    int64_t threads = 1;
    for (size_t d = 0; d < l.grid.size(); ++d) {
      auto v = evaluate_expression(l.grid[d], plan.bindings);
      if (!v) return invalid(where + "grid: " + v.error());
      int64_t limit = d == 0 ? INT32_MAX : 65535;
      if (*v < 1 || *v > limit)
        return invalid(where + "grid[" + std::to_string(d) + "] = " + std::to_string(*v) +
                       " is outside 1.." + std::to_string(limit));
      r.grid[d] = static_cast<unsigned>(*v);
    }
    for (size_t d = 0; d < l.block.size(); ++d) {
      auto v = evaluate_expression(l.block[d], plan.bindings);
      if (!v) return invalid(where + "block: " + v.error());
      if (*v < 1 || *v > 1024)
        return invalid(where + "block[" + std::to_string(d) + "] = " + std::to_string(*v) +
                       " is outside 1..1024");
      r.block[d] = static_cast<unsigned>(*v);
      threads *= *v;
    }
    if (threads > info.max_threads_per_block)
      return invalid(where + "a block of " + std::to_string(threads) +
                     " threads exceeds the device's " + std::to_string(info.max_threads_per_block));
    auto smem = evaluate_expression(l.shared_bytes, plan.bindings);
    if (!smem) return invalid(where + "shared_bytes: " + smem.error());
    int static_smem = 0;
    device_->driver().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                         r.function);
    if (*smem < 0 || *smem + static_smem > info.max_shared_per_block_optin)
      return invalid(where + std::to_string(*smem) + " bytes of dynamic shared memory (+" +
                     std::to_string(static_smem) + " static) exceed the device's " +
                     std::to_string(info.max_shared_per_block_optin) + " per block");
    r.shared_bytes = static_cast<unsigned>(*smem);
    for (const auto& a : l.args) r.args.push_back(&a);
    if (auto mismatch = parameter_mismatch(device_->driver(), r)) return invalid(where + *mismatch);
    plan.launches.push_back(std::move(r));
  }
  return plan;
}

std::optional<PlanFailure> LoadedKernel::launch(const ResolvedPlan& plan, const BufferMap& buffers,
                                                const TaskSpec& task, CUstream stream) const {
  const CudaDriver& d = device_->driver();
  for (const auto& l : plan.launches) {
    // Each argument gets an 8-byte slot; the driver reads the parameter's size from the CUBIN.
    std::vector<uint64_t> slots(l.args.size());
    std::vector<void*> pointers(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const ArgBinding& a = *l.args[i];
      uint64_t& slot = slots[i];
      pointers[i] = &slot;
      switch (a.kind) {
        case ArgBinding::Kind::kBuffer: {
          auto it = buffers.find(a.buffer);
          if (it == buffers.end())
            return PlanFailure{Verdict::kInvalidPlan, "argument '" + a.text + "': no such buffer"};
          CUdeviceptr p = it->second.ptr;
          std::memcpy(&slot, &p, sizeof p);
          break;
        }
        case ArgBinding::Kind::kInt32:
        case ArgBinding::Kind::kInt64: {
          auto v = evaluate_expression(a.expression, plan.bindings);
          if (!v) return PlanFailure{Verdict::kInvalidPlan, "argument '" + a.text + "': " + v.error()};
          if (a.kind == ArgBinding::Kind::kInt32) {
            if (*v < INT32_MIN || *v > INT32_MAX)
              return PlanFailure{Verdict::kInvalidPlan,
                                 "argument '" + a.text + "' = " + std::to_string(*v) +
                                     " does not fit in 32 bits; bind it as i64:"};
            int32_t v32 = static_cast<int32_t>(*v);
            std::memcpy(&slot, &v32, sizeof v32);
          } else {
            int64_t v64 = *v;
            std::memcpy(&slot, &v64, sizeof v64);
          }
          break;
        }
        case ArgBinding::Kind::kFloat32:
        case ArgBinding::Kind::kFloat64: {
          auto it = task.constants.find(a.expression);
          if (it == task.constants.end())
            return PlanFailure{Verdict::kInvalidPlan, "argument '" + a.text + "': no such constant"};
          if (a.kind == ArgBinding::Kind::kFloat32) {
            float f = static_cast<float>(it->second);
            std::memcpy(&slot, &f, sizeof f);
          } else {
            double f = it->second;
            std::memcpy(&slot, &f, sizeof f);
          }
          break;
        }
      }
    }
    CudaFailure failure;
    if (l.shared_bytes > 48 * 1024 &&
        !device_->check(d.cuFuncSetAttribute(l.function,
                                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(l.shared_bytes)),
                        "cuFuncSetAttribute", &failure))
      return PlanFailure{Verdict::kInvalidPlan, l.kernel + ": " + failure.message};
    if (!device_->check(d.cuLaunchKernel(l.function, l.grid[0], l.grid[1], l.grid[2], l.block[0],
                                         l.block[1], l.block[2], l.shared_bytes, stream,
                                         pointers.data(), nullptr),
                        "cuLaunchKernel", &failure)) {
      return PlanFailure{failure.sticky ? Verdict::kCrash : Verdict::kLaunchError,
                         l.kernel + ": " + failure.message, failure.sticky};
    }
  }
  return std::nullopt;
}

KernelResources LoadedKernel::resources(const ResolvedPlan& plan) const {
  KernelResources out;
  const CudaDriver& d = device_->driver();
  out.occupancy = 1.0;
  for (const auto& l : plan.launches) {
    int regs = 0, local = 0, smem = 0, blocks = 0;
    d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l.function);
    d.cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, l.function);
    d.cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, l.function);
    int threads = int(l.block[0] * l.block[1] * l.block[2]);
    d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, l.function, threads, l.shared_bytes);
    double occupancy = double(blocks) * threads / device_->info().max_threads_per_sm;
    out.registers = std::max(out.registers, regs);
    out.local_bytes = std::max(out.local_bytes, local);
    out.static_shared_bytes = std::max(out.static_shared_bytes, smem);
    out.dynamic_shared_bytes = std::max<int64_t>(out.dynamic_shared_bytes, l.shared_bytes);
    out.occupancy = std::min(out.occupancy, occupancy);
  }
  return out;
}

}  // namespace kopt::worker
