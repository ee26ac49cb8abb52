// The command provider with small shell scripts written by the tests: the request on stdin,
// the completion on stdout, exit codes, timeouts, output caps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "tests/foundation/test_support.h"
#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

using std::chrono::milliseconds;

class CommandProviderTest : public ::testing::Test {
 protected:
  // Writes an executable sh script and returns a provider that runs it.
  ProviderConfig script(const std::string& body) {
    std::filesystem::path path = dir_ / ("tool" + std::to_string(++scripts_) + ".sh");
    write_text(path, "#!/bin/sh\n" + body);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    ProviderConfig p;
    p.name = "tool";
    p.type = ProviderType::kCommand;
    p.command = {path.string()};
    p.timeout = milliseconds(5000);
    p.max_attempts = 3;
    p.backoff_initial = milliseconds(10);
    p.backoff_max = milliseconds(20);
    return p;
  }

  TempDir dir_;
  int scripts_ = 0;
};

TEST_F(CommandProviderTest, RequestGoesToStdinCompletionComesFromStdout) {
  std::string saved = (dir_ / "request.json").string();
  auto provider = script("cat > '" + saved + "'\nprintf 'here it is:\\n```cuda\\nk\\n```\\n'\n");
  LlmResponse r = make_provider_client(provider)->complete(test_request("make it fast"));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "here it is:\n```cuda\nk\n```\n");
  EXPECT_EQ(r.attempts, 1);

  auto request = nlohmann::json::parse(*read_file(saved));
  EXPECT_EQ(request["format"], 1);
  EXPECT_EQ(request["agent"], "coder");
  EXPECT_EQ(request["model"], "test-model");
  EXPECT_EQ(request["system"], "You write CUDA kernels.");
  EXPECT_EQ(request["max_tokens"], 1000);
  EXPECT_EQ(request["messages"][0]["role"], "user");
  EXPECT_EQ(request["messages"][0]["content"], "make it fast");
}

TEST_F(CommandProviderTest, JsonOutputCarriesUsageAndFinishReason) {
  auto provider = script(
      "cat > /dev/null\n"
      "echo '{\"text\": \"half a kern\", \"finish_reason\": \"length\", "
      "\"usage\": {\"input_tokens\": 12, \"output_tokens\": 34}}'\n");
  provider.command_output_json = true;
  LlmResponse r = make_provider_client(provider)->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kTruncated);
  EXPECT_EQ(r.text, "half a kern");
  EXPECT_EQ(r.usage.input_tokens, 12);
  EXPECT_EQ(r.usage.output_tokens, 34);
}

TEST_F(CommandProviderTest, JsonOutputThatIsNotJsonIsMalformed) {
  auto provider = script("cat > /dev/null\necho 'plain words'\n");
  provider.command_output_json = true;
  EXPECT_EQ(make_provider_client(provider)->complete(test_request()).status, LlmStatus::kMalformed);
}

TEST_F(CommandProviderTest, FailingCommandIsRetriedAndReportsItsStderr) {
  std::string counter = (dir_ / "runs").string();
  auto provider = script("cat > /dev/null\necho run >> '" + counter +
                         "'\necho 'upstream said no' >&2\nexit 3\n");
  LlmResponse r = make_provider_client(provider)->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kServerError);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_NE(r.error.find("exit 3"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("upstream said no"), std::string::npos) << r.error;
  EXPECT_EQ(split(trim(*read_file(counter)), '\n').size(), 3u);
}

TEST_F(CommandProviderTest, FailingOnceThenSucceeding) {
  std::string flag = (dir_ / "failed-once").string();
  auto provider = script("cat > /dev/null\nif [ ! -e '" + flag + "' ]; then touch '" + flag +
                         "'; exit 75; fi\necho recovered\n");
  LlmResponse r = make_provider_client(provider)->complete(test_request());
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "recovered\n");
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(CommandProviderTest, HangingCommandTimesOutAndIsKilled) {
  auto provider = script("cat > /dev/null\nsleep 30\necho late\n");
  provider.timeout = milliseconds(300);
  provider.max_attempts = 1;
  auto start = std::chrono::steady_clock::now();
  LlmResponse r = make_provider_client(provider)->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kTimeout);
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST_F(CommandProviderTest, EmptyOutputIsEmpty) {
  auto provider = script("cat > /dev/null\n");
  EXPECT_EQ(make_provider_client(provider)->complete(test_request()).status, LlmStatus::kEmpty);
}

TEST_F(CommandProviderTest, CommandThatIgnoresItsInputStillWorks) {
  // Exits without reading a large request: the write fails with EPIPE, the output counts.
  auto provider = script("echo answer\n");
  LlmResponse r = make_provider_client(provider)->complete(test_request(std::string(1 << 20, 'p')));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.text, "answer\n");
}

TEST_F(CommandProviderTest, OutputOverTheCapIsTooLarge) {
  auto provider = script("cat > /dev/null\nhead -c 300000 /dev/zero | tr '\\0' x\n");
  LlmResponse r = make_provider_client(provider, nullptr, /*max_response_bytes=*/100'000)
                      ->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kTooLarge);
  EXPECT_EQ(r.attempts, 1);
}

TEST_F(CommandProviderTest, MissingProgramIsNotFoundAndNotRetried) {
  ProviderConfig provider = script("");
  provider.command = {(dir_ / "no-such-tool").string()};
  LlmResponse r = make_provider_client(provider)->complete(test_request());
  EXPECT_EQ(r.status, LlmStatus::kNotFound);
  EXPECT_EQ(r.attempts, 1);
}

}  // namespace
}  // namespace kopt::testing
