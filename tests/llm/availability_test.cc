// The endpoint-down state: after repeated failures the client says it is unavailable and when
// to come back, refuses calls without touching the server meanwhile, and recovers on a probe.
// And shutdown: calls under way end quickly as cancelled.
#include <gtest/gtest.h>

#include <thread>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

using std::chrono::milliseconds;

class AvailabilityTest : public FakeServerTest {
 protected:
  void SetUp() override {
    FakeServerTest::SetUp();
    config_.max_attempts = 1;
    config_.down_after_failures = 2;
    config_.down_retry = milliseconds(400);
  }
};

TEST_F(AvailabilityTest, RepeatedFailuresMarkTheEndpointDownUntilAProbeSucceeds) {
  auto client = make_provider_client(config_);
  server_->set_default_reply(FakeReply::failure(FakeFault::kServerError));
  EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kServerError);
  EXPECT_TRUE(client->availability("coder").available);
  EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kServerError);

  LlmAvailability down = client->availability("coder");
  EXPECT_FALSE(down.available);
  EXPECT_GT(down.retry_at, SteadyClock::now() + milliseconds(200));
  EXPECT_NE(down.reason.find("The server had an error"), std::string::npos) << down.reason;

  // Refused at once, without a request reaching the server.
  size_t before = server_->request_count();
  auto start = std::chrono::steady_clock::now();
  LlmResponse refused = client->complete(test_request());
  EXPECT_EQ(refused.status, LlmStatus::kUnavailable);
  ASSERT_TRUE(refused.retry_after.has_value());
  EXPECT_GT(*refused.retry_after, milliseconds(100));
  EXPECT_LT(seconds_since(start), 0.1);
  EXPECT_EQ(server_->request_count(), before);

  // Once the wait is over, the endpoint is worth a try again, and a success brings it back.
  std::this_thread::sleep_until(down.retry_at + milliseconds(20));
  EXPECT_TRUE(client->availability("coder").available);
  server_->set_default_reply(FakeReply::completion("back"));
  LlmResponse probe = client->complete(test_request());
  ASSERT_TRUE(probe.ok()) << probe.describe();
  EXPECT_TRUE(client->availability("coder").available);
  EXPECT_TRUE(client->complete(test_request()).ok());
}

TEST_F(AvailabilityTest, AFailedProbeKeepsItDown) {
  auto client = make_provider_client(config_);
  server_->set_default_reply(FakeReply::failure(FakeFault::kConnectionReset));
  (void)client->complete(test_request());
  (void)client->complete(test_request());
  ASSERT_FALSE(client->availability("coder").available);
  std::this_thread::sleep_until(client->availability("coder").retry_at + milliseconds(20));
  EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kConnection);  // the probe
  EXPECT_FALSE(client->availability("coder").available);
  EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kUnavailable);
}

TEST_F(AvailabilityTest, FailuresRetryingCannotFixDoNotMeanDown) {
  auto client = make_provider_client(config_);
  server_->set_default_reply(FakeReply::failure(FakeFault::kUnauthorized));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kAuth);
  EXPECT_TRUE(client->availability("coder").available);
}

TEST_F(AvailabilityTest, CancelEndsCallsUnderWayAndRefusesLaterOnes) {
  config_.timeout = milliseconds(10'000);
  server_->set_default_reply(FakeReply::slow(milliseconds(5000)));
  auto client = make_provider_client(config_);
  auto in_flight = client->submit(test_request());
  std::this_thread::sleep_for(milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  client->cancel();
  LlmResponse r = in_flight.get();
  EXPECT_EQ(r.status, LlmStatus::kCancelled);
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(client->complete(test_request()).status, LlmStatus::kCancelled);
}

TEST_F(AvailabilityTest, CancelCutsABackoffWaitShort) {
  config_.max_attempts = 3;
  FakeReply limited = FakeReply::failure(FakeFault::kRateLimited);
  limited.retry_after_s = 4;
  server_->set_default_reply(limited);
  auto client = make_provider_client(config_);
  auto in_flight = client->submit(test_request());
  std::this_thread::sleep_for(milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  client->cancel();
  EXPECT_EQ(in_flight.get().status, LlmStatus::kCancelled);
  EXPECT_LT(seconds_since(start), 1.0);
}

}  // namespace
}  // namespace kopt::testing
