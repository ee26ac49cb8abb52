// Shared set-up for the LLM client tests: provider configs aimed at the fake server with short
// timeouts and backoff, a sink that keeps call records, and an environment variable for keys.
#pragma once

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "llm/accounting.h"
#include "llm/provider_client.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::testing {

// A recognisable fake key: tests assert it appears in no error text and no log line.
inline constexpr const char* kFakeKey = "sk-kopt-test-DO-NOT-LEAK-5f3a9c1e7b2d4086";
inline constexpr const char* kFakeKeyEnv = "KOPT_TEST_LLM_KEY";

// Sets `name` for the scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_value_ = false;
  std::string old_value_;
};

// A provider of `type` at the fake server: 2 s timeout, 4 attempts, 10..80 ms backoff.
ProviderConfig fake_provider(const FakeLlmServer& server, ProviderType type,
                             const std::string& name = "fake");

// planner, coder and summarizer on one provider, model "test-model" priced $2 / $8 per Mtok.
LlmConfig fake_llm_config(const ProviderConfig& provider);

// A ProviderClient for `config` with the fake key (when api_key_env is set) and no accounting.
std::unique_ptr<ProviderClient> make_provider_client(const ProviderConfig& config,
                                                     LlmAccounting* accounting = nullptr,
                                                     size_t max_response_bytes = 1u << 20);

// A request for the "coder" agent with model "test-model".
LlmRequest test_request(const std::string& prompt = "write a kernel");

class RecordingSink : public LlmCallSink {
 public:
  void record(const LlmCallRecord& call) override;
  std::vector<LlmCallRecord> records() const;

 private:
  mutable std::mutex mutex_;
  std::vector<LlmCallRecord> records_;
};

// A fake server started for each test and a provider of `type` aimed at it (config_).
class FakeServerTest : public ::testing::Test {
 protected:
  explicit FakeServerTest(ProviderType type = ProviderType::kOpenAi) : type_(type) {}
  void SetUp() override;
  // One call through a fresh client for config_.
  LlmResponse call(const LlmRequest& request = test_request());

  ProviderType type_;
  std::unique_ptr<FakeLlmServer> server_;
  ProviderConfig config_;
};

double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace kopt::testing
