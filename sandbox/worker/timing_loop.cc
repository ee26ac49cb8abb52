#include "sandbox/worker/timing_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "sandbox/gpu_turn.h"
#include "sandbox/nvml.h"
#include "sandbox/own_gpu_processes.h"
#include "sandbox/timing_stats.h"
#include "sandbox/worker/candidate_buffers.h"
#include "sandbox/worker/cold_l2.h"
#include "sandbox/worker/cupti_timer.h"
#include "sandbox/worker/memory_patterns.h"

namespace kopt::worker {
namespace {

constexpr int kBatch = 10;  // samples between CUPTI flushes and stopping decisions
// Poison before each timed sample, in turn per visit of a buffer set (memory_patterns.h): NaN for
// every float type, a pattern verification never uses (finite -1.7e38 for f32/bf16, NaN for f16),
// then the previous sample's set's checked outputs (right for other inputs), so a kernel that
// works only on outputs holding verification's poison, or skips outputs that look finished,
// leaves a wrong answer in some samples and is caught.
constexpr unsigned char kTimingPoison[2] = {0xFF, 0xFE};

// A verdict on the candidate ends the loop early; errors (the task's or the worker's) are errors.
using Step = Result<std::optional<TimedOutcome>>;
std::optional<TimedOutcome> go_on() { return std::nullopt; }
std::optional<TimedOutcome> verdict(Verdict v, std::string detail,
                                    std::optional<Mismatch> mismatch = std::nullopt) {
  return TimedOutcome{{v, std::move(detail), std::move(mismatch)}};
}

// One rotation slot: a kept (or own) input set, the candidate's copies of its inputs with its
// outputs and scratch, the baseline's outputs and scratch, and the keyed hash of the candidate's
// first verified sample on it.
struct BufferSet {
  InputSet* data = nullptr;
  std::unique_ptr<CandidateBuffers> candidate, baseline;
  std::optional<std::vector<uint64_t>> first_hashes;
};

// One timing run, step by step (TimingLoop::run is the script).
class TimedRun {
 public:
  TimedRun(Device& device, SupportKernels& support, const TaskSpec& task,
           const LoadedKernel& reference, const EvalOptions& options, const LoadedKernel& candidate,
           const LoadedKernel* baseline, const ShapeBinding& sizes, uint64_t seed,
           double candidate_seconds)
      : device_(device),
        support_(support),
        task_(task),
        reference_(reference),
        options_(options),
        candidate_(candidate),
        baseline_(baseline),
        sizes_(sizes),
        seed_(seed),
        candidate_seconds_(candidate_seconds),
        at_timed_shape_(" at the timed shape " + describe_shape(sizes)) {}

  void use_pool(InputPool* pool, const std::string& key) {
    pool_ = pool;
    pool_key_ = key;
  }
  void use_history(BaselineHistory* history, const std::string& key) {
    history_ = history;
    history_key_ = key;
  }
  void screen_above(double bar_us) { screen_bar_us_ = bar_us; }

  // The plans of candidate and baseline at the timed shape.
  Step resolve_plans() {
    auto cand = candidate_.resolve(task_, sizes_);
    if (auto* f = std::get_if<PlanFailure>(&cand)) return verdict(f->verdict, f->detail);
    cp_ = std::get<ResolvedPlan>(cand);
    if (baseline_) {
      auto r = baseline_->resolve(task_, sizes_);
      if (auto* f = std::get_if<PlanFailure>(&r))
        return make_error("the baseline cannot run at the timed shape: " + f->detail);
      bp_ = std::get<ResolvedPlan>(r);
    }
    return go_on();
  }

  // Up to 4 buffer sets to rotate among, so addresses and data change every sample: inputs and
  // the reference's outputs from kept sets when the pool has them, else made here from the
  // request's seed; never the sets verification drew from (a kernel that memoized its outputs
  // while verified would replay them here, right and fast). The candidate runs on copies.
  Step make_buffer_sets() {
    auto set_size = task_.tensor_bytes(sizes_, 3);  // inputs, reference, candidate, baseline
    auto input_size = task_.tensor_bytes(sizes_, 0);
    if (!set_size || !input_size)
      return make_error(!set_size ? set_size.error() : input_size.error());
    size_t set_bytes = size_t(*set_size + *input_size);  // and the candidate's input copies
    size_t budget = std::min<size_t>(memory_info(device_).free_bytes / 2, size_t(16) << 30);
    int count = int(std::clamp<size_t>(set_bytes ? budget / set_bytes : 4, 1, 4));

    InputSetMaker maker(device_, support_, task_, reference_, sizes_);
    auto started = std::chrono::steady_clock::now();
    auto drawn = draw_sets(pool_, pool_key_ + "|timing", maker, count, options_, nullptr);
    if (!drawn) return make_error(drawn.error());
    note_since("sets.draw", started);
    sets_.resize(size_t(count));
    for (int i = 0; i < count; ++i) {
      BufferSet& set = sets_[size_t(i)];
      if (drawn->has_value()) {
        set.data = (**drawn)[size_t(i)];
      } else {
        auto own = maker.allocate();
        if (!own) return make_error("timing buffers: " + own.error());
        if (auto s = maker.fill(**own, seed_ + 1000003 * uint64_t(i + 1)); !s)
          return make_error(s.error());
        set.data = own->get();
        own_.push_back(std::move(*own));
      }
      trusted_seconds_ = std::max(trusted_seconds_, set.data->reference_seconds);
      auto cand = CandidateBuffers::create(device_, task_, sizes_, &cp_);
      if (!cand) return make_error("timing buffers: " + cand.error());
      set.candidate = std::make_unique<CandidateBuffers>(std::move(*cand));
      if (auto s = set.candidate->load(*set.data, support_); !s) return make_error(s.error());
      if (bp_) {
        auto base = CandidateBuffers::create(device_, task_, sizes_, &*bp_, false);
        if (!base) return make_error("timing buffers: " + base.error());
        set.baseline = std::make_unique<CandidateBuffers>(std::move(*base));
      }
    }
    note_since("sets.buffers", started);
    auto flush = ColdL2::create(device_);
    if (!flush) return make_error(flush.error());
    cold_l2_.emplace(std::move(*flush));
    auto cand_stream = Stream::create(device_);
    if (!cand_stream) return make_error(cand_stream.error());
    cand_stream_ = std::make_unique<Stream>(std::move(*cand_stream));
    auto base_stream = Stream::create(device_);
    if (!base_stream) return make_error(base_stream.error());
    base_stream_ = std::make_unique<Stream>(std::move(*base_stream));
    auto cand_id = CuptiKernelTimer::stream_id(device_.context(), cand_stream_->get());
    auto base_id = CuptiKernelTimer::stream_id(device_.context(), base_stream_->get());
    if (!cand_id || !base_id) return make_error(!cand_id ? cand_id.error() : base_id.error());
    cand_id_ = *cand_id;
    base_id_ = *base_id;
    note_since("sets.streams", started);
    return go_on();
  }

  // Module load and first-launch costs, then whatever CUPTI saw so far is dropped. The baseline
  // goes first so that the candidate's hang limit knows the baseline's time too. A kernel whose
  // run time here is already known skips it: the baseline from the history of earlier
  // evaluations, the candidate from verification's runs at this shape (CUPTI's records span the
  // GPU's execution alone, so a first launch's host-side loading never enters a sample).
  Step warm_up() {
    if (bp_ && history_ && options_.reuse_baseline_samples)
      history_samples_ = history_->recent(history_key_);
    baseline_seconds_ = bp_ && history_ ? history_->run_seconds(history_key_) : 0;
    if (bp_ && (history_samples_.empty() || baseline_seconds_ <= 0)) {
      history_samples_.clear();
      outcome_.baseline_warm_up = true;
      if (auto f = run_plan(device_, *baseline_, *bp_, baseline_bindings(sets_[0]), task_,
                            base_stream_->get(), RunLimit{}, &baseline_seconds_))
        return make_error("the baseline failed at the timed shape: " + f->detail);
    }
    trusted_seconds_ = std::max(trusted_seconds_, baseline_seconds_);
    cand_limit_ = candidate_run_limit(options_, trusted_seconds_,
                                      "the reference/baseline at the timed shape");
    if (candidate_seconds_ <= 0) {
      outcome_.candidate_warm_up = true;
      if (auto f = run_sample(candidate_, cp_, sets_[0].candidate->bindings(), cand_stream_->get(),
                              1, cand_limit_, &candidate_seconds_))
        return verdict(f->verdict, f->detail + " (warm-up" + at_timed_shape_ + ")");
    }
    (void)CuptiKernelTimer::collect();
    // Samples per batch between CUPTI flushes and stopping decisions: 10, or fewer when a pair
    // of samples is long, so a 90 ms GEMM stops after the few samples its noise needs.
    batch_ = int(std::clamp(0.1 / std::max(1e-6, candidate_seconds_ + baseline_seconds_), 1.0,
                            double(kBatch)));
    StoppingParams candidate_params = stopping_params(options_);
    candidate_params.screen_bar_us = screen_bar_us_;
    cand_stop_.emplace(candidate_params);
    base_stop_.emplace(stopping_params(options_));
    history_judged_ = history_samples_.empty();
    // Screening with a baseline history: the candidate samples alone while its median is above
    // the bar, since a kernel above it needs no ratio of its own (it is no new best; its ratio to
    // the baseline is then the history's, said in baseline_from_history). Once its median is at
    // or below the bar the baseline joins, beside it from then on, as for any candidate.
    candidate_first_ = screen_bar_us_ > 0 && bp_ && !history_samples_.empty();
    return go_on();
  }

  // Batches of candidate and baseline samples, alternating, each sample's outputs checked, until
  // both stopping criteria are met, or the candidate's says it is above the screening bar (its
  // ratio to the baseline then rests on the baseline's samples so far).
  Step sample_until_stopped() {
    while (true) {
      const bool sample_baseline = bp_ && !base_stop_->finished() && baseline_joined();
      for (int b = 0; b < batch_; ++b, ++taken_) {
        auto end = take_sample(sample_baseline);
        if (!end || *end) return end;
      }
      if (auto end = record_batch(sample_baseline); !end || *end) return end;
      if (auto end = check_gpu_quiet(); !end || *end) return end;
      if (cand_stop_->finished() &&
          (!bp_ || base_stop_->finished() || above_bar() || !baseline_joined()))
        break;
    }
    if (CuptiKernelTimer::dropped() > 0)
      return make_error("CUPTI dropped kernel records; the measurement is incomplete");
    return go_on();
  }

  // A module with __device__ data was timed in fresh modules (load_fresh_module), so what it does
  // once it has run many times in one module, as it will in a user's program, is checked here:
  // the module that ran all of verification runs as many launches again over the timing sets
  // untimed, and each launch's outputs must match (a kernel "correct for its first N launches,
  // then replaying an old answer" fails here).
  Step check_long_lived_module() {
    if (!candidate_.keeps_state()) return go_on();
    // A kernel above the screening bar ends `screened`: this check is part of the gate that only
    // a kernel that may be a new best gets (one below the bar has it here, as before).
    if (median_above_bar()) return go_on();
    auto plan = candidate_.resolve(task_, sizes_);
    if (auto* f = std::get_if<PlanFailure>(&plan)) return verdict(f->verdict, f->detail);
    fresh_candidate_.reset();
    cp_ = std::get<ResolvedPlan>(plan);
    // As many launches as were timed, and at least three per set (a kernel may turn on a third
    // sight of the same inputs: verification runs each set twice).
    const int launches = std::max(taken_, 3 * int(sets_.size()));
    for (int launch = 0; launch < launches; ++launch) {
      BufferSet& set = sets_[size_t(launch) % sets_.size()];
      if (auto s = set.candidate->poison(kTimingPoison[launch % 2], cand_stream_->get()); !s)
        return make_error(s.error());
      if (auto f = run_sample(candidate_, cp_, set.candidate->bindings(), cand_stream_->get(),
                              unsigned(launch), cand_limit_))
        return verdict(f->verdict, f->detail + " (a repeated launch" + at_timed_shape_ + ")");
      auto end = check_sample_outputs(set, "launch " + std::to_string(launch + 1) +
                                               " of a module that already ran verification");
      if (!end || *end) return end;
      // Untimed: its records count for nothing, and are drained as often as timing drains them.
      if ((launch + 1) % kBatch == 0) (void)CuptiKernelTimer::collect();
    }
    (void)CuptiKernelTimer::collect();
    return go_on();
  }

  // Guard zones of everything the candidate could write, its input copies and the kept sets.
  Step check_guards_and_inputs() {
    std::vector<const CandidateBuffers*> used;
    for (const auto& set : sets_) used.push_back(set.candidate.get());
    auto intact = check_integrity(support_, task_, used, pool_);
    if (!intact) return make_error(intact.error());
    if (intact->verdict != Verdict::kOk)
      return verdict(intact->verdict, intact->detail + " while timing");
    return go_on();
  }

  // A step's (or a part's) milliseconds for TimedOutcome::step_ms, since `started`, which it
  // moves on.
  void note_since(const char* name, std::chrono::steady_clock::time_point& started) {
    auto now = std::chrono::steady_clock::now();
    outcome_.step_ms.emplace_back(name,
                                  std::chrono::duration<double, std::milli>(now - started).count());
    started = now;
  }

  bool above_bar() const { return cand_stop_ && cand_stop_->reason() == StopReason::kAboveBar; }
  // Whether the candidate's median so far is above the screening bar (it ends `screened`, by a
  // stop above the bar or by a converged median there).
  bool median_above_bar() const {
    return screen_bar_us_ > 0 && cand_stop_ && !cand_stop_->samples().empty() &&
           cand_stop_->summary().median_us >= screen_bar_us_;
  }
  // Whether the baseline samples beside the candidate: always, but with candidate_first_ only
  // once baseline_joins_screened() says so; then for good.
  bool baseline_joined() {
    if (!candidate_first_ || joined_) return true;
    joined_ = baseline_joins_screened(*cand_stop_, screen_bar_us_);
    return joined_;
  }

  TimedOutcome summarize() {
    outcome_.candidate = cand_stop_->summary();
    if (bp_) {
      outcome_.baseline = base_stop_->summary();
      if (base_stop_->samples().empty()) {  // candidate_first_: above the bar at once
        outcome_.baseline =
            summarize_samples(history_samples_, stopping_params(options_).max_clock_drop);
        outcome_.baseline_from_history = true;
      }
      outcome_.fresh_baseline_samples = int(fresh_baseline_.size());
      if (history_) history_->add(history_key_, fresh_baseline_, baseline_seconds_);
    }
    outcome_.stop = stop_reason_name(cand_stop_->reason());
    outcome_.detail = "stopped: " + outcome_.stop;
    return outcome_;
  }

 private:
  BufferMap baseline_bindings(const BufferSet& set) const {
    return set.baseline->bindings(set.candidate.get());
  }

  // A cold L2 (cold_l2.h), then the plan; the poison before it is queued by the caller.
  std::optional<PlanFailure> run_sample(const LoadedKernel& kernel, const ResolvedPlan& plan,
                                        const BufferMap& buffers, CUstream stream,
                                        unsigned flush_value, const RunLimit& limit,
                                        double* seconds = nullptr) {
    CudaFailure failure;
    if (!cold_l2_->queue(stream, flush_value, &failure))
      return PlanFailure{Verdict::kCrash, failure.message, failure.sticky};
    return run_plan(device_, kernel, plan, buffers, task_, stream, limit, seconds);
  }

  // Sample number taken_: poison, candidate, baseline, then the candidate's outputs checked and
  // the clock probed (both on the worker's stream, after both samples ended).
  Step take_sample(bool sample_baseline) {
    BufferSet& set = sets_[size_t(taken_) % sets_.size()];
    int visit = taken_ / int(sets_.size());
    if (auto s = load_fresh_module(); !s) return make_error(s.error());
    if (auto s = poison_sample(set, visit); !s) return make_error(s.error());
    if (auto f = run_sample(sampled_candidate(), cp_, set.candidate->bindings(),
                            cand_stream_->get(), unsigned(taken_), cand_limit_))
      return verdict(f->verdict, f->detail + " (while timing" + at_timed_shape_ + ")");
    if (sample_baseline) {
      if (auto f = run_sample(*baseline_, *bp_, baseline_bindings(set), base_stream_->get(),
                              unsigned(taken_) + 7, RunLimit{}))
        return make_error("the baseline failed while timing: " + f->detail);
    }
    if (auto end = check_sample_outputs(set, "timed sample " + std::to_string(taken_ + 1));
        !end || *end)
      return end;
    auto mhz = support_.probe_clock_mhz();
    clock_mhz_.push_back(mhz ? *mhz : 0.0);
    return go_on();
  }

  // The poison of a visit of `set` (memory_patterns.h's timing_poison). The stale answer is the
  // outputs of the set sampled just before, checked already (a set's first visit is never stale).
  Status poison_sample(BufferSet& set, int visit) {
    TimingPoison p = timing_poison(visit, int(sets_.size()));
    if (p.kind == TimingPoisonKind::kBytes)
      return set.candidate->poison(p.byte, cand_stream_->get());
    const BufferSet& before = sets_[size_t(taken_ + int(sets_.size()) - 1) % sets_.size()];
    ++outcome_.stale_poisoned;
    return set.candidate->poison_with(before.candidate->outputs(), cand_stream_->get());
  }

  // A candidate whose module holds __device__ data runs every sample in a module loaded afresh
  // (the GPU is idle here: the last sample's outputs were read back), so nothing it kept from an
  // earlier sample (an answer keyed by its inputs' addresses or values, a count of launches) can
  // make a timed sample cheap. Modules without such data have nothing to keep. What such a kernel
  // does after many launches in one module is checked afterwards (check_long_lived_module).
  Status load_fresh_module() {
    if (!candidate_.keeps_state()) return ok_status();
    auto fresh = candidate_.reloaded();
    if (!fresh) return make_error("reloading the candidate's module: " + fresh.error());
    fresh_candidate_.emplace(std::move(*fresh));
    auto plan = fresh_candidate_->resolve(task_, sizes_);
    if (auto* f = std::get_if<PlanFailure>(&plan)) return make_error(f->detail);
    cp_ = std::get<ResolvedPlan>(plan);
    ++outcome_.fresh_modules;
    return ok_status();
  }
  const LoadedKernel& sampled_candidate() const {
    return fresh_candidate_ ? *fresh_candidate_ : candidate_;
  }

  // What this sample wrote: the first sample on a set in full, later ones by keyed hash, and in
  // full again where the hash differs (a correct kernel need not be bitwise repeatable).
  Step check_sample_outputs(BufferSet& set, const std::string& which) {
    if (auto end = check_sample_guards(set, which); !end || *end) return end;
    auto hashes = set.candidate->output_hashes(support_, task_);
    if (!hashes) return make_error(hashes.error());
    if (set.first_hashes && *hashes == *set.first_hashes) {
      ++outcome_.hashed_samples;
      return go_on();
    }
    ++outcome_.full_checks;
    auto o =
        check_outputs(support_, task_, set.candidate->outputs(), *set.data, Verdict::kIncorrect);
    if (!o) return make_error(o.error());
    if (o->verdict != Verdict::kOk) {
      if (o->mismatch) {
        o->mismatch->phase = "timing";
        o->mismatch->shape = describe_shape(sizes_);
      }
      return verdict(
          o->verdict,
          "output of " + which + " is wrong (every launch must compute its outputs): " + o->detail,
          o->mismatch);
    }
    if (!set.first_hashes) set.first_hashes = std::move(*hashes);
    return go_on();
  }

  // The guard zones of what this sample could write, after every sample: state kept in them
  // between samples (then put back before the end of timing) is caught at the sample that left it.
  // One scan launch per buffer and one read-back (see the evaluation's timing facts for the cost).
  Step check_sample_guards(BufferSet& set, const std::string& which) {
    std::vector<const GuardedBuffer*> guarded;
    for (const auto& b : set.candidate->storage()) guarded.push_back(&b);
    auto damage = damaged_guards(support_, guarded);
    if (!damage) return make_error(damage.error());
    ++outcome_.guard_checks;
    for (size_t g = 0; g < guarded.size(); ++g)
      if (!(*damage)[g].empty())
        return verdict(Verdict::kOutOfBounds, (*damage)[g] + " of buffer '" +
                                                  set.candidate->names()[g] + "' in " + which +
                                                  at_timed_shape_);
    return go_on();
  }

  // The batch's CUPTI records, split by stream into samples, fed to the stopping criteria.
  Step record_batch(bool sample_baseline) {
    auto records = CuptiKernelTimer::collect();
    if (!records) return make_error(records.error());
    std::vector<KernelRecord> cand_records, base_records;
    for (auto& r : *records) {
      if (r.stream_id == cand_id_)
        cand_records.push_back(std::move(r));
      else if (r.stream_id == base_id_)
        base_records.push_back(std::move(r));
    }
    // The clock estimate taken right after a pair of samples applies to both.
    size_t first_clock = clock_mhz_.size() - size_t(batch_);
    auto spans = split_into_samples(std::move(cand_records), cp_.launches.size(), "candidate");
    if (!spans) return make_error(spans.error());
    for (size_t i = 0; i < spans->size(); ++i)
      cand_stop_->add({(*spans)[i], clock_mhz_[first_clock + i]});
    if (!sample_baseline) return go_on();
    auto bspans = split_into_samples(std::move(base_records), bp_->launches.size(), "baseline");
    if (!bspans) return make_error(bspans.error());
    for (size_t i = 0; i < bspans->size(); ++i) {
      TimingSample s{(*bspans)[i], clock_mhz_[first_clock + i]};
      fresh_baseline_.push_back(s);
      base_stop_->add(s);
    }
    // With a history, the fresh samples are judged once there are enough of them: if they
    // agree, the history joins them and the baseline usually stops there; if not, the history
    // is dropped and the baseline is sampled in full.
    if (!history_judged_ && fresh_baseline_.size() >= size_t(options_.fresh_baseline_samples)) {
      history_judged_ = true;
      if (fresh_samples_agree(history_samples_, fresh_baseline_, options_.baseline_drift,
                              stopping_params(options_).max_clock_drop)) {
        base_stop_.emplace(stopping_params(options_));
        for (const auto* list : {&history_samples_, &fresh_baseline_})
          for (const auto& h : *list) base_stop_->add(h);
        outcome_.baseline_from_history = true;
      } else {
        history_->forget(history_key_);
      }
    }
    return go_on();
  }

  // Cheaply, between batches: a process that starts computing on this GPU mid-measurement makes
  // every later sample wrong. (The probe before and after timing catches the rest.)
  Step check_gpu_quiet() {
    if (!options_.check_gpu_quiet) return go_on();
    auto activity = gpu_activity(device_.info().pci_bus_id);
    if (!activity) return go_on();
    auto others = foreign_processes(*activity, unsigned(::getpid()),
                                    kopt_gpu_pids(device_.info().pci_bus_id));
    if (others.empty()) return go_on();
    return verdict(Verdict::kGpuBusy,
                   "the GPU is not ours alone while timing: " + describe_process(others.front()) +
                       " started computing on it");
  }

  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& reference_;
  const EvalOptions& options_;
  const LoadedKernel& candidate_;
  const LoadedKernel* baseline_;
  ShapeBinding sizes_;
  uint64_t seed_;
  double candidate_seconds_;
  std::string at_timed_shape_;
  InputPool* pool_ = nullptr;
  std::string pool_key_;
  BaselineHistory* history_ = nullptr;
  std::string history_key_;

  ResolvedPlan cp_;
  std::optional<LoadedKernel> fresh_candidate_;  // this sample's module (load_fresh_module)
  std::optional<ResolvedPlan> bp_;
  std::vector<BufferSet> sets_;
  std::vector<std::unique_ptr<InputSet>> own_;  // sets made here when the pool keeps none
  std::optional<ColdL2> cold_l2_;
  std::unique_ptr<Stream> cand_stream_, base_stream_;
  uint32_t cand_id_ = 0, base_id_ = 0;
  double trusted_seconds_ = 0;  // the slowest trusted run at this shape: the hang limit's basis
  double baseline_seconds_ = 0;
  RunLimit cand_limit_;
  int batch_ = kBatch;
  int taken_ = 0;
  std::vector<double> clock_mhz_;
  std::optional<StoppingCriterion> cand_stop_, base_stop_;
  std::vector<TimingSample> history_samples_, fresh_baseline_;
  bool history_judged_ = true;
  bool joined_ = false;  // baseline_joined() said so once
  double screen_bar_us_ = 0;
  bool candidate_first_ = false;  // the baseline waits while the candidate is above the bar
  TimedOutcome outcome_;
};

}  // namespace

nlohmann::json TimedOutcome::facts() const {
  return {{"candidate_warm_up", candidate_warm_up},
          {"baseline_warm_up", baseline_warm_up},
          {"fresh_baseline_samples", fresh_baseline_samples},
          {"baseline_from_history", baseline_from_history},
          {"hashed_samples", hashed_samples},
          {"full_checks", full_checks},
          {"fresh_modules", fresh_modules},
          {"guard_checks", guard_checks},
          {"stale_poisoned", stale_poisoned},
          {"stop", stop}};
}

Result<TimedOutcome> TimingLoop::run(const LoadedKernel& candidate, const LoadedKernel* baseline,
                                     const ShapeBinding& sizes, uint64_t seed,
                                     double candidate_seconds) {
  TimedRun timed(device_, support_, task_, reference_, options_, candidate, baseline, sizes, seed,
                 candidate_seconds);
  timed.use_pool(pool_, pool_key_);
  timed.use_history(history_, history_key_);
  timed.screen_above(screen_bar_us_);
  using StepFn = Step (TimedRun::*)();
  const std::pair<const char*, StepFn> steps[] = {
      {"plans", &TimedRun::resolve_plans},
      {"sets", &TimedRun::make_buffer_sets},
      {"warm_up", &TimedRun::warm_up},
      {"samples", &TimedRun::sample_until_stopped},
      {"long_lived", &TimedRun::check_long_lived_module},
      {"integrity", &TimedRun::check_guards_and_inputs}};
  for (const auto& [name, step] : steps) {
    auto started = std::chrono::steady_clock::now();
    auto end = (timed.*step)();
    timed.note_since(name, started);
    if (!end) return make_error(end.error());
    if (*end) return std::move(**end);
  }
  return timed.summarize();
}

}  // namespace kopt::worker
