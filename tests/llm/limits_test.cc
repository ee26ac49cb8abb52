// Several requests in flight, within the provider's limits on concurrency and on requests per
// minute; the backoff between attempts.
#include <gtest/gtest.h>

#include <thread>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

using std::chrono::milliseconds;

class LimitsTest : public FakeServerTest {};

TEST_F(LimitsTest, SubmitKeepsAtMostMaxConcurrentInFlight) {
  config_.max_concurrent = 2;
  server_->set_default_reply(FakeReply::slow(milliseconds(300), "done"));
  auto client = make_provider_client(config_);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::future<LlmResponse>> futures;
  for (int i = 0; i < 6; ++i) futures.push_back(client->submit(test_request()));
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(server_->max_concurrent(), 2);
  EXPECT_EQ(client->in_flight_peak(), 2);
  EXPECT_GE(seconds_since(start), 0.85);  // three waves of 300 ms
  EXPECT_LT(seconds_since(start), 1.8);   // but the waves did overlap two at a time
}

TEST_F(LimitsTest, BlockingCallsFromManyThreadsShareTheLimit) {
  config_.max_concurrent = 1;
  server_->set_default_reply(FakeReply::slow(milliseconds(100)));
  auto client = make_provider_client(config_);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (client->complete(test_request()).ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(server_->max_concurrent(), 1);
}

TEST_F(LimitsTest, RequestsPerMinuteSpacesTheStarts) {
  config_.max_concurrent = 8;
  config_.requests_per_minute = 600;  // one every 100 ms
  auto client = make_provider_client(config_);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::future<LlmResponse>> futures;
  for (int i = 0; i < 5; ++i) futures.push_back(client->submit(test_request()));
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
  EXPECT_GE(seconds_since(start), 0.39);

  // Without the limit the same requests go out together.
  config_.requests_per_minute = 0;
  auto unpaced = make_provider_client(config_);
  start = std::chrono::steady_clock::now();
  futures.clear();
  for (int i = 0; i < 5; ++i) futures.push_back(unpaced->submit(test_request()));
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
  EXPECT_LT(seconds_since(start), 0.3);
}

TEST(RequestPacerTest, SlotsAreIntervalApartAndNoLimitMeansNow) {
  RequestPacer pacer(60);  // one a second
  auto first = pacer.reserve();
  auto second = pacer.reserve();
  auto third = pacer.reserve();
  EXPECT_EQ(second - first, std::chrono::seconds(1));
  EXPECT_EQ(third - second, std::chrono::seconds(1));
  RequestPacer unlimited(0);
  auto now = SteadyClock::now();
  EXPECT_LE(unlimited.reserve() - now, milliseconds(50));
  EXPECT_LE(unlimited.reserve() - now, milliseconds(50));
}

TEST(BackoffTest, GrowsExponentiallyWithJitterUpToTheCap) {
  Backoff backoff(milliseconds(100), milliseconds(1000));
  for (int trial = 0; trial < 50; ++trial) {
    for (int attempt = 1; attempt <= 6; ++attempt) {
      int64_t base = std::min<int64_t>(1000, 100LL << (attempt - 1));
      auto d = backoff.delay(attempt, std::nullopt).count();
      EXPECT_GE(d, base / 2) << "attempt " << attempt;
      EXPECT_LE(d, base) << "attempt " << attempt;
    }
  }
}

TEST(BackoffTest, RetryAfterIsNeverShortened) {
  Backoff backoff(milliseconds(100), milliseconds(1000));
  for (int trial = 0; trial < 50; ++trial) {
    auto d = backoff.delay(1, milliseconds(5000));
    EXPECT_GE(d, milliseconds(5000));
    EXPECT_LE(d, milliseconds(5500));
  }
  EXPECT_EQ(backoff.delay(3, milliseconds(0)), milliseconds(0));
}

TEST(ConcurrencyLimitTest, CancellationEndsTheWait) {
  ConcurrencyLimit limit(1);
  Cancellation cancel;
  ASSERT_TRUE(limit.acquire(cancel));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    cancel.cancel();
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(limit.acquire(cancel));
  EXPECT_LT(seconds_since(start), 1.0);
  canceller.join();
  limit.release();
}

}  // namespace
}  // namespace kopt::testing
