// Every option a `kopt memory` action accepts it honours, or refuses naming the option (issue
// 37): --task on search, calls, stats and export; --json on show and kernel; `kopt memory kernel
// ID [--out FILE]`. Through the real kopt binary on the sample memory (two tasks).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "memory_store/plan_store.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput kopt(std::vector<std::string> args) {
  return run_kopt(KOPT_BINARY, std::move(args), std::chrono::seconds(60));
}

class MemoryOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "memory.db").string();
    auto store = open_store(db_);
    sample_ = fill_sample_memory(store);
    for (const char* task : {"axpy", "softmax", "softmax"}) {
      TranscriptRecord t;
      t.agent = "coder";
      t.task = task;
      t.prompt = std::string("write a faster ") + task;
      t.answer = "```cuda\n```";
      ASSERT_TRUE(add_transcript(store.database(), t));
    }
  }

  nlohmann::json json_of(std::vector<std::string> args) {
    args.insert(args.end(), {"--db", db_});
    auto out = kopt(args);
    EXPECT_EQ(out.exit_code, 0) << args[1] << ": " << out.stderr_text;
    return nlohmann::json::parse(out.stdout_text, nullptr, false);
  }

  TempDir dir_;
  std::string db_;
  SampleMemory sample_;
};

TEST_F(MemoryOptionsTest, TaskNarrowsSearch) {
  auto all = json_of({"memory", "search", "BLOCK", "--json"});
  auto softmax = json_of({"memory", "search", "BLOCK", "--json", "--task", "softmax"});
  ASSERT_TRUE(softmax.is_array());
  ASSERT_GT(softmax.size(), 0u) << all.dump();
  EXPECT_LT(softmax.size(), all.size()) << all.dump();
  for (const auto& hit : softmax) EXPECT_EQ(hit["task"], "softmax") << hit.dump();
}

TEST_F(MemoryOptionsTest, TaskNarrowsCalls) {
  EXPECT_EQ(json_of({"memory", "calls", "--json"}).size(), 3u);
  auto softmax = json_of({"memory", "calls", "--json", "--task", "softmax"});
  ASSERT_EQ(softmax.size(), 2u);
  for (const auto& call : softmax) EXPECT_EQ(call["task"], "softmax");
}

TEST_F(MemoryOptionsTest, TaskNarrowsStats) {
  auto all = json_of({"memory", "stats", "--json"});
  auto axpy = json_of({"memory", "stats", "--json", "--task", "axpy"});
  EXPECT_EQ(all["tasks"], 2);
  EXPECT_EQ(axpy["tasks"], 1);
  EXPECT_EQ(axpy["task"], "axpy");
  EXPECT_LT(axpy["kernels"].get<int64_t>(), all["kernels"].get<int64_t>());
  EXPECT_EQ(axpy["evaluations_by_task"].size(), 1u);
  EXPECT_TRUE(axpy["evaluations_by_task"].contains("axpy"));
  EXPECT_TRUE(axpy["llm_calls"].is_null()) << "calls are not counted per task";
  auto text = kopt({"memory", "stats", "--task", "axpy", "--db", db_});
  EXPECT_TRUE(contains(text.stdout_text, "task axpy: 1 tasks")) << text.stdout_text;
}

TEST_F(MemoryOptionsTest, TaskNarrowsExportAndTheLinesImportOnTheirOwn) {
  auto file = dir_ / "axpy.jsonl";
  auto out = kopt({"memory", "export", "--jsonl", file.string(), "--task", "axpy", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "exported 1 tasks")) << out.stdout_text;
  auto text = read_file(file);
  ASSERT_TRUE(text);
  EXPECT_FALSE(contains(*text, "\"softmax\"")) << *text;
  EXPECT_TRUE(contains(*text, "\"axpy\""));
  auto other = (dir_ / "other.db").string();
  auto imported = kopt({"memory", "import", "--jsonl", file.string(), "--db", other});
  ASSERT_EQ(imported.exit_code, 0) << imported.stderr_text;
  EXPECT_TRUE(contains(imported.stdout_text, "added 1 tasks")) << imported.stdout_text;
}

TEST_F(MemoryOptionsTest, AnOptionAnActionDoesNotUseIsRefusedByName) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"memory", "export", "--jsonl", (dir_ / "x.jsonl").string(), "--json"},
       "--json is not an option of export (the export is JSON lines already"},
      {{"memory", "show", "1", "--task", "axpy"}, "--task is not an option of show"},
      {{"memory", "search", "float4", "--gpu", "H100"}, "--gpu is not an option of search"},
      {{"memory", "import", "--jsonl", "x", "--task", "axpy"}, "--task is not an option of import"},
      {{"memory", "prune", "--json"}, "--json is not an option of prune"},
  };
  for (auto c : cases) {
    c.args.insert(c.args.end(), {"--db", db_});
    auto out = kopt(c.args);
    EXPECT_EQ(out.exit_code, 2) << c.says;
    EXPECT_TRUE(contains(out.stderr_text, c.says)) << out.stderr_text;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.jsonl"));
  auto unknown = kopt({"memory", "calls", "--task", "axpi", "--db", db_});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.stderr_text, "did you mean 'axpy'")) << unknown.stderr_text;
}

TEST_F(MemoryOptionsTest, WinsSayEachTasksBestAsTheOtherViewsDo) {
  auto out = kopt({"memory", "wins", "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  // softmax: the 100 us evaluation was incorrect; its best verified is 450 us against 900 us.
  EXPECT_TRUE(contains(out.stdout_text,
                       "best of softmax on NVIDIA H100 80GB HBM3: 2.00x its "
                       "baseline (kernel " +
                           std::to_string(sample_.softmax_fast)))
      << out.stdout_text;
}

TEST_F(MemoryOptionsTest, ExportJsonIsOneDocument) {
  auto out = kopt({"export", "--db", db_, "--out", (dir_ / "kernels").string(), "--json"});
  auto json = nlohmann::json::parse(out.stdout_text, nullptr, false);
  ASSERT_TRUE(json.is_object()) << out.stdout_text << out.stderr_text;
  EXPECT_EQ(json["exit_code"], out.exit_code);
  ASSERT_EQ(json["kernels"].size(), 2u) << json.dump(2);
  EXPECT_EQ(json["kernels"][0]["status"], "exported");
  EXPECT_GT(json["written"].size(), 0u);
  EXPECT_TRUE(json["commit"].is_null());
}

TEST_F(MemoryOptionsTest, ShowJsonIsJson) {
  auto pair = json_of({"memory", "show", std::to_string(sample_.axpy_pair), "--json"});
  ASSERT_TRUE(pair.is_object());
  EXPECT_EQ(pair["id"], sample_.axpy_pair);
  EXPECT_EQ(pair["task"], "axpy");
  EXPECT_TRUE(contains(pair["fast_source"].get<std::string>(), "float4"));
  EXPECT_TRUE(contains(pair["diff"].get<std::string>(), "@@"));
}

TEST_F(MemoryOptionsTest, KernelPrintsOrSavesOneKernel) {
  auto id = std::to_string(sample_.axpy_fast);
  auto out = kopt({"memory", "kernel", id, "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_EQ(out.stdout_text, fast_axpy_source());
  auto file = dir_ / "fast.cu";
  out = kopt({"memory", "kernel", id, "--out", file.string(), "--db", db_});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_EQ(*read_file(file), fast_axpy_source());
  out = kopt({"memory", "kernel", id, "--out", file.string(), "--db", db_});
  EXPECT_EQ(out.exit_code, 1);  // never overwrites
  EXPECT_TRUE(contains(out.stderr_text, "exists")) << out.stderr_text;
  auto json = json_of({"memory", "kernel", id, "--json"});
  EXPECT_EQ(json["task"], "axpy");
  EXPECT_EQ(json["source"], fast_axpy_source());
  out = kopt({"memory", "kernel", "999", "--db", db_});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "no kernel 999")) << out.stderr_text;
}

}  // namespace
}  // namespace kopt::memory
