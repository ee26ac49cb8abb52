// Keys come from the environment and go into request headers, and nowhere else: not into
// errors, call records, logs or the description of the config, whatever the server does.
#include <gtest/gtest.h>

#include "llm/llm_service.h"
#include "tests/llm/llm_test_support.h"
#include "tests/support/log_capture.h"

namespace kopt::testing {
namespace {

void expect_no_key(const std::string& text, const std::string& where) {
  EXPECT_EQ(text.find(kFakeKey), std::string::npos) << where << " leaks the key:\n" << text;
  // Nor a telling piece of it.
  EXPECT_EQ(text.find("DO-NOT-LEAK-5f3a"), std::string::npos) << where << ":\n" << text;
}

TEST(KeyLeakTest, NoFaultLeaksTheKeyIntoErrorsRecordsOrLogs) {
  ScopedEnv key(kFakeKeyEnv, kFakeKey);
  auto server = FakeLlmServer::start();
  ASSERT_TRUE(server.ok()) << server.error();
  ProviderConfig provider = fake_provider(**server, ProviderType::kOpenAi);
  provider.max_attempts = 2;
  LlmConfig config = fake_llm_config(provider);
  RecordingSink sink;
  LogCapture logs;
  auto service = LlmService::create(config, &sink);
  ASSERT_TRUE(service.ok()) << service.error();

  const std::vector<FakeFault> faults = {FakeFault::kUnauthorized,    FakeFault::kRateLimited,
                                         FakeFault::kServerError,     FakeFault::kMalformedJson,
                                         FakeFault::kConnectionReset, FakeFault::kNotFound,
                                         FakeFault::kTruncatedBody,   FakeFault::kBadRequest};
  std::vector<LlmResponse> responses;
  for (FakeFault fault : faults) {
    FakeReply reply = FakeReply::failure(fault);
    reply.retry_after_s = 0;
    (*server)->set_default_reply(reply);
    responses.push_back((*service)->complete(LlmRequest::user("planner", "", "plan")));
  }
  for (const auto& r : responses) {
    EXPECT_FALSE(r.ok());
    expect_no_key(r.error, std::string("error of ") + llm_status_name(r.status));
    expect_no_key(r.describe(), "describe()");
  }
  for (const auto& record : sink.records()) expect_no_key(record.error, "call record");
  std::string logged = logs.text();
  EXPECT_NE(logged.find("attempt 1/2 failed"), std::string::npos) << logged;  // it did log
  expect_no_key(logged, "the log");

  // The key did reach the server, in the header only.
  auto requests = (*server)->requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests[0].headers["authorization"], std::string("Bearer ") + kFakeKey);
  EXPECT_EQ(requests[0].body.find(kFakeKey), std::string::npos);
}

TEST(KeyLeakTest, DescribeNamesTheVariableNeverTheValue) {
  ScopedEnv key(kFakeKeyEnv, kFakeKey);
  auto server = FakeLlmServer::start();
  ASSERT_TRUE(server.ok());
  Config config = default_config();
  config.llm = fake_llm_config(fake_provider(**server, ProviderType::kAnthropic));
  std::string text = describe(config);
  EXPECT_NE(text.find(std::string("$") + kFakeKeyEnv + " (set)"), std::string::npos) << text;
  expect_no_key(text, "describe(config)");
}

TEST(KeyLeakTest, MissingKeyVariableFailsAtStartNamingTheVariable) {
  ::unsetenv(kFakeKeyEnv);
  auto server = FakeLlmServer::start();
  ASSERT_TRUE(server.ok());
  auto service =
      LlmService::create(fake_llm_config(fake_provider(**server, ProviderType::kOpenAi)));
  ASSERT_FALSE(service.ok());
  EXPECT_NE(
      service.error().find(std::string("environment variable ") + kFakeKeyEnv + " is not set"),
      std::string::npos)
      << service.error();
  EXPECT_NE(service.error().find("llm.providers.fake.api_key_env"), std::string::npos);
}

TEST(KeyLeakTest, ScrubRemovesTheKeyAndLongPiecesOfIt) {
  Secret secret = Secret::of(kFakeKey);
  EXPECT_EQ(secret.scrub(std::string("key=") + kFakeKey + "!"), "key=[redacted]!");
  EXPECT_EQ(secret.scrub("Incorrect API key provided: sk-kopt-test-DO-NOT-L..."),
            "Incorrect API key provided: [redacted]...");
  // Short runs of the same characters are ordinary text.
  EXPECT_EQ(secret.scrub("sk-kopt is fine"), "sk-kopt is fine");
  EXPECT_EQ(Secret().scrub("anything"), "anything");
}

}  // namespace
}  // namespace kopt::testing
