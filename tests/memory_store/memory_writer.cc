// A daemon stand-in for crash_test.cc: writes to the memory in a loop, five kernels with their
// evaluations and pairs per transaction, and prints "committed N" after each commit, until it is
// killed.
#include <cstdio>
#include <string>

#include "memory_store/memory_store.h"

using namespace kopt::memory;

namespace {

constexpr int kPerTransaction = 5;

int fail(const std::string& message) {
  std::fprintf(stderr, "memory_writer: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: memory_writer DB");
  auto store = MemoryStore::open(argv[1]);
  if (!store) return fail(store.error());
  TaskRecord task{0, "axpy", "hash", {"elementwise"}, "{}", ""};
  if (auto id = store->upsert_task(task); !id) return fail(id.error());
  KernelRecord root;
  root.task = "axpy";
  root.source = "root kernel";
  auto parent = store->add_kernel(root);
  if (!parent) return fail(parent.error());
  // Continue after the kernels a previous (killed) writer left.
  auto existing = store->database().query_int64("SELECT count(*) FROM kernels");
  if (!existing) return fail(existing.error());
  int64_t serial = *existing;
  for (int64_t committed = 0;; ++committed) {
    auto transaction = store->begin();
    if (!transaction) return fail(transaction.error());
    for (int i = 0; i < kPerTransaction; ++i, ++serial) {
      KernelRecord kernel;
      kernel.task = "axpy";
      kernel.source = "kernel " + std::to_string(serial) + " float4 __ldg unroll";
      kernel.parent_id = *parent;
      auto id = store->add_kernel(kernel);
      if (!id) return fail(id.error());
      EvaluationRecord e;
      e.kernel_id = *id;
      e.task = "axpy";
      e.gpu = {"H100", "9.0", "580", "13.0"};
      e.verdict = kopt::Verdict::kOk;
      e.median_us = 100.0 + static_cast<double>(serial % 50);
      if (auto s = store->add_evaluation(e); !s) return fail(s.error());
      PairRecord pair;
      pair.task = "axpy";
      pair.slow_kernel_id = *parent;
      pair.fast_kernel_id = *id;
      pair.speedup = 1.1;
      pair.gpu_model = "H100";
      pair.summary = "step " + std::to_string(serial) + " vectorized loads";
      pair.tags = {"elementwise"};
      auto pair_id = store->add_pair(pair);
      if (!pair_id) return fail(pair_id.error());
      if (auto s = store->mark_retrieved({*pair_id}); !s) return fail(s.error());
      *parent = *id;
    }
    if (auto s = transaction->commit(); !s) return fail(s.error());
    std::printf("committed %lld\n", static_cast<long long>(committed + 1));
    std::fflush(stdout);
  }
}
