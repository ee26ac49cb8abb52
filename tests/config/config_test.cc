// The config file: every example in configs/ loads, and every kind of mistake is reported with
// its file and JSON path, all in one pass.
#include "config/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/foundation/test_support.h"

namespace kopt::testing {
namespace {

const char* kGood = R"({
  "format": 1,
  "database": {"path": "data/memory.db"},
  "llm": {
    "providers": {
      "hosted": {"type": "openai", "base_url": "https://api.example.com/v1/",
                 "api_key_env": "EXAMPLE_KEY", "timeout_s": 120, "connect_timeout_s": 5,
                 "max_concurrent": 3, "requests_per_minute": 90, "max_attempts": 7,
                 "backoff_initial_s": 0.5, "backoff_max_s": 30},
      "claude": {"type": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"},
      "tool": {"type": "command", "command": ["my-llm", "--fast"], "output": "json"}
    },
    "agents": {
      "planner": {"provider": "claude", "model": "claude-x", "temperature": 0.9},
      "coder": {"provider": "hosted", "model": "gpt-x", "max_tokens": 9000},
      "summarizer": {"provider": "tool"}
    },
    "prices": {"gpt-x": {"input_per_mtok": 2.5, "output_per_mtok": 10}},
    "max_response_bytes": 2000000
  },
  "daemon": {
    "budgets": {"hours": 8, "max_usd": 12.5, "candidates_per_task": 100},
    "gpus": [0, 2],
    "worker_command": ["srun", "--gres=gpu:1", "{worker}", "--gpu", "{gpu}"]
  }
})";

Result<Config> parse(const std::string& text) { return parse_config(text, "/etc/kopt/test.json"); }

// The error text for `text`, failing the test when it parses.
std::string error_of(const std::string& text) {
  auto config = parse(text);
  EXPECT_FALSE(config.ok()) << "expected an error for:\n" << text;
  return config.ok() ? "" : config.error();
}

TEST(ConfigTest, EveryExampleInConfigsLoads) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(KOPT_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".json") continue;
    auto config = load_config(entry.path());
    ASSERT_TRUE(config.ok()) << entry.path() << ": " << config.error();
    EXPECT_FALSE(describe(*config).empty());
    ++loaded;
  }
  EXPECT_GE(loaded, 6);
  auto tuner = load_config(KOPT_SOURCE_DIR "/configs/tuner-only.json");
  ASSERT_TRUE(tuner.ok());
  EXPECT_FALSE(tuner->llm.has_value());
  for (const char* name : {"openai", "anthropic", "vllm", "ollama", "command"}) {
    auto config = load_config(std::string(KOPT_SOURCE_DIR "/configs/") + name + ".json");
    ASSERT_TRUE(config.ok()) << name;
    ASSERT_TRUE(config->llm.has_value()) << name;
    EXPECT_EQ(config->llm->agents.size(), 3u) << name;
  }
}

TEST(ConfigTest, GoodConfigLoadsIntoTypedStructs) {
  auto config = parse(kGood);
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->database_path, "/etc/kopt/data/memory.db");  // relative to the file
  ASSERT_TRUE(config->llm.has_value());
  const LlmConfig& llm = *config->llm;
  const ProviderConfig& hosted = llm.providers.at("hosted");
  EXPECT_EQ(hosted.type, ProviderType::kOpenAi);
  EXPECT_EQ(hosted.base_url, "https://api.example.com/v1");  // trailing slash dropped
  EXPECT_EQ(hosted.timeout, std::chrono::milliseconds(120'000));
  EXPECT_EQ(hosted.connect_timeout, std::chrono::milliseconds(5'000));
  EXPECT_EQ(hosted.backoff_initial, std::chrono::milliseconds(500));
  EXPECT_EQ(hosted.max_concurrent, 3);
  EXPECT_DOUBLE_EQ(hosted.requests_per_minute, 90);
  EXPECT_EQ(hosted.max_attempts, 7);
  const ProviderConfig& claude = llm.providers.at("claude");
  EXPECT_EQ(claude.base_url, "https://api.anthropic.com");
  EXPECT_EQ(claude.anthropic_version, "2023-06-01");
  const ProviderConfig& tool = llm.providers.at("tool");
  EXPECT_EQ(tool.command, (std::vector<std::string>{"my-llm", "--fast"}));
  EXPECT_TRUE(tool.command_output_json);
  EXPECT_EQ(llm.agent("planner")->temperature, 0.9);
  EXPECT_FALSE(llm.agent("coder")->temperature.has_value());
  EXPECT_EQ(llm.agent("coder")->max_tokens, 9000);
  EXPECT_EQ(llm.agent("summarizer")->model, "");  // a command provider needs no model
  EXPECT_EQ(llm.provider_for("coder")->name, "hosted");
  EXPECT_EQ(llm.agent("nobody"), nullptr);
  EXPECT_DOUBLE_EQ(llm.prices.at("gpt-x").output_per_mtok, 10);
  EXPECT_EQ(llm.max_response_bytes, 2'000'000u);
  EXPECT_EQ(config->daemon.budgets.hours, 8.0);
  EXPECT_EQ(config->daemon.budgets.max_usd, 12.5);
  EXPECT_EQ(config->daemon.budgets.candidates_per_task, 100);
  EXPECT_EQ(config->daemon.gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(config->daemon.worker_command.size(), 5u);
}

TEST(ConfigTest, UnknownKeysAreErrorsWithDidYouMean) {
  std::string e = error_of(R"({"deamon": {}})");
  EXPECT_NE(e.find("/etc/kopt/test.json: $.deamon: unknown key (did you mean 'daemon'?)"),
            std::string::npos)
      << e;
  e = error_of(R"({"llm": {"providers": {"p": {"type": "openai", "timeout": 5}},
                  "agents": {"planner": {"provider": "p", "model": "m"},
                             "coder": {"provider": "p", "model": "m"},
                             "summarizer": {"provider": "p", "model": "m", "temprature": 1}}}})");
  EXPECT_NE(e.find("$.llm.providers.p.timeout: unknown key (did you mean 'timeout_s'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.agents.summarizer.temprature: unknown key (did you mean "
                   "'temperature'?)"),
            std::string::npos)
      << e;
  e = error_of(R"({"daemon": {"budgets": {"max_dollars": 3}}})");
  EXPECT_NE(e.find("$.daemon.budgets.max_dollars: unknown key"), std::string::npos) << e;
}

TEST(ConfigTest, KeysOfAnotherProviderTypeAreUnknown) {
  std::string e = error_of(R"({"llm": {"providers": {
      "p": {"type": "openai", "command": ["x"]},
      "c": {"type": "command", "command": ["x"], "base_url": "http://h"}},
    "agents": {}}})");
  EXPECT_NE(e.find("$.llm.providers.p.command: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("$.llm.providers.c.base_url: unknown key"), std::string::npos) << e;
}

TEST(ConfigTest, WrongTypesNameTheirPathAndTheFile) {
  std::string e = error_of(R"({"llm": {"providers": {"p": {"type": "openai", "timeout_s": "60",
                                        "max_concurrent": 2.5}},
                  "agents": {"planner": {"provider": "p", "model": 7}}},
                  "daemon": {"gpus": [0, "1"], "budgets": []}})");
  EXPECT_NE(e.find("/etc/kopt/test.json: $.llm.providers.p.timeout_s: expected a number, found "
                   "a string"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.providers.p.max_concurrent: expected an integer, found a number"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.agents.planner.model: expected a string, found an integer"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.daemon.gpus[1]: expected a non-negative integer"), std::string::npos) << e;
  EXPECT_NE(e.find("$.daemon.budgets: expected an object, found an array"), std::string::npos) << e;
}

TEST(ConfigTest, MissingRequiredFieldsNameTheirPath) {
  std::string e = error_of(R"({"llm": {"providers": {"p": {"base_url": "http://h"}},
                  "agents": {"planner": {"provider": "p"}, "coder": {"model": "m"}},
                  "prices": {"m": {"input_per_mtok": 1}}}})");
  EXPECT_NE(e.find("$.llm.providers.p.type: required field is missing"), std::string::npos) << e;
  EXPECT_NE(e.find("$.llm.agents.coder.provider: required field is missing"), std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.agents.summarizer: required field is missing"), std::string::npos) << e;
  EXPECT_NE(e.find("$.llm.prices.m.output_per_mtok: required field is missing"), std::string::npos)
      << e;
  e = error_of(R"({"llm": {"agents": {}}})");
  EXPECT_NE(e.find("$.llm.providers: required field is missing"), std::string::npos) << e;
  e = error_of(R"({"llm": {"providers": {"p": {"type": "openai"}},
                  "agents": {"planner": {"provider": "p"}, "coder": {"provider": "p", "model": "m"},
                             "summarizer": {"provider": "p", "model": "m"}}}})");
  EXPECT_NE(e.find("$.llm.agents.planner.model: required field is missing"), std::string::npos)
      << e;
}

TEST(ConfigTest, BadValuesAreReportedWithSuggestions) {
  std::string e = error_of(R"({"llm": {"providers": {"p": {"type": "opneai",
                                "base_url": "ftp://x", "max_attempts": 0}},
                  "agents": {"planner": {"provider": "q", "model": "m", "temperature": 3},
                             "coder": {"provider": "p", "model": "m"},
                             "summariser": {"provider": "p", "model": "m"}}},
                  "daemon": {"worker_command": ["ssh", "{host}", "{worker}"]}})");
  EXPECT_NE(e.find("$.llm.providers.p.type: unknown value 'opneai', expected one of openai, "
                   "anthropic, command (did you mean 'openai'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.providers.p.base_url: must start with http:// or https://"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.providers.p.max_attempts: must be positive"), std::string::npos) << e;
  EXPECT_NE(e.find("$.llm.agents.planner.provider: no provider named 'q' in $.llm.providers "
                   "(did you mean 'p'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.llm.agents.planner.temperature: must be <= 2"), std::string::npos) << e;
  EXPECT_NE(e.find("$.llm.agents.summariser: unknown agent, expected one of planner, coder, "
                   "summarizer (did you mean 'summarizer'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("$.daemon.worker_command[1]: unknown placeholder {host}"), std::string::npos)
      << e;
}

TEST(ConfigTest, StallAndSpendSettingsLoadWithTheirDefaults) {
  auto config = parse(R"({"llm": {"providers": {"p": {"type": "openai"}},
      "agents": {"planner": {"provider": "p", "model": "m", "temperature": 0.3},
                 "coder": {"provider": "p", "model": "m", "max_tokens": 4000,
                           "max_tokens_ceiling": 16000, "temperature": 0.2,
                           "max_temperature": 0.9},
                 "summarizer": {"provider": "p", "model": "m"}}},
      "daemon": {"budgets": {"max_usd_per_task": 1.5, "max_usd_per_hour": 4,
                             "spend_rate_window_s": 300},
                 "stall": {"window": 30, "min_calls": 8, "min_new_share": 0.25,
                           "park_new_share": 0.05, "park_dry_calls": 15,
                           "backoff_initial_s": 10, "backoff_max_s": 600,
                           "temperature_step": 0.1, "planner_stale_answers": 4}}})");
  ASSERT_TRUE(config.ok()) << config.error();
  const AgentConfig& coder = *config->llm->agent("coder");
  EXPECT_EQ(coder.effective_max_tokens_ceiling(), 16000);
  EXPECT_EQ(coder.effective_max_temperature(), 0.9);
  const AgentConfig& planner = *config->llm->agent("planner");
  EXPECT_EQ(planner.effective_max_tokens_ceiling(), 8192);       // twice max_tokens
  EXPECT_NEAR(*planner.effective_max_temperature(), 0.7, 1e-9);  // 0.4 above temperature
  EXPECT_FALSE(config->llm->agent("summarizer")->effective_max_temperature().has_value());
  const DaemonConfig& d = config->daemon;
  EXPECT_EQ(d.budgets.max_usd_per_task, 1.5);
  EXPECT_EQ(d.budgets.max_usd_per_hour, 4.0);
  EXPECT_EQ(d.budgets.spend_rate_window_s, 300.0);
  EXPECT_EQ(d.stall.window, 30);
  EXPECT_EQ(d.stall.min_calls, 8);
  EXPECT_EQ(d.stall.min_new_share, 0.25);
  EXPECT_EQ(d.stall.park_new_share, 0.05);
  EXPECT_EQ(d.stall.park_dry_calls, 15);
  EXPECT_EQ(d.stall.backoff_initial_s, 10.0);
  EXPECT_EQ(d.stall.backoff_max_s, 600.0);
  EXPECT_EQ(d.stall.temperature_step, 0.1);
  EXPECT_EQ(d.stall.planner_stale_answers, 4);
}

TEST(ConfigTest, BadStallAndSpendSettingsAreErrors) {
  std::string e = error_of(R"({"llm": {"providers": {"p": {"type": "openai"}},
      "agents": {"planner": {"provider": "p", "model": "m", "max_tokens": 4000,
                             "max_tokens_ceiling": 2000},
                 "coder": {"provider": "p", "model": "m", "temperature": 0.5,
                           "max_temperature": 0.3},
                 "summarizer": {"provider": "p", "model": "m", "max_temperature": 3}}},
      "daemon": {"budgets": {"max_usd_per_hour": 0, "max_usd_per_task": -1},
                 "stall": {"windw": 5, "min_new_share": 1.5, "park_new_share": 0.4,
                           "backoff_initial_s": 60, "backoff_max_s": 30}}})");
  for (const char* expected :
       {"$.llm.agents.planner.max_tokens_ceiling: must be at least max_tokens (4000)",
        "$.llm.agents.coder.max_temperature: must be at least temperature",
        "$.llm.agents.summarizer.max_temperature: must be <= 2",
        "$.daemon.budgets.max_usd_per_hour: must be positive",
        "$.daemon.budgets.max_usd_per_task: must not be negative",
        "$.daemon.stall.windw: unknown key (did you mean 'window'?)",
        "$.daemon.stall.min_new_share: must be <= 1",
        "$.daemon.stall.backoff_max_s: must be at least backoff_initial_s"}) {
    EXPECT_NE(e.find(expected), std::string::npos) << expected << "\n" << e;
  }
}

// What the task weights and stopping read (common/score_basis.h): read when valid, and a wrong
// name or a threshold outside (0, 1] named with the file and its JSON path.
TEST(ConfigTest, ScoreSettingsLoadAndBadOnesNameFileAndPath) {
  auto config = parse(R"({"daemon": {"search": {"score": "sol_score", "sol_score_threshold": 0.75,
                                                 "sol_threshold_percent": 85}}})");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->daemon.search.score, "sol_score");
  EXPECT_EQ(config->daemon.search.sol_score_threshold, 0.75);
  auto unset = parse(R"({"daemon": {"search": {}}})");
  ASSERT_TRUE(unset.ok()) << unset.error();
  EXPECT_EQ(unset->daemon.search.score, "") << "unset: the search's default (auto) applies";
  EXPECT_FALSE(unset->daemon.search.sol_score_threshold.has_value());

  std::string e =
      error_of(R"({"daemon": {"search": {"score": "sol_scor", "sol_score_threshold": 1.5}}})");
  for (const char* expected :
       {"/etc/kopt/test.json", "$.daemon.search.score: unknown value 'sol_scor'",
        "expected one of auto, sol_score, sol_percent", "did you mean 'sol_score'",
        "$.daemon.search.sol_score_threshold: must be at most 1"}) {
    EXPECT_NE(e.find(expected), std::string::npos) << expected << "\n" << e;
  }
  e = error_of(R"({"daemon": {"search": {"score": 1, "sol_score_threshold": 0}}})");
  for (const char* expected :
       {"$.daemon.search.score", "$.daemon.search.sol_score_threshold: must be positive"}) {
    EXPECT_NE(e.find(expected), std::string::npos) << expected << "\n" << e;
  }
}

// The random example slot and the technique cards (issue 36) are settings like the search's
// others: read when valid, a wrong type or a negative value named with its JSON path.
TEST(ConfigTest, ExampleSlotAndCardSettingsLoadAndBadOnesNamePath) {
  auto config = parse(R"({"daemon": {"search": {"random_example_slot": false,
                                                 "example_draw_seed": 42, "technique_cards": 0}}})");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->daemon.search.random_example_slot, false);
  EXPECT_EQ(config->daemon.search.example_draw_seed, 42);
  EXPECT_EQ(config->daemon.search.technique_cards, 0);
  auto unset = parse(R"({"daemon": {"search": {}}})");
  ASSERT_TRUE(unset.ok()) << unset.error();
  EXPECT_FALSE(unset->daemon.search.random_example_slot.has_value());
  std::string e = error_of(R"({"daemon": {"search": {"random_example_slot": "yes",
                                                      "example_draw_seed": -1,
                                                      "technique_cards": 1.5}}})");
  for (const char* expected :
       {"$.daemon.search.random_example_slot", "$.daemon.search.example_draw_seed",
        "$.daemon.search.technique_cards"}) {
    EXPECT_NE(e.find(expected), std::string::npos) << expected << "\n" << e;
  }
}

// Screening timing first (issue 35) is a search setting: read when a boolean, named by its JSON
// path otherwise, unset by default (the daemon's default then holds: off).
TEST(ConfigTest, ScreenTimeFirstLoadsAndABadOneNamesItsPath) {
  auto config = parse(R"({"daemon": {"search": {"screen_time_first": true}}})");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->daemon.search.screen_time_first, true);
  auto unset = parse(R"({"daemon": {"search": {}}})");
  ASSERT_TRUE(unset.ok()) << unset.error();
  EXPECT_FALSE(unset->daemon.search.screen_time_first.has_value());
  std::string e = error_of(R"({"daemon": {"search": {"screen_time_first": 1}}})");
  EXPECT_NE(e.find("$.daemon.search.screen_time_first"), std::string::npos) << e;
}

TEST(ConfigTest, AllErrorsAreReportedInOnePass) {
  std::string e = error_of(R"({"format": 1, "databse": {}, "llm": {"providers": {
      "p": {"type": "openai", "timeout_s": -1}}, "agents": {}},
      "daemon": {"budgets": {"hours": 0}}})");
  size_t lines = static_cast<size_t>(std::count(e.begin(), e.end(), '\n')) + 1;
  EXPECT_GE(lines, 6u) << e;  // databse, timeout_s, 3 agents, hours
}

TEST(ConfigTest, InvalidJsonNamesLineAndColumn) {
  std::string e = error_of("{\n  \"llm\": {,\n}");
  EXPECT_NE(e.find("/etc/kopt/test.json:2:"), std::string::npos) << e;
  EXPECT_NE(error_of("[]").find("$: expected an object"), std::string::npos);
}

TEST(ConfigTest, NewerFormatIsRefused) {
  EXPECT_NE(error_of(R"({"format": 2})").find("newer than this kopt understands"),
            std::string::npos);
}

TEST(ConfigTest, NoLlmSectionOrNullMeansTheBuiltInTuner) {
  auto empty = parse("{}");
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_FALSE(empty->llm.has_value());
  auto null_llm = parse(R"({"llm": null})");
  ASSERT_TRUE(null_llm.ok()) << null_llm.error();
  EXPECT_FALSE(null_llm->llm.has_value());
  EXPECT_NE(describe(*null_llm).find("llm: none configured"), std::string::npos);
}

TEST(ConfigTest, AbsentDefaultFileMeansDefaultsButAnAbsentNamedFileIsAnError) {
  TempDir home;
  ::setenv("KOPT_HOME", home.path().c_str(), 1);
  ::unsetenv("KOPT_CONFIG");
  auto defaults = load_config_or_defaults(std::nullopt);
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  EXPECT_FALSE(defaults->llm.has_value());
  EXPECT_TRUE(defaults->source.empty());
  EXPECT_EQ(defaults->database_path, home.path() / "memory.db");

  write_text(home / "config.json", R"({"daemon": {"gpus": [3]}})");
  auto found = load_config_or_defaults(std::nullopt);
  ASSERT_TRUE(found.ok()) << found.error();
  EXPECT_EQ(found->daemon.gpus, std::vector<int>{3});

  auto named = load_config_or_defaults(home / "missing.json");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().find("missing.json"), std::string::npos) << named.error();
  ::setenv("KOPT_CONFIG", (home / "also-missing.json").c_str(), 1);
  EXPECT_FALSE(load_config_or_defaults(std::nullopt).ok());
  ::unsetenv("KOPT_CONFIG");
  ::unsetenv("KOPT_HOME");
}

TEST(ConfigTest, DescribeIsLogSafe) {
  ::setenv("EXAMPLE_KEY", "sk-example-secret-value-123456", 1);
  ::unsetenv("ANTHROPIC_API_KEY");
  std::string text = describe(*parse(R"({"llm": {"providers": {
      "p": {"type": "openai", "base_url": "https://user:hunter2@proxy.example.com/v1?key=abc",
            "api_key_env": "EXAMPLE_KEY"},
      "a": {"type": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"},
      "c": {"type": "command", "command": ["tool", "--token", "tok-secret"]}},
    "agents": {"planner": {"provider": "p", "model": "m"}, "coder": {"provider": "a", "model": "n"},
               "summarizer": {"provider": "c"}}}})"));
  EXPECT_NE(text.find("key from $EXAMPLE_KEY (set)"), std::string::npos) << text;
  EXPECT_NE(text.find("key from $ANTHROPIC_API_KEY (NOT SET)"), std::string::npos) << text;
  EXPECT_NE(text.find("https://proxy.example.com/v1"), std::string::npos) << text;
  EXPECT_NE(text.find("llm agent coder: provider 'a', model 'n'"), std::string::npos) << text;
  for (const char* secret : {"sk-example-secret-value-123456", "hunter2", "key=abc", "tok-secret"})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in:\n" << text;
  ::unsetenv("EXAMPLE_KEY");
}

TEST(ConfigTest, RedactUrlDropsCredentialsAndQueries) {
  EXPECT_EQ(redact_url("https://u:p@host:8000/v1?api-key=x#f"), "https://host:8000/v1");
  EXPECT_EQ(redact_url("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
  EXPECT_EQ(redact_url("http://host/path@odd"), "http://host/path@odd");
}

TEST(ConfigTest, HomeRelativeDatabasePath) {
  ::setenv("HOME", "/home/tester", 1);
  auto config = parse(R"({"database": {"path": "~/kopt/memory.db"}})");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->database_path, "/home/tester/kopt/memory.db");
}

TEST(DoctorConfigTest, PrintsEndpointsModelsAndKeyStateNeverTheKey) {
  TempDir dir;
  write_text(dir / "c.json", R"({"llm": {"providers": {
      "local": {"type": "openai", "base_url": "http://127.0.0.1:8000/v1"},
      "hosted": {"type": "anthropic", "api_key_env": "KOPT_DOCTOR_TEST_KEY"},
      "tool": {"type": "command", "command": ["my-llm"]}},
    "agents": {"planner": {"provider": "hosted", "model": "big-model"},
               "coder": {"provider": "local", "model": "qwen-coder"},
               "summarizer": {"provider": "tool", "model": "any"}}}})");
  ::setenv("KOPT_DOCTOR_TEST_KEY", "sk-doctor-secret-0123456789", 1);
  CommandOutput out = run_kopt({"doctor", "--config", (dir / "c.json").string()}, dir / "cache");
  std::string text = out.stdout_text + out.stderr_text;
  EXPECT_NE(text.find("http://127.0.0.1:8000/v1"), std::string::npos) << text;
  EXPECT_NE(text.find("qwen-coder"), std::string::npos) << text;
  EXPECT_NE(text.find("https://api.anthropic.com"), std::string::npos) << text;
  EXPECT_NE(text.find("$KOPT_DOCTOR_TEST_KEY is set"), std::string::npos) << text;
  EXPECT_NE(text.find("my-llm"), std::string::npos) << text;
  EXPECT_EQ(text.find("sk-doctor-secret"), std::string::npos) << text;

  ::unsetenv("KOPT_DOCTOR_TEST_KEY");
  out = run_kopt({"doctor", "--config", (dir / "c.json").string()}, dir / "cache");
  text = out.stdout_text + out.stderr_text;
  EXPECT_NE(text.find("$KOPT_DOCTOR_TEST_KEY is not set"), std::string::npos) << text;
  EXPECT_NE(out.exit_code, 0);

  write_text(dir / "bad.json", R"({"llm": {"provider": {}}})");
  out = run_kopt({"doctor", "--config", (dir / "bad.json").string()}, dir / "cache");
  text = out.stdout_text + out.stderr_text;
  EXPECT_NE(text.find("$.llm.provider: unknown key (did you mean 'providers'?)"), std::string::npos)
      << text;
  EXPECT_NE(out.exit_code, 0);
}

}  // namespace
}  // namespace kopt::testing
