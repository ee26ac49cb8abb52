#include "sandbox/worker/co_runner.h"

#include <algorithm>
#include <cmath>

namespace kopt::worker {
namespace {

// The gate waits at most this long for the occupier's blocks (another context's kernels may hold
// the SMs for a time slice): the round then runs beside whatever share did start.
constexpr uint64_t kGateBudgetNs = 20'000'000;

Status checked(Device& device, CUresult rc, const char* call) {
  CudaFailure failure;
  if (!device.check(rc, call, &failure)) return make_error("co-runner: " + failure.message);
  return ok_status();
}

}  // namespace

int held_sms(double share, int sm_count) {
  if (sm_count < 2) return 0;
  int held = int(std::lround(share * sm_count));
  return std::clamp(held, 1, sm_count - 1);
}

Result<CoRunner> CoRunner::create(Device& device, SupportKernels& support) {
  CoRunner c;
  c.device_ = &device;
  auto side = Stream::create(device);
  if (!side) return make_error(side.error());
  c.side_ = std::move(*side);
  auto reset = Event::create(device);
  if (!reset) return make_error(reset.error());
  c.reset_ = std::move(*reset);
  auto control = allocate(device, 2 * sizeof(unsigned));
  if (!control) return make_error(control.error());
  c.control_ = std::move(*control);
  size_t traffic = std::max<size_t>(2 * size_t(device.info().l2_bytes), size_t(32) << 20);
  auto buffer = allocate(device, traffic);
  if (!buffer) return make_error(buffer.error());
  c.traffic_ = std::move(*buffer);
  if (auto s = checked(device,
                       device.driver().cuMemsetD32Async(c.traffic_.ptr(), 0x3f800000u, traffic / 4,
                                                        c.side_.get()),
                       "cuMemsetD32Async(traffic)");
      !s)
    return make_error(s.error());
  for (auto [name, fn] : {std::pair{"corun_occupy", &c.occupy_},
                          {"corun_gate", &c.gate_},
                          {"corun_release", &c.release_}}) {
    auto f = support.function(name);
    if (!f) return make_error(f.error());
    *fn = *f;
  }
  const DeviceInfo& info = device.info();
  c.block_threads_ = unsigned(std::min(1024, info.max_threads_per_block));
  // More than half of what a block may hold: one occupier block per SM. The static `stop` flag
  // and the driver's reserve take the rest.
  int optin = std::max(info.max_shared_per_block_optin, info.max_shared_per_block);
  c.shared_bytes_ = unsigned(std::max<int>(optin - 1024, int(c.block_threads_) * 4));
  if (auto s = checked(
          device,
          device.driver().cuFuncSetAttribute(
              c.occupy_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(c.shared_bytes_)),
          "cuFuncSetAttribute(corun_occupy)");
      !s)
    return make_error(s.error());
  return c;
}

// The control words reset in the side stream's order, the candidate's stream made to wait for
// that, the occupier launched, then the gate on the candidate's stream.
Status CoRunner::hold(unsigned blocks, uint64_t budget_ns, uint64_t seed, CUstream stream) {
  const CudaDriver& d = device_->driver();
  CUstream side = side_.get();
  CUdeviceptr control = control_.ptr();
  if (auto s = checked(*device_, d.cuMemsetD32Async(control, 0, 2, side), "cuMemsetD32Async"); !s)
    return s;
  if (auto s = checked(*device_, d.cuEventRecord(reset_.get(), side), "cuEventRecord"); !s)
    return s;
  if (auto s = checked(*device_, d.cuStreamWaitEvent(stream, reset_.get(), 0), "cuStreamWaitEvent");
      !s)
    return s;
  CUdeviceptr buffer = traffic_.ptr();
  uint64_t words = traffic_.bytes() / 4;
  void* occupy_args[] = {&buffer, &words, &control, &budget_ns, &seed};
  if (auto s = checked(*device_,
                       d.cuLaunchKernel(occupy_, blocks, 1, 1, block_threads_, 1, 1, shared_bytes_,
                                        side, occupy_args, nullptr),
                       "cuLaunchKernel(corun_occupy)");
      !s)
    return s;
  uint64_t gate_ns = std::min(budget_ns, kGateBudgetNs);
  void* gate_args[] = {&control, &blocks, &gate_ns};
  return checked(*device_, d.cuLaunchKernel(gate_, 1, 1, 1, 1, 1, 1, 0, stream, gate_args, nullptr),
                 "cuLaunchKernel(corun_gate)");
}

Status CoRunner::release(CUstream stream) {
  CUdeviceptr control = control_.ptr();
  void* args[] = {&control};
  return checked(
      *device_,
      device_->driver().cuLaunchKernel(release_, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
      "cuLaunchKernel(corun_release)");
}

Result<std::optional<PlanFailure>> CoRunner::run(
    double share, uint64_t seed, CUstream stream, const RunLimit& limit, const std::string& what,
    const std::function<std::optional<PlanFailure>()>& launch, double* elapsed_seconds) {
  unsigned blocks = unsigned(held_sms(share, device_->info().sm_count));
  auto budget_ns = uint64_t(limit.seconds / 4 * 1e9);
  if (blocks > 0)
    if (auto s = hold(blocks, budget_ns, seed, stream); !s) return make_error(s.error());
  ++runs_;
  std::optional<PlanFailure> failure = launch();
  // Released whatever the plan did: a plan that failed to launch leaves the occupier nothing to
  // wait for (its budget would end it, later).
  if (blocks > 0 && !device_->context_lost())
    if (auto s = release(stream); !s) return make_error(s.error());
  if (!failure) failure = wait_for_stream(*device_, stream, limit, what, elapsed_seconds);
  // A lost context (a timeout abandons it) leaves the side stream to the driver's teardown.
  if (blocks > 0 && !device_->context_lost())
    if (auto s = checked(*device_, device_->driver().cuStreamSynchronize(side_.get()),
                         "cuStreamSynchronize(co-runner)");
        !s && !failure)
      return make_error(s.error());
  return failure;
}

}  // namespace kopt::worker
