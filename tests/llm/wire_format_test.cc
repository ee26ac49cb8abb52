// Reply shapes the fake server does not produce: odd but real bodies from hosted APIs, local
// servers and proxies, read by the wire formats directly.
#include "llm/wire_format.h"

#include <gtest/gtest.h>

#include "llm/http_transport.h"

namespace kopt {
namespace {

using nlohmann::json;

ProviderConfig provider_of(ProviderType type) {
  ProviderConfig p;
  p.type = type;
  return p;
}

TEST(WireFormatTest, OpenAiNullContentWithLengthIsTruncated) {
  auto format = make_openai_format(provider_of(ProviderType::kOpenAi));
  auto r = format->parse(json::parse(
      R"({"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"length"}]})"));
  EXPECT_EQ(r.status, LlmStatus::kTruncated);
}

TEST(WireFormatTest, RefusalsAndToolCallsAreToldApartFromEmptyAnswers) {
  auto openai = make_openai_format(provider_of(ProviderType::kOpenAi));
  auto refused = openai->parse(json::parse(
      R"({"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't."},
          "finish_reason":"stop"}]})"));
  EXPECT_EQ(refused.status, LlmStatus::kRefused);
  EXPECT_NE(refused.error.find("I can't."), std::string::npos);
  auto tool = openai->parse(json::parse(
      R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1",
          "type":"function","function":{"name":"write_file","arguments":"{}"}}]},
          "finish_reason":"tool_calls"}]})"));
  EXPECT_EQ(tool.status, LlmStatus::kToolCall);
  EXPECT_NE(tool.error.find("write_file"), std::string::npos);
  // Text next to a tool call is still an answer.
  EXPECT_EQ(openai
                ->parse(json::parse(R"({"choices":[{"message":{"content":"```cuda\nx\n```",
                "tool_calls":[{"id":"c1"}]},"finish_reason":"stop"}]})"))
                .status,
            LlmStatus::kOk);
  EXPECT_EQ(openai
                ->parse(json::parse(R"({"choices":[{"message":{"content":"  "},
                "finish_reason":"stop"}]})"))
                .status,
            LlmStatus::kEmpty);

  auto anthropic = make_anthropic_format(provider_of(ProviderType::kAnthropic));
  EXPECT_EQ(anthropic->parse(json::parse(R"({"content":[],"stop_reason":"refusal"})")).status,
            LlmStatus::kRefused);
  EXPECT_EQ(anthropic
                ->parse(json::parse(R"({"content":[{"type":"tool_use","id":"t","name":"bash",
                    "input":{}}],"stop_reason":"tool_use"})"))
                .status,
            LlmStatus::kToolCall);
  EXPECT_EQ(llm_status_name(LlmStatus::kRefused), std::string("refused"));
  EXPECT_EQ(llm_status_name(LlmStatus::kToolCall), std::string("tool_call"));
}

TEST(WireFormatTest, OpenAiShapesThatAreNotCompletionsAreMalformed) {
  auto format = make_openai_format(provider_of(ProviderType::kOpenAi));
  EXPECT_EQ(format->parse(json::parse(R"({"object":"list"})")).status, LlmStatus::kMalformed);
  EXPECT_EQ(format->parse(json::parse(R"({"choices":[42]})")).status, LlmStatus::kMalformed);
  EXPECT_EQ(format->parse(json::parse(R"({"choices":[{"index":0}]})")).status,
            LlmStatus::kMalformed);
  EXPECT_EQ(format->parse(json::parse("[1,2]")).status, LlmStatus::kMalformed);
}

TEST(WireFormatTest, OpenAiLegacyTextChoiceIsRead) {
  auto format = make_openai_format(provider_of(ProviderType::kOpenAi));
  auto r = format->parse(json::parse(R"({"choices":[{"text":"hi","finish_reason":"stop"}]})"));
  EXPECT_EQ(r.status, LlmStatus::kOk);
  EXPECT_EQ(r.text, "hi");
}

TEST(WireFormatTest, AnthropicSkipsNonTextBlocksAndCountsCachedInput) {
  auto format = make_anthropic_format(provider_of(ProviderType::kAnthropic));
  auto r = format->parse(json::parse(R"({
    "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "a"},
                {"type": "text", "text": "b"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 7}})"));
  EXPECT_EQ(r.status, LlmStatus::kOk);
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.usage.input_tokens, 105);
  EXPECT_EQ(r.usage.output_tokens, 7);
}

// The task's contract and format open every prompt of a task: Anthropic caches a prefix only
// up to a marked block, so the prefix is its own block with the marker; OpenAI caches prefixes by
// itself and gets the text as one string.
TEST(WireFormatTest, AStablePrefixIsMarkedForAnthropicsPromptCache) {
  LlmRequest request = LlmRequest::user("coder", "system", "contract\nformat\nthe kernel");
  request.messages.back().stable_prefix_bytes = std::string("contract\nformat\n").size();
  json anthropic = make_anthropic_format(provider_of(ProviderType::kAnthropic))->body(request);
  const json& content = anthropic["messages"][0]["content"];
  ASSERT_TRUE(content.is_array()) << anthropic.dump();
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["text"], "contract\nformat\n");
  EXPECT_EQ(content[0]["cache_control"]["type"], "ephemeral");
  EXPECT_EQ(content[1]["text"], "the kernel");
  EXPECT_FALSE(content[1].contains("cache_control"));
  json openai = make_openai_format(provider_of(ProviderType::kOpenAi))->body(request);
  EXPECT_EQ(openai["messages"].back()["content"], "contract\nformat\nthe kernel");

  request.messages.back().stable_prefix_bytes = 0;
  json unmarked = make_anthropic_format(provider_of(ProviderType::kAnthropic))->body(request);
  EXPECT_EQ(unmarked["messages"][0]["content"], "contract\nformat\nthe kernel");
}

TEST(WireFormatTest, AnthropicErrorObjectWithStatus200IsMalformed) {
  auto format = make_anthropic_format(provider_of(ProviderType::kAnthropic));
  auto r = format->parse(json::parse(R"({"type":"error","error":{"message":"x"}})"));
  EXPECT_EQ(r.status, LlmStatus::kMalformed);
}

TEST(WireFormatTest, ServerErrorMessageReadsEveryKnownShape) {
  EXPECT_EQ(server_error_message(R"({"error":{"message":"quota exceeded","type":"x"}})"),
            "quota exceeded");
  EXPECT_EQ(server_error_message(R"({"error":"model 'llama9' not found"})"),
            "model 'llama9' not found");  // Ollama
  EXPECT_EQ(server_error_message(R"({"object":"error","message":"too long"})"),
            "too long");                                                      // vLLM
  EXPECT_EQ(server_error_message(R"({"detail":"Not Found"})"), "Not Found");  // FastAPI
  EXPECT_EQ(server_error_message("<html>502 Bad Gateway</html>"), "<html>502 Bad Gateway</html>");
  EXPECT_EQ(server_error_message(""), "(empty body)");
  EXPECT_LE(server_error_message(std::string(10000, 'x')).size(), 510u);
}

TEST(WireFormatTest, RetryAfterAcceptsSecondsAndDates) {
  EXPECT_EQ(parse_retry_after("7"), std::chrono::milliseconds(7000));
  EXPECT_EQ(parse_retry_after(" 0 "), std::chrono::milliseconds(0));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), std::chrono::milliseconds(0));
  EXPECT_FALSE(parse_retry_after("soon").has_value());
  EXPECT_FALSE(parse_retry_after("").has_value());
}

// The names llm_calls.status stores, pinned against their enumerators (the table in
// llm_types.cc lists names by position).
TEST(LlmStatusNames, EachStatusKeepsItsStoredName) {
  const std::vector<std::pair<LlmStatus, std::string>> expected = {
      {LlmStatus::kOk, "ok"},
      {LlmStatus::kRateLimited, "rate_limited"},
      {LlmStatus::kServerError, "server_error"},
      {LlmStatus::kTimeout, "timeout"},
      {LlmStatus::kConnection, "connection"},
      {LlmStatus::kAuth, "auth"},
      {LlmStatus::kBadRequest, "bad_request"},
      {LlmStatus::kNotFound, "not_found"},
      {LlmStatus::kMalformed, "malformed"},
      {LlmStatus::kEmpty, "empty"},
      {LlmStatus::kTruncated, "truncated"},
      {LlmStatus::kRefused, "refused"},
      {LlmStatus::kToolCall, "tool_call"},
      {LlmStatus::kTooLarge, "too_large"},
      {LlmStatus::kUnavailable, "unavailable"},
      {LlmStatus::kCancelled, "cancelled"}};
  for (const auto& [status, name] : expected) EXPECT_EQ(llm_status_name(status), name);
}

}  // namespace
}  // namespace kopt
