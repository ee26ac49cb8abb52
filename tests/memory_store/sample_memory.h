// A memory built from the real axpy and softmax tasks (task.json, baseline.cu) plus a faster
// axpy variant, for the CLI and export tests: the plans parse against their tasks, so exported
// headers are real.
#pragma once

#include <filesystem>
#include <string>

#include "memory_store/memory_store.h"

namespace kopt::memory::testing {

struct SampleMemory {
  int64_t axpy_baseline = 0, axpy_fast = 0, softmax_baseline = 0, softmax_fast = 0;
  int64_t axpy_pair = 0, softmax_pair = 0, negative_pair = 0;
};

// The faster axpy kernel: float4 loads, with its plan and a tunable.
std::string fast_axpy_source();

// Fills `store` with the two tasks, their kernels, evaluations on an H100 and pairs.
SampleMemory fill_sample_memory(MemoryStore& store);

}  // namespace kopt::memory::testing
