// Sharing a memory as JSON lines: a full round trip, de-duplication on import, strict reading.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/sha256.h"
#include "common/strings.h"
#include "exchange/jsonl_io.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

void fill(MemoryStore& store) {
  add_task(store, "softmax", {"reduction", "memory-bound", "fp32"});
  int64_t a = add_kernel(store, "softmax", kernel_source("softmax_rows", "shared tree"));
  int64_t b = add_kernel(store, "softmax", kernel_source("softmax_rows", "__shfl_xor_sync"), a);
  EvaluationRecord e;
  e.kernel_id = b;
  e.task = "softmax";
  e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
  e.verdict = Verdict::kOk;
  e.median_us = 120.5;
  e.baseline_us = 250;
  e.speedup = 250 / 120.5;
  e.tunables_json = "{\"BLOCK\":256}";
  e.resources_json = "{\"registers\":32}";
  e.profile_json =
      R"({"dram_percent":88.5,"stalls":[{"percent":61.0,"reason":"long_scoreboard"}]})";
  e.created_at = "2026-11-22T03:00:00Z";
  if (!store.add_evaluation(e)) throw std::runtime_error("evaluation");
  int64_t p =
      add_pair(store, "softmax", a, b, 2.07, "warp shuffles", {"reduction", "warp-shuffle"});
  if (!store.mark_retrieved({p, p, p})) throw std::runtime_error("mark");
  if (!store.record_outcome(p, true)) throw std::runtime_error("outcome");
}

std::string export_text(MemoryStore& store) {
  std::ostringstream out;
  auto counts = export_jsonl(store, out);
  if (!counts) throw std::runtime_error(counts.error());
  return out.str();
}

TEST(JsonlTest, RoundTripIntoAnEmptyMemory) {
  TempDir dir;
  MemoryStore source = open_store(dir / "a.db");
  fill(source);
  std::string text = export_text(source);
  MemoryStore target = open_store(dir / "b.db");
  auto report = import_jsonl(target, text, "a.jsonl");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->added.tasks, 1);
  EXPECT_EQ(report->added.kernels, 2);
  EXPECT_EQ(report->added.evaluations, 1);
  EXPECT_EQ(report->added.pairs, 1);
  // Exported again, the copy reads the same as the original.
  EXPECT_EQ(export_text(target), text);
  auto pair = *target.pair(1);
  EXPECT_EQ(pair->retrieved_count, 3);
  EXPECT_EQ(pair->improved_count, 1);
  EXPECT_EQ(pair->tags, (std::vector<std::string>{"reduction", "warp-shuffle"}));
  auto best = *target.best_kernel("softmax", "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->tunables_json, "{\"BLOCK\":256}");
  EXPECT_EQ(best->profile_json,
            R"({"dram_percent":88.5,"stalls":[{"percent":61.0,"reason":"long_scoreboard"}]})");
  EXPECT_EQ(*target.latest_profile(best->kernel_id), best->profile_json);
  EXPECT_EQ(*target.latest_profile(1), "");          // the slow kernel was never profiled
  EXPECT_EQ(target.search("shuffles")->size(), 1u);  // indexed on import
}

TEST(JsonlTest, ImportingTwiceAddsNothing) {
  TempDir dir;
  MemoryStore store = open_store(dir / "a.db");
  fill(store);
  std::string text = export_text(store);
  auto report = import_jsonl(store, text, "self.jsonl");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(
      report->added.tasks + report->added.kernels + report->added.evaluations + report->added.pairs,
      0);
  EXPECT_EQ(report->present.kernels, 2);
  EXPECT_EQ(report->present.evaluations, 1);
  EXPECT_EQ(report->present.pairs, 1);
  EXPECT_EQ(export_text(store), text);
}

// A format-1 file (written before evaluations carried "profile") still imports; its evaluations
// come in as not profiled.
TEST(JsonlTest, Format1FileStillImports) {
  TempDir dir;
  MemoryStore source = open_store(dir / "a.db");
  fill(source);
  std::istringstream lines(export_text(source));
  std::string format1;
  int profiles_dropped = 0;
  for (std::string line; std::getline(lines, line);) {
    auto object = nlohmann::json::parse(line);
    if (object["type"] == "header") {
      EXPECT_EQ(object["format"], 2);
      object["format"] = 1;
    }
    if (object["type"] == "evaluation") profiles_dropped += int(object.erase("profile"));
    format1 += object.dump() + "\n";
  }
  ASSERT_EQ(profiles_dropped, 1);
  MemoryStore target = open_store(dir / "b.db");
  auto report = import_jsonl(target, format1, "old.jsonl");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->added.evaluations, 1);
  EXPECT_EQ(report->added.pairs, 1);
  auto best = *target.best_kernel("softmax", "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->profile_json, "{}");
  EXPECT_EQ(best->tunables_json, "{\"BLOCK\":256}");
  EXPECT_EQ(*target.latest_profile(best->kernel_id), "");
}

TEST(JsonlTest, BadLineStoresNothingAndNamesTheLine) {
  TempDir dir;
  MemoryStore source = open_store(dir / "a.db");
  fill(source);
  std::string text = export_text(source);
  text += "{\"type\":\"pair\",\"slow_sha256\":\"x\",\"speedupp\":2}\n";
  MemoryStore target = open_store(dir / "b.db");
  auto report = import_jsonl(target, text, "bad.jsonl");
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().find("bad.jsonl:7: $.speedupp: unknown key (did you mean 'speedup'?)"),
            std::string::npos)
      << report.error();
  EXPECT_EQ(*target.database().query_int64("SELECT count(*) FROM kernels"), 0);
  EXPECT_EQ(*target.database().query_int64("SELECT count(*) FROM tasks"), 0);
}

TEST(JsonlTest, RefusesDamagedKernelsNewerFormatsAndMissingHeader) {
  TempDir dir;
  MemoryStore source = open_store(dir / "a.db");
  fill(source);
  std::string text = export_text(source);
  MemoryStore target = open_store(dir / "b.db");

  std::string damaged = text;
  size_t at = damaged.find("shared tree");
  ASSERT_NE(at, std::string::npos);
  damaged.replace(at, 6, "SHARED");
  auto r = import_jsonl(target, damaged, "damaged.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("does not match the SHA-256"), std::string::npos) << r.error();

  std::string newer = text;
  const std::string header_format = "\"format\":" + std::to_string(kJsonlFormatVersion);
  ASSERT_NE(newer.find(header_format), std::string::npos) << newer;
  newer.replace(newer.find(header_format), header_format.size(), "\"format\":9");
  r = import_jsonl(target, newer, "newer.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("newer.jsonl:1: $.format: format 9 is newer"), std::string::npos)
      << r.error();

  r = import_jsonl(target, text.substr(text.find('\n') + 1), "headless.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("first line must be the header"), std::string::npos) << r.error();

  r = import_jsonl(target, "{not json\n", "broken.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("broken.jsonl:1:"), std::string::npos) << r.error();

  EXPECT_FALSE(import_jsonl(target, "", "empty.jsonl").ok());
  EXPECT_EQ(*target.database().query_int64("SELECT count(*) FROM kernels"), 0);
}

// Names that become paths or code pass the task.json and compile-gate rules on import; a bad one
// is named by line and JSON path, and nothing of the file is stored. Each hostile line has a
// twin in the plain export, which imports.
TEST(JsonlTest, RefusesHostileNamesAndHostCodeWithTheirJsonPath) {
  TempDir dir;
  MemoryStore source = open_store(dir / "a.db");
  fill(source);
  std::string text = export_text(source);
  auto lines = split(text, '\n');
  auto with_line = [&](int index, const std::function<void(nlohmann::json&)>& change) {
    std::string out;
    for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
      if (lines[i].empty()) continue;
      if (i != index) {
        out += lines[i] + "\n";
        continue;
      }
      auto j = nlohmann::json::parse(lines[i]);
      change(j);
      out += j.dump() + "\n";
    }
    return out;
  };
  auto index_of = [&](const std::string& type) {
    for (int i = 0; i < static_cast<int>(lines.size()); ++i)
      if (lines[i].find("\"type\":\"" + type + "\"") != std::string::npos) return i;
    return -1;
  };
  struct Case {
    std::string type;
    std::function<void(nlohmann::json&)> change;
    std::string expected;
  };
  const std::string host_code =
      "#ifndef __CUDACC_RTC__\n__attribute__((constructor)) void pwn() {}\n#endif\n";
  const std::vector<Case> cases = {
      {"task", [](nlohmann::json& j) { j["name"] = "../../x"; }, "$.name: '../../x' is refused"},
      {"kernel", [](nlohmann::json& j) { j["task"] = "../../x"; }, "$.task: '../../x'"},
      {"evaluation", [](nlohmann::json& j) { j["gpu"]["model"] = "H100\n\")\nexecute_process("; },
       "$.gpu.model"},
      {"pair", [](nlohmann::json& j) { j["gpu_model"] = "A100 ${CMAKE_COMMAND}"; }, "$.gpu_model"},
      {"pair", [](nlohmann::json& j) { j["gpu_arch"] = "sm_90;rm"; }, "$.gpu_arch"},
      {"evaluation",
       [](nlohmann::json& j) {
         j["tunables"] = {{"X;Y", 1}};
       },
       "$.tunables.X;Y"},
      {"kernel",
       [&](nlohmann::json& j) {
         std::string src = j["source"].get<std::string>() + host_code;
         j["source"] = src;
         j["sha256"] = sha256_hex(src);
       },
       "$.source: kernel.cu:"},
  };
  for (const auto& c : cases) {
    int index = index_of(c.type);
    ASSERT_GE(index, 0) << c.type;
    MemoryStore target = open_store(dir / ("t" + std::to_string(&c - cases.data()) + ".db"));
    auto r = import_jsonl(target, with_line(index, c.change), "hostile.jsonl");
    ASSERT_FALSE(r.ok()) << c.expected;
    EXPECT_NE(r.error().find("hostile.jsonl:" + std::to_string(index + 1) + ": " + c.expected),
              std::string::npos)
        << r.error();
    EXPECT_EQ(r.error().find('\x1b'), std::string::npos);
    for (const char* table : {"tasks", "kernels", "evaluations", "pairs"})
      EXPECT_EQ(*target.database().query_int64(std::string("SELECT count(*) FROM ") + table), 0)
          << table;
  }
  MemoryStore twin = open_store(dir / "twin.db");
  auto r = import_jsonl(twin, with_line(-1, {}), "plain.jsonl");
  EXPECT_TRUE(r.ok()) << r.error();
}

TEST(JsonlTest, MergesPairsIntoAMemoryThatAlreadyHasThem) {
  TempDir dir;
  MemoryStore a = open_store(dir / "a.db");
  fill(a);
  std::string text = export_text(a);
  MemoryStore b = open_store(dir / "b.db");
  ASSERT_TRUE(import_jsonl(b, text, "a.jsonl").ok());
  // b learns more about the pair; importing a's older view keeps b's larger counters.
  ASSERT_TRUE(b.mark_retrieved({1, 1, 1, 1, 1}).ok());
  auto report = import_jsonl(b, text, "a.jsonl");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->present.pairs, 1);
  EXPECT_EQ((*b.pair(1))->retrieved_count, 8);
}

}  // namespace
}  // namespace kopt::memory
