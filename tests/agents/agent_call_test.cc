// One agent exchange against a model that misbehaves (issue 13): an answer cut at the token limit
// is asked for again with a larger limit, up to the agent's ceiling, and then without commentary;
// a refusal, a tool call or an empty answer gets one nudge and then counts as the model's
// failure; the temperature of one ask can be raised.
#include "agents/agent_call.h"

#include <gtest/gtest.h>

#include "agents/prompt_library.h"
#include "tests/agents/scripted_llm.h"

namespace kopt::agents {
namespace {

using kopt::testing::ScriptedLlm;

class AgentCallTest : public ::testing::Test {
 protected:
  AgentCallTest() {
    auto loaded = PromptLibrary::load(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts");
    if (!loaded) throw std::runtime_error(loaded.error());
    library_.emplace(std::move(*loaded));
    caller_.emplace(llm_, *library_);
  }

  Result<std::string> ask(const AskOptions& options = {}) {
    return caller_->ask("summarizer", "system.txt", {{"gpu", "H100"}}, "axpy", usage_, options);
  }

  ScriptedLlm llm_;
  std::optional<PromptLibrary> library_;
  std::optional<AgentCaller> caller_;
  AgentUsage usage_;
};

TEST_F(AgentCallTest, ACutAnswerIsAskedForAgainWithALargerLimitForThatAskOnly) {
  llm_.set_limits("summarizer", {1000, 4000, 0.2, 0.6});
  llm_.fail("summarizer", LlmStatus::kTruncated, "length");
  llm_.reply("summarizer", "the whole answer");
  llm_.set_default("summarizer", "later");
  auto answer = ask();
  ASSERT_TRUE(answer) << answer.error();
  EXPECT_EQ(*answer, "the whole answer");
  auto requests = llm_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].max_tokens.has_value());  // as configured
  EXPECT_EQ(requests[1].max_tokens, 2000);
  EXPECT_EQ(usage_.truncated, 1);
  EXPECT_EQ(usage_.calls, 2);
  // The next ask starts at the configured limit again: one long answer does not double every
  // later call of the agent.
  ASSERT_TRUE(ask());
  EXPECT_FALSE(llm_.requests().back().max_tokens.has_value());
}

TEST_F(AgentCallTest, MaxTokensIsClampedToWhatThePromptLeavesOfTheContext) {
  // A 32k-context model, 16k tokens asked for: a prompt of about 20k tokens leaves ~12k.
  AgentLimits limits{16384, 32768, std::nullopt, std::nullopt, 32768};
  llm_.set_limits("summarizer", limits);
  llm_.set_default("summarizer", "fine");
  // system.txt shows the value twice (system prompt and request): about 20,000 tokens in all.
  std::string long_prompt(30000, 'x');
  ASSERT_TRUE(caller_->ask("summarizer", "system.txt", {{"gpu", long_prompt}}, "axpy", usage_));
  auto first = llm_.requests().back();
  ASSERT_TRUE(first.max_tokens.has_value());
  EXPECT_LT(*first.max_tokens, 16384);
  EXPECT_GT(*first.max_tokens, 12000);
  EXPECT_LE(*first.max_tokens + 20000, 32768);
  // A short prompt keeps the configured limit.
  ASSERT_TRUE(ask());
  EXPECT_FALSE(llm_.requests().back().max_tokens.has_value());
  // A cut-off answer is raised within the context, not past it.
  llm_.fail("summarizer", LlmStatus::kTruncated, "length");
  llm_.reply("summarizer", "whole");
  ASSERT_TRUE(caller_->ask("summarizer", "system.txt", {{"gpu", long_prompt}}, "axpy", usage_));
  EXPECT_EQ(llm_.requests().back().max_tokens, first.max_tokens);
  // A prompt that fills the context is an error before any call, naming the setting.
  size_t calls = llm_.requests().size();
  auto full =
      caller_->ask("summarizer", "system.txt", {{"gpu", std::string(100000, 'x')}}, "axpy", usage_);
  ASSERT_FALSE(full);
  EXPECT_NE(full.error().find("llm.agents.summarizer.context_tokens"), std::string::npos)
      << full.error();
  EXPECT_EQ(llm_.requests().size(), calls);
}

TEST_F(AgentCallTest, AtTheCeilingTheCodeIsAskedForWithoutCommentaryAndThenItSaysSo) {
  llm_.set_limits("summarizer", {4000, 4000, std::nullopt, std::nullopt});
  llm_.fail("summarizer", LlmStatus::kTruncated, "length");
  llm_.fail("summarizer", LlmStatus::kTruncated, "length");
  auto answer = ask();
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().find("cut off at the token limit again (4000 tokens, the ceiling "
                                "llm.agents.summarizer.max_tokens_ceiling)"),
            std::string::npos)
      << answer.error();
  auto requests = llm_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].messages.back().content.find("without any explanation"), std::string::npos);
  EXPECT_EQ(usage_.ceiling_hits, 1);
}

TEST_F(AgentCallTest, ARefusalGetsOneNudgeThenIsTheModelsFailure) {
  llm_.fail("summarizer", LlmStatus::kRefused, "I can't help with that.");
  llm_.reply("summarizer", "fine");
  auto answer = ask();
  ASSERT_TRUE(answer) << answer.error();
  EXPECT_EQ(usage_.refused, 1);
  EXPECT_EQ(usage_.model_failures, 0);
  EXPECT_NE(llm_.requests()[1].messages.back().content.find("declined"), std::string::npos);

  llm_.fail("summarizer", LlmStatus::kToolCall, "tool call write_file");
  llm_.fail("summarizer", LlmStatus::kToolCall, "tool call write_file");
  auto again = ask();
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("called a tool"), std::string::npos) << again.error();
  EXPECT_EQ(usage_.tool_calls, 2);
  EXPECT_EQ(usage_.model_failures, 1);
  EXPECT_EQ(llm_.requests().size(), 4u);  // one nudge each, no more
}

TEST_F(AgentCallTest, OtherFailuresAreNotRetriedHere) {
  llm_.fail("summarizer", LlmStatus::kRateLimited, "HTTP 429");
  ASSERT_FALSE(ask());
  EXPECT_EQ(llm_.requests().size(), 1u);  // the provider client already retried
  EXPECT_EQ(usage_.model_failures, 0);
}

TEST_F(AgentCallTest, TheTemperatureOfOneAskCanBeRaised) {
  llm_.set_default("summarizer", "ok");
  ASSERT_TRUE(ask({0.7}));
  EXPECT_EQ(llm_.requests().back().temperature, 0.7);
  ASSERT_TRUE(ask());
  EXPECT_FALSE(llm_.requests().back().temperature.has_value());
}

}  // namespace
}  // namespace kopt::agents
