// `kopt baselines` and where kernels stand against production baselines, through the real kopt
// binary with a fake timing helper (the GPU part, scripts/torch_baselines.py, is replaced by a
// script that prints what it would): rows stored with every field, errors reported per task,
// `memory wins --vs production` and the report naming the best production baseline with S.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt(std::vector<std::string> args) {
  return run_kopt(KOPT_BINARY, std::move(args), std::chrono::seconds(60));
}

constexpr const char* kHelper = R"(import sys
print('{"task": "axpy", "name": "torch_eager", "median_us": 449.9, "noise": 0.003, "samples": 40,'
      ' "device": {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0"},'
      ' "library_versions": {"torch": "2.11.0"}, "shape": "n=67108864", "detail": "eager",'
      ' "op": "bench/torch_ops.py"}')
print('{"task": "axpy", "name": "torch_compile", "median_us": 266.3, "noise": 0.002,'
      ' "samples": 60, "device": {"name": "NVIDIA H100 80GB HBM3"}, "shape": "n=67108864"}')
print('{"task": "softmax", "name": "torch_compile", "error": "InductorError: boom"}')
print(' '.join(sys.argv[1:]), file=sys.stderr)
)";

// A finished run's progress row, as the daemon publishes it: axpy's best kernel at 280 us.
void publish_finished_run(const std::string& path) {
  auto store = open_store(path);
  nlohmann::json progress = {{"format", 2},
                             {"run_id", 1},
                             {"pid", 0},
                             {"state", "finished"},
                             {"mode", "tuner"},
                             {"gpu", "NVIDIA H100 80GB HBM3"},
                             {"tasks",
                              {{{"name", "axpy"},
                                {"state", "done"},
                                {"best_speedup", 310.0 / 280.0},
                                {"best_sol_percent", 100.0 * 240.0 / 280.0},
                                {"best_us", 280.0}},
                               {{"name", "softmax"}, {"state", "waiting"}}}}};
  auto& db = store.database();
  ASSERT_TRUE(db.execute("CREATE TABLE IF NOT EXISTS daemon_status (run_id INTEGER PRIMARY KEY,"
                         " pid INTEGER NOT NULL, updated_at TEXT NOT NULL, active_seconds REAL"
                         " NOT NULL DEFAULT 0, status_json TEXT NOT NULL)")
                  .ok());
  auto insert = db.cached(
      "INSERT INTO daemon_status (run_id, pid, updated_at, status_json) VALUES (1, 0, "
      "'2026-11-26T00:00:00Z', ?1)");
  insert->bind(1, progress.dump());
  ASSERT_TRUE(insert->run().ok());
}

class BaselinesCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "memory.db").string();
    auto store = open_store(db_);
    fill_sample_memory(store);
    helper_ = (dir_ / "helper.py").string();
    ASSERT_TRUE(write_file_atomic(helper_, kHelper).ok());
  }

  CommandOutput measure() {
    return kopt({"baselines", "axpy", "softmax", "--db", db_, "--helper", helper_});
  }

  TempDir dir_;
  std::string db_, helper_;
};

TEST_F(BaselinesCliTest, StoresWhatTheHelperMeasuredAndSaysWhatItDidNot) {
  auto out = measure();
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "torch_compile")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "not measured: softmax torch_compile: InductorError: boom"))
      << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "2 production baselines stored")) << out.stdout_text;

  out = kopt({"baselines", "--list", "--json", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto rows = nlohmann::json::parse(out.stdout_text);
  ASSERT_EQ(rows.size(), 2u) << rows.dump(2);
  const auto& fastest = rows[0];  // by task, then fastest first
  EXPECT_EQ(fastest["task"], "axpy");
  EXPECT_EQ(fastest["name"], "torch_compile");
  EXPECT_DOUBLE_EQ(fastest["median_us"].get<double>(), 266.3);
  EXPECT_EQ(fastest["samples"], 60);
  EXPECT_EQ(fastest["gpu_model"], "NVIDIA H100 80GB HBM3");
  const auto& eager = rows[1];
  EXPECT_EQ(eager["library_versions"]["torch"], "2.11.0");
  EXPECT_EQ(eager["device"]["cc"], "9.0");
  EXPECT_EQ(eager["shape"], "n=67108864");
  EXPECT_DOUBLE_EQ(eager["noise"].get<double>(), 0.003);
  EXPECT_EQ(eager["detail"], "eager (bench/torch_ops.py)");
  EXPECT_EQ(eager["spec_sha256"].get<std::string>().size(), 64u);  // the task.json it was for
}

TEST_F(BaselinesCliTest, WinsVsProductionNameTheBestProductionBaselineAndScoreS) {
  ASSERT_EQ(measure().exit_code, 0);
  auto out = kopt({"memory", "wins", "--vs", "production", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  // axpy: 280 us against torch.compile's 266.3 us, bound 240 us: S = 1 / (1 + 40 / 26.3).
  EXPECT_TRUE(contains(out.stdout_text, "0.95x torch_compile")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "S 0.40 vs torch_compile")) << out.stdout_text;
  // softmax: nothing measured, so S is against baseline.cu (450 us of 900, bound 240 us).
  EXPECT_TRUE(contains(out.stdout_text, "none measured")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "S 0.76 vs baseline.cu")) << out.stdout_text;

  out = kopt({"memory", "wins", "--task", "axpy", "--json", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto standing = nlohmann::json::parse(out.stdout_text)[0]["standing"];
  EXPECT_EQ(standing["production_baseline"], "torch_compile");
  EXPECT_NEAR(standing["speedup_vs_production"].get<double>(), 266.3 / 280.0, 1e-9);
  EXPECT_NEAR(standing["speedup_vs_baseline"].get<double>(), 310.0 / 280.0, 1e-9);
  EXPECT_NEAR(standing["sol_percent"].get<double>(), 100.0 * 240.0 / 280.0, 1e-9);
  EXPECT_NEAR(standing["sol_score"].get<double>(), 1.0 / (1.0 + 40.0 / 26.3), 1e-9);

  out = kopt({"memory", "wins", "--vs", "prodution", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "did you mean 'production'")) << out.stderr_text;
}

// `kopt status` reads the daemon's published progress (src/orchestrator/daemon_tables.h); here a
// finished run's row written as the daemon writes it.
TEST_F(BaselinesCliTest, StatusShowsEachTasksBestAgainstProductionWithS) {
  ASSERT_EQ(measure().exit_code, 0);
  publish_finished_run(db_);
  auto out = kopt({"status", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "0.95x torch_compile")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "S 0.40 vs torch_compile")) << out.stdout_text;
  out = kopt({"status", "--db", db_, "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto tasks = nlohmann::json::parse(out.stdout_text)["tasks"];
  EXPECT_EQ(tasks[0]["standing"]["production_baseline"], "torch_compile");
  EXPECT_NEAR(tasks[0]["standing"]["sol_score"].get<double>(), 1.0 / (1.0 + 40.0 / 26.3), 1e-6);
  EXPECT_FALSE(tasks[1].contains("standing"));  // no kernel yet
}

TEST_F(BaselinesCliTest, TheReportCarriesTheProductionSpeedupAndS) {
  ASSERT_EQ(measure().exit_code, 0);
  std::string md = (dir_ / "report.md").string();
  auto out = kopt({"report", "--run", "all", "--db", db_, "--markdown", md});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto text = read_file(md);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(contains(*text, "| vs production |")) << *text;
  // markdown_text escapes the cells ("0\\.95x" renders as "0.95x").
  EXPECT_TRUE(contains(*text, "0\\.95x torch\\_compile")) << *text;
  EXPECT_TRUE(contains(*text, "S 0.40 vs torch\\_compile")) << *text;
  std::string html = (dir_ / "report.html").string();
  out = kopt({"report", "--run", "all", "--db", db_, "--html", html});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(*read_file(html), "<th>S</th>"));
}

TEST_F(BaselinesCliTest, WithoutPyTorchItSaysSoAndStoresNothing) {
  ASSERT_TRUE(write_file_atomic(helper_,
                                "import json, sys\n"
                                "print(json.dumps({'error': 'PyTorch is not installed for x'}))\n"
                                "sys.exit(3)\n")
                  .ok());
  auto out = measure();
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stdout_text, "not measured: PyTorch is not installed"))
      << out.stdout_text;
  out = kopt({"baselines", "--list", "--db", db_});
  EXPECT_TRUE(contains(out.stdout_text, "no production baselines measured")) << out.stdout_text;
}

// cuBLASLt is timed by the worker (here the protocol's test double, which answers a "cublaslt"
// request as an H100 would), and the worker has exited before the PyTorch helper starts: the
// helper fails the test if the worker's alive file is still there.
TEST_F(BaselinesCliTest, CublasLtRowsComeFromTheWorkerWhichExitsBeforeTheHelperStarts) {
  std::string alive = (dir_ / "worker.alive").string();
  ASSERT_EQ(setenv("KOPT_FAKE_ALIVE_FILE", alive.c_str(), 1), 0);
  ASSERT_TRUE(write_file_atomic(helper_,
                                "import json, os, sys\n"
                                "alive = os.environ['KOPT_FAKE_ALIVE_FILE']\n"
                                "if os.path.exists(alive):\n"
                                "    print(json.dumps({'error': 'the worker still runs'}))\n"
                                "print(json.dumps({'task': 'sgemm', 'name': 'torch_eager',"
                                " 'median_us': 5400.0, 'samples': 30,"
                                " 'device': {'name': 'NVIDIA H100 80GB HBM3'}}))\n")
                  .ok());
  auto out =
      kopt({"baselines", "sgemm", "--db", db_, "--helper", helper_, "--worker", KOPT_FAKE_WORKER});
  unsetenv("KOPT_FAKE_ALIVE_FILE");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_FALSE(contains(out.stdout_text, "not measured")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "3 production baselines stored")) << out.stdout_text;
  out = kopt({"baselines", "--list", "--json", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto rows = nlohmann::json::parse(out.stdout_text);
  ASSERT_EQ(rows.size(), 3u) << rows.dump(2);
  EXPECT_EQ(rows[0]["name"], "cublaslt_autotuned");  // fastest first
  EXPECT_DOUBLE_EQ(rows[0]["median_us"].get<double>(), 5301.5);
  EXPECT_EQ(rows[0]["library_versions"]["timer"], "kopt-sandbox CUPTI");
  EXPECT_EQ(rows[0]["gpu_model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rows[0]["detail"], "best of 16 heuristic algorithms (index 3)");
  EXPECT_EQ(rows[1]["name"], "cublaslt_heuristic");
  EXPECT_EQ(rows[2]["name"], "torch_eager");
}

TEST_F(BaselinesCliTest, AWorkerThatCannotStartIsReportedAndTheTorchRowsAreStillStored) {
  ASSERT_TRUE(write_file_atomic(helper_,
                                "import json\n"
                                "print(json.dumps({'task': 'sgemm', 'name': 'torch_eager',"
                                " 'median_us': 5400.0, 'samples': 30,"
                                " 'device': {'name': 'NVIDIA H100 80GB HBM3'}}))\n")
                  .ok());
  auto out = kopt({"baselines", "sgemm", "--db", db_, "--helper", helper_, "--worker",
                   (dir_ / "no-such-worker").string()});
  EXPECT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "not measured: cuBLASLt baselines:")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "1 production baselines stored")) << out.stdout_text;
}

// A declared library that does not import on the GPU machine: stored as an absence, listed and
// said in status as "not installed" beside the baseline that stands in (issue 33).
constexpr const char* kHelperWithoutVllm = R"py(
print('{"task": "axpy", "name": "torch_compile", "median_us": 266.3, "samples": 60,'
      ' "device": {"name": "NVIDIA H100 80GB HBM3"}}')
print('{"task": "axpy", "name": "vllm", "device": {"name": "NVIDIA H100 80GB HBM3"}, "error":'
      ' "not installed: the baseline is the PyTorch composition (vllm does not import)"}')
)py";

TEST_F(BaselinesCliTest, ALibraryNotInstalledIsSaidInTheListAndInStatus) {
  ASSERT_TRUE(write_file_atomic(helper_, kHelperWithoutVllm).ok());
  auto out = measure();
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "not measured: axpy vllm: not installed"))
      << out.stdout_text;
  out = kopt({"baselines", "--list", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "vllm")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "not installed")) << out.stdout_text;
  publish_finished_run(db_);
  out = kopt({"status", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "vllm not installed")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "S 0.40 vs torch_compile")) << out.stdout_text;
  out = kopt({"status", "--db", db_, "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto tasks = nlohmann::json::parse(out.stdout_text)["tasks"];
  EXPECT_EQ(tasks[0]["standing"]["libraries_not_installed"], nlohmann::json({"vllm"}));
  // The report's "vs production" cell and the export's README say it too.
  std::string md = (dir_ / "report.md").string();
  out = kopt({"report", "--run", "all", "--db", db_, "--markdown", md});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(*read_file(md), "vllm not installed \\(torch\\_compile stands in\\)"))
      << *read_file(md);
  auto exported = dir_ / "kernels";
  out = kopt({"export", "--db", db_, "--out", exported.string()});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto readme = read_file(exported / "README.md");
  ASSERT_TRUE(readme.ok()) << readme.error();
  EXPECT_TRUE(contains(*readme,
                       "| 0.95x torch\\_compile; vllm not installed \\(torch\\_compile "
                       "stands in\\) |"))
      << *readme;
}

}  // namespace
}  // namespace kopt::memory
