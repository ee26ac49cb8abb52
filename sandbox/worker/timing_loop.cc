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

// One rotation slot: an input set with the reference's outputs, and the outputs of both sides.
struct BufferSet {
  InputSet* data = nullptr;
  BufferMap candidate_out, baseline_out;
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

nlohmann::json TimedOutcome::facts() const {
  return {{"candidate_warm_up", candidate_warm_up},
          {"baseline_warm_up", baseline_warm_up},
          {"fresh_baseline_samples", fresh_baseline_samples},
          {"baseline_from_history", baseline_from_history}};
}

Result<TimedOutcome> TimingLoop::run(const LoadedKernel& candidate, const LoadedKernel* baseline,
                                     const ShapeBinding& sizes, uint64_t seed,
                                     double candidate_seconds) {
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
  // How many buffer sets fit: rotate among up to 4 so addresses and data change every sample.
  // A set: its inputs, the reference's outputs and the outputs of candidate and baseline.
  auto set_size = task_.tensor_bytes(sizes, 3);
  if (!set_size) return make_error(set_size.error());
  size_t set_bytes = size_t(*set_size);
  size_t free_bytes = 0, total_bytes = 0;
  d.cuMemGetInfo(&free_bytes, &total_bytes);
  size_t budget = std::min<size_t>(free_bytes / 2, size_t(16) << 30);
  int sets = int(std::clamp<size_t>(set_bytes ? budget / set_bytes : 4, 1, 4));

  // Inputs and the reference's outputs: kept sets when the pool has them, else made here from the
  // request's seed. Never the sets verification drew from: a kernel that memoized its outputs
  // while being verified (keyed on addresses or values) would replay them here, right and fast.
  InputSetMaker maker(device_, support_, task_, reference_, sizes);
  auto drawn = draw_sets(pool_, pool_key_ + "|timing", maker, sets, options_, nullptr);
  if (!drawn) return make_error(drawn.error());
  std::vector<std::unique_ptr<InputSet>> own;
  std::vector<BufferSet> buffer_sets(static_cast<size_t>(sets));
  for (int i = 0; i < sets; ++i) {
    if (drawn->has_value()) {
      buffer_sets[size_t(i)].data = (**drawn)[size_t(i)];
      continue;
    }
    auto set = maker.allocate();
    if (!set) return make_error("timing buffers: " + set.error());
    if (auto s = maker.fill(**set, seed + 1000003 * uint64_t(i + 1)); !s)
      return make_error(s.error());
    buffer_sets[size_t(i)].data = set->get();
    own.push_back(std::move(*set));
  }
  double trusted_seconds = 0;  // the slowest trusted run at this shape: the hang limit's basis
  for (const auto& set : buffer_sets)
    trusted_seconds = std::max(trusted_seconds, set.data->reference_seconds);

  std::vector<GuardedBuffer> storage;  // outputs and scratch of candidate and baseline
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
  BufferMap cand_scratch, base_scratch;
  for (auto& set : buffer_sets) {
    for (auto* map : {&set.candidate_out, &set.baseline_out})
      if (auto s = alloc(task_.outputs, *map); !s)
        return make_error("timing buffers: " + s.error());
  }
  if (auto s = alloc_scratch(cp, cand_scratch); !s) return make_error(s.error());
  if (bp) {
    if (auto s = alloc_scratch(*bp, base_scratch); !s) return make_error(s.error());
  }
  auto buffers_for = [](const BufferSet& set, const BufferMap& outs, const BufferMap& scratch) {
    BufferMap m = set.data->inputs;
    m.insert(outs.begin(), outs.end());
    m.insert(scratch.begin(), scratch.end());
    return m;
  };

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
  // goes first so that the candidate's hang limit knows the baseline's time too. A kernel whose
  // run time here is already known skips it: the baseline from the history of earlier
  // evaluations, the candidate from verification's runs at this shape (its module is loaded and
  // launched; CUPTI's records span the GPU's execution alone, so a first launch's host-side
  // loading never enters a sample).
  const RunLimit trusted_limit{};
  std::vector<TimingSample> history;
  if (bp && history_ && options_.reuse_baseline_samples) history = history_->recent(history_key_);
  double baseline_seconds = bp && history_ ? history_->run_seconds(history_key_) : 0;
  if (bp && (history.empty() || baseline_seconds <= 0)) {
    history.clear();
    outcome.baseline_warm_up = true;
    if (auto f = run_plan(device_, *baseline, *bp,
                          buffers_for(buffer_sets[0], buffer_sets[0].baseline_out, base_scratch),
                          task_, base_stream.get(), trusted_limit, &baseline_seconds))
      return make_error("the baseline failed at the timed shape: " + f->detail);
  }
  trusted_seconds = std::max(trusted_seconds, baseline_seconds);
  const RunLimit cand_limit =
      candidate_run_limit(options_, trusted_seconds, "the reference/baseline at the timed shape");
  const std::string at_timed_shape = " at the timed shape " + describe_shape(sizes);
  if (candidate_seconds <= 0) {
    outcome.candidate_warm_up = true;
    CudaFailure failure;
    BufferMap warm = buffers_for(buffer_sets[0], buffer_sets[0].candidate_out, cand_scratch);
    std::optional<PlanFailure> f;
    if (!device_.check(d.cuMemsetD32Async(flush->ptr(), 1, flush_bytes / 4, cand_stream.get()),
                       "cuMemsetD32Async(L2 flush)", &failure))
      f = PlanFailure{Verdict::kCrash, failure.message, failure.sticky};
    else
      f = run_plan(device_, candidate, cp, warm, task_, cand_stream.get(), cand_limit,
                   &candidate_seconds);
    if (f)
      return TimedOutcome{f->verdict,
                          f->detail + " (warm-up" + at_timed_shape + ")",
                          std::nullopt,
                          {},
                          std::nullopt};
  }
  (void)CuptiKernelTimer::collect();
  for (auto& set : buffer_sets)
    for (const auto& [name, b] : set.candidate_out) (void)fill_bytes(device_, b, 0xFF);
  // Samples per batch between CUPTI flushes and stopping decisions: 10, or fewer when a pair of
  // samples is long, so a 90 ms GEMM stops after the few samples its noise needs (timing_stats.h).
  int batch = int(
      std::clamp(0.1 / std::max(1e-6, candidate_seconds + baseline_seconds), 1.0, double(kBatch)));

  std::vector<double> clock_mhz;
  StoppingCriterion cand_stop(stopping_params(options_)), base_stop(stopping_params(options_));
  // With a history, the baseline's fresh samples are judged once there are enough of them: if they
  // agree, the history joins them and the baseline usually stops there; if not, the history is
  // dropped and the baseline is sampled in full.
  std::vector<TimingSample> fresh_baseline;
  bool history_judged = history.empty();
  int taken = 0;
  while (true) {
    const bool sample_baseline = bp && !base_stop.finished();
    for (int b = 0; b < batch; ++b, ++taken) {
      const BufferSet& set = buffer_sets[taken % sets];
      if (auto f = sample(candidate, cp, buffers_for(set, set.candidate_out, cand_scratch),
                          cand_stream.get(), unsigned(taken), cand_limit))
        return TimedOutcome{f->verdict,
                            f->detail + " (while timing" + at_timed_shape + ")",
                            std::nullopt,
                            {},
                            std::nullopt};
      if (sample_baseline) {
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
    size_t first_clock = clock_mhz.size() - size_t(batch);
    auto spans = sample_spans(std::move(cand_records), cp.launches.size(), "candidate");
    if (!spans) return make_error(spans.error());
    for (size_t i = 0; i < spans->size(); ++i)
      cand_stop.add({(*spans)[i], clock_mhz[first_clock + i]});
    if (sample_baseline) {
      auto bspans = sample_spans(std::move(base_records), bp->launches.size(), "baseline");
      if (!bspans) return make_error(bspans.error());
      for (size_t i = 0; i < bspans->size(); ++i) {
        TimingSample s{(*bspans)[i], clock_mhz[first_clock + i]};
        fresh_baseline.push_back(s);
        base_stop.add(s);
      }
      if (!history_judged && fresh_baseline.size() >= size_t(options_.fresh_baseline_samples)) {
        history_judged = true;
        if (fresh_samples_agree(history, fresh_baseline, options_.baseline_drift,
                                stopping_params(options_).max_clock_drop)) {
          base_stop = StoppingCriterion(stopping_params(options_));
          for (const auto* list : {&history, &fresh_baseline})
            for (const auto& h : *list) base_stop.add(h);
          outcome.baseline_from_history = true;
        } else {
          history_->forget(history_key_);
        }
      }
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
                            buffer_sets[i].data->expected.at(t.name), Verdict::kIncorrect);
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
  // Guard zones of everything the candidate could write, scanned on the GPU at once.
  std::vector<const GuardedBuffer*> reachable;
  std::vector<std::string> names;
  for (const auto& set : buffer_sets) {
    for (size_t i = 0; i < task_.inputs.size(); ++i) {
      reachable.push_back(&set.data->storage[i]);
      names.push_back(task_.inputs[i].name);
    }
  }
  std::map<CUdeviceptr, std::string> candidate_writes;  // outputs and scratch, not the baseline's
  for (const auto& set : buffer_sets)
    for (const auto& [name, b] : set.candidate_out) candidate_writes[b.ptr] = name;
  for (const auto& [name, b] : cand_scratch) candidate_writes[b.ptr] = name;
  for (const auto& g : storage) {
    auto it = candidate_writes.find(g.ref().ptr);
    if (it == candidate_writes.end()) continue;
    reachable.push_back(&g);
    names.push_back(it->second);
  }
  auto damage = damaged_guards(support_, reachable);
  if (!damage) return make_error(damage.error());
  for (size_t g = 0; g < reachable.size(); ++g) {
    if ((*damage)[g].empty()) continue;
    for (const auto& set : buffer_sets)
      if (pool_) pool_->discard(set.data);
    return TimedOutcome{Verdict::kOutOfBounds,
                        (*damage)[g] + " of '" + names[g] + "' while timing",
                        std::nullopt,
                        {},
                        std::nullopt};
  }
  // The inputs (and the reference's outputs, kept for later evaluations) are as they were made.
  for (const auto& set : buffer_sets) {
    auto changed = changed_part(support_, task_, *set.data);
    if (!changed) return make_error(changed.error());
    if (changed->empty()) continue;
    if (pool_) pool_->discard(set.data);
    bool input = changed->rfind("input", 0) == 0;
    return TimedOutcome{input ? Verdict::kModifiedInput : Verdict::kOutOfBounds,
                        *changed + " changed while timing",
                        std::nullopt,
                        {},
                        std::nullopt};
  }
  outcome.candidate = cand_stop.summary();
  if (bp) {
    outcome.baseline = base_stop.summary();
    outcome.fresh_baseline_samples = int(fresh_baseline.size());
    if (history_) history_->add(history_key_, fresh_baseline, baseline_seconds);
  }
  outcome.detail = "stopped: " + stop_reason_name(cand_stop.reason());
  return outcome;
}

}  // namespace kopt::worker
