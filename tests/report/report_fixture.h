// A real SQLite memory, written through the memory store's API, that looks like one night of kopt:
// run 2 (00:00 to 08:00 on 2026-11-22) works on softmax, rmsnorm and bf16_gemm with baselines,
// tuner and LLM kernels, failures of several verdicts, wins and LLM calls; an older run 1 on axpy
// must stay out of run 2's report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "memory_store/memory_store.h"
#include "tests/memory_store/test_support.h"

namespace kopt::report::testing {

struct NightMemory {
  int64_t old_run = 0;    // run 1: axpy only
  int64_t night_run = 0;  // run 2: the night the tests look at
  // Pair ids of run 2's wins, best first: softmax tuner -> LLM (1.75x), rmsnorm baseline -> LLM
  // (1.8x sorted first), softmax baseline -> tuner (1.4x).
  int64_t softmax_llm_pair = 0, rmsnorm_pair = 0, softmax_tuner_pair = 0;
  int64_t negative_pair = 0;  // a slowdown: never a win
  int64_t axpy_pair = 0;      // run 1's win
};

// Fills the memory at `store`; fails the calling test (via exceptions) on any store error.
NightMemory build_night_memory(memory::MemoryStore& store);

// Reads a whole file ("" when missing).
std::string slurp(const std::filesystem::path& path);

// How often `needle` occurs in `haystack`.
size_t count_of(const std::string& haystack, const std::string& needle);

}  // namespace kopt::report::testing
