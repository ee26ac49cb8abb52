// The pre-flight through real processes: `kopt doctor --config` prints one line per model with
// its outcome and round trip; `kopt run` refuses a night whose agents cannot be reached (exit 3,
// one line per problem, no database written), starts with --tuner-only, and starts when every
// model answers. The LLM is the fake server on loopback; keys come from an environment variable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "common/subprocess.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::testing {
namespace {

constexpr const char* kKeyEnv = "KOPT_TEST_PREFLIGHT_KEY";
constexpr const char* kGoodKey = "sk-preflight-good-0123456789abcdef";

class PreflightCliTest : public ::testing::Test {
 protected:
  PreflightCliTest() {
    isolate_environment(dir_.path());
    ::setenv(kKeyEnv, kGoodKey, 1);
    tasks_ = dir_ / "tasks";
    copy_task("axpy", tasks_);
  }
  ~PreflightCliTest() override { ::unsetenv(kKeyEnv); }

  // A server that lists the three replay models, answers only them, and takes only kGoodKey.
  void start_server() {
    FakeLlmServer::Options options;
    options.listed_models = {"replay-planner", "replay-coder", "replay-summarizer"};
    options.only_listed_models = true;
    options.required_key = kGoodKey;
    options.replay_dir = std::filesystem::path(KOPT_SOURCE_DIR) / "tests/orchestrator/replay";
    auto s = FakeLlmServer::start(options);
    ASSERT_TRUE(s.ok()) << s.error();
    server_ = std::move(*s);
  }

  // The agents on the fake server; `coder_model` replaces replay-coder.
  std::filesystem::path config(const std::string& base_url,
                               const std::string& coder_model = "replay-coder") {
    nlohmann::json c = {
        {"format", 1},
        {"llm",
         {{"providers",
           {{"fake",
             {{"type", "openai"},
              {"base_url", base_url},
              {"api_key_env", kKeyEnv},
              {"timeout_s", 30},
              {"max_attempts", 2},
              {"backoff_initial_s", 0.1}}}}},
          {"agents",
           {{"planner", {{"provider", "fake"}, {"model", "replay-planner"}}},
            {"coder", {{"provider", "fake"}, {"model", coder_model}}},
            {"summarizer", {{"provider", "fake"}, {"model", "replay-summarizer"}}}}}}},
        {"daemon", {{"max_in_flight", 1}}}};
    auto path = dir_ / "config.json";
    write_text(path, c.dump(2));
    return path;
  }

  CommandOutput run(std::vector<std::string> args, const char* binary = KOPT_BINARY) {
    args.insert(args.begin(), binary);
    auto out = run_command(args, "", std::chrono::seconds(180));
    if (!out) throw std::runtime_error(out.error());
    return *out;
  }

  CommandOutput kopt_run(const std::filesystem::path& config, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run",         "--config", config.string(), "--db",
                                     db().string(), "--tasks",  tasks_.string(), "--no-display"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }

  std::filesystem::path db() const { return dir_ / "memory.db"; }

  static int lines_with(const std::string& text, const std::string& part) {
    int n = 0;
    for (const auto& line : split(text, '\n')) n += contains(line, part) ? 1 : 0;
    return n;
  }

  TempDir dir_;
  std::filesystem::path tasks_;
  std::unique_ptr<FakeLlmServer> server_;
};

TEST_F(PreflightCliTest, DoctorProbesEachModelOnce) {
  start_server();
  auto out = run({"doctor", "--config", config(server_->openai_base_url()).string()});
  EXPECT_EQ(lines_with(out.stdout_text, "ok       LLM model"), 3) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "fake/replay-coder (coder): ok: reachable, key accepted"))
      << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, " ms (models list)")) << out.stdout_text;
  EXPECT_EQ(server_->request_count(), 3u);  // one models list per model, no completion
  EXPECT_FALSE(contains(out.stdout_text + out.stderr_text, kGoodKey));
}

TEST_F(PreflightCliTest, DoctorReportsWrongKeyUnknownModelAndDown) {
  start_server();
  ::setenv(kKeyEnv, "sk-preflight-WRONG-0123456789abcdef", 1);
  auto out = run({"doctor", "--config", config(server_->openai_base_url()).string()});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(lines_with(out.stdout_text, "MISSING  LLM model"), 3) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "auth: the key was refused: HTTP 401")) << out.stdout_text;
  EXPECT_FALSE(contains(out.stdout_text, "sk-preflight-WRONG-0123456789abcdef")) << out.stdout_text;

  ::setenv(kKeyEnv, kGoodKey, 1);
  out = run({"doctor", "--config", config(server_->openai_base_url(), "replay-codr").string()});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(lines_with(out.stdout_text, "MISSING  LLM model"), 1) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text,
                       "fake/replay-codr (coder): unknown model: the server does not know model "
                       "'replay-codr': HTTP 404"))
      << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "(did you mean 'replay-coder'?)")) << out.stdout_text;

  std::string url = server_->openai_base_url();
  server_->stop();
  out = run({"doctor", "--config", config(url).string()});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(lines_with(out.stdout_text, "unreachable: " + url), 3) << out.stdout_text;
}

TEST_F(PreflightCliTest, RunRefusesANightItsAgentsCannotReach) {
  start_server();
  auto out = kopt_run(config(server_->openai_base_url(), "replay-codr"));
  EXPECT_EQ(out.exit_code, 3) << out.stderr_text;
  EXPECT_EQ(lines_with(out.stderr_text, "kopt run: preflight: "), 3) << out.stderr_text;
  EXPECT_EQ(lines_with(out.stderr_text, ": unknown model: "), 1) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "refusing to start: 1 of 3 agent models cannot be used"))
      << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing may be recorded";

  std::string url = server_->openai_base_url();
  server_->stop();
  out = kopt_run(config(url));
  EXPECT_EQ(out.exit_code, 3) << out.stderr_text;
  EXPECT_EQ(lines_with(out.stderr_text, ": unreachable: "), 3) << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(PreflightCliTest, RunReportsARefusalWithItsText) {
  // A server without a models list entry for the coder: the probe's completion is refused.
  FakeLlmServer::Options options;
  options.listed_models = {"replay-planner", "replay-summarizer"};
  auto s = FakeLlmServer::start(options);
  ASSERT_TRUE(s.ok());
  FakeReply refusal = FakeReply::failure(FakeFault::kRefusal);
  refusal.text = "I can't assist with that.";
  (*s)->enqueue(refusal);
  auto out = kopt_run(config((*s)->openai_base_url()));
  EXPECT_EQ(out.exit_code, 3) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text,
                       "fake/replay-coder (coder): refused: the model refused: I can't assist "
                       "with that."))
      << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(PreflightCliTest, TunerOnlyStartsWithoutAskingTheModels) {
  start_server();
  std::string url = server_->openai_base_url();
  server_->stop();  // down: it would refuse the night
  auto out = run({"--config", config(url).string(), "--db", db().string(), "--tasks",
                  tasks_.string(), "--no-display", "--tuner-only"},
                 KOPT_TEST_PREFLIGHT_DAEMON);
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_FALSE(contains(out.stderr_text, "preflight")) << out.stderr_text;
  EXPECT_EQ(query_count(db(), "SELECT count(*) FROM runs"), 1);
  EXPECT_GT(query_count(db(), "SELECT count(*) FROM evaluations"), 0);
}

TEST_F(PreflightCliTest, RunStartsWhenEveryModelAnswers) {
  start_server();
  auto out = run({"--config", config(server_->openai_base_url()).string(), "--db", db().string(),
                  "--tasks", tasks_.string(), "--no-display", "--candidates-per-task", "8"},
                 KOPT_TEST_PREFLIGHT_DAEMON);
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_EQ(lines_with(out.stderr_text, ": ok: reachable, key accepted"), 3) << out.stderr_text;
  EXPECT_EQ(query_count(db(), "SELECT count(*) FROM runs"), 1);
  auto requests = server_->requests();
  ASSERT_GT(requests.size(), 3u);  // the probes, then the agents' calls
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(requests[i].method, "GET");
  EXPECT_EQ(requests[3].method, "POST");
}

// Where the kernel has no Landlock (KOPT_ASSUME_NO_LANDLOCK=1 makes kopt answer as on such a
// kernel), the confined compiler cannot lock NVRTC out of the user's files: `kopt run` says so
// and runs model-written kernels only with --allow-unconfined-compile; the tuner needs nothing;
// `kopt doctor` warns (issue 34).
TEST_F(PreflightCliTest, WithoutLandlockModelTextNeedsConsent) {
  start_server();
  ::setenv("KOPT_ASSUME_NO_LANDLOCK", "1", 1);
  std::vector<std::string> args = {"--config",
                                   config(server_->openai_base_url()).string(),
                                   "--db",
                                   db().string(),
                                   "--tasks",
                                   tasks_.string(),
                                   "--no-display",
                                   "--candidates-per-task",
                                   "8"};
  auto refused = run(args, KOPT_TEST_PREFLIGHT_DAEMON);
  auto tuner_args = args;
  tuner_args.push_back("--tuner-only");
  auto tuner = run(tuner_args, KOPT_TEST_PREFLIGHT_DAEMON);
  auto consent_args = args;
  consent_args.push_back("--allow-unconfined-compile");
  auto consented = run(consent_args, KOPT_TEST_PREFLIGHT_DAEMON);
  auto doctor = run({"doctor"});
  ::unsetenv("KOPT_ASSUME_NO_LANDLOCK");
  EXPECT_EQ(refused.exit_code, 3) << refused.stderr_text;
  EXPECT_TRUE(contains(refused.stderr_text, "WARNING: Landlock unavailable"))
      << refused.stderr_text;
  EXPECT_TRUE(
      contains(refused.stderr_text, "refusing to run model-written kernels without Landlock"))
      << refused.stderr_text;
  EXPECT_EQ(tuner.exit_code, 0) << tuner.stderr_text;
  EXPECT_TRUE(contains(tuner.stderr_text, "WARNING: Landlock unavailable")) << tuner.stderr_text;
  EXPECT_EQ(consented.exit_code, 0) << consented.stderr_text;
  EXPECT_TRUE(contains(consented.stderr_text, "WARNING: Landlock unavailable"))
      << consented.stderr_text;
  EXPECT_TRUE(contains(doctor.stdout_text, "WARNING  compile confinement")) << doctor.stdout_text;
  // With Landlock present (this machine, when it has it) nothing is said and nothing refused.
  auto plain = run({"doctor"});
  if (!contains(plain.stdout_text, "WARNING  compile confinement")) {
    EXPECT_TRUE(contains(plain.stdout_text, "ok       compile confinement")) << plain.stdout_text;
  }
}

}  // namespace
}  // namespace kopt::testing
