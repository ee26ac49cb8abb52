// The anthropic provider against the fake server: the Messages API's headers and body, and
// its reply shapes (content blocks, stop_reason, errors).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

class AnthropicProviderTest : public FakeServerTest {
 public:
  AnthropicProviderTest() : FakeServerTest(ProviderType::kAnthropic) {}
};

TEST_F(AnthropicProviderTest, SendsMessagesRequestWithVersionAndKeyHeaders) {
  FakeReply reply = FakeReply::completion("plan: vectorize loads");
  reply.input_tokens = 70;
  reply.output_tokens = 8;
  server_->enqueue(reply);
  LlmRequest request = test_request();
  request.messages.push_back({LlmMessage::Role::kAssistant, "```cuda\nbroken\n```"});
  request.messages.push_back({LlmMessage::Role::kUser, "it failed to compile: fix it"});
  LlmResponse r = call(request);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "plan: vectorize loads");
  EXPECT_EQ(r.finish_reason, "end_turn");
  EXPECT_EQ(r.usage.input_tokens, 70);
  EXPECT_EQ(r.usage.output_tokens, 8);

  auto seen = server_->requests().at(0);
  EXPECT_EQ(seen.path, "/v1/messages");
  EXPECT_EQ(seen.headers["x-api-key"], kFakeKey);
  EXPECT_EQ(seen.headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(seen.headers.count("authorization"), 0u);
  auto body = nlohmann::json::parse(seen.body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_EQ(body["system"], "You write CUDA kernels.");
  ASSERT_EQ(body["messages"].size(), 3u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][1]["role"], "assistant");
  EXPECT_EQ(body["messages"][2]["content"], "it failed to compile: fix it");
}

TEST_F(AnthropicProviderTest, MaxTokensStopIsTruncated) {
  FakeReply cut = FakeReply::failure(FakeFault::kLengthLimit);
  cut.text = "partial";
  server_->enqueue(cut);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kTruncated);
  EXPECT_EQ(r.finish_reason, "max_tokens");
  EXPECT_EQ(r.text, "partial");
}

TEST_F(AnthropicProviderTest, EmptyContentIsEmpty) {
  server_->enqueue(FakeFault::kEmptyChoices);
  EXPECT_EQ(call().status, LlmStatus::kEmpty);
}

TEST_F(AnthropicProviderTest, RateLimitIsRetriedAndErrorsCarryTheServerMessage) {
  FakeReply limited = FakeReply::failure(FakeFault::kRateLimited);
  limited.retry_after_s = 0;
  server_->enqueue(limited);
  server_->enqueue(FakeFault::kBadRequest);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kBadRequest);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_NE(r.error.find("max_tokens is too large"), std::string::npos) << r.error;
}

TEST_F(AnthropicProviderTest, UnauthorizedEchoOfTheKeyIsScrubbed) {
  server_->enqueue(FakeFault::kUnauthorized);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kAuth);
  EXPECT_NE(r.error.find("[redacted]"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find(kFakeKey), std::string::npos) << r.error;
}

TEST_F(AnthropicProviderTest, NonJsonBodyIsMalformed) {
  server_->enqueue(FakeFault::kMalformedJson);
  EXPECT_EQ(call().status, LlmStatus::kMalformed);
}

}  // namespace
}  // namespace kopt::testing
