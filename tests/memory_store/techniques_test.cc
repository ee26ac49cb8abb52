// The keyword classifier of techniques (techniques.h): each label from a lesson, from the
// identifiers a change added, and words that must not trigger one.
#include "memory_store/techniques.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/files.h"

namespace kopt::memory {
namespace {

using Labels = std::vector<std::string>;

TEST(Techniques, NamedFromALesson) {
  EXPECT_EQ(techniques_in("float4 loads and a warp shuffle reduction"),
            (Labels{"vector_loads", "warp_shuffle"}));
  EXPECT_EQ(techniques_in("An online softmax keeps a running max and sum"),
            (Labels{"online_softmax"}));
  EXPECT_EQ(techniques_in("Tiles in shared memory, padded by one to avoid bank conflicts"),
            (Labels{"shared_tiling", "smem_padding"}));
  EXPECT_EQ(techniques_in("cp.async double buffering"), (Labels{"cp_async"}));
  EXPECT_EQ(techniques_in("wmma tensor-core tiles"), (Labels{"shared_tiling", "tensor_cores"}));
  EXPECT_EQ(techniques_in("split-K over 4 blocks, fused bias and ReLU"),
            (Labels{"split_k", "fusion"}));
  EXPECT_EQ(techniques_in("the row is held in registers"), (Labels{"register_resident"}));
}

TEST(Techniques, NamedFromSourceIdentifiers) {
  EXPECT_EQ(techniques_in("v = __shfl_xor_sync(0xffffffff, v, 16);"), (Labels{"warp_shuffle"}));
  EXPECT_EQ(techniques_in("__half2 h = __hadd2(a, b);"), (Labels{"packed_half"}));
  EXPECT_EQ(techniques_in("#pragma unroll\nfor (...)"), (Labels{"unrolling"}));
}

// Mislabels the label audit found on the suite's kernels (bench/results/
// cpu-devbox-2026-11-27-memory-measures/label_audit.md).
TEST(Techniques, TheLabelAuditsMislabelsAreGone) {
  // A block reduction's shared scratch is not tiling; a tile is.
  EXPECT_TRUE(techniques_in("__shared__ float partial[32];").empty());
  EXPECT_EQ(techniques_in("__shared__ float As[TILE][TILE];"), (Labels{"shared_tiling"}));
  // rsqrtf is not fast math; __expf is.
  EXPECT_TRUE(techniques_in("float inv = rsqrtf(ss / n + eps);").empty());
  EXPECT_EQ(techniques_in("float e = __expf(x - m);"), (Labels{"fast_math"}));
  // A kernel named for its online softmax is one; a nonlinear activation is not.
  EXPECT_EQ(techniques_in("extern \"C\" __global__ void softmax_online(const float* x)"),
            (Labels{"online_softmax"}));
  EXPECT_TRUE(techniques_in("a nonlinear activation").empty());
}

TEST(Techniques, WordsThatMustNotTrigger) {
  // "comma" holds "mma", "float" is not float4, "online" needs the word.
  EXPECT_TRUE(techniques_in("a comma, a float, an int").empty());
  EXPECT_TRUE(techniques_in("").empty());
}

TEST(Techniques, APairTeachesWhatItsFastKernelAdded) {
  // The slow kernel already shuffled; the fast one added float4: only that is taught.
  EXPECT_EQ(pair_techniques("", "shfl xor sync x", "shfl xor sync float4 x"),
            (Labels{"vector_loads"}));
  // The lesson counts too.
  EXPECT_EQ(pair_techniques("fused the scale", "a", "a"), (Labels{"fusion"}));
}

std::string suite_kernel(const std::string& path) {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / path);
  if (!text) throw std::runtime_error(text.error());
  return *text;
}

bool has(const Labels& labels, const std::string& name) {
  return std::find(labels.begin(), labels.end(), name) != labels.end();
}

TEST(Techniques, WordBoundariesHold) {
  EXPECT_FALSE(has(techniques_in("y = expf(x - m);"), "fast_math")) << "expf is not __expf";
  EXPECT_TRUE(has(techniques_in("y = __expf(x - m);"), "fast_math"));
  EXPECT_FALSE(has(techniques_in("out[i] = __float2bfloat16(acc);"), "vector_loads"));
  EXPECT_TRUE(
      has(techniques_in("float2 v = reinterpret_cast<const float2*>(x)[i];"), "vector_loads"));
  EXPECT_FALSE(has(techniques_in("float f = __half2float(h);"), "packed_half"));
  EXPECT_TRUE(has(techniques_in("vectorized loads"), "vector_loads")) << "a stem is a prefix";
}

TEST(Techniques, CommentsAreNotCode) {
  std::string kernel =
      "// shared-memory tiling, no tensor cores\n/* float4 later */\n"
      "const char* s = \"// not a comment\"; y = x;";
  EXPECT_EQ(without_comments(kernel).find("tensor"), std::string::npos);
  EXPECT_NE(without_comments(kernel).find("// not a comment"), std::string::npos);
  EXPECT_TRUE(techniques_in_code(kernel).empty());
}

// The suite's own kernels: what the old reading got wrong (issue 36).
TEST(Techniques, RealKernelsOfTheSuiteAreLabelledByTheirCode) {
  for (const char* task : {"softmax", "cross_entropy", "causal_attention"}) {
    std::string source = suite_kernel(std::string("tasks/") + task + "/baseline.cu");
    ASSERT_NE(source.find("expf("), std::string::npos) << task;
    EXPECT_FALSE(has(techniques_in_code(source), "fast_math")) << task << " calls expf";
  }
  for (const char* task : {"bf16_gemm", "gemm_bias_relu", "causal_attention"}) {
    std::string source = suite_kernel(std::string("tasks/") + task + "/baseline.cu");
    ASSERT_NE(source.find("__float2bfloat16"), std::string::npos) << task;
    ASSERT_NE(source.find("no tensor cores"), std::string::npos) << task;
    Labels labels = techniques_in_code(source);
    EXPECT_FALSE(has(labels, "vector_loads")) << task << ": __float2bfloat16 is no float2 load";
    EXPECT_FALSE(has(labels, "tensor_cores")) << task << ": the comment says there are none";
    EXPECT_TRUE(has(labels, "warp_shuffle")) << task;
  }
}

TEST(Techniques, APairTeachesWhatItsFastKernelsCodeAdds) {
  std::string slow = suite_kernel("tasks/bf16_gemm/baseline.cu");
  // The same kernel with a comment about tensor cores and a conversion added: nothing taught.
  std::string commented = slow + "\n// next: tensor cores (wmma), float4 loads\n";
  EXPECT_TRUE(pair_techniques_from_code("", slow, commented).empty());
  std::string vectorized = slow + "\n__device__ float4 load4(const float4* p) { return *p; }\n";
  EXPECT_EQ(pair_techniques_from_code("", slow, vectorized), Labels{"vector_loads"});
}

}  // namespace
}  // namespace kopt::memory
