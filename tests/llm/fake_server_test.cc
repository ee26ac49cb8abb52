// The fake server itself, as the daemon's end-to-end tests and GPU demos will use it: replaying
// a directory of files, and the fake-llm-server program.
#include <gtest/gtest.h>
#include <signal.h>

#include "common/subprocess.h"
#include "llm/http_transport.h"
#include "tests/foundation/test_support.h"
#include "tests/llm/llm_test_support.h"

namespace kopt::testing {
namespace {

TEST(FakeServerTest, ReplaysFilesInNameOrderCyclingAndServesFaultFiles) {
  TempDir dir;
  write_text(dir / "02-second.md", "```cuda\nsecond\n```\n");
  write_text(dir / "01-first.md", "```cuda\nfirst\n```\n");
  write_text(dir / "03-limit.fault", "429\n");
  write_text(dir / ".hidden", "never served");
  FakeLlmServer::Options options;
  options.replay_dir = dir.path();
  auto server = FakeLlmServer::start(options);
  ASSERT_TRUE(server.ok()) << server.error();
  ProviderConfig provider = fake_provider(**server, ProviderType::kOpenAi);
  provider.max_attempts = 1;
  auto client = make_provider_client(provider);
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    LlmResponse r = client->complete(test_request());
    seen.push_back(r.ok() ? r.text : llm_status_name(r.status));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"```cuda\nfirst\n```\n", "```cuda\nsecond\n```\n",
                                            "rate_limited", "```cuda\nfirst\n```\n"}));
}

TEST(FakeServerTest, ReplaysEachTasksFilesWithACursorPerModel) {
  TempDir dir;
  write_text(dir / "01_axpy_a.txt", "axpy a");
  write_text(dir / "02_softmax_a.txt", "softmax a");
  write_text(dir / "03_axpy_b.txt", "axpy b");
  FakeLlmServer::Options options;
  options.replay_dir = dir.path();
  auto server = FakeLlmServer::start(options);
  ASSERT_TRUE(server.ok()) << server.error();
  auto client = make_provider_client(fake_provider(**server, ProviderType::kOpenAi));
  auto ask = [&](const std::string& prompt, const std::string& model) {
    LlmRequest r = test_request(prompt);
    r.model = model;
    return client->complete(r).text;
  };
  EXPECT_EQ(ask("# Task: axpy\n", "coder"), "axpy a");
  EXPECT_EQ(ask("# Task: softmax\n", "coder"), "softmax a");  // other tasks do not advance it
  EXPECT_EQ(ask("# Task: axpy\n", "planner"), "axpy a");      // another model, its own cursor
  EXPECT_EQ(ask("# Task: axpy\n", "coder"), "axpy b");
  EXPECT_EQ(ask("# Task: axpy\n", "coder"), "axpy a");
  // A task with no files of its own, or no task at all: every file in turn.
  EXPECT_EQ(ask("# Task: gemm\n", "coder"), "axpy a");
  EXPECT_EQ(ask("no task here", "coder"), "softmax a");
}

TEST(FakeServerTest, QueueComesBeforeTheDefault) {
  auto server = FakeLlmServer::start();
  ASSERT_TRUE(server.ok());
  (*server)->set_default_reply(FakeReply::completion("default"));
  (*server)->enqueue(FakeReply::completion("queued"));
  auto client = make_provider_client(fake_provider(**server, ProviderType::kAnthropic));
  EXPECT_EQ(client->complete(test_request()).text, "queued");
  EXPECT_EQ(client->complete(test_request()).text, "default");
}

TEST(FakeServerTest, UnknownFaultNamesAreRejected) {
  EXPECT_TRUE(parse_fake_fault("503").ok());
  EXPECT_FALSE(parse_fake_fault("teapot").ok());
  TempDir empty;
  FakeLlmServer::Options options;
  options.replay_dir = empty.path();
  EXPECT_FALSE(FakeLlmServer::start(options).ok());
}

TEST(FakeServerTest, TheProgramServesAReplayDirectory) {
  TempDir dir;
  write_text(dir / "a.md", "from the program");
  auto child =
      Subprocess::start({FAKE_LLM_SERVER_BINARY, "--replay", dir.path().string(), "--quiet"},
                        Subprocess::StderrMode::kDiscard);
  ASSERT_TRUE(child.ok()) << child.error();
  auto line = child->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(line.ok() && line->has_value()) << "no banner from fake-llm-server";
  // "fake-llm-server: listening on 127.0.0.1:PORT (...)"
  size_t colon = (*line)->find("127.0.0.1:");
  ASSERT_NE(colon, std::string::npos) << **line;
  int port = std::stoi((*line)->substr(colon + 10));
  HttpPost post;
  post.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions";
  post.body = R"({"model": "m", "messages": []})";
  HttpReply reply = http_post(post);
  EXPECT_EQ(reply.outcome, HttpReply::Outcome::kResponse) << reply.error;
  EXPECT_EQ(reply.status, 200);
  EXPECT_NE(reply.body.find("from the program"), std::string::npos) << reply.body;
  ::kill(child->pid(), SIGTERM);
  auto status = child->wait_for(std::chrono::seconds(5));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describe_wait_status(*status), "exit 0");
}

}  // namespace
}  // namespace kopt::testing
