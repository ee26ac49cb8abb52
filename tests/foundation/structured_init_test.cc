// Structured inputs (issue 33, sandbox/structured_init.h): block tables, permutations, edge
// values, NaN in stale slots and hot/cold routing columns. Each mistake is reported with the file
// and the JSON path; the real-world suite and its planted kernels' plain variants all parse.
#include "sandbox/structured_init.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/strings.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

using nlohmann::json;
bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

constexpr const char* kOrigin = "tasks/p/task.json";

// A small paged-decode task: lengths, a table for them, and a pool with stale slots.
json paged_task() {
  return json::parse(R"({
    "format": 3, "name": "paged", "description": "d", "tags": ["attention"],
    "sizes": {"batch": 4, "page": 16, "max_pages": 8, "num_pages": 64, "kv": 2, "d": 8,
              "experts": 8},
    "inputs": [
      {"name": "seq_lens", "dtype": "i32", "shape": ["batch"],
       "init": {"dist": "randint", "low": 0, "high": "max_pages * page + 1",
                "edges": [0, 1, "page", "max_pages * page"]}},
      {"name": "block_table", "dtype": "i32", "shape": ["batch", "max_pages"],
       "init": {"dist": "pages", "lengths": "seq_lens", "page": "page", "pool": "num_pages"}},
      {"name": "k_pages", "dtype": "bf16", "shape": ["num_pages", "page", "kv", "d"],
       "init": {"dist": "normal", "stale": {"table": "block_table", "lengths": "seq_lens",
                                            "page": "page", "slot": "kv * d"}}},
      {"name": "g_idx", "dtype": "i32", "shape": ["d"],
       "init": {"dist": "permutation", "divide": 2}},
      {"name": "logits", "dtype": "f32", "shape": ["batch", "experts"],
       "init": {"dist": "normal", "routing": {"experts": "experts", "hot": 1, "cold": 2}}}
    ],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["batch", "d"]}],
    "shapes": [{}, {"batch": 1, "max_pages": 1}],
    "tolerance": {"atol": 1e-3, "rtol": 1e-3, "max_error": 1e-2},
    "flops": "batch", "bytes": "batch"
  })");
}

std::string errors_of(const json& t) {
  auto parsed = parse_task(t.dump(2), kOrigin);
  EXPECT_FALSE(parsed.ok()) << t.dump();
  return parsed.ok() ? "" : parsed.error();
}

void expect_error(const json& t, const std::string& path, const std::string& what) {
  std::string errors = errors_of(t);
  EXPECT_TRUE(contains(errors, std::string(kOrigin) + ": " + path + ": ") && contains(errors, what))
      << "wanted " << path << ": ..." << what << "\ngot:\n"
      << errors;
}

TEST(StructuredInit, PagedTaskParsesAndDescribes) {
  auto task = parse_task(paged_task().dump(), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(describe_init(task->inputs[0].init),
            "integers 0..max_pages * page + 1-1, edges 0, 1, page, max_pages * page");
  EXPECT_EQ(describe_init(task->inputs[1].init),
            "shuffled pages of page for seq_lens, padded with unused pages");
  EXPECT_TRUE(contains(describe_init(task->inputs[2].init), "NaN in slots no sequence reads"));
  EXPECT_EQ(describe_init(task->inputs[3].init), "a shuffled permutation / 2");
  EXPECT_TRUE(contains(describe_init(task->inputs[4].init), "1 hot and 2 cold experts"));
}

TEST(StructuredInit, DependentsAreRefilledTogether) {
  auto task = parse_task(paged_task().dump(), kOrigin);
  ASSERT_TRUE(task.ok()) << task.error();
  EXPECT_EQ(structured_dependents(*task, "seq_lens"),
            (std::vector<std::string>{"block_table", "k_pages"}));
  EXPECT_EQ(structured_dependents(*task, "block_table"), std::vector<std::string>{"k_pages"});
  EXPECT_TRUE(structured_dependents(*task, "logits").empty());
}

TEST(StructuredInit, NamedInputsMustExistComeFirstAndBeIntegers) {
  json t = paged_task();
  t["inputs"][1]["init"]["lengths"] = "seq_len";
  expect_error(t, "$.inputs[1].init.lengths", "no input named 'seq_len' (did you mean 'seq_lens'");
  t = paged_task();
  t["inputs"][2]["init"]["stale"]["table"] = "g_idx";
  expect_error(t, "$.inputs[2].init.stale.table", "must come before 'k_pages'");
  t = paged_task();
  t["inputs"][2]["init"]["stale"]["lengths"] = "k_pages";
  expect_error(t, "$.inputs[2].init.stale.lengths", "must come before");
  t = paged_task();
  t["inputs"][0]["dtype"] = "f32";
  t["inputs"][0]["init"] = {{"dist", "normal"}};
  expect_error(t, "$.inputs[1].init.lengths", "must be an integer tensor");
}

TEST(StructuredInit, KeysAreCheckedWhereTheyAreWritten) {
  json t = paged_task();
  t["inputs"][2]["init"]["stale"]["slots"] = 3;
  expect_error(t, "$.inputs[2].init.stale.slots", "did you mean 'slot'");
  t = paged_task();
  t["inputs"][1]["init"]["pad"] = "zero";
  expect_error(t, "$.inputs[1].init.pad", "\"unused\"");
  t = paged_task();
  t["inputs"][3]["dtype"] = "f32";
  expect_error(t, "$.inputs[3].init.dist", "only for i32 or i64 inputs");
  t = paged_task();
  t["inputs"][4]["dtype"] = "bf16";
  expect_error(t, "$.inputs[4].init.routing", "must be f32");
  t = paged_task();
  t["inputs"][4]["init"]["edges"] = json::array({1});
  expect_error(t, "$.inputs[4].init.edges", "only with \"dist\": \"randint\"");
  t = paged_task();
  t["inputs"][0]["init"]["divide"] = 2;
  expect_error(t, "$.inputs[0].init.divide", "only with \"dist\": \"pages\" or \"permutation\"");
  t = paged_task();
  t["inputs"][1]["init"]["dist"] = "page";
  expect_error(t, "$.inputs[1].init.dist", "did you mean 'pages'");
  t = paged_task();
  t["inputs"][0]["init"]["stale"] = t["inputs"][2]["init"]["stale"];
  expect_error(t, "$.inputs[0].init.stale", "only float inputs can hold NaN");
}

TEST(StructuredInit, ShapesMustHoldTheStructure) {
  json t = paged_task();
  t["shapes"].push_back({{"num_pages", 3}, {"kv", 1}});  // fine: pages are shared then
  t["inputs"][0]["init"]["high"] = "max_pages * page + 2";
  expect_error(t, "$.shapes[0]", "'seq_lens' reaches 129 tokens, more than the table's 8 pages");
  t = paged_task();
  t["inputs"][2]["shape"] = json::array({"num_pages * page + 1", "kv", "d"});
  t["inputs"][2]["init"]["stale"]["slot"] = "kv * d";
  expect_error(t, "$.shapes[0]", "not whole pages of 16 x 16");
  t = paged_task();
  t["inputs"][4]["init"]["routing"]["cold"] = "experts";
  expect_error(t, "$.shapes[0]", "hot + cold (9) exceeds the experts (8)");
  t = paged_task();
  t["stress"] = json::array(
      {{{"name", "wide"},
        {"inputs",
         {{"seq_lens", {{"dist", "randint"}, {"low", 0}, {"high", "max_pages * page + 9"}}}}}}});
  expect_error(t, "$.stress[0] at $.shapes[0]", "more than the table's");
}

// The suite itself, and every planted kernel's plain variant (tests/sandbox/realworld_test.cc
// swaps these inits in on the GPU): each must stay a valid task.
TEST(StructuredInit, RealWorldSuiteAndPlainVariantsParse) {
  std::filesystem::path root = std::filesystem::path(KOPT_SOURCE_DIR);
  for (const char* name :
       {"paged_decode_attention", "causal_prefill_gqa", "fused_moe", "w4a16_gemm", "fp8_block_gemm",
        "paged_decode_attention_fp8kv", "causal_prefill_varlen", "fused_moe_grouped_topk"}) {
    auto task = load_task(root / "tasks_realworld" / name);
    EXPECT_TRUE(task.ok()) << task.error();
  }
  int plain_variants = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(root / "tests" / "sandbox" / "realworld")) {
    auto source = read_file(entry.path());
    ASSERT_TRUE(source.ok()) << source.error();
    std::string task_name;
    std::map<std::string, json> plain;
    for (const auto& line : split(*source, '\n')) {
      if (line.rfind("// task: ", 0) == 0) task_name = trim(line.substr(9));
      if (line.rfind("// plain: ", 0) != 0) continue;
      std::string rest = line.substr(10);
      plain[rest.substr(0, rest.find(' '))] = json::parse(rest.substr(rest.find(' ') + 1));
    }
    auto text = read_file(root / "tasks_realworld" / task_name / "task.json");
    ASSERT_TRUE(text.ok()) << entry.path() << ": " << text.error();
    if (plain.empty()) continue;
    json spec = json::parse(*text);
    for (auto& input : spec["inputs"])
      if (auto it = plain.find(input["name"]); it != plain.end()) {
        input["init"] = it->second;
        plain.erase(it);
      }
    EXPECT_TRUE(plain.empty()) << entry.path() << " names an input its task lacks";
    auto variant = parse_task(spec.dump(), entry.path().string());
    EXPECT_TRUE(variant.ok()) << variant.error();
    ++plain_variants;
  }
  EXPECT_GE(plain_variants, 4);
}

}  // namespace
}  // namespace kopt
