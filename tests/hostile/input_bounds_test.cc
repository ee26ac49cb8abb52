// The parsers of model and imported text, fed pathological and random inputs in this process
// (issue 34, causes 2, 3, 4, 6 and 8): cutting never splits a character, no JSON value nests
// deep enough to overflow the stack later, the plan parser, the JSON extraction, the kernel
// file's plan, the line diff and the JSONL import stay near linear at the 256 KiB cap, keys are
// found split across punctuation, and token counts cannot go negative. Time bounds are generous
// (seconds for what takes milliseconds): they catch a quadratic loop, not a slow machine.
// Random cases come from a fixed seed (KOPT_FUZZ_SEED to vary it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "agents/planner.h"
#include "agents/summarizer.h"
#include "common/json_limits.h"
#include "common/json_reader.h"
#include "common/scrub_secrets.h"
#include "common/sha256.h"
#include "common/text_escape.h"
#include "common/utf8.h"
#include "exchange/jsonl_io.h"
#include "llm/extract.h"
#include "llm/request_limits.h"
#include "llm/wire_format.h"
#include "memory_store/line_diff.h"
#include "memory_store/memory_store.h"
#include "sandbox/kernel_file.h"
#include "tests/support/temp_dir.h"

namespace kopt {
namespace {

constexpr size_t kCap = 256 * 1024;

// Seconds `work` took.
template <typename F>
double seconds_of(F&& work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint64_t fuzz_seed() {
  const char* seed = std::getenv("KOPT_FUZZ_SEED");
  return seed ? std::strtoull(seed, nullptr, 10) : 34;
}

// ---- cause 2: text cut on characters, validated at the edge --------------------------------

TEST(Utf8Text, ClipNeverSplitsACharacterAndAlwaysDumps) {
  const std::string text = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";  // 1, 2, 3 and 4 bytes
  for (size_t cut = 0; cut <= text.size() + 1; ++cut) {
    std::string clipped = clip_utf8(text, cut);
    EXPECT_TRUE(is_valid_utf8(clipped)) << cut;
    EXPECT_LE(utf8_prefix(text, cut).size(), cut);
    EXPECT_TRUE(is_valid_utf8(utf8_suffix(text, cut))) << cut;
    EXPECT_NO_THROW((void)nlohmann::json(clipped).dump()) << cut;
  }
  EXPECT_EQ(clip_utf8("abc\xc3\xa9", 4), "abc...");
  EXPECT_EQ(valid_utf8("Requ\xeate"), "Requ\xef\xbf\xbdte");
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
  EXPECT_EQ(clip_utf8_middle("abcdef\xc3\xa9ghij", 9, "|"), "abcdef|hij");
  // json::dump throws on the raw bytes; dump_json replaces them.
  nlohmann::json latin1 = std::string("caf\xe9");
  EXPECT_THROW((void)latin1.dump(), nlohmann::json::type_error);
  EXPECT_EQ(dump_json(latin1), "\"caf\xef\xbf\xbd\"");
}

TEST(Utf8Text, RandomBytesAlwaysBecomeValidText) {
  std::mt19937_64 rng(fuzz_seed());
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    std::string valid = valid_utf8(bytes);
    ASSERT_TRUE(is_valid_utf8(valid));
    ASSERT_EQ(valid_utf8(valid), valid);
    size_t cut = bytes.empty() ? 0 : rng() % bytes.size();
    ASSERT_TRUE(is_valid_utf8(clip_utf8(bytes, cut)));
    ASSERT_NO_THROW((void)nlohmann::json(terminal_text(bytes)).dump());
  }
}

TEST(Utf8Text, PlanTitlesAndLessonsAreCutOnCharacters) {
  std::string title = std::string(59, 't') + "\xc3\xa9" + "tail";
  auto plans = agents::parse_plans(nlohmann::json{{"plans", {title}}}.dump());
  ASSERT_TRUE(plans) << plans.error();
  EXPECT_TRUE(is_valid_utf8((*plans)[0].title));
  EXPECT_LE((*plans)[0].title.size(), 60u);
  std::string lesson = std::string(799, 'l') + "\xc3\xa9" + "tail";
  auto parsed = agents::parse_lesson(nlohmann::json{{"lesson", lesson}}.dump());
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_TRUE(is_valid_utf8(parsed->summary));
  EXPECT_NO_THROW((void)nlohmann::json(parsed->summary).dump());
}

// ---- cause 3: depth ------------------------------------------------------------------------

TEST(JsonDepth, DeepValuesAreRefusedBeforeTheyAreBuilt) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_GT(json_nesting_depth(deep), kMaxJsonDepth);
  EXPECT_TRUE(parse_json_bounded(deep).is_discarded());
  // Brackets inside strings do not count.
  EXPECT_EQ(json_nesting_depth("{\"a\": \"[[[[[[\\\"[[[\"}"), 1u);
  std::string fine = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_FALSE(parse_json_bounded(fine).is_discarded());
  JsonReader reader("deep.json");
  EXPECT_FALSE(reader.parse(deep));
  EXPECT_NE(reader.message().find("levels deep"), std::string::npos) << reader.message();
  // Every extraction of model text: no value comes back, nothing crashes.
  EXPECT_FALSE(extract_json(deep));
  EXPECT_FALSE(extract_json("Sure:\n```json\n" + deep + "\n```\nand " + deep));
  EXPECT_FALSE(agents::parse_plans(deep));
  auto lesson = agents::parse_lesson(deep);  // the whole answer as prose, cut
  if (lesson) {
    EXPECT_LE(lesson->summary.size(), 803u);
  }
  std::string kernel = "/* kopt:plan\n" + deep + "\n*/\n__global__ void k() {}\n";
  EXPECT_FALSE(parse_kernel_file(kernel, "deep.cu", nullptr));
}

// ---- cause 4: work linear in the input -----------------------------------------------------

TEST(InputBounds, PlanParserAtTheCap) {
  nlohmann::json plans = nlohmann::json::array();
  for (size_t bytes = 0; bytes < kCap; bytes += 10) plans.push_back("p" + std::to_string(bytes));
  std::string answer = nlohmann::json{{"plans", plans}}.dump();
  Result<std::vector<agents::Plan>> parsed = make_error("not run");
  EXPECT_LT(seconds_of([&] { parsed = agents::parse_plans(answer); }), 5.0);
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_LE(parsed->size(), 64u);
}

TEST(InputBounds, JsonExtractionOfPathologicalAnswers) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"open braces", std::string(kCap, '{')},
      {"open brackets", std::string(kCap, '[')},
      {"keys without values",
       [] {
         std::string s;
         while (s.size() < kCap) s += "{\"a\":";
         return s;
       }()},
      {"unterminated strings",
       [] {
         std::string s;
         while (s.size() < kCap) s += "[\"\\\"";
         return s;
       }()},
      {"fences",
       [] {
         std::string s;
         while (s.size() < kCap) s += "```json\n{\n";
         return s;
       }()},
      {"prose with brackets",
       [] {
         std::string s;
         while (s.size() < kCap) s += "see [1] and {2} ";
         return s;
       }()},
  };
  for (const auto& [name, text] : cases) {
    double took = seconds_of([&] {
      (void)extract_json(text);
      (void)agents::parse_plans(text);
      (void)agents::parse_lesson(text);
      (void)extract_code_block(text, "cuda");
    });
    EXPECT_LT(took, 5.0) << name;
  }
}

TEST(InputBounds, KernelFilePlanAtTheCap) {
  const std::string body = "extern \"C\" __global__ void k(float* out) { out[threadIdx.x] = 0; }\n";
  auto plan_with = [](size_t launches, const std::string& kernel_name) {
    std::string list;
    for (size_t i = 0; i < launches; ++i)
      list += std::string(i ? "," : "") + "{\"kernel\":\"" + kernel_name +
              (kernel_name == "k" ? "" : std::to_string(i)) +
              "\",\"grid\":[1],\"block\":[1],\"args\":[\"out\"]}";
    return "/* kopt:plan\n{\"launches\": [" + list + "]}\n*/\n";
  };
  std::vector<std::pair<std::string, std::string>> cases;
  cases.push_back({"one kernel launched 3,000 times", plan_with(3000, "k") + body});
  cases.push_back({"3,000 distinct kernels", plan_with(3000, "n") + body});
  std::string globals;
  while (globals.size() < kCap - 200) globals += "__global__;";
  cases.push_back({"regions without a definition", plan_with(1, "k") + globals + body});
  std::string prototypes;
  while (prototypes.size() < kCap - 200) prototypes += "__global__ void k(int (a));\n";
  cases.push_back({"declarations only", plan_with(1, "k") + prototypes});
  for (const auto& [name, source] : cases) {
    ASSERT_LE(source.size(), kMaxKernelSourceBytes) << name;
    EXPECT_LT(seconds_of([&] { (void)parse_kernel_file(source, "hostile.cu", nullptr); }), 5.0)
        << name;
  }
  // Still right: a definition counts, a declaration does not.
  EXPECT_TRUE(parse_kernel_file(plan_with(2, "k") + body, "ok.cu", nullptr));
  EXPECT_FALSE(
      parse_kernel_file(plan_with(1, "k") + "__global__ void k(float* out);\n", "d.cu", nullptr));
}

TEST(InputBounds, LineDiffOfManyShortLines) {
  std::string many;
  for (int i = 0; i < 100000; ++i) many += std::to_string(i % 7) + "\n";
  std::string few = "a\nb\nc\n";
  std::string diff;
  EXPECT_LT(seconds_of([&] { diff = memory::unified_diff(few, many, "a", "b"); }), 5.0);
  EXPECT_NE(diff.find("@@"), std::string::npos);
  // Small edits still get the shortest script.
  auto ops = memory::diff_lines({"a", "b", "c", "d"}, {"a", "x", "c", "d"});
  int changed = 0;
  for (const auto& op : ops) changed += op.kind != memory::DiffOp::Kind::kEqual;
  EXPECT_EQ(changed, 2);
}

// A JSONL export with one task and one kernel of `source`, and `extra` lines after.
std::string jsonl_with_kernel(const std::string& source, const std::string& extra = "") {
  nlohmann::json spec = {{"name", "axpy"}};
  return nlohmann::json{{"type", "header"}, {"format", 2}, {"kind", "kopt-memory"}}.dump() + "\n" +
         nlohmann::json{
             {"type", "task"}, {"name", "axpy"}, {"spec_hash", "h"}, {"spec_json", spec.dump()}}
             .dump() +
         "\n" +
         nlohmann::json{{"type", "kernel"},
                        {"sha256", sha256_hex(source)},
                        {"task", "axpy"},
                        {"source", source}}
             .dump() +
         "\n" + extra;
}

TEST(InputBounds, JsonlImportCapsFieldsAndStaysLinear) {
  testing::TempDir dir;
  auto store = memory::MemoryStore::open(dir / "memory.db");
  ASSERT_TRUE(store) << store.error();
  std::string source =
      "/* kopt:plan\n{\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
      "\"args\": [\"out\"]}]}\n*/\n";
  std::string filler;
  while (source.size() + filler.size() < kMaxKernelSourceBytes - 200) filler += "//\n";
  source += filler + "extern \"C\" __global__ void k(float* out) { out[threadIdx.x] = 0; }\n";
  Result<memory::ImportReport> report = make_error("not run");
  EXPECT_LT(
      seconds_of([&] { report = memory::import_jsonl(*store, jsonl_with_kernel(source), "a"); }),
      20.0);
  ASSERT_TRUE(report) << report.error().substr(0, 2000);
  EXPECT_EQ(report->added.kernels, 1);

  // A field over its cap is refused by its path, and nothing of the file is written.
  nlohmann::json pair = {{"type", "pair"},
                         {"slow_sha256", sha256_hex(source)},
                         {"fast_sha256", sha256_hex(source)},
                         {"task", "axpy"},
                         {"speedup", 1.5},
                         {"gpu_model", "NVIDIA H100"},
                         {"summary", std::string(100 * 1024, 's')}};
  testing::TempDir other;
  auto fresh = memory::MemoryStore::open(other / "memory.db");
  ASSERT_TRUE(fresh) << fresh.error();
  auto refused = memory::import_jsonl(*fresh, jsonl_with_kernel(source, pair.dump() + "\n"), "b");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("$.summary"), std::string::npos) << refused.error();
  auto kernels = fresh->find_kernel(sha256_hex(source));
  ASSERT_TRUE(kernels) << kernels.error();
  EXPECT_FALSE(*kernels) << "a refused file wrote a kernel";
}

TEST(InputBounds, RandomAnswersNeverThrowOrCrash) {
  std::mt19937_64 rng(fuzz_seed());
  const std::vector<std::string> pieces = {
      "{",         "}",     "[",         "]",          "\"",        "\\",   ":",    ",",
      "```json\n", "```\n", "\"plans\"", "\"lesson\"", "\"title\"", "\xc3", "\xa9", "\xff",
      "\n",        " ",     "a",         "0",          "-",         "null", "[[[[", "]]]]"};
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    size_t parts = rng() % 200;
    for (size_t i = 0; i < parts; ++i) text += pieces[rng() % pieces.size()];
    ASSERT_NO_THROW({
      auto plans = agents::parse_plans(text);
      if (plans)
        for (const auto& p : *plans) (void)nlohmann::json(p.title + p.detail).dump();
      auto lesson = agents::parse_lesson(text);
      if (lesson) (void)nlohmann::json(valid_utf8(lesson->summary)).dump();
      auto value = extract_json(text);
      if (value) (void)dump_json(*value);
    }) << round;
  }
}

// ---- cause 6: keys scrubbed from what comes back -------------------------------------------

TEST(Scrubbing, KeysSplitAcrossPunctuationAreFound) {
  const std::string key = "sk-split-canary-9d8c7b6a5f4e3d2c1b0a";
  register_secret(key);
  std::string split;
  for (char c : key) split += std::string(split.empty() ? "" : "', '") + c;
  for (const std::string& text : std::vector<std::string>{
           "template<char... C> f<'" + split + "'>();", "Authorization: Bearer " + key,
           "sk-split-\ncanary-9d8c7b\n6a5f4e3d2c1b0a",
           "s k - s p l i t - c a n a r y - 9 d 8 c 7 b 6 a 5 f"}) {
    std::string scrubbed = scrub_registered_secrets(text);
    std::string compact;
    for (char c : scrubbed)
      if (std::isalnum(static_cast<unsigned char>(c))) compact += c;
    EXPECT_EQ(compact.find("canary9d8c7b"), std::string::npos) << scrubbed;
    EXPECT_NE(scrubbed.find(kRedacted), std::string::npos) << scrubbed;
  }
  // Code with `key = ...` is not a key shape for an answer: only registered values go.
  EXPECT_EQ(scrub_registered_secrets("int key = threadIdx.x + blockIdx.x;"),
            "int key = threadIdx.x + blockIdx.x;");
  // Ordinary prose never matches a long random key by chance.
  EXPECT_EQ(scrub_registered_secrets("the kernel splits the canary loop"),
            "the kernel splits the canary loop");
}

TEST(Scrubbing, SecretNamedEnvironmentValuesAreScrubbed) {
  ::setenv("KOPT_BOUNDS_TEST_TOKEN", "tok-env-canary-5e6f7a8b9c0d1e2f", 1);
  register_environment_secrets();
  EXPECT_EQ(scrub_secrets("x tok-env-canary-5e6f7a8b9c0d1e2f y").find("5e6f7a8b"),
            std::string::npos);
  ::unsetenv("KOPT_BOUNDS_TEST_TOKEN");
}

// ---- cause 8: token counts -----------------------------------------------------------------

TEST(Budgets, TokenCountsAreBoundedAndNeverNegative) {
  LlmUsage negative{.input_tokens = kUnknownTokens, .output_tokens = kUnknownTokens};
  LlmUsage billed = billed_usage(negative, /*answered=*/true, 10000, 4096);
  EXPECT_EQ(billed.input_tokens, 10000);
  EXPECT_EQ(billed.output_tokens, 4096);
  billed = billed_usage(negative, /*answered=*/false, 10000, 4096);
  EXPECT_EQ(billed.input_tokens, 0);
  EXPECT_EQ(billed.output_tokens, 0);
  billed = billed_usage({.input_tokens = int64_t{1} << 50, .output_tokens = 12}, true, 10000, 4096);
  EXPECT_EQ(billed.input_tokens, 10000);
  EXPECT_EQ(billed.output_tokens, 12);
}

TEST(Budgets, AnLlmSlotIsReleasedWhateverThrows) {
  ConcurrencyLimit limit(1);
  Cancellation never;
  for (int i = 0; i < 3; ++i) {
    try {
      ConcurrencySlot slot(limit, never);
      ASSERT_TRUE(slot.held());
      throw std::runtime_error("a hostile byte");
    } catch (const std::runtime_error&) {
    }
  }
  // A leaked slot would make this wait forever: the cancellation ends the wait and fails it.
  Cancellation give_up;
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    give_up.cancel();
  });
  {
    ConcurrencySlot again(limit, give_up);
    EXPECT_TRUE(again.held()) << "a slot leaked";
  }
  timer.join();
}

}  // namespace
}  // namespace kopt
