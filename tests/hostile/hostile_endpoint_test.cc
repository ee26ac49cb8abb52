// Hostile text and hostile endpoints through the daemon's real path (issue 34, causes 2, 3, 4,
// 6, 7 and 8): kopt_test_daemon (`kopt run` with the fake evaluator for the GPU, real NVRTC, a
// real SQLite memory) against the fake LLM server, which answers every agent with the same
// attack. Each test is one regression the outside review reproduced; after it the daemon must
// have ended by itself (exit 0 or 1, never a signal), and what a user does next (`kopt memory
// export`, `memory wins --json`, `memory show`, `kopt report`) must work and stay inert.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <filesystem>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "memory_store/sqlite_database.h"
#include "sandbox/kernel_profile.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::hostile {
namespace {

using kopt::testing::FakeFault;
using kopt::testing::FakeReply;
using kopt::testing::TempDir;
using namespace std::chrono_literals;

constexpr const char* kKeyVariable = "KOPT_HOSTILE_ENDPOINT_KEY";
const std::string kKey = "sk-echo-canary-4f9a1c2e7b3d5a6f8e0c1b2a3d4e5f60";

// An axpy kernel with a plan, faster than the baseline for the fake evaluator.
std::string axpy_kernel(const std::string& extra = "") {
  return "// test-evaluator: time_us=80\n/* kopt:plan\n{\"launches\": [{\"kernel\": \"axpy_h\", "
         "\"grid\": [\"ceil_div(n, 256)\"], \"block\": [256], \"args\": [\"x\", \"y\", \"out\", "
         "\"n\", \"alpha\"]}]}\n*/\n" +
         extra +
         "extern \"C\" __global__ void axpy_h(const float* x, const float* y, float* out, int n, "
         "float alpha) {\n  int i = blockIdx.x * 256 + threadIdx.x;\n  if (i < n) out[i] = alpha "
         "* x[i] + y[i];\n}\n";
}

// One answer for every agent: plans for the planner, a lesson for the summarizer, a kernel for
// the coder. `close_fence` false leaves the kernel's block open, so what an echoing endpoint
// appends lands inside the kernel.
std::string answer(const std::string& title, const std::string& lesson,
                   const std::string& kernel = axpy_kernel(), bool close_fence = true) {
  nlohmann::json plans = {{"plans", {{{"title", title}, {"detail", title}}}},
                          {"lesson", lesson},
                          {"tags", {"hostile"}}};
  return "Here are the plans.\n```json\n" + plans.dump() + "\n```\n\n```cuda\n" + kernel +
         (close_fence ? "```\n" : "");
}

// `text` with a two-byte character (é) whose first byte is at `byte`: a cut there splits it.
std::string two_byte_char_at(size_t byte, const std::string& rest = " and more words") {
  return std::string(byte, 'a') + "\xc3\xa9" + rest;
}

class HostileEndpointTest : public ::testing::Test {
 protected:
  HostileEndpointTest() {
    kopt::testing::isolate_environment(dir_.path());
    tasks_ = dir_ / "tasks";
    kopt::testing::copy_task("axpy", tasks_);
    ::setenv(kKeyVariable, kKey.c_str(), 1);
  }
  ~HostileEndpointTest() override { ::unsetenv(kKeyVariable); }

  std::filesystem::path db() const { return dir_ / "memory.db"; }

  // Starts the fake server answering `reply` to every request.
  void serve(const FakeReply& reply) {
    auto server = testing::FakeLlmServer::start();
    ASSERT_TRUE(server) << server.error();
    server_ = std::move(*server);
    server_->set_default_reply(reply);
  }

  std::filesystem::path write_config(const nlohmann::json& prices = nlohmann::json::object()) {
    nlohmann::json config = {
        {"format", 1},
        {"llm",
         {{"providers",
           {{"fake",
             {{"type", "openai"},
              {"base_url", server_->openai_base_url()},
              {"api_key_env", kKeyVariable},
              {"timeout_s", 60},
              {"max_attempts", 1},
              {"max_concurrent", 1}}}}},
          {"agents",
           {{"planner", {{"provider", "fake"}, {"model", "hostile-planner"}}},
            {"coder", {{"provider", "fake"}, {"model", "hostile-coder"}}},
            {"summarizer", {{"provider", "fake"}, {"model", "hostile-summarizer"}}}}},
          {"prices", prices}}},
        {"daemon",
         {{"max_in_flight", 1}, {"stall", {{"backoff_initial_s", 0.2}, {"backoff_max_s", 1}}}}}};
    auto path = dir_ / "config.json";
    kopt::testing::write_text(path, config.dump(2));
    return path;
  }

  // Runs the daemon to its end; it must end by itself, never by a signal.
  CommandOutput run_daemon(const std::vector<std::string>& extra = {},
                           const nlohmann::json& prices = nlohmann::json::object(),
                           double* seconds = nullptr) {
    std::vector<std::string> argv = {KOPT_TEST_DAEMON,
                                     "--db",
                                     db().string(),
                                     "--no-display",
                                     "--tasks",
                                     tasks_.string(),
                                     "--config",
                                     write_config(prices).string(),
                                     "--candidates-per-task",
                                     "6"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto start = std::chrono::steady_clock::now();
    auto daemon = run_command(argv, "", 300s);
    if (seconds)
      *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(daemon) << daemon.error();
    if (!daemon) return {};
    EXPECT_TRUE(daemon->exit_code == 0 || daemon->exit_code == 1)
        << "exit " << daemon->exit_code << "\n"
        << daemon->stderr_text.substr(daemon->stderr_text.size() -
                                      std::min<size_t>(daemon->stderr_text.size(), 3000));
    EXPECT_EQ(
        kopt::testing::query_count(
            db(), "SELECT count(*) FROM runs WHERE status IN ('finished', 'failed', 'budget')"),
        1);
    return *daemon;
  }

  CommandOutput kopt_cli(const std::vector<std::string>& args) {
    std::vector<std::string> with_db = args;
    with_db.insert(with_db.end(), {"--db", db().string()});
    return kopt::testing::run_kopt(with_db, dir_ / "cache");
  }

  TempDir dir_;
  std::filesystem::path tasks_;
  std::unique_ptr<testing::FakeLlmServer> server_;
};

// Bytes a terminal acts on: ESC (CSI, OSC 52 clipboard, OSC 8 links), the one-byte C1 CSI as
// UTF-8 (U+009B) and the bidi overrides that reorder what a reader sees (U+202E, U+2066).
std::vector<std::string> terminal_controls_in(const std::string& text) {
  std::vector<std::string> found;
  for (const auto& [name, bytes] :
       std::vector<std::pair<std::string, std::string>>{{"ESC", "\x1b"},
                                                        {"C1 CSI", "\xc2\x9b"},
                                                        {"RLO", "\xe2\x80\xae"},
                                                        {"LRI", "\xe2\x81\xa6"},
                                                        {"BEL", "\x07"}}) {
    if (text.find(bytes) != std::string::npos) found.push_back(name);
  }
  return found;
}

const std::string kTerminalAttack =
    "Faster loads \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[H \x1b]8;;https://evil.example\x1b\\link"
    "\x1b]8;;\x1b\\ \xc2\x9b"
    "31m \xe2\x80\xae"
    "desrever \xe2\x81\xa6isolated\xe2\x81\xa9 done";

// Cause 2 and 7: a title with a character across byte 60 (cut between the LLM slot's acquire
// and release once), a lesson with one across byte 800 (once made `memory export --jsonl` and
// `memory wins --json` exit 70), and terminal control sequences in both.
TEST_F(HostileEndpointTest, CutCharactersAndTerminalControlsInTitlesAndLessons) {
  std::string title = two_byte_char_at(59, kTerminalAttack);
  std::string lesson = kTerminalAttack + " " + two_byte_char_at(799 - kTerminalAttack.size() - 1);
  serve(FakeReply::completion(answer(title, lesson)));
  auto daemon = run_daemon();
  // The slot came back every time: the night went on calling the model after the first cut.
  EXPECT_GT(server_->request_count(), 4u) << daemon.stderr_text.substr(0, 3000);

  auto jsonl = kopt_cli({"memory", "export", "--jsonl", (dir_ / "memory.jsonl").string()});
  EXPECT_EQ(jsonl.exit_code, 0) << jsonl.stderr_text;
  auto wins_json = kopt_cli({"memory", "wins", "--json"});
  EXPECT_EQ(wins_json.exit_code, 0) << wins_json.stderr_text;
  auto parsed = nlohmann::json::parse(wins_json.stdout_text, nullptr, false);
  ASSERT_TRUE(parsed.is_array()) << wins_json.stdout_text.substr(0, 2000);
  ASSERT_FALSE(parsed.empty()) << "the run made no win: the test proves nothing";
  EXPECT_TRUE(terminal_controls_in(wins_json.stdout_text).empty());

  // Every command that prints model text prints it inert.
  std::string pair_id = std::to_string(parsed[0]["id"].get<int64_t>());
  auto calls = kopt_cli({"memory", "calls", "--json"});
  auto call_list = nlohmann::json::parse(calls.stdout_text, nullptr, false);
  ASSERT_TRUE(call_list.is_array() && !call_list.empty()) << calls.stdout_text.substr(0, 2000);
  std::string call_id = std::to_string(call_list[0]["id"].get<int64_t>());
  for (const auto& args : std::vector<std::vector<std::string>>{{"memory", "wins"},
                                                                {"memory", "search", "loads"},
                                                                {"memory", "search", "Faster"},
                                                                {"memory", "show", pair_id},
                                                                {"memory", "call", call_id},
                                                                {"memory", "calls"},
                                                                {"memory", "stats"},
                                                                {"status"}}) {
    auto out = kopt_cli(args);
    EXPECT_NE(out.exit_code, 70) << join(args, " ") << ": " << out.stderr_text;
    for (const auto& control : terminal_controls_in(out.stdout_text + out.stderr_text))
      ADD_FAILURE() << "kopt " << join(args, " ") << " printed a raw " << control;
  }
  auto search = kopt_cli({"memory", "search", "Faster"});
  EXPECT_NE(search.stdout_text.find("\\x1b"), std::string::npos)
      << "the escape is shown, visibly: " << search.stdout_text.substr(0, 2000);
}

// Cause 2: a refusal with a two-byte character at byte 200, where the error text is cut
// (SIGABRT of the daemon once).
TEST_F(HostileEndpointTest, RefusalCutInsideACharacter) {
  FakeReply refusal = FakeReply::failure(FakeFault::kRefusal);
  refusal.text = two_byte_char_at(199);  // the refusal is cut to 200 bytes for its error
  serve(refusal);
  run_daemon();
  EXPECT_GT(server_->request_count(), 0u);
}

// Cause 2: a proxy's Latin-1 error page for HTTP 400, five times in a row (SIGABRT once); then
// the endpoint answers and the night goes on.
TEST_F(HostileEndpointTest, Latin1ErrorBodies) {
  serve(FakeReply::completion(answer("after the proxy", "A lesson.")));
  FakeReply bad = FakeReply::failure(FakeFault::kBadRequest);
  bad.raw_body =
      "<html>Requ\xeate refus\xe9"
      "e par le proxy \xab\xa0"
      "d\xe9sol\xe9\xa0\xbb</html>";
  for (int i = 0; i < 5; ++i) server_->enqueue(bad);
  // The daemon survives them (no SIGABRT); five failed calls in a row may end the night by the
  // stall rule, so no later call is required.
  auto daemon = run_daemon();
  EXPECT_GE(server_->request_count(), 5u);
  EXPECT_EQ(kopt::testing::query_count(db(),
                                       "SELECT count(*) FROM llm_calls WHERE status = "
                                       "'bad_request' AND error LIKE '%Requ%'"),
            5)
      << daemon.stderr_text.substr(0, 3000);
}

// Cause 3: `[[[...]]]` 100,000 deep as every agent's answer (SIGSEGV in the extraction once).
TEST_F(HostileEndpointTest, HundredThousandDeepBrackets) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  serve(FakeReply::completion("```json\n" + deep + "\n```\n" + deep));
  run_daemon();
  EXPECT_GT(server_->request_count(), 0u);
}

// Cause 4: a 241 KB answer: 20,000 one-word plans (a list searched per plan cost 34 s) and a
// kernel whose plan has 1,500 launches and 20,000 short lines (a pass over the file per
// launch, and a line diff keeping a row per edit).
TEST_F(HostileEndpointTest, QuarterMegabyteAnswerStaysCheap) {
  nlohmann::json plans = nlohmann::json::array();
  for (int i = 0; i < 20000; ++i) plans.push_back("p" + std::to_string(i));
  std::string launches;
  for (int i = 0; i < 1500; ++i)
    launches += std::string(i ? "," : "") +
                "{\"kernel\":\"axpy_h\",\"grid\":[1],\"block\":[1],\"args\":[\"x\",\"y\",\"out\","
                "\"n\",\"alpha\"]}";
  std::string lines;
  for (int i = 0; i < 20000; ++i) lines += "//\n";
  std::string kernel = "// test-evaluator: time_us=80\n/* kopt:plan\n{\"launches\": [" + launches +
                       "]}\n*/\n" + lines + axpy_kernel().substr(axpy_kernel().find("extern"));
  std::string text =
      "```json\n" + nlohmann::json{{"plans", plans}}.dump() + "\n```\n```cuda\n" + kernel + "```\n";
  ASSERT_GT(text.size(), 240u * 1024);
  serve(FakeReply::completion(text));
  double seconds = 0;
  run_daemon({}, nlohmann::json::object(), &seconds);
  EXPECT_GT(server_->request_count(), 2u);
  // Generous: each answer cost 34 s or more before; what is asserted is "not quadratic".
  EXPECT_LT(seconds, 120.0);
}

// Cause 6: an endpoint that echoes the Authorization header into the answer, once whole and
// once one character at a time with ", " between, inside the kernel's (open) code block.
TEST_F(HostileEndpointTest, EchoedKeyIsNeverStored) {
  FakeReply echo = FakeReply::completion(answer("echo", "An echoed lesson.", axpy_kernel(), false));
  echo.echo_authorization = true;
  echo.echo_key_split = true;
  serve(echo);
  auto daemon = run_daemon();
  ASSERT_GT(server_->request_count(), 0u);
  kopt_cli({"memory", "export", "--jsonl", (dir_ / "export/memory.jsonl").string()});
  std::filesystem::create_directories(dir_ / "export/reports");
  kopt_cli({"report", "--run", "all", "--markdown", (dir_ / "export/reports/r.md").string()});
  // The key's letters and digits in order, with anything between them, is the key showing.
  std::string compact_key;
  for (char c : kKey)
    if (std::isalnum(static_cast<unsigned char>(c))) compact_key += c;
  auto leaks = [&](const std::string& text) {
    std::string compact;
    for (char c : text)
      if (std::isalnum(static_cast<unsigned char>(c))) compact += c;
    return text.find(kKey) != std::string::npos ||
           compact.find(compact_key.substr(0, 24)) != std::string::npos;
  };
  std::string stored =
      kopt::testing::query_text(db(), "SELECT group_concat(source, char(10)) FROM kernels") +
      kopt::testing::query_text(db(), "SELECT group_concat(answer, char(10)) FROM llm_transcripts");
  EXPECT_FALSE(leaks(stored)) << "the key is in the database";
  EXPECT_FALSE(leaks(daemon.stderr_text + daemon.stdout_text)) << "the key is in the logs";
  for (const auto& file : {dir_ / "export/memory.jsonl", dir_ / "export/reports/r.md"}) {
    auto text = read_file(file);
    if (text) {
      EXPECT_FALSE(leaks(*text)) << file;
    }
  }
  EXPECT_NE(stored.find("[redacted]"), std::string::npos)
      << "the echo never reached the store: the test proves nothing";
}

// Cause 8: negative token counts (a cost of -$2192 once, and --max-usd 3 never stopped).
TEST_F(HostileEndpointTest, NegativeTokenCountsCannotLowerTheBudget) {
  FakeReply reply = FakeReply::completion(answer("negative", "A lesson."));
  reply.input_tokens = -1'000'000'000;
  reply.output_tokens = -5;
  serve(reply);
  nlohmann::json prices = {
      {"hostile-planner", {{"input_per_mtok", 100.0}, {"output_per_mtok", 100.0}}},
      {"hostile-coder", {{"input_per_mtok", 100.0}, {"output_per_mtok", 100.0}}},
      {"hostile-summarizer", {{"input_per_mtok", 100.0}, {"output_per_mtok", 100.0}}}};
  auto daemon = run_daemon({"--max-usd", "3", "--candidates-per-task", "200"}, prices);
  EXPECT_EQ(kopt::testing::query_count(
                db(),
                "SELECT count(*) FROM llm_calls WHERE cost_usd < 0 OR prompt_tokens < 0 "
                "OR completion_tokens < 0"),
            0);
  // Unknown usage is charged at the call's bound, so the budget ends the run quickly.
  EXPECT_GT(kopt::testing::query_count(db(), "SELECT count(*) FROM llm_calls WHERE cost_usd > 0"),
            0);
  EXPECT_LT(server_->request_count(), 60u) << daemon.stderr_text.substr(0, 3000);
}

// Cause 7: a stored profile (imported from a shared memory) whose stall reason carries a
// tracking-pixel image and table-breaking markdown reaches report.md escaped.
TEST_F(HostileEndpointTest, ProfileStallReasonsAreEscapedInTheReport) {
  serve(FakeReply::completion(answer("report", "A lesson.")));
  run_daemon();
  KernelProfile profile;
  profile.duration_us = 10;
  profile.stalls = {
      {"![px](https://tracker.example/p.png?u=1) | <img src=x onerror=alert(1)>", 90.0}};
  std::string profile_json = to_json(profile).dump();
  std::string escaped;
  for (char c : profile_json) escaped += c == '\'' ? std::string("''") : std::string(1, c);
  auto database = sql::Database::open(db(), sql::Database::Options{.create = false});
  ASSERT_TRUE(database) << database.error();
  ASSERT_TRUE(database->execute("UPDATE evaluations SET profile_json = '" + escaped + "'"));
  std::filesystem::create_directories(dir_ / "reports");
  auto report =
      kopt_cli({"report", "--run", "all", "--markdown", (dir_ / "reports/r.md").string()});
  EXPECT_EQ(report.exit_code, 0) << report.stderr_text;
  auto md = read_file(dir_ / "reports/r.md");
  ASSERT_TRUE(md) << md.error();
  ASSERT_NE(md->find("tracker"), std::string::npos) << "no profile row: the test proves nothing";
  EXPECT_EQ(md->find("![px]"), std::string::npos) << *md;
  EXPECT_EQ(md->find("<img"), std::string::npos) << *md;
}

}  // namespace
}  // namespace kopt::hostile
