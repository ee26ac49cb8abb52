#include "tests/llm/llm_test_support.h"

#include <csignal>
#include <cstdlib>

namespace kopt::testing {

namespace {
// As in kopt's main: a command that exits without reading its stdin must not kill the tests.
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  (void)kSigpipeIgnored;
  if (const char* old = std::getenv(name_.c_str())) {
    had_value_ = true;
    old_value_ = old;
  }
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (had_value_) {
    ::setenv(name_.c_str(), old_value_.c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

ProviderConfig fake_provider(const FakeLlmServer& server, ProviderType type,
                             const std::string& name) {
  ProviderConfig p;
  p.name = name;
  p.type = type;
  p.base_url =
      type == ProviderType::kAnthropic ? server.anthropic_base_url() : server.openai_base_url();
  p.api_key_env = kFakeKeyEnv;
  p.connect_timeout = std::chrono::milliseconds(1000);
  p.timeout = std::chrono::milliseconds(2000);
  p.max_attempts = 4;
  p.backoff_initial = std::chrono::milliseconds(10);
  p.backoff_max = std::chrono::milliseconds(80);
  p.max_retry_wait = std::chrono::milliseconds(5000);
  p.down_after_failures = 100;  // the availability tests lower it
  return p;
}

LlmConfig fake_llm_config(const ProviderConfig& provider) {
  LlmConfig llm;
  llm.providers[provider.name] = provider;
  for (const auto& role : agent_roles()) {
    AgentConfig a;
    a.role = role;
    a.provider = provider.name;
    a.model = "test-model";
    a.temperature = 0.5;
    a.max_tokens = 1000;
    llm.agents[role] = a;
  }
  llm.prices["test-model"] = ModelPrice{2.0, 8.0};
  return llm;
}

std::unique_ptr<ProviderClient> make_provider_client(const ProviderConfig& config,
                                                     LlmAccounting* accounting,
                                                     size_t max_response_bytes) {
  Secret key = config.api_key_env.empty() ? Secret() : Secret::of(kFakeKey);
  auto backend = config.type == ProviderType::kCommand
                     ? make_command_backend(config, max_response_bytes)
                     : make_http_backend(config, max_response_bytes, key);
  return std::make_unique<ProviderClient>(config, std::move(backend), key, accounting);
}

LlmRequest test_request(const std::string& prompt) {
  LlmRequest r = LlmRequest::user("coder", "You write CUDA kernels.", prompt);
  r.model = "test-model";
  r.max_tokens = 1000;
  r.temperature = 0.5;
  return r;
}

void RecordingSink::record(const LlmCallRecord& call) {
  std::lock_guard lock(mutex_);
  records_.push_back(call);
}

std::vector<LlmCallRecord> RecordingSink::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void FakeServerTest::SetUp() {
  auto started = FakeLlmServer::start();
  ASSERT_TRUE(started.ok()) << started.error();
  server_ = std::move(*started);
  config_ = fake_provider(*server_, type_);
}

LlmResponse FakeServerTest::call(const LlmRequest& request) {
  return make_provider_client(config_)->complete(request);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kopt::testing
