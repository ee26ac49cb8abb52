// The pre-flight probe against the fake server on loopback (real libcurl): models lists in the
// OpenAI and Anthropic shapes, a wrong key, an unknown model, a server that is down, a refusal,
// and a server without a models list. Also the client's reading of refusals.
#include "llm/preflight.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class PreflightTest : public ::testing::TestWithParam<ProviderType> {
 protected:
  // A server that knows `models`, answers only them, and takes only kFakeKey.
  void start(std::vector<std::string> models = {"good-model", "other-model"}) {
    FakeLlmServer::Options options;
    options.listed_models = std::move(models);
    options.only_listed_models = true;
    options.required_key = kFakeKey;
    auto s = FakeLlmServer::start(options);
    ASSERT_TRUE(s.ok()) << s.error();
    server_ = std::move(*s);
    provider_ = fake_provider(*server_, GetParam());
  }

  ProbeResult probe(const std::string& model, const std::string& key = kFakeKey) {
    return probe_model(provider_, Secret::of(key), ProbeTarget{"fake", model, {"coder"}}, 1u << 20);
  }

  std::unique_ptr<FakeLlmServer> server_;
  ProviderConfig provider_;
};

TEST_P(PreflightTest, ListedModelIsOkWithOneRequest) {
  start();
  ProbeResult r = probe("good-model");
  EXPECT_EQ(r.outcome, ProbeOutcome::kOk) << r.line();
  EXPECT_TRUE(r.usable());
  EXPECT_EQ(r.method, "models list");
  ASSERT_EQ(server_->request_count(), 1u);
  auto seen = server_->requests()[0];
  EXPECT_EQ(seen.method, "GET");
  EXPECT_TRUE(contains(seen.path, "/v1/models")) << seen.path;
  if (GetParam() == ProviderType::kAnthropic) {
    EXPECT_EQ(seen.headers["x-api-key"], kFakeKey);
    EXPECT_EQ(seen.headers["anthropic-version"], "2023-06-01");
  } else {
    EXPECT_EQ(seen.headers["authorization"], std::string("Bearer ") + kFakeKey);
  }
  EXPECT_TRUE(contains(r.line(), "fake/good-model (coder): ok: ")) << r.line();
  EXPECT_TRUE(contains(r.line(), " ms (models list)")) << r.line();
}

TEST_P(PreflightTest, WrongKeyIsAuthAndTheEchoedKeyIsScrubbed) {
  start();
  const std::string wrong = "sk-wrong-key-0123456789abcdef";
  ProbeResult r = probe("good-model", wrong);
  EXPECT_EQ(r.outcome, ProbeOutcome::kAuth) << r.line();
  EXPECT_EQ(r.http_status, 401);
  EXPECT_TRUE(contains(r.line(), "the key was refused: HTTP 401: Incorrect API key provided"))
      << r.line();
  EXPECT_FALSE(contains(r.line(), wrong)) << r.line();
  EXPECT_FALSE(r.usable());
}

TEST_P(PreflightTest, MisspelledModelIsUnknownWithASuggestion) {
  start();
  ProbeResult r = probe("good-modle");
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnknownModel) << r.line();
  EXPECT_EQ(r.method, "models list + completion");
  EXPECT_TRUE(contains(r.line(), "the server does not know model 'good-modle'")) << r.line();
  EXPECT_TRUE(contains(r.line(), "HTTP 404")) << r.line();
  EXPECT_TRUE(contains(r.line(), "the server lists 2 models (did you mean 'good-model'?)"))
      << r.line();
}

TEST_P(PreflightTest, ServerDownIsUnreachable) {
  start();
  server_->stop();  // the port is closed now: connection refused
  ProbeResult r = probe("good-model");
  EXPECT_EQ(r.outcome, ProbeOutcome::kUnreachable) << r.line();
  EXPECT_TRUE(contains(r.line(), "unreachable: http://127.0.0.1:")) << r.line();
}

TEST_P(PreflightTest, AnAliasNotListedIsDecidedByACompletion) {
  // The server lists nothing under the configured name but answers it (an alias).
  FakeLlmServer::Options options;
  options.listed_models = {"full-model-2026-01-01"};
  auto s = FakeLlmServer::start(options);
  ASSERT_TRUE(s.ok()) << s.error();
  server_ = std::move(*s);
  provider_ = fake_provider(*server_, GetParam());
  ProbeResult r = probe("alias-model");
  EXPECT_EQ(r.outcome, ProbeOutcome::kOk) << r.line();
  EXPECT_EQ(r.method, "models list + completion");
  ASSERT_EQ(server_->request_count(), 2u);
  auto body = nlohmann::json::parse(server_->requests()[1].body);
  EXPECT_EQ(body["model"], "alias-model");
  EXPECT_LE(body["max_tokens"].get<int>(), 16);  // a cheap request
}

TEST_P(PreflightTest, RefusalIsReportedWithItsText) {
  auto s = FakeLlmServer::start();  // lists fake-model only, answers every model
  ASSERT_TRUE(s.ok());
  server_ = std::move(*s);
  provider_ = fake_provider(*server_, GetParam());
  FakeReply refusal = FakeReply::failure(FakeFault::kRefusal);
  refusal.text = "I can't help with that request.";
  server_->enqueue(refusal);
  ProbeResult r = probe("test-model");
  EXPECT_EQ(r.outcome, ProbeOutcome::kRefused) << r.line();
  EXPECT_TRUE(contains(r.line(), "refused: the model refused: I can't help with that request."))
      << r.line();
  EXPECT_FALSE(r.usable());
}

INSTANTIATE_TEST_SUITE_P(Apis, PreflightTest,
                         ::testing::Values(ProviderType::kOpenAi, ProviderType::kAnthropic),
                         [](const auto& param_info) {
                           return std::string(provider_type_name(param_info.param));
                         });

// The daemon's own calls: a refusal is its own status with the model's words, not "empty".
TEST_P(PreflightTest, ClientReportsARefusalWithItsText) {
  auto s = FakeLlmServer::start();
  ASSERT_TRUE(s.ok());
  server_ = std::move(*s);
  FakeReply refusal = FakeReply::failure(FakeFault::kRefusal);
  refusal.text = "I won't write that kernel.";
  server_->enqueue(refusal);
  ScopedEnv key(kFakeKeyEnv, kFakeKey);
  LlmResponse r =
      make_provider_client(fake_provider(*server_, GetParam()))->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kRefused) << r.describe();
  EXPECT_EQ(r.attempts, 1);  // not retried: the same prompt would be refused again
  EXPECT_EQ(r.describe(), "refused: HTTP 200: the model refused: I won't write that kernel.");
}

TEST(PreflightTargets, OneProbePerProviderAndModel) {
  LlmConfig config;
  config.providers["a"].name = "a";
  config.agents["planner"] = {"planner", "a", "m1", std::nullopt, 100};
  config.agents["coder"] = {"coder", "a", "m1", std::nullopt, 100};
  config.agents["summarizer"] = {"summarizer", "a", "m2", std::nullopt, 100};
  auto targets = probe_targets(config);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].model, "m1");
  EXPECT_EQ(targets[0].roles, (std::vector<std::string>{"coder", "planner"}));
  EXPECT_EQ(targets[1].model, "m2");
}

TEST(PreflightKeys, AnUnsetKeyVariableIsReportedWithoutARequest) {
  auto s = FakeLlmServer::start();
  ASSERT_TRUE(s.ok());
  ProviderConfig p = fake_provider(**s, ProviderType::kOpenAi);
  p.api_key_env = "KOPT_TEST_PREFLIGHT_UNSET_KEY";
  ::unsetenv(p.api_key_env.c_str());
  auto results = preflight_llm(fake_llm_config(p));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, ProbeOutcome::kNoKey);
  EXPECT_TRUE(contains(results[0].line(), "KOPT_TEST_PREFLIGHT_UNSET_KEY is not set"))
      << results[0].line();
  EXPECT_EQ((*s)->request_count(), 0u);
}

}  // namespace
}  // namespace kopt::testing
