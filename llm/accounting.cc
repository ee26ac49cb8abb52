#include "llm/accounting.h"

#include <spdlog/spdlog.h>

namespace kopt {

void LlmTotals::add_call(LlmStatus status, int64_t input, int64_t output, double cost) {
  CallTotals::add_call(status != LlmStatus::kOk, input, output, cost);
  truncated += status == LlmStatus::kTruncated;
  refused += status == LlmStatus::kRefused;
  tool_calls += status == LlmStatus::kToolCall;
  empty += status == LlmStatus::kEmpty;
}

void LlmTotals::add(const LlmTotals& other) {
  CallTotals::add(other);
  truncated += other.truncated;
  refused += other.refused;
  tool_calls += other.tool_calls;
  empty += other.empty;
}

namespace {

void add(LlmTotals& totals, const LlmCallRecord& call) {
  totals.add_call(call.status, call.input_tokens, call.output_tokens, call.cost_usd);
}

}  // namespace

LlmAccounting::LlmAccounting(std::map<std::string, ModelPrice> prices, LlmCallSink* sink)
    : prices_(std::move(prices)), sink_(sink) {}

double LlmAccounting::cost(const std::string& model, const LlmUsage& usage) const {
  auto it = prices_.find(model);
  if (it == prices_.end()) return 0.0;
  return (static_cast<double>(usage.input_tokens) * it->second.input_per_mtok +
          static_cast<double>(usage.output_tokens) * it->second.output_per_mtok) /
         1e6;
}

void LlmAccounting::record(const LlmCallRecord& call) {
  std::lock_guard lock(mutex_);
  add(totals_, call);
  add(by_agent_[call.agent], call);
  if (!sink_) return;
  // A sink failure (a full disk under the store) must not take the LLM call down with it.
  try {
    sink_->record(call);
  } catch (const std::exception& e) {
    spdlog::error("llm: recording the call failed: {}", e.what());
  }
}

LlmTotals LlmAccounting::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

LlmTotals LlmAccounting::totals_for_agent(const std::string& agent) const {
  std::lock_guard lock(mutex_);
  auto it = by_agent_.find(agent);
  return it == by_agent_.end() ? LlmTotals{} : it->second;
}

}  // namespace kopt
