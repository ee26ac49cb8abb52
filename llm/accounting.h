// Accounting of LLM calls: one record per call (tokens, latency, cost, status) handed to a sink
// (the daemon writes them to the memory store's LLM-call table), and run totals for budgets.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/call_totals.h"
#include "config/config.h"
#include "llm/llm_types.h"

namespace kopt {

// One call as it ended, retries included. Holds nothing secret: errors are scrubbed of keys
// before they get here.
struct LlmCallRecord {
  std::chrono::system_clock::time_point started;
  std::string agent;
  std::string provider;
  std::string model;
  std::string label;  // LlmRequest::label
  LlmStatus status = LlmStatus::kOk;
  int http_status = 0;
  int attempts = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  std::chrono::milliseconds latency{0};
  std::string error;
};

// Receives every call record. Calls are serialized by LlmAccounting (never two at once), so an
// implementation needs no locking of its own; it must not call back into the LLM client.
class LlmCallSink {
 public:
  virtual ~LlmCallSink() = default;
  virtual void record(const LlmCallRecord& call) = 0;
};

struct LlmTotals : CallTotals {
  // How the model misbehaved, one count per call: what a stall detector needs besides kernels.
  int64_t truncated = 0;  // cut at the token limit
  int64_t refused = 0;
  int64_t tool_calls = 0;  // a tool call instead of text
  int64_t empty = 0;

  // One call more that ended with `status`, with its tokens and cost (failed unless kOk).
  void add_call(LlmStatus status, int64_t input, int64_t output, double cost);
  void add(const LlmTotals& other);
};

// Prices calls, keeps totals and forwards records to the sink. Thread-safe.
class LlmAccounting {
 public:
  // `sink` may be null; it must outlive this object.
  LlmAccounting(std::map<std::string, ModelPrice> prices, LlmCallSink* sink);

  // USD for `usage` on `model`; 0 for a model without a price.
  double cost(const std::string& model, const LlmUsage& usage) const;

  // Adds the record to the totals and passes it to the sink.
  void record(const LlmCallRecord& call);

  LlmTotals totals() const;
  LlmTotals totals_for_agent(const std::string& agent) const;

 private:
  std::map<std::string, ModelPrice> prices_;
  LlmCallSink* sink_;
  mutable std::mutex mutex_;
  LlmTotals totals_;
  std::map<std::string, LlmTotals> by_agent_;
};

}  // namespace kopt
