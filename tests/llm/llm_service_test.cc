// LlmService: routing each agent to its provider and model, accounting (records to the sink,
// cost from the price table, run totals for budgets).
#include "llm/llm_service.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

class LlmServiceTest : public FakeServerTest {
 protected:
  void SetUp() override {
    FakeServerTest::SetUp();
    llm_ = fake_llm_config(config_);
  }

  std::unique_ptr<LlmService> make_service(LlmCallSink* sink = nullptr) {
    auto service = LlmService::create(llm_, sink);
    EXPECT_TRUE(service.ok()) << service.error();
    return service.ok() ? std::move(*service) : nullptr;
  }

  ScopedEnv key_{kFakeKeyEnv, kFakeKey};
  LlmConfig llm_;
};

TEST_F(LlmServiceTest, AgentsGetTheirConfiguredModelsAndRequestsMayOverride) {
  llm_.agents["summarizer"].model = "small-model";
  llm_.agents["summarizer"].max_tokens = 200;
  llm_.agents["summarizer"].temperature.reset();
  auto service = make_service();
  ASSERT_TRUE(service->complete(LlmRequest::user("summarizer", "", "why faster?")).ok());
  LlmRequest planner = LlmRequest::user("planner", "", "plan");
  planner.model = "override-model";
  planner.temperature = 1.5;
  ASSERT_TRUE(service->complete(planner).ok());

  auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  auto summarizer = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(summarizer["model"], "small-model");
  EXPECT_EQ(summarizer["max_tokens"], 200);
  EXPECT_FALSE(summarizer.contains("temperature"));
  auto plan = nlohmann::json::parse(requests[1].body);
  EXPECT_EQ(plan["model"], "override-model");
  EXPECT_DOUBLE_EQ(plan["temperature"].get<double>(), 1.5);
  EXPECT_EQ(plan["max_tokens"], 1000);
}

TEST_F(LlmServiceTest, EachAgentCanUseItsOwnProvider) {
  auto second = FakeLlmServer::start();
  ASSERT_TRUE(second.ok());
  ProviderConfig anthropic = fake_provider(**second, ProviderType::kAnthropic, "other");
  llm_.providers["other"] = anthropic;
  llm_.agents["coder"].provider = "other";
  auto service = make_service();
  ASSERT_TRUE(service->complete(LlmRequest::user("coder", "", "code")).ok());
  ASSERT_TRUE(service->complete(LlmRequest::user("planner", "", "plan")).ok());
  EXPECT_EQ((*second)->request_count(), 1u);
  EXPECT_EQ((*second)->requests()[0].path, "/v1/messages");
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_NE(service->provider("other"), nullptr);
}

TEST_F(LlmServiceTest, UnknownAgentIsABadRequestWithASuggestion) {
  auto service = make_service();
  LlmResponse r = service->complete(LlmRequest::user("coderr", "", "x"));
  EXPECT_EQ(r.status, LlmStatus::kBadRequest);
  EXPECT_NE(r.error.find("did you mean 'coder'"), std::string::npos) << r.error;
  EXPECT_EQ(service->submit(LlmRequest::user("nobody", "", "x")).get().status,
            LlmStatus::kBadRequest);
  EXPECT_FALSE(service->availability("nobody").available);
  EXPECT_EQ(server_->request_count(), 0u);
}

TEST_F(LlmServiceTest, EveryCallIsRecordedWithTokensCostLatencyAndStatus) {
  RecordingSink sink;
  auto service = make_service(&sink);
  FakeReply reply = FakeReply::completion("ok");
  reply.delay = std::chrono::milliseconds(30);
  reply.input_tokens = 1000;
  reply.output_tokens = 1000;  // at most max_tokens: a larger count is charged at the bound
  server_->enqueue(reply);
  FakeReply limited = FakeReply::failure(FakeFault::kRateLimited);
  limited.retry_after_s = 0;
  server_->enqueue(limited);
  FakeReply second = FakeReply::completion("ok");
  second.input_tokens = 500;
  second.output_tokens = 0;
  server_->enqueue(second);
  server_->enqueue(FakeFault::kUnauthorized);

  LlmRequest coder = LlmRequest::user("coder", "", "kernel");
  coder.label = "axpy/candidate-7";
  LlmResponse first = service->complete(coder);
  ASSERT_TRUE(first.ok()) << first.describe();
  // 1000 * $2/M + 1000 * $8/M
  EXPECT_NEAR(first.cost_usd, 0.010, 1e-12);
  LlmResponse retried = service->complete(LlmRequest::user("planner", "", "plan"));
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried.attempts, 2);
  EXPECT_NEAR(retried.cost_usd, 0.001, 1e-12);
  EXPECT_EQ(service->complete(LlmRequest::user("planner", "", "plan")).status, LlmStatus::kAuth);

  auto records = sink.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].agent, "coder");
  EXPECT_EQ(records[0].provider, "fake");
  EXPECT_EQ(records[0].model, "test-model");
  EXPECT_EQ(records[0].label, "axpy/candidate-7");
  EXPECT_EQ(records[0].status, LlmStatus::kOk);
  EXPECT_EQ(records[0].input_tokens, 1000);
  EXPECT_EQ(records[0].output_tokens, 1000);
  EXPECT_NEAR(records[0].cost_usd, 0.010, 1e-12);
  EXPECT_GE(records[0].latency, std::chrono::milliseconds(30));
  EXPECT_EQ(records[0].latency, first.latency);
  EXPECT_LE(records[0].started, std::chrono::system_clock::now());
  EXPECT_EQ(records[1].attempts, 2);
  EXPECT_EQ(records[2].status, LlmStatus::kAuth);
  EXPECT_EQ(records[2].http_status, 401);

  LlmTotals totals = service->totals();
  EXPECT_EQ(totals.calls, 3);
  EXPECT_EQ(totals.failed_calls, 1);
  EXPECT_EQ(totals.input_tokens, 1500);
  EXPECT_EQ(totals.output_tokens, 1000);
  EXPECT_NEAR(totals.cost_usd, 0.011, 1e-12);
  EXPECT_EQ(service->totals_for_agent("planner").calls, 2);
  EXPECT_EQ(service->totals_for_agent("coder").calls, 1);
  EXPECT_EQ(service->totals_for_agent("summarizer").calls, 0);
}

TEST_F(LlmServiceTest, TruncatedCallsAreChargedModelsWithoutAPriceCostNothing) {
  FakeReply cut = FakeReply::failure(FakeFault::kLengthLimit);
  // Within the bounds (prompt + 4096 in, max_tokens out): counts past them are charged there.
  cut.input_tokens = 4'000;
  cut.output_tokens = 1'000;
  server_->enqueue(cut);
  server_->enqueue(cut);
  llm_.agents["summarizer"].model = "local-model";
  auto service = make_service();
  EXPECT_NEAR(service->complete(LlmRequest::user("coder", "", "x")).cost_usd, 0.016, 1e-9);
  EXPECT_EQ(service->complete(LlmRequest::user("summarizer", "", "x")).cost_usd, 0.0);
  EXPECT_NEAR(service->totals().cost_usd, 0.016, 1e-9);
  // Counted as failed and as truncated, the count the stall detector reads.
  EXPECT_EQ(service->totals().failed_calls, 2);
  EXPECT_EQ(service->totals().truncated, 2);
  EXPECT_EQ(service->totals_for_agent("coder").truncated, 1);
  EXPECT_EQ(service->totals().refused, 0);
}

TEST_F(LlmServiceTest, SubmittedRequestsRunTogether) {
  llm_.providers["fake"].max_concurrent = 4;
  server_->set_default_reply(FakeReply::slow(std::chrono::milliseconds(300)));
  auto service = make_service();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::future<LlmResponse>> futures;
  for (int i = 0; i < 4; ++i)
    futures.push_back(service->submit(LlmRequest::user("coder", "", "x")));
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_EQ(server_->max_concurrent(), 4);
}

TEST(LlmAccountingTest, SinkExceptionsDoNotEscape) {
  struct ThrowingSink : LlmCallSink {
    void record(const LlmCallRecord&) override { throw std::runtime_error("disk full"); }
  } sink;
  LlmAccounting accounting({}, &sink);
  LlmCallRecord call;
  call.agent = "coder";
  EXPECT_NO_THROW(accounting.record(call));
  EXPECT_EQ(accounting.totals().calls, 1);
}

}  // namespace
}  // namespace kopt::testing
