#include "sandbox/worker/input_pool.h"

#include <algorithm>
#include <chrono>

#include "sandbox/worker/verifier.h"

namespace kopt::worker {
namespace {

constexpr unsigned char kPoisonReferenceOutput = 0xFF;  // NaN for floats, -1 for integers

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Result<std::vector<uint64_t>> checksums_of(SupportKernels& support,
                                           const std::vector<TensorSpec>& specs,
                                           const BufferMap& buffers) {
  std::vector<std::pair<CUdeviceptr, size_t>> regions;
  for (const auto& t : specs) {
    const BufferRef& b = buffers.at(t.name);
    regions.push_back({b.ptr, b.bytes()});
  }
  return support.checksums(regions);
}

}  // namespace

Result<size_t> InputSetMaker::set_bytes() const {
  auto bytes = task_.tensor_bytes(sizes_);
  if (!bytes) return make_error(bytes.error());
  return size_t(*bytes);
}

Result<std::unique_ptr<InputSet>> InputSetMaker::allocate() const {
  auto set = std::make_unique<InputSet>();
  for (auto [specs, map] :
       {std::pair{&task_.inputs, &set->inputs}, std::pair{&task_.outputs, &set->expected}}) {
    for (const auto& t : *specs) {
      auto n = task_.element_count(t, sizes_);
      if (!n) return make_error(n.error());
      auto b = GuardedBuffer::create(device_, t.dtype, *n);
      if (!b) return make_error(b.error());
      (*map)[t.name] = b->ref();
      set->bytes += b->allocated_bytes();
      set->payload_bytes += b->ref().bytes();
      set->storage.push_back(std::move(*b));
    }
  }
  return set;
}

Status InputSetMaker::fill(InputSet& set, uint64_t seed, VerifyPhases* phases) const {
  auto started = std::chrono::steady_clock::now();
  auto began = started;
  if (auto s = fill_inputs(support_, task_, sizes_, set.inputs, seed, stress_); !s) return s;
  auto inputs = checksums_of(support_, task_.inputs, set.inputs);
  if (!inputs) return make_error(inputs.error());
  set.input_checksums = *inputs;
  set.master_checksums = std::move(*inputs);
  set.inputs_masked = false;  // refilled: plain until the reference has run
  if (phases) phases->inputs_ms += ms_since(started);

  started = std::chrono::steady_clock::now();
  auto plan = reference_.resolve(task_, sizes_);
  if (auto* f = std::get_if<PlanFailure>(&plan))
    return make_error("reference plan at " + describe_shape(sizes_) + ": " + f->detail);
  const ResolvedPlan& rp = std::get<ResolvedPlan>(plan);
  // The reference's scratch lives only for its run: nothing else may see it.
  std::vector<GuardedBuffer> scratch_storage;
  BufferMap buffers = set.inputs;
  buffers.insert(set.expected.begin(), set.expected.end());
  for (const auto& s : rp.scratch) {
    auto b = GuardedBuffer::create(device_, s.dtype, s.elements);
    if (!b) return make_error(b.error());
    buffers[s.name] = b->ref();
    scratch_storage.push_back(std::move(*b));
  }
  for (const auto& [name, b] : set.expected)
    if (auto s = fill_bytes(device_, b, kPoisonReferenceOutput); !s) return s;
  set.reference_seconds = 0;
  if (auto f = run_plan(device_, reference_, rp, buffers, task_, device_.stream(), {},
                        &set.reference_seconds))
    return make_error("the reference failed at " + describe_shape(sizes_) + ": " + f->detail);
  // Kept masked from here on: a candidate that finds these bytes in memory reads noise.
  for (const auto& t : task_.outputs) {
    const BufferRef& b = set.expected.at(t.name);
    if (auto s = support_.mask(b.ptr, b.dtype, b.elements); !s) return s;
  }
  auto expected = checksums_of(support_, task_.outputs, set.expected);
  if (!expected) return make_error(expected.error());
  set.expected_checksums = std::move(*expected);
  // The masters too (a kernel that found them could answer the timing sets in advance); a
  // candidate's copies are unmasked (CandidateBuffers::load).
  for (const auto& t : task_.inputs) {
    const BufferRef& b = set.inputs.at(t.name);
    if (auto s = support_.mask(b.ptr, b.dtype, b.elements); !s) return s;
  }
  set.inputs_masked = true;
  auto masters = checksums_of(support_, task_.inputs, set.inputs);
  if (!masters) return make_error(masters.error());
  set.master_checksums = std::move(*masters);
  if (phases) phases->reference_ms += ms_since(started);
  set.make_seconds = ms_since(began) * 1e-3;
  return ok_status();
}

Result<std::string> changed_part(SupportKernels& support, const TaskSpec& task,
                                 const InputSet& set) {
  // Inputs and the reference's outputs in one read-back: this runs after every candidate run.
  std::vector<std::pair<CUdeviceptr, size_t>> regions;
  for (const auto* specs : {&task.inputs, &task.outputs})
    for (const auto& t : *specs) {
      const BufferRef& b = (specs == &task.inputs ? set.inputs : set.expected).at(t.name);
      regions.push_back({b.ptr, b.bytes()});
    }
  auto sums = support.checksums(regions);
  if (!sums) return make_error(sums.error());
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if ((*sums)[i] != set.master_checksums[i]) return "input '" + task.inputs[i].name + "'";
  for (size_t i = 0; i < task.outputs.size(); ++i)
    if ((*sums)[task.inputs.size() + i] != set.expected_checksums[i])
      return "the reference's output '" + task.outputs[i].name + "'";
  return std::string();
}

int InputPool::capacity_for(size_t set_bytes, int64_t large_shape_bytes, int small_capacity) const {
  // Large shapes are verified with one round (and timed with at most 4 sets): 4 sets give that
  // round a random choice and serve the timing loop, at half the memory of the small shapes' 8.
  if (int64_t(set_bytes) > large_shape_bytes) return std::min(small_capacity, 4);
  return small_capacity;
}

bool InputPool::can_hold(size_t set_bytes, int capacity) const {
  return capacity > 0 && set_bytes * size_t(capacity) <= budget_ / 3;
}

size_t InputPool::bytes() const {
  size_t total = 0;
  for (const auto& [key, entry] : entries_)
    for (const auto& s : entry.sets) total += s->bytes;
  return total;
}

void InputPool::evict_for(size_t incoming, const std::string& keep) {
  while (bytes() + incoming > budget_) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == keep) continue;
      if (victim == entries_.end() || it->second.last_use < victim->second.last_use) victim = it;
    }
    if (victim == entries_.end()) return;
    entries_.erase(victim);
  }
}

Result<std::vector<InputSet*>> InputPool::draw(const std::string& key, int count, int capacity,
                                               size_t set_bytes, const Make& make) {
  // Declined keys' sets served only the evaluation that made them, and it has moved on.
  for (auto& [other, e] : entries_)
    if (e.declined && other != key) e.sets.clear();
  Entry& entry = entries_[key];
  entry.last_use = ++clock_;
  std::vector<InputSet*> chosen;
  // Existing sets in random order; new sets are made for the rounds they cannot serve while the
  // key has room, so the first evaluations of a task fill the pool and later ones only draw.
  std::vector<InputSet*> existing;
  for (auto& s : entry.sets) existing.push_back(s.get());
  std::shuffle(existing.begin(), existing.end(), rng_);
  int room = capacity - int(entry.sets.size());
  int to_make = std::min(room, count);
  int to_reuse = std::min<int>(count - to_make, int(existing.size()));
  for (int i = 0; i < to_reuse; ++i) chosen.push_back(existing[size_t(i)]);
  for (int i = 0; i < to_make; ++i) {
    evict_for(set_bytes, key);
    auto made = make();
    if (!made) return make_error(made.error());
    chosen.push_back(made->get());
    // Judged on the first set: the others of the key cost the same to make.
    double gib = double((*made)->payload_bytes) / double(size_t(1) << 30);
    if (entry.sets.empty() && gib > 0 && (*made)->make_seconds * 1e3 / gib < kMinMakeMsPerGiB) {
      entry.declined = true;
    }
    entry.sets.push_back(std::move(*made));
    ++made_;
  }
  reused_ += to_reuse;
  if (int(chosen.size()) < count)
    return make_error("input pool: " + std::to_string(count) + " sets asked of a key holding " +
                      std::to_string(capacity));
  std::shuffle(chosen.begin(), chosen.end(), rng_);
  return chosen;
}

bool InputPool::declined(const std::string& key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.declined;
}

void InputPool::discard(const InputSet* set) {
  for (auto& [key, entry] : entries_) {
    auto& sets = entry.sets;
    sets.erase(std::remove_if(sets.begin(), sets.end(),
                              [set](const std::unique_ptr<InputSet>& s) { return s.get() == set; }),
               sets.end());
  }
}

Result<std::optional<std::vector<InputSet*>>> draw_sets(InputPool* pool, const std::string& key,
                                                        const InputSetMaker& maker, int count,
                                                        const EvalOptions& options,
                                                        VerifyPhases* phases) {
  std::optional<std::vector<InputSet*>> none;
  if (!pool) return none;
  auto bytes = maker.set_bytes();
  if (!bytes) return make_error(bytes.error());
  int capacity = pool->capacity_for(*bytes, options.large_shape_bytes, options.pool_sets);
  std::string full_key = key + "|" + describe_shape(maker.sizes());
  if (maker.stress()) full_key += "|stress " + maker.stress()->name;
  if (count > capacity || !pool->can_hold(*bytes, capacity) || pool->declined(full_key))
    return none;
  auto make = [&]() -> Result<std::unique_ptr<InputSet>> {
    auto set = maker.allocate();
    if (!set) return set;
    if (auto s = maker.fill(**set, pool->fresh_seed(), phases); !s) return make_error(s.error());
    if (phases) ++phases->sets_made;
    return set;
  };
  // Every kept set is checked before it is used, not only after: a stray write by an earlier
  // candidate into a set it did not run on must not make an innocent candidate fail. A damaged
  // set is dropped and the draw repeated (new sets are made for the missing ones).
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto drawn = pool->draw(full_key, count, capacity, *bytes, make);
    if (!drawn) return make_error(drawn.error());
    bool intact = true;
    for (InputSet* set : *drawn) {
      auto changed = changed_part(maker.support(), maker.task(), *set);
      if (!changed) return make_error(changed.error());
      if (changed->empty()) continue;
      pool->discard(set);
      intact = false;
    }
    if (intact) return std::optional<std::vector<InputSet*>>(std::move(*drawn));
  }
  return make_error("input pool: kept sets of " + full_key + " keep changing between evaluations");
}

}  // namespace kopt::worker
