// Getting code and JSON out of replies as models really write them.
#include "llm/extract.h"

#include <gtest/gtest.h>

namespace kopt {
namespace {

TEST(ExtractCodeBlockTest, TaggedBlockInProse) {
  auto code = extract_code_block(
      "Here is a faster kernel:\n\n```cuda\n__global__ void k() {}\n```\n\nIt uses float4.",
      "cuda");
  ASSERT_TRUE(code.ok()) << code.error();
  EXPECT_EQ(*code, "__global__ void k() {}\n");
}

TEST(ExtractCodeBlockTest, PicksTheRequestedLanguageAmongSeveralBlocks) {
  std::string text =
      "Run it with:\n```bash\nnvcc k.cu\n```\nA snippet:\n```cuda\nint x;\n```\n"
      "The whole file:\n```cuda\n// kopt:plan\n__global__ void k() { int y = 1; }\n```\n"
      "```python\nprint(1)\n```\n";
  auto code = extract_code_block(text, "cuda");
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, "// kopt:plan\n__global__ void k() { int y = 1; }\n");  // the longest
  EXPECT_EQ(*extract_code_block(text, "python"), "print(1)\n");
}

TEST(ExtractCodeBlockTest, TagsAreCaseInsensitiveAndCudaAcceptsCppAliases) {
  EXPECT_EQ(*extract_code_block("```CUDA\na\n```", "cuda"), "a\n");
  EXPECT_EQ(*extract_code_block("```c++\nb\n```", "cuda"), "b\n");
  EXPECT_EQ(*extract_code_block("```cpp title=\"k.cu\"\nc\n```", "cuda"), "c\n");
  EXPECT_EQ(*extract_code_block("```{.cu}\nd\n```", "cuda"), "d\n");
}

TEST(ExtractCodeBlockTest, UntaggedBlockIsTheFallback) {
  auto code = extract_code_block("Sure.\n```\n__global__ void k() {}\n```\n", "cuda");
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, "__global__ void k() {}\n");
  // A tagged match wins over a longer untagged block.
  EXPECT_EQ(*extract_code_block("```\nlong long long long\n```\n```cuda\nshort\n```", "cuda"),
            "short\n");
}

TEST(ExtractCodeBlockTest, MissingClosingFenceRunsToTheEnd) {
  auto code = extract_code_block("```cuda\n__global__ void k() {\n  int i = 0;\n", "cuda");
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, "__global__ void k() {\n  int i = 0;\n");
  auto blocks = find_code_blocks("```cuda\nx\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_FALSE(blocks[0].closed);
}

TEST(ExtractCodeBlockTest, LongerFencesTildesIndentationAndCrLf) {
  EXPECT_EQ(*extract_code_block("````cuda\nx\n```\nstill inside\n````\n", "cuda"),
            "x\n```\nstill inside\n");
  EXPECT_EQ(*extract_code_block("~~~cuda\ny\n~~~", "cuda"), "y\n");
  EXPECT_EQ(*extract_code_block("  ```cuda\n  z\n  ```", "cuda"), "  z\n");
  EXPECT_EQ(*extract_code_block("```cuda\r\nw\r\n```\r\n", "cuda"), "w\n");
}

TEST(ExtractCodeBlockTest, NothingSuitableIsAnErrorNotACrash) {
  auto none = extract_code_block("I cannot help with that.", "cuda");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("no fenced code block"), std::string::npos);
  auto other = extract_code_block("```python\nprint(1)\n```", "cuda");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("python"), std::string::npos) << other.error();
  EXPECT_FALSE(extract_code_block("```cuda\n\n```", "cuda").ok());  // empty block
  EXPECT_FALSE(extract_code_block("", "cuda").ok());
  EXPECT_FALSE(extract_code_block("```", "cuda").ok());
}

TEST(ExtractCodeBlockTest, EmptyLanguageTakesAnyBlock) {
  EXPECT_EQ(*extract_code_block("```rust\nfn main() {}\n```", ""), "fn main() {}\n");
}

TEST(ExtractJsonTest, WholeTextIsJson) {
  auto value = extract_json("  {\"plans\": [\"a\", \"b\"]}\n");
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ((*value)["plans"].size(), 2u);
}

TEST(ExtractJsonTest, JsonBlockAmidProse) {
  auto value = extract_json(
      "Here are my plans.\n```json\n[{\"name\": \"vectorize\"}, {\"name\": \"unroll\"}]\n```\n"
      "Let me know.");
  ASSERT_TRUE(value.ok()) << value.error();
  ASSERT_TRUE(value->is_array());
  EXPECT_EQ((*value)[1]["name"], "unroll");
}

TEST(ExtractJsonTest, SkipsBrokenBlocksAndNonJsonBlocks) {
  auto value = extract_json(
      "```cuda\nint a[] = {1, 2};\n```\n```json\n{\"broken\": \n```\n```\n{\"ok\": true}\n```");
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ((*value)["ok"], true);
}

TEST(ExtractJsonTest, BareObjectInProseWithBracesInStrings) {
  auto value =
      extract_json("Sure! {\"lesson\": \"use {float4} loads\", \"tags\": [\"vector]\"]} Done.");
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ((*value)["lesson"], "use {float4} loads");
  EXPECT_EQ((*value)["tags"][0], "vector]");
}

TEST(ExtractJsonTest, UnclosedFenceStillParses) {
  auto value = extract_json("```json\n{\"a\": 1}\n");
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ((*value)["a"], 1);
}

TEST(ExtractJsonTest, RawNewlinesAndTabsInsideStringsAreTolerated) {
  // Strict JSON refuses these; models write them when a lesson runs over a line.
  auto value = extract_json("{\"lesson\": \"line one\nline\ttwo \\\"quoted\\\"\",\n \"n\": 2}");
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ((*value)["lesson"], "line one\nline\ttwo \"quoted\"");
  EXPECT_EQ((*value)["n"], 2);
  // A newline outside any string stays a plain separator; broken JSON stays broken.
  EXPECT_FALSE(extract_json("{\"a\": \"x\"\n \"b\": 1}").ok());
}

TEST(ExtractJsonTest, NoJsonIsAnError) {
  EXPECT_FALSE(extract_json("no structure here").ok());
  EXPECT_FALSE(extract_json("{ not json at all }").ok());
  EXPECT_FALSE(extract_json("42").ok());  // a scalar is not what an agent asks for
  EXPECT_FALSE(extract_json("").ok());
  EXPECT_FALSE(extract_json(std::string(100000, '{')).ok());
}

}  // namespace
}  // namespace kopt
