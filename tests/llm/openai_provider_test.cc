// The openai provider against the fake server over real HTTP: what is sent, and what the client
// does with each fault a real endpoint produces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

using std::chrono::milliseconds;

class OpenAiProviderTest : public FakeServerTest {};

TEST_F(OpenAiProviderTest, SendsChatCompletionAndReadsTextAndUsage) {
  FakeReply reply = FakeReply::completion("```cuda\n__global__ void k() {}\n```");
  reply.input_tokens = 123;
  reply.output_tokens = 45;
  server_->enqueue(reply);
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "```cuda\n__global__ void k() {}\n```");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.usage.input_tokens, 123);
  EXPECT_EQ(r.usage.output_tokens, 45);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 200);

  auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  EXPECT_EQ(requests[0].headers["authorization"], std::string("Bearer ") + kFakeKey);
  auto body = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.5);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_EQ(body["messages"][1]["content"], "write a kernel");
}

TEST_F(OpenAiProviderTest, NewerModelsGetMaxCompletionTokensAndNoKeyMeansNoHeader) {
  config_.max_tokens_field = "max_completion_tokens";
  config_.api_key_env = "";
  LlmRequest request = test_request();
  request.temperature.reset();
  ASSERT_TRUE(call(request).ok());
  auto request_seen = server_->requests().at(0);
  auto body = nlohmann::json::parse(request_seen.body);
  EXPECT_EQ(body["max_completion_tokens"], 1000);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(request_seen.headers.count("authorization"), 0u);
}

TEST_F(OpenAiProviderTest, RateLimitedHonoursRetryAfterThenSucceeds) {
  FakeReply limited = FakeReply::failure(FakeFault::kRateLimited);
  limited.retry_after_s = 1;
  server_->enqueue(limited);
  server_->enqueue(FakeReply::completion("done"));
  auto start = std::chrono::steady_clock::now();
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "done");
  EXPECT_EQ(r.attempts, 2);
  // The backoff alone would have waited at most 80 ms; the server asked for a second.
  EXPECT_GE(seconds_since(start), 1.0);
  EXPECT_EQ(server_->request_count(), 2u);
}

TEST_F(OpenAiProviderTest, RetryAfterBeyondTheLimitEndsTheCallAtOnce) {
  config_.max_retry_wait = milliseconds(500);
  FakeReply limited = FakeReply::failure(FakeFault::kRateLimited);
  limited.retry_after_s = 30;
  server_->enqueue(limited);
  auto start = std::chrono::steady_clock::now();
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kRateLimited);
  ASSERT_TRUE(r.retry_after.has_value());
  EXPECT_EQ(*r.retry_after, milliseconds(30'000));
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_EQ(server_->request_count(), 1u);
}

TEST_F(OpenAiProviderTest, ServerErrorsAreRetriedThenSucceed) {
  server_->enqueue(FakeFault::kServerError);
  FakeReply unavailable = FakeReply::failure(FakeFault::kUnavailable);
  unavailable.retry_after_s = 0;
  server_->enqueue(unavailable);
  server_->enqueue(FakeReply::completion("third time"));
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "third time");
  EXPECT_EQ(r.attempts, 3);
}

TEST_F(OpenAiProviderTest, PersistentServerErrorStopsAfterMaxAttempts) {
  server_->set_default_reply(FakeReply::failure(FakeFault::kServerError));
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kServerError);
  EXPECT_EQ(r.http_status, 500);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(server_->request_count(), 4u);
  EXPECT_NE(r.error.find("The server had an error"), std::string::npos) << r.error;
}

TEST_F(OpenAiProviderTest, Status503WithRetryAfterIsHonoured) {
  FakeReply unavailable = FakeReply::failure(FakeFault::kUnavailable);
  unavailable.retry_after_s = 1;
  server_->enqueue(unavailable);
  auto start = std::chrono::steady_clock::now();
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_GE(seconds_since(start), 1.0);
}

TEST_F(OpenAiProviderTest, SlowResponsePastTheTimeoutTimesOut) {
  config_.timeout = milliseconds(300);
  config_.max_attempts = 2;
  server_->set_default_reply(FakeReply::slow(milliseconds(3000)));
  auto start = std::chrono::steady_clock::now();
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kTimeout);
  EXPECT_EQ(r.attempts, 2);
  double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.6);
  EXPECT_LT(elapsed, 2.0);  // two timeouts and a short backoff, not the server's 3 s each
}

TEST_F(OpenAiProviderTest, SlowResponseThenFastOneSucceeds) {
  config_.timeout = milliseconds(300);
  server_->enqueue(FakeReply::slow(milliseconds(3000)));
  server_->enqueue(FakeReply::completion("fast"));
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "fast");
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(OpenAiProviderTest, ConnectionResetIsRetried) {
  server_->enqueue(FakeFault::kConnectionReset);
  server_->enqueue(FakeReply::completion("after reset"));
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(OpenAiProviderTest, PersistentResetIsAConnectionFailure) {
  server_->set_default_reply(FakeReply::failure(FakeFault::kConnectionReset));
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kConnection);
  EXPECT_EQ(r.attempts, 4);
}

TEST_F(OpenAiProviderTest, RefusedConnectionIsAConnectionFailure) {
  int port = server_->port();
  server_->stop();  // nothing listens there now
  config_.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  config_.max_attempts = 2;
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kConnection);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_FALSE(r.error.empty());
}

TEST_F(OpenAiProviderTest, TruncatedBodyIsRetried) {
  server_->enqueue(FakeFault::kTruncatedBody);
  server_->enqueue(FakeReply::completion("whole"));
  LlmResponse r = call();
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "whole");
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(OpenAiProviderTest, MalformedJsonIsClassifiedAndNotRetried) {
  server_->enqueue(FakeFault::kMalformedJson);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kMalformed);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("not JSON"), std::string::npos) << r.error;
}

TEST_F(OpenAiProviderTest, EmptyChoicesIsClassified) {
  server_->enqueue(FakeFault::kEmptyChoices);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kEmpty);
  EXPECT_EQ(r.attempts, 1);
}

TEST_F(OpenAiProviderTest, BlankTextIsEmpty) {
  server_->enqueue(FakeReply::completion("  \n "));
  EXPECT_EQ(call().status, LlmStatus::kEmpty);
}

TEST_F(OpenAiProviderTest, HugeBodyIsRejectedNotRetried) {
  server_->enqueue(FakeFault::kHugeBody);  // 5 MB against a 1 MiB cap
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kTooLarge);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(r.text.empty());
}

TEST_F(OpenAiProviderTest, LengthLimitIsTruncatedWithThePartialTextAndUsage) {
  FakeReply cut = FakeReply::failure(FakeFault::kLengthLimit);
  cut.text = "```cuda\n__global__ void k() {\n  float x =";
  server_->enqueue(cut);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kTruncated);
  EXPECT_EQ(r.text, cut.text);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.usage.output_tokens, 20);
  EXPECT_EQ(r.attempts, 1);
}

TEST_F(OpenAiProviderTest, UnauthorizedReportsTheServerMessageAtOnce) {
  server_->enqueue(FakeFault::kUnauthorized);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kAuth);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("Incorrect API key provided"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find(kFakeKey), std::string::npos) << r.error;
}

TEST_F(OpenAiProviderTest, UnknownModelIsNotFoundWithTheServerMessage) {
  server_->enqueue(FakeFault::kNotFound);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kNotFound);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("The model 'test-model' does not exist"), std::string::npos) << r.error;
}

TEST_F(OpenAiProviderTest, BadRequestIsNotRetried) {
  server_->enqueue(FakeFault::kBadRequest);
  LlmResponse r = call();
  EXPECT_EQ(r.status, LlmStatus::kBadRequest);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("max_tokens is too large"), std::string::npos) << r.error;
  EXPECT_EQ(server_->request_count(), 1u);
}

}  // namespace
}  // namespace kopt::testing
