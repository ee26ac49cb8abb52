// The worker's side of structured inputs (sandbox/structured_init.h): block tables, permutations
// and edge values generated on the host (index tensors are small: a table of batch x max_pages,
// a g_idx of k), and the planted values (NaN in stale KV slots, hot and cold experts) written over
// the GPU's own draw. Host generation reads the inputs a table depends on back from the device,
// so an input's structure always follows the values the round really holds.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "sandbox/task_spec.h"
#include "sandbox/worker/buffers.h"
#include "sandbox/worker/device.h"

namespace kopt::worker {

// Whether `init` needs fill_structured (a structured dist or a planted modifier).
bool needs_structured_fill(const InitSpec& init);

// Fills (dist "permutation", "pages") or finishes (edges, stale, routing: after the plain draw
// into `target`) the input `input` at `sizes`; `inputs` holds the inputs filled before it.
Status fill_structured(Device& device, const TaskSpec& task, const ShapeBinding& sizes,
                       const BufferMap& inputs, const TensorSpec& input, const InitSpec& init,
                       const BufferRef& target, uint64_t seed);

}  // namespace kopt::worker
