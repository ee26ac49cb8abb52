// Sums over LLM calls: how many, how many failed, their tokens and their cost. One struct for
// every such sum: the LLM client's live totals for budgets (LlmTotals adds how the model
// misbehaved), a run's stored calls (MemoryStore::run_totals) and the report's per-model table.
#pragma once

#include <cstdint>

namespace kopt {

struct CallTotals {
  int64_t calls = 0;
  int64_t failed_calls = 0;
  int64_t input_tokens = 0;   // prompt tokens
  int64_t output_tokens = 0;  // completion tokens
  double cost_usd = 0;

  // One call more, with its tokens and cost.
  void add_call(bool failed, int64_t input, int64_t output, double cost) {
    ++calls;
    failed_calls += failed;
    input_tokens += input;
    output_tokens += output;
    cost_usd += cost;
  }
  void add(const CallTotals& other) {
    calls += other.calls;
    failed_calls += other.failed_calls;
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    cost_usd += other.cost_usd;
  }
};

}  // namespace kopt
