// What a candidate runs on, for verification and timing alike, and the checks after its runs.
//
// A candidate never runs on a kept input set itself: it gets copies of the set's inputs (its
// masters stay where only a stray write could reach them), its own outputs and scratch, each
// between guard zones. After a run: the guard zones of everything it owns, its input copies
// against the set's keyed checksums (modified_input), the set's masters and the reference's
// (masked) outputs against theirs (out_of_bounds: a write outside its own buffers; the set is
// dropped so that no later candidate is judged on it), and its outputs against the reference's.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/input_pool.h"
#include "sandbox/worker/plan_launcher.h"
#include "sandbox/worker/verifier.h"

namespace kopt::worker {

// Allocates a guarded buffer per tensor of `specs` at `sizes` into `storage`, named in `map`.
Status allocate_tensors(Device& device, const TaskSpec& task, const std::vector<TensorSpec>& specs,
                        const ShapeBinding& sizes, std::vector<GuardedBuffer>& storage,
                        BufferMap& map);

class CandidateBuffers {
 public:
  // Outputs of `task` at `sizes`, the scratch of `plan` when given, and copies of the inputs
  // when `with_inputs` (the baseline's buffers borrow the candidate's input copies).
  static Result<CandidateBuffers> create(Device& device, const TaskSpec& task,
                                         const ShapeBinding& sizes, const ResolvedPlan* plan,
                                         bool with_inputs = true);

  // Copies `set`'s inputs into this one's, unmasked (`support` holds the key); the set is
  // checked against them after each run.
  Status load(const InputSet& set, SupportKernels& support);
  InputSet* loaded() const { return loaded_; }
  const BufferMap& outputs() const { return outputs_; }
  // What a plan binds to: the input copies of `inputs_from` (this one by default), these
  // outputs and this scratch.
  BufferMap bindings(const CandidateBuffers* inputs_from = nullptr) const;
  // Fills the outputs with `pattern` on `stream` (queued: in stream order with what follows).
  Status poison(unsigned char pattern, CUstream stream) const;
  // Fills the outputs with `answers` (same names and sizes: the correct outputs for other inputs,
  // a stale answer) on `stream`: a kernel that skips outputs which look finished fails.
  Status poison_with(const BufferMap& answers, CUstream stream) const;
  // Keyed checksums of the outputs in the task's output order (one read-back).
  Result<std::vector<uint64_t>> output_hashes(SupportKernels& support, const TaskSpec& task) const;
  // Every buffer of this one, with its name: what the candidate could write.
  const std::vector<GuardedBuffer>& storage() const { return storage_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  Device* device_ = nullptr;
  std::vector<GuardedBuffer> storage_;
  std::vector<std::string> names_;  // parallel to storage_
  BufferMap inputs_, outputs_, scratch_;
  InputSet* loaded_ = nullptr;
};

// The integrity checks after candidate runs on `buffers` (each loaded from its set): guard zones
// (out_of_bounds), input copies (modified_input), the sets' masters and the reference's outputs
// (out_of_bounds; the set is discarded from `pool`). Verdict ok when everything is intact.
Result<CheckOutcome> check_integrity(SupportKernels& support, const TaskSpec& task,
                                     const std::vector<const CandidateBuffers*>& buffers,
                                     InputPool* pool);

// Every output of `outputs` against the (masked) reference outputs of `set` under the task's
// tolerance; the first failure, with `failure` as its verdict.
Result<CheckOutcome> check_outputs(SupportKernels& support, const TaskSpec& task,
                                   const BufferMap& outputs, const InputSet& set, Verdict failure);

}  // namespace kopt::worker
