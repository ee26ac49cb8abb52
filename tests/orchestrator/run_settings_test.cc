// The settings resolver (run_settings.h): each precedence case on its own, from the config, the
// flags and a saved run, with the origin that the daemon prints at start-up.
#include "src/orchestrator/run_settings.h"

#include <gtest/gtest.h>

namespace kopt::orchestrator {
namespace {

using nlohmann::json;

// A saved run's "options" object, as run_record_json writes it.
json saved_run(json budgets, std::vector<std::string> dirs = {"/tasks/axpy"}) {
  RunOptions options;
  for (const auto& d : dirs) options.task_dirs.emplace_back(d);
  json saved = options.to_json();
  saved["budgets"] = std::move(budgets);
  return saved;
}

const SettingOrigin& origin_of(const ResolvedSettings& r, const std::string& name) {
  for (const SettingOrigin& o : r.origins) {
    if (o.name == name) return o;
  }
  throw std::runtime_error("no origin for " + name);
}

TEST(RunSettings, DefaultsWhenNothingIsSet) {
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, SettingFlags{}, nullptr);
  EXPECT_FALSE(r.options.budgets.hours);
  EXPECT_FALSE(r.options.budgets.max_usd);
  EXPECT_EQ(r.options.search.beam_width, SearchSettings{}.beam_width);
  EXPECT_EQ(r.options.search.score, ScoreBasis::kAuto);
  EXPECT_EQ(origin_of(r, "max_usd").describe(), "max_usd none (default)");
  EXPECT_EQ(origin_of(r, "score").describe(), "score auto (default)");
}

TEST(RunSettings, TheConfigBeatsTheDefault) {
  DaemonConfig config;
  config.budgets.max_usd = 20;
  config.search.beam_width = 7;
  config.search.score = "sol_percent";
  config.stall.backoff_max_s = 1.5;
  ResolvedSettings r = resolve_run_settings(config, SettingFlags{}, nullptr);
  EXPECT_EQ(r.options.budgets.max_usd, 20);
  EXPECT_EQ(r.options.search.beam_width, 7);
  EXPECT_EQ(r.options.search.score, ScoreBasis::kSolPercent);
  EXPECT_EQ(r.options.stall.backoff_max, std::chrono::milliseconds(1500));
  EXPECT_EQ(origin_of(r, "max_usd").describe(), "max_usd 20 (from the config file)");
  EXPECT_EQ(origin_of(r, "search.beam_width").describe(),
            "search.beam_width 7 (from the config file)");
  EXPECT_EQ(origin_of(r, "score").source, SettingSource::kConfig);
}

TEST(RunSettings, TheConfigSetsTheExampleSlotAndTheCards) {
  DaemonConfig config;
  config.search.random_example_slot = false;
  config.search.example_draw_seed = 42;
  config.search.technique_cards = 0;
  ResolvedSettings r = resolve_run_settings(config, SettingFlags{}, nullptr);
  EXPECT_FALSE(r.options.search.random_example_slot);
  EXPECT_EQ(r.options.search.example_draw_seed, 42u);
  EXPECT_EQ(r.options.search.technique_cards, 0);
  EXPECT_EQ(origin_of(r, "search.random_example_slot").describe(),
            "search.random_example_slot false (from the config file)");
  ResolvedSettings d = resolve_run_settings(DaemonConfig{}, SettingFlags{}, nullptr);
  EXPECT_TRUE(d.options.search.random_example_slot);
  EXPECT_EQ(d.options.search.technique_cards, SearchSettings{}.technique_cards);
}

TEST(RunSettings, TheConfigSetsScreeningTimingFirst) {
  DaemonConfig config;
  config.search.screen_time_first = false;
  ResolvedSettings r = resolve_run_settings(config, SettingFlags{}, nullptr);
  EXPECT_FALSE(r.options.search.screen_time_first);
  EXPECT_EQ(origin_of(r, "search.screen_time_first").describe(),
            "search.screen_time_first false (from the config file)");
  ResolvedSettings d = resolve_run_settings(DaemonConfig{}, SettingFlags{}, nullptr);
  EXPECT_TRUE(d.options.search.screen_time_first);
}

TEST(RunSettings, AFlagBeatsTheConfig) {
  DaemonConfig config;
  config.budgets.max_usd = 20;
  config.budgets.hours = 2;
  config.search.score = "sol_percent";
  SettingFlags flags;
  flags.max_usd = 5;
  flags.max_usd_per_hour = 1.5;
  flags.score = ScoreBasis::kSolScore;
  ResolvedSettings r = resolve_run_settings(config, flags, nullptr);
  EXPECT_EQ(r.options.budgets.max_usd, 5);
  EXPECT_EQ(r.options.budgets.hours, 2);
  EXPECT_EQ(r.options.budgets.max_usd_per_hour, 1.5);
  EXPECT_EQ(r.options.search.score, ScoreBasis::kSolScore);
  EXPECT_EQ(origin_of(r, "max_usd").describe(), "max_usd 5 (from --max-usd)");
  EXPECT_EQ(origin_of(r, "max_usd_per_hour").describe(),
            "max_usd_per_hour 1.5 (from --max-usd-per-hour)");
  EXPECT_EQ(origin_of(r, "hours").describe(), "hours 2 (from the config file)");
  EXPECT_EQ(origin_of(r, "score").describe(), "score sol_score (from --score)");
}

TEST(RunSettings, AResumedRunKeepsItsSavedBudgetsWhereNothingElseSetsThem) {
  json saved = saved_run({{"hours", 8},
                          {"max_usd", 30},
                          {"candidates_per_task", 50},
                          {"max_usd_per_task", 3},
                          {"max_usd_per_hour", 4}});
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, SettingFlags{}, &saved);
  EXPECT_EQ(r.options.budgets.hours, 8);
  EXPECT_EQ(r.options.budgets.max_usd, 30);
  EXPECT_EQ(r.options.budgets.candidates_per_task, 50);
  EXPECT_EQ(r.options.budgets.max_usd_per_task, 3);
  EXPECT_EQ(r.options.budgets.max_usd_per_hour, 4);
  EXPECT_EQ(origin_of(r, "hours").describe(), "hours 8 (from the saved run)");
}

TEST(RunSettings, TheConfigBeatsTheSavedRun) {
  DaemonConfig config;
  config.budgets.hours = 1;
  config.budgets.max_usd_per_task = 0.5;
  json saved = saved_run({{"hours", 8}, {"max_usd", 30}, {"max_usd_per_task", 3}});
  ResolvedSettings r = resolve_run_settings(config, SettingFlags{}, &saved);
  EXPECT_EQ(r.options.budgets.hours, 1);
  EXPECT_EQ(r.options.budgets.max_usd_per_task, 0.5);
  EXPECT_EQ(r.options.budgets.max_usd, 30);
  EXPECT_EQ(origin_of(r, "hours").source, SettingSource::kConfig);
  EXPECT_EQ(origin_of(r, "max_usd").source, SettingSource::kSavedRun);
}

TEST(RunSettings, AFlagBeatsTheConfigAndTheSavedRun) {
  DaemonConfig config;
  config.budgets.max_usd = 20;
  config.budgets.candidates_per_task = 10;
  json saved = saved_run({{"max_usd", 30}, {"candidates_per_task", 50}, {"max_usd_per_hour", 4}});
  SettingFlags flags;
  flags.max_usd = 5;
  flags.candidates_per_task = 7;
  flags.max_usd_per_hour = 2;
  ResolvedSettings r = resolve_run_settings(config, flags, &saved);
  EXPECT_EQ(r.options.budgets.max_usd, 5);
  EXPECT_EQ(r.options.budgets.candidates_per_task, 7);
  EXPECT_EQ(r.options.budgets.max_usd_per_hour, 2);
  EXPECT_EQ(origin_of(r, "candidates_per_task").describe(),
            "candidates_per_task 7 (from --candidates-per-task)");
}

TEST(RunSettings, ASavedValueOfTheWrongTypeIsIgnored) {
  json saved = saved_run({{"hours", "8"}, {"candidates_per_task", 2.5}, {"max_usd", nullptr}});
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, SettingFlags{}, &saved);
  EXPECT_FALSE(r.options.budgets.hours);
  EXPECT_FALSE(r.options.budgets.candidates_per_task);
  EXPECT_FALSE(r.options.budgets.max_usd);
  EXPECT_EQ(origin_of(r, "hours").source, SettingSource::kDefault);
}

TEST(RunSettings, TheSavedRunSetsNoSearchKnobNorScore) {
  json saved = saved_run({{"hours", 8}});
  saved["search"]["beam_width"] = 9;
  saved["search"]["score"] = "sol_percent";
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, SettingFlags{}, &saved);
  EXPECT_EQ(r.options.search.beam_width, SearchSettings{}.beam_width);
  EXPECT_EQ(r.options.search.score, ScoreBasis::kAuto);
}

TEST(RunSettings, ANewRunTakesTheFlagsTaskFoldersAsTheyAre) {
  SettingFlags flags;
  flags.task_dirs = {"/t/a", "/t/b", "/t/a"};
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, flags, nullptr);
  EXPECT_EQ(r.options.task_dirs, flags.task_dirs);
}

TEST(RunSettings, AResumedRunAddsNewTaskFoldersToItsSavedOnes) {
  json saved = saved_run(json::object(), {"/t/a", "/t/b"});
  SettingFlags flags;
  flags.task_dirs = {"/t/b", "/t/c"};
  ResolvedSettings r = resolve_run_settings(DaemonConfig{}, flags, &saved);
  std::vector<std::filesystem::path> expected = {"/t/a", "/t/b", "/t/c"};
  EXPECT_EQ(r.options.task_dirs, expected);
  // A resumed run whose record holds no options goes on with the new folders alone.
  json empty = json::object();
  ResolvedSettings bare = resolve_run_settings(DaemonConfig{}, flags, &empty);
  EXPECT_EQ(bare.options.task_dirs, flags.task_dirs);
}

// Workers per GPU are resolved here too (not in the daemon), so start-up says where they came
// from; a saved run never sets them (they are this machine's, not the run's).
TEST(RunSettings, WorkersPerGpuComeFromTheFlagTheConfigOrTheDefault) {
  ResolvedSettings d = resolve_run_settings(DaemonConfig{}, SettingFlags{}, nullptr);
  EXPECT_EQ(d.workers_per_gpu, 1);
  EXPECT_EQ(origin_of(d, "workers_per_gpu").describe(), "workers_per_gpu 1 (default)");
  DaemonConfig config;
  config.workers_per_gpu = 2;
  json saved = saved_run(json::object());
  ResolvedSettings c = resolve_run_settings(config, SettingFlags{}, &saved);
  EXPECT_EQ(c.workers_per_gpu, 2);
  EXPECT_EQ(origin_of(c, "workers_per_gpu").describe(), "workers_per_gpu 2 (from the config file)");
  SettingFlags flags;
  flags.workers_per_gpu = 3;
  ResolvedSettings f = resolve_run_settings(config, flags, nullptr);
  EXPECT_EQ(f.workers_per_gpu, 3);
  EXPECT_EQ(origin_of(f, "workers_per_gpu").describe(),
            "workers_per_gpu 3 (from --workers-per-gpu)");
  EXPECT_EQ(f.workers_note, "");
}

// A worker template (srun, ssh) runs each worker as a job of its own: one per GPU, which the
// config's worker_command decides, with a note that says why the flag's 3 was not taken.
TEST(RunSettings, AWorkerTemplateKeepsOneWorkerPerGpu) {
  DaemonConfig config;
  config.worker_command = {"{worker}", "--device", "{gpu}"};
  SettingFlags flags;
  flags.workers_per_gpu = 3;
  ResolvedSettings r = resolve_run_settings(config, flags, nullptr);
  EXPECT_EQ(r.workers_per_gpu, 1);
  EXPECT_EQ(origin_of(r, "workers_per_gpu").describe(), "workers_per_gpu 1 (from the config file)");
  EXPECT_EQ(r.workers_note,
            "daemon.worker_command: one worker per GPU (workers_per_gpu 3 is for local workers)");
}

}  // namespace
}  // namespace kopt::orchestrator
