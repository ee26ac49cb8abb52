#include "sandbox/worker/profile_pass.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "sandbox/profile_metrics.h"
#include "sandbox/worker/cupti_timer.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/launch_deadline.h"
#include "sandbox/worker/range_profiler.h"
#include "sandbox/worker/verifier.h"

namespace kopt::worker {
namespace {

// The process's profiler, made at the first profile request (its setup costs ~100 ms once).
struct ProfilerState {
  std::unique_ptr<RangeProfiler> profiler;
  bool tried = false;
  ProfilerUnavailable unavailable;
};

ProfilerState& state() {
  static ProfilerState s;
  return s;
}

// The candidate's buffers at the timed shape: inputs made from `seed`, outputs, scratch and an L2
// flush buffer; and the run the profiler replays.
class ProfiledRun {
 public:
  ProfiledRun(Device& device, SupportKernels& support, const TaskSpec& task,
              const LoadedKernel& reference, const LoadedKernel& candidate,
              const ShapeBinding& sizes)
      : device_(device),
        support_(support),
        task_(task),
        candidate_(candidate),
        maker_(device, support, task, reference, sizes) {}

  Status prepare(uint64_t seed) {
    auto resolved = candidate_.resolve(task_, maker_.sizes());
    if (auto* f = std::get_if<PlanFailure>(&resolved)) return make_error(f->detail);
    plan_ = std::get<ResolvedPlan>(resolved);
    auto set = maker_.allocate();
    if (!set) return make_error(set.error());
    inputs_ = std::move(*set);
    // Inputs only: the candidate is already verified, so the reference need not run.
    if (auto s = fill_inputs(support_, task_, maker_.sizes(), inputs_->inputs, seed); !s) return s;
    buffers_ = inputs_->inputs;
    for (const auto& t : task_.outputs) {
      auto b = GuardedBuffer::create(device_, t.dtype, *task_.element_count(t, maker_.sizes()));
      if (!b) return make_error(b.error());
      buffers_[t.name] = b->ref();
      storage_.push_back(std::move(*b));
    }
    for (const auto& s : plan_.scratch) {
      auto b = GuardedBuffer::create(device_, s.dtype, s.elements);
      if (!b) return make_error(b.error());
      buffers_[s.name] = b->ref();
      storage_.push_back(std::move(*b));
    }
    flush_bytes_ = std::max<size_t>(size_t(device_.info().l2_bytes) * 2, size_t(128) << 20);
    auto flush = allocate(device_, flush_bytes_);
    if (!flush) return make_error(flush.error());
    flush_ = std::make_unique<DeviceMemory>(std::move(*flush));
    return run_once();  // warm: first-launch costs stay out of the counters
  }

  // A cold L2 without dirty lines, as Nsight Compute's --cache-control all leaves it: reading
  // (not writing) twice the L2's size evicts every line and makes the write-backs of the last
  // run's outputs happen here, not inside the next profiled run (a memset flush left ~22 MB of
  // its own dirty lines to be written back during every profiled kernel, seen on an H100).
  Status flush_l2() {
    if (auto sum = support_.checksum(flush_->ptr(), flush_bytes_); !sum)
      return make_error("L2 flush: " + sum.error());
    return ok_status();
  }

  // One run of the plan, synchronised.
  Status run_plan_once() {
    if (auto f = run_plan(device_, candidate_, plan_, buffers_, task_, device_.stream(), limit_))
      return make_error(f->detail);
    return ok_status();
  }

  Status run_once() {
    if (auto s = flush_l2(); !s) return s;
    return run_plan_once();
  }

  size_t launches() const { return plan_.launches.size(); }

 private:
  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& candidate_;
  InputSetMaker maker_;
  ResolvedPlan plan_;
  std::unique_ptr<InputSet> inputs_;
  std::vector<GuardedBuffer> storage_;
  BufferMap buffers_;
  std::unique_ptr<DeviceMemory> flush_;
  size_t flush_bytes_ = 0;
  RunLimit limit_{};
};

// One run between cuProfilerStart and cuProfilerStop: what `ncu --profile-from-start off` sees.
Status bracket_for_outside_profiler(Device& device, ProfiledRun& run) {
  const CudaDriver& d = device.driver();
  CudaFailure failure;
  // The flush's read sweep is a kernel: outside the bracket, as it is outside kopt's ranges.
  if (auto flushed = run.flush_l2(); !flushed) return flushed;
  if (!device.check(d.cuProfilerStart(), "cuProfilerStart", &failure))
    return make_error(failure.message);
  Status ran = run.run_plan_once();
  if (!device.check(d.cuProfilerStop(), "cuProfilerStop", &failure))
    return make_error(failure.message);
  return ran;
}

}  // namespace

void profile_candidate(Device& device, SupportKernels& support, const TaskSpec& task,
                       const LoadedKernel& reference, const LoadedKernel& candidate,
                       const ShapeBinding& sizes, const EvalOptions& options, uint64_t seed,
                       EvalResult& result) {
  auto started = std::chrono::steady_clock::now();
  ProfilerState& s = state();
  if (options.profile == "cupti" && !s.tried) {
    s.tried = true;
    auto made = RangeProfiler::create(device.context(), device.info().ordinal, &s.unavailable);
    if (made) {
      s.profiler = std::move(*made);
      std::fprintf(stderr, "kopt-sandbox: profiling on %s, %zu replay passes per candidate\n",
                   s.profiler->chip().c_str(), s.profiler->passes());
    } else {
      // Said once, clearly: this result carries it, later ones go on without metrics.
      if (s.unavailable.reason.empty()) s.unavailable.reason = made.error();
      result.profile_note = "profiling unavailable: " + s.unavailable.reason;
      std::fprintf(stderr, "kopt-sandbox: %s\n", result.profile_note.c_str());
      return;
    }
  }
  if (options.profile == "cupti" && !s.profiler) return;

  auto created = std::chrono::steady_clock::now();
  ProfiledRun run(device, support, task, reference, candidate, sizes);
  if (auto prepared = run.prepare(seed); !prepared) {
    result.profile_note = "profile pass skipped: " + prepared.error();
    return;
  }
  auto prepared_at = std::chrono::steady_clock::now();
  if (options.profile == "bracket") {
    if (auto s2 = bracket_for_outside_profiler(device, run); !s2)
      result.profile_note = "profile bracket failed: " + s2.error();
    return;
  }
  // CUPTI's kernel tracing adds instructions to every warp (seen on an H100: 8 per warp of
  // axpy, which moved stall shares by 9 points against ncu): off while counters are taken.
  if (auto paused = CuptiKernelTimer::pause(); !paused) {
    result.profile_note = "profile pass skipped: " + paused.error();
    return;
  }
  auto replay_started = std::chrono::steady_clock::now();
  auto ranges = s.profiler->profile([&] { return run.flush_l2(); },
                                    [&] { return run.run_plan_once(); }, run.launches());
  if (auto resumed = CuptiKernelTimer::resume(); !resumed) {
    result.profile_note = "profile pass: " + resumed.error();
    return;
  }
  if (!ranges) {
    result.profile_note = "profile pass failed: " + ranges.error();
    return;
  }
  KernelProfile profile = summarize_ranges(*ranges);
  profile.passes = int(s.profiler->passes());
  profile.profile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (std::getenv("KOPT_PROFILE_TRACE")) {
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const auto& t = s.profiler->last_timing();
    std::fprintf(stderr,
                 "kopt-sandbox: profile pass %.1f ms: profiler %.1f, buffers %.1f, trace pause "
                 "%.1f, set-up %.1f, %d passes %.1f (flush %.1f, runs %.1f), decode %.1f\n",
                 profile.profile_ms, ms(started, created), ms(created, prepared_at),
                 ms(prepared_at, replay_started), t.setup_ms, profile.passes, t.passes_ms,
                 t.before_ms, t.runs_ms, t.decode_ms);
  }
  result.profile = std::move(profile);
}

}  // namespace kopt::worker
