#include "sandbox/worker/timing_loop.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "sandbox/nvml.h"
#include "sandbox/timing_stats.h"
#include "sandbox/worker/cupti_timer.h"

namespace kopt::worker {
namespace {

constexpr int kBatch = 10;  // samples between CUPTI flushes and stopping decisions

// A stream owned for the duration of the loop.
class Stream {
 public:
  explicit Stream(Device& device) : device_(device) {
    device.driver().cuStreamCreate(&stream_, CU_STREAM_DEFAULT);
  }
  ~Stream() {
    if (stream_) device_.driver().cuStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }

 private:
  Device& device_;
  CUstream stream_ = nullptr;
};

struct BufferSet {
  BufferMap inputs, expected, candidate_out, baseline_out;
};

// The per-sample spans of one stream's records: each sample is `launches` consecutive kernels.
Result<std::vector<double>> sample_spans(std::vector<KernelRecord> records, size_t launches,
                                         const std::string& who) {
  std::sort(records.begin(), records.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  if (launches == 0 || records.size() % launches != 0)
    return make_error(who + ": " + std::to_string(records.size()) +
                      " kernel records do not split into samples of " + std::to_string(launches) +
                      " launches: the kernel set changed between iterations");
  std::vector<double> spans;
  for (size_t i = 0; i < records.size(); i += launches) {
    for (size_t k = 1; k < launches; ++k) {
      if (records[i + k].name != records[k].name)
        return make_error(who + ": the kernel set changed between iterations");
    }
    spans.push_back(double(records[i + launches - 1].end_ns - records[i].start_ns) * 1e-3);
  }
  return spans;
}

}  // namespace

Result<TimedOutcome> TimingLoop::run(const LoadedKernel& candidate, const LoadedKernel* baseline,
                                     const ShapeBinding& sizes, uint64_t seed) {
  TimedOutcome outcome;
  const CudaDriver& d = device_.driver();
  auto cand_resolved = candidate.resolve(task_, sizes);
  if (auto* f = std::get_if<PlanFailure>(&cand_resolved))
    return TimedOutcome{f->verdict, f->detail, std::nullopt, {}, std::nullopt};
  const ResolvedPlan& cp = std::get<ResolvedPlan>(cand_resolved);
  std::optional<ResolvedPlan> bp;
  if (baseline) {
    auto r = baseline->resolve(task_, sizes);
    if (auto* f = std::get_if<PlanFailure>(&r))
      return make_error("the baseline cannot run at the timed shape: " + f->detail);
    bp = std::get<ResolvedPlan>(r);
  }
  auto rr = reference_.resolve(task_, sizes);
  if (auto* f = std::get_if<PlanFailure>(&rr))
    return make_error("the reference cannot run at the timed shape: " + f->detail);
  const ResolvedPlan& rp = std::get<ResolvedPlan>(rr);

  // How many buffer sets fit: rotate among up to 4 so addresses and data change every sample.
  size_t set_bytes = 0;
  for (const auto* list : {&task_.inputs, &task_.outputs}) {
    for (const auto& t : *list) {
      auto n = task_.element_count(t, sizes);
      if (!n) return make_error(n.error());
      set_bytes += size_t(*n) * dtype_size(t.dtype) * (list == &task_.outputs ? 3 : 1);
    }
  }
  size_t free_bytes = 0, total_bytes = 0;
  d.cuMemGetInfo(&free_bytes, &total_bytes);
  size_t budget = std::min<size_t>(free_bytes / 2, size_t(16) << 30);
  int sets = int(std::clamp<size_t>(set_bytes ? budget / set_bytes : 4, 1, 4));

  std::vector<GuardedBuffer> storage;
  auto alloc = [&](const std::vector<TensorSpec>& specs, BufferMap& map) -> Status {
    for (const auto& t : specs) {
      auto n = task_.element_count(t, sizes);
      auto b = GuardedBuffer::create(device_, t.dtype, *n);
      if (!b) return make_error(b.error());
      map[t.name] = b->ref();
      storage.push_back(std::move(*b));
    }
    return ok_status();
  };
  auto alloc_scratch = [&](const ResolvedPlan& plan, BufferMap& map) -> Status {
    for (const auto& s : plan.scratch) {
      auto b = GuardedBuffer::create(device_, s.dtype, s.elements);
      if (!b) return make_error(b.error());
      map[s.name] = b->ref();
      storage.push_back(std::move(*b));
    }
    return ok_status();
  };
  std::vector<BufferSet> buffer_sets(sets);
  BufferMap ref_scratch, cand_scratch, base_scratch;
  for (auto& set : buffer_sets) {
    for (auto [specs, map] :
         {std::pair{&task_.inputs, &set.inputs}, std::pair{&task_.outputs, &set.expected},
          std::pair{&task_.outputs, &set.candidate_out},
          std::pair{&task_.outputs, &set.baseline_out}}) {
      if (auto s = alloc(*specs, *map); !s) return make_error("timing buffers: " + s.error());
    }
  }
  if (auto s = alloc_scratch(rp, ref_scratch); !s) return make_error(s.error());
  if (auto s = alloc_scratch(cp, cand_scratch); !s) return make_error(s.error());
  if (bp) {
    if (auto s = alloc_scratch(*bp, base_scratch); !s) return make_error(s.error());
  }
  auto buffers_for = [](const BufferSet& set, const BufferMap& outs, const BufferMap& scratch) {
    BufferMap m = set.inputs;
    m.insert(outs.begin(), outs.end());
    m.insert(scratch.begin(), scratch.end());
    return m;
  };

  double trusted_seconds = 0;  // the slowest trusted run at this shape: the hang limit's basis
  for (int i = 0; i < sets; ++i) {
    auto& set = buffer_sets[i];
    if (auto s = fill_inputs(support_, task_, sizes, set.inputs, seed + 1000003 * uint64_t(i + 1));
        !s)
      return make_error(s.error());
    double seconds = 0;
    if (auto f = run_plan(device_, reference_, rp, buffers_for(set, set.expected, ref_scratch),
                          task_, device_.stream(), {}, &seconds))
      return make_error("the reference failed at the timed shape: " + f->detail);
    trusted_seconds = std::max(trusted_seconds, seconds);
  }

  size_t flush_bytes = std::max<size_t>(size_t(device_.info().l2_bytes) * 2, size_t(128) << 20);
  auto flush = allocate(device_, flush_bytes);
  if (!flush) return make_error(flush.error());
  Stream cand_stream(device_), base_stream(device_);
  auto cand_id = CuptiKernelTimer::stream_id(device_.context(), cand_stream.get());
  auto base_id = CuptiKernelTimer::stream_id(device_.context(), base_stream.get());
  if (!cand_id || !base_id) return make_error(!cand_id ? cand_id.error() : base_id.error());

  auto sample = [&](const LoadedKernel& kernel, const ResolvedPlan& plan, const BufferMap& buffers,
                    CUstream stream, unsigned flush_value,
                    const RunLimit& limit) -> std::optional<PlanFailure> {
    CudaFailure failure;
    if (!device_.check(d.cuMemsetD32Async(flush->ptr(), flush_value, flush_bytes / 4, stream),
                       "cuMemsetD32Async(L2 flush)", &failure))
      return PlanFailure{Verdict::kCrash, failure.message, failure.sticky};
    return run_plan(device_, kernel, plan, buffers, task_, stream, limit);
  };

  // Warm-up (module load, first-launch costs), then drop whatever CUPTI saw so far. The baseline
  // goes first so that the candidate's hang limit knows the baseline's time too.
  const RunLimit trusted_limit{};
  if (bp) {
    double seconds = 0;
    if (auto f = run_plan(device_, *baseline, *bp,
                          buffers_for(buffer_sets[0], buffer_sets[0].baseline_out, base_scratch),
                          task_, base_stream.get(), trusted_limit, &seconds))
      return make_error("the baseline failed at the timed shape: " + f->detail);
    trusted_seconds = std::max(trusted_seconds, seconds);
  }
  const RunLimit cand_limit =
      candidate_run_limit(options_, trusted_seconds, "the reference/baseline at the timed shape");
  if (auto f = sample(candidate, cp,
                      buffers_for(buffer_sets[0], buffer_sets[0].candidate_out, cand_scratch),
                      cand_stream.get(), 1, cand_limit))
    return TimedOutcome{f->verdict,
                        f->detail + " (timed shape " + describe_shape(sizes) + ")",
                        std::nullopt,
                        {},
                        std::nullopt};
  (void)CuptiKernelTimer::collect();
  for (auto& set : buffer_sets)
    for (const auto& [name, b] : set.candidate_out) (void)fill_bytes(device_, b, 0xFF);

  std::vector<double> clock_mhz;
  StoppingCriterion cand_stop(stopping_params(options_)), base_stop(stopping_params(options_));
  int taken = 0;
  while (true) {
    for (int b = 0; b < kBatch; ++b, ++taken) {
      const BufferSet& set = buffer_sets[taken % sets];
      if (auto f = sample(candidate, cp, buffers_for(set, set.candidate_out, cand_scratch),
                          cand_stream.get(), unsigned(taken), cand_limit))
        return TimedOutcome{
            f->verdict, f->detail + " (while timing)", std::nullopt, {}, std::nullopt};
      if (bp) {
        if (auto f = sample(*baseline, *bp, buffers_for(set, set.baseline_out, base_scratch),
                            base_stream.get(), unsigned(taken) + 7, trusted_limit))
          return make_error("the baseline failed while timing: " + f->detail);
      }
      auto mhz = support_.probe_clock_mhz();
      clock_mhz.push_back(mhz ? *mhz : 0.0);
    }
    auto records = CuptiKernelTimer::collect();
    if (!records) return make_error(records.error());
    std::vector<KernelRecord> cand_records, base_records;
    for (auto& r : *records) {
      if (r.stream_id == *cand_id)
        cand_records.push_back(std::move(r));
      else if (r.stream_id == *base_id)
        base_records.push_back(std::move(r));
    }
    // The clock estimate taken right after a pair of samples applies to both.
    size_t first_clock = clock_mhz.size() - kBatch;
    auto spans = sample_spans(std::move(cand_records), cp.launches.size(), "candidate");
    if (!spans) return make_error(spans.error());
    for (size_t i = 0; i < spans->size(); ++i)
      cand_stop.add({(*spans)[i], clock_mhz[first_clock + i]});
    if (bp) {
      auto bspans = sample_spans(std::move(base_records), bp->launches.size(), "baseline");
      if (!bspans) return make_error(bspans.error());
      for (size_t i = 0; i < bspans->size(); ++i)
        base_stop.add({(*bspans)[i], clock_mhz[first_clock + i]});
    }
    // Cheaply, between batches: a process that starts computing on this GPU mid-measurement
    // makes every later sample wrong. (The probe before and after timing catches the rest.)
    if (options_.check_gpu_quiet) {
      if (auto activity = gpu_activity(device_.info().pci_bus_id)) {
        auto others = other_processes(*activity, unsigned(::getpid()));
        if (!others.empty())
          return TimedOutcome{Verdict::kGpuBusy,
                              "the GPU is not ours alone while timing: " +
                                  describe_process(others.front()) + " started computing on it",
                              std::nullopt,
                              {},
                              std::nullopt};
      }
    }
    bool cand_done = cand_stop.finished();
    bool base_done = !bp || base_stop.finished();
    if (cand_done && base_done) break;
  }
  if (CuptiKernelTimer::dropped() > 0)
    return make_error("CUPTI dropped kernel records; the measurement is incomplete");

  // Outputs produced while timing must be right too: a kernel that caches results across
  // launches writes stale values into some set.
  for (int i = 0; i < std::min(sets, taken); ++i) {
    for (const auto& t : task_.outputs) {
      auto o = check_output(support_, task_, t, buffer_sets[i].candidate_out.at(t.name),
                            buffer_sets[i].expected.at(t.name), Verdict::kIncorrect);
      if (!o) return make_error(o.error());
      if (o->verdict != Verdict::kOk) {
        o->detail = "output written while timing is wrong: " + o->detail;
        if (o->mismatch) {
          o->mismatch->phase = "timing";
          o->mismatch->shape = describe_shape(sizes);
        }
        return TimedOutcome{o->verdict, o->detail, o->mismatch, {}, std::nullopt};
      }
    }
  }
  std::map<CUdeviceptr, std::string> reachable;  // what the candidate could write
  for (const auto& set : buffer_sets)
    for (const auto* map : {&set.inputs, &set.candidate_out})
      for (const auto& [name, b] : *map) reachable[b.ptr] = name;
  for (const auto& [name, b] : cand_scratch) reachable[b.ptr] = name;
  for (auto& g : storage) {
    auto it = reachable.find(g.ref().ptr);
    if (it == reachable.end()) continue;
    auto damage = g.damaged_guard();
    if (!damage) return make_error(damage.error());
    if (!damage->empty())
      return TimedOutcome{Verdict::kOutOfBounds,
                          *damage + " of '" + it->second + "' while timing",
                          std::nullopt,
                          {},
                          std::nullopt};
  }
  outcome.candidate = cand_stop.summary();
  if (bp) outcome.baseline = base_stop.summary();
  outcome.detail = "stopped: " + stop_reason_name(cand_stop.reason());
  return outcome;
}

}  // namespace kopt::worker
