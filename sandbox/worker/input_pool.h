// Input sets and the reference's outputs on them, kept on the GPU across evaluations.
//
// Most of a correct candidate's verification used to be the task's reference: deliberately naive
// (double accumulation, often a thread per row), re-run on fresh inputs in every round of every
// shape of every candidate. A worker judges hundreds of candidates of the same task, so it now
// makes a few input sets per (task, reference, shape), runs the reference on each once, and lets
// every evaluation draw its rounds from them at random.
//
// What keeps this as strict as fresh inputs per round:
// - the sets' seeds come from the worker's own random device and never leave the worker, so a
//   candidate cannot predict a set's values any better than before; which sets an evaluation
//   draws is random too, and there are more sets than rounds;
// - candidates run on copies of a set's inputs, never on the set; every set carries keyed
//   checksums (the worker's secret) of its inputs and of the reference's outputs, verified before
//   a set is used and after a candidate ran on it: a write into either is caught (out_of_bounds,
//   or modified_input for the candidate's copies) and the set is thrown away, so no later
//   evaluation is judged against it;
// - the reference's outputs and the set's inputs are kept masked with a keyed PRF of the
//   worker's secret (keyed_mask.h): a kernel that finds them in memory reads noise, so it can
//   neither read an answer nor compute, while verified, the answers of the sets timing will use;
//   candidates get unmasked copies of the inputs;
// - timing draws from sets of its own, never those verification used in the same evaluation, so
//   a kernel that memoizes outputs while verified cannot replay them, right and fast, when timed;
//   a re-verification of a suspicious speedup uses fresh sets from new seeds;
// - outputs are still poisoned before every candidate run, guard zones and double runs unchanged;
// - the pool holds a bounded share of GPU memory (least recently used keys go first), and shapes
//   too large to keep several sets of are verified on demand as before.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/protocol.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/support_kernels.h"

namespace kopt::worker {

struct VerifyPhases;

// One input set and the reference's outputs on it.
struct InputSet {
  std::vector<GuardedBuffer> storage;  // the inputs, then the reference's outputs
  BufferMap inputs;            // the masters: candidates run on copies (candidate_buffers.h)
  BufferMap expected;          // masked with the worker's secret (SupportKernels::mask)
  bool inputs_masked = false;  // the masters too, once the reference has run on them
  std::vector<uint64_t> input_checksums;     // keyed, of the plain inputs, in the task's order
  std::vector<uint64_t> master_checksums;    // keyed, of the masters as kept (masked or not)
  std::vector<uint64_t> expected_checksums;  // in the task's output order
  double reference_seconds = 0;              // the reference's run on it: a hang limit's basis
  double make_seconds = 0;  // inputs, checksums and the reference: what keeping saves
  size_t bytes = 0;          // allocated: whole granules (buffers.h), what the budget counts
  size_t payload_bytes = 0;  // the tensors alone: what the make cost is weighed against
};

// Makes input sets of one task at one shape: allocation, inputs from a seed, the reference run
// (outputs poisoned first, so a reference that skips an element shows), checksums.
class InputSetMaker {
 public:
  // With `stress`, inputs get that stress round's overrides.
  InputSetMaker(Device& device, SupportKernels& support, const TaskSpec& task,
                const LoadedKernel& reference, const ShapeBinding& sizes,
                const StressRound* stress = nullptr)
      : device_(device),
        support_(support),
        task_(task),
        reference_(reference),
        sizes_(sizes),
        stress_(stress) {}

  const ShapeBinding& sizes() const { return sizes_; }
  const StressRound* stress() const { return stress_; }
  SupportKernels& support() const { return support_; }
  const TaskSpec& task() const { return task_; }
  // Inputs plus the reference's outputs, in bytes.
  Result<size_t> set_bytes() const;
  Result<std::unique_ptr<InputSet>> allocate() const;
  // Refills `set` from `seed`; adds its time to `phases` (inputs, reference) when given.
  Status fill(InputSet& set, uint64_t seed, VerifyPhases* phases = nullptr) const;

 private:
  Device& device_;
  SupportKernels& support_;
  const TaskSpec& task_;
  const LoadedKernel& reference_;
  ShapeBinding sizes_;
  const StressRound* stress_ = nullptr;
};

// What of `set` differs from its checksums: "" when intact, else e.g. "input 'x'" or
// "the reference's output 'out'".
Result<std::string> changed_part(SupportKernels& support, const TaskSpec& task,
                                 const InputSet& set);

class InputPool {
 public:
  // `budget_bytes`: the most GPU memory all kept sets may take together.
  explicit InputPool(size_t budget_bytes) : budget_(budget_bytes) {}

  // Sets kept per key: more than the rounds drawn from them, fewer for big shapes.
  int capacity_for(size_t set_bytes, int64_t large_shape_bytes, int small_capacity) const;
  // Whether a key of `capacity` sets of `set_bytes` may be kept: at most a third of the budget.
  bool can_hold(size_t set_bytes, int capacity) const;

  using Make = std::function<Result<std::unique_ptr<InputSet>>()>;
  // `count` distinct sets of `key` (count <= capacity) in random order. While the key holds fewer
  // than `capacity` sets, new ones are made with `make` and kept; the rest are drawn at random.
  Result<std::vector<InputSet*>> draw(const std::string& key, int count, int capacity,
                                      size_t set_bytes, const Make& make);
  // Whether `key` was found not worth keeping: its sets are cheap to make for the memory they take
  // (an elementwise op on a big shape), so memory goes to the keys whose reference is slow.
  bool declined(const std::string& key) const;
  // The least a kept set's making must cost per GiB it holds.
  static constexpr double kMinMakeMsPerGiB = 20.0;
  // Forgets a set a candidate may have damaged (or that failed to check).
  void discard(const InputSet* set);
  void clear() { entries_.clear(); }

  size_t bytes() const;
  int64_t sets_made() const { return made_; }
  int64_t sets_reused() const { return reused_; }
  // A seed for a new set: from the worker's random device, never from the request.
  uint64_t fresh_seed() { return rng_(); }

 private:
  struct Entry {
    std::vector<std::unique_ptr<InputSet>> sets;
    uint64_t last_use = 0;
    bool declined = false;
  };
  // Drops least recently used keys other than `keep` until `incoming` more bytes fit.
  void evict_for(size_t incoming, const std::string& keep);

  size_t budget_ = 0;
  std::map<std::string, Entry> entries_;
  uint64_t clock_ = 0;
  int64_t made_ = 0, reused_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

// `count` distinct sets of `maker`'s shape from `pool` under `key` + the shape (+ the stress
// round, whose sets are kept apart from the plain ones), made there where
// missing; std::nullopt when there is no pool or it cannot keep this shape's sets (then the caller
// makes its own from the request's seed). Sets made here add their time to `phases`.
Result<std::optional<std::vector<InputSet*>>> draw_sets(InputPool* pool, const std::string& key,
                                                        const InputSetMaker& maker, int count,
                                                        const EvalOptions& options,
                                                        VerifyPhases* phases);

}  // namespace kopt::worker
