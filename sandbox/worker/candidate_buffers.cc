#include "sandbox/worker/candidate_buffers.h"

#include <algorithm>

namespace kopt::worker {

Status allocate_tensors(Device& device, const TaskSpec& task, const std::vector<TensorSpec>& specs,
                        const ShapeBinding& sizes, std::vector<GuardedBuffer>& storage,
                        BufferMap& map) {
  for (const auto& t : specs) {
    auto n = task.element_count(t, sizes);
    if (!n) return make_error(n.error());
    auto b = GuardedBuffer::create(device, t.dtype, *n);
    if (!b) return make_error(b.error());
    map[t.name] = b->ref();
    storage.push_back(std::move(*b));
  }
  return ok_status();
}

Result<CandidateBuffers> CandidateBuffers::create(Device& device, const TaskSpec& task,
                                                  const ShapeBinding& sizes,
                                                  const ResolvedPlan* plan, bool with_inputs) {
  CandidateBuffers c;
  c.device_ = &device;
  auto named = [&c](const BufferMap& map, size_t from) {
    for (size_t i = from; i < c.storage_.size(); ++i)
      for (const auto& [name, b] : map)
        if (b.ptr == c.storage_[i].ref().ptr) c.names_.push_back(name);
  };
  if (with_inputs) {
    if (auto s = allocate_tensors(device, task, task.inputs, sizes, c.storage_, c.inputs_); !s)
      return make_error(s.error());
    named(c.inputs_, 0);
  }
  size_t first = c.storage_.size();
  if (auto s = allocate_tensors(device, task, task.outputs, sizes, c.storage_, c.outputs_); !s)
    return make_error(s.error());
  named(c.outputs_, first);
  if (plan) {
    for (const auto& s : plan->scratch) {
      auto b = GuardedBuffer::create(device, s.dtype, s.elements);
      if (!b) return make_error(b.error());
      c.scratch_[s.name] = b->ref();
      c.names_.push_back(s.name);
      c.storage_.push_back(std::move(*b));
    }
  }
  return c;
}

Status CandidateBuffers::load(const InputSet& set, SupportKernels& support) {
  for (const auto& [name, copy] : inputs_) {
    if (auto s = copy_buffer(*device_, set.inputs.at(name), copy); !s) return s;
    if (set.inputs_masked)
      if (auto s = support.mask(copy.ptr, copy.dtype, copy.elements); !s) return s;
  }
  loaded_ = const_cast<InputSet*>(&set);  // the pool's set, discarded through it when damaged
  return ok_status();
}

BufferMap CandidateBuffers::bindings(const CandidateBuffers* inputs_from) const {
  BufferMap m = (inputs_from ? inputs_from : this)->inputs_;
  m.insert(outputs_.begin(), outputs_.end());
  m.insert(scratch_.begin(), scratch_.end());
  return m;
}

Status CandidateBuffers::poison(unsigned char pattern, CUstream stream) const {
  CudaFailure failure;
  for (const auto& [name, b] : outputs_) {
    if (b.bytes() &&
        !device_->check(device_->driver().cuMemsetD8Async(b.ptr, pattern, b.bytes(), stream),
                        "cuMemsetD8Async(poison)", &failure))
      return make_error(failure.message);
  }
  return ok_status();
}

Status CandidateBuffers::poison_with(const BufferMap& answers, CUstream stream) const {
  CudaFailure failure;
  for (const auto& [name, b] : outputs_) {
    const BufferRef& from = answers.at(name);
    if (b.bytes() &&
        !device_->check(device_->driver().cuMemcpyDtoDAsync(b.ptr, from.ptr, b.bytes(), stream),
                        "cuMemcpyDtoDAsync(stale answer)", &failure))
      return make_error(failure.message);
  }
  return ok_status();
}

Result<std::vector<uint64_t>> CandidateBuffers::output_hashes(SupportKernels& support,
                                                              const TaskSpec& task) const {
  std::vector<std::pair<CUdeviceptr, size_t>> regions;
  for (const auto& t : task.outputs)
    regions.push_back({outputs_.at(t.name).ptr, outputs_.at(t.name).bytes()});
  return support.checksums(regions);
}

Result<CheckOutcome> check_integrity(SupportKernels& support, const TaskSpec& task,
                                     const std::vector<const CandidateBuffers*>& buffers,
                                     InputPool* pool) {
  // Guard zones of everything the candidate owns, in one scan.
  std::vector<const GuardedBuffer*> guarded;
  std::vector<const std::string*> names;
  for (const auto* c : buffers)
    for (size_t i = 0; i < c->storage().size(); ++i) {
      guarded.push_back(&c->storage()[i]);
      names.push_back(&c->names()[i]);
    }
  auto damage = damaged_guards(support, guarded);
  if (!damage) return make_error(damage.error());
  // Input copies, then each distinct set's masters and the reference's outputs: one read-back.
  std::vector<std::pair<CUdeviceptr, size_t>> regions;
  std::vector<const InputSet*> sets;
  for (const auto* c : buffers) {
    BufferMap copies = c->bindings();
    for (const auto& t : task.inputs)
      regions.push_back({copies.at(t.name).ptr, copies.at(t.name).bytes()});
    const InputSet* set = c->loaded();
    if (std::find(sets.begin(), sets.end(), set) == sets.end()) sets.push_back(set);
  }
  for (const auto* set : sets) {
    for (const auto& t : task.inputs)
      regions.push_back({set->inputs.at(t.name).ptr, set->inputs.at(t.name).bytes()});
    for (const auto& t : task.outputs)
      regions.push_back({set->expected.at(t.name).ptr, set->expected.at(t.name).bytes()});
  }
  auto sums = support.checksums(regions);
  if (!sums) return make_error(sums.error());
  // A damaged set is dropped first, whatever the verdict: no later candidate is judged on it.
  size_t at = buffers.size() * task.inputs.size();
  std::string damaged_set;
  for (const auto* set : sets) {
    for (size_t i = 0; i < task.inputs.size() + task.outputs.size(); ++i, ++at) {
      bool input = i < task.inputs.size();
      uint64_t want =
          input ? set->master_checksums[i] : set->expected_checksums[i - task.inputs.size()];
      if ((*sums)[at] == want || !damaged_set.empty()) continue;
      damaged_set =
          input ? "the kept copy of input '" + task.inputs[i].name + "'"
                : "the reference's output '" + task.outputs[i - task.inputs.size()].name + "'";
    }
    if (!damaged_set.empty() && pool) pool->discard(set);
  }
  for (size_t g = 0; g < guarded.size(); ++g)
    if (!(*damage)[g].empty())
      return CheckOutcome{Verdict::kOutOfBounds, (*damage)[g] + " of buffer '" + *names[g] + "'",
                          std::nullopt};
  if (!damaged_set.empty())
    return CheckOutcome{Verdict::kOutOfBounds,
                        damaged_set +
                            " changed during the run: a write outside the candidate's "
                            "buffers",
                        std::nullopt};
  for (size_t b = 0; b < buffers.size(); ++b)
    for (size_t i = 0; i < task.inputs.size(); ++i)
      if ((*sums)[b * task.inputs.size() + i] != buffers[b]->loaded()->input_checksums[i])
        return CheckOutcome{Verdict::kModifiedInput,
                            "input '" + task.inputs[i].name + "' changed during the run",
                            std::nullopt};
  return CheckOutcome{};
}

Result<CheckOutcome> check_outputs(SupportKernels& support, const TaskSpec& task,
                                   const BufferMap& outputs, const InputSet& set, Verdict failure) {
  for (const auto& t : task.outputs) {
    auto o = check_output(support, task, t, outputs.at(t.name), set.expected.at(t.name), failure,
                          /*expected_masked=*/true);
    if (!o) return make_error(o.error());
    if (o->verdict != Verdict::kOk) return *o;
  }
  return CheckOutcome{};
}

}  // namespace kopt::worker
