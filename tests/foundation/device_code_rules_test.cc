// The device-code-only rule: each attack on it is refused with its line, and each attack's
// correct twin passes; every kernel the project ships (tasks, adversarial, numerical and profile
// kernels) passes unchanged.
#include "sandbox/device_code_rules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/files.h"
#include "sandbox/compiler.h"
#include "sandbox/cuda_tokens.h"
#include "sandbox/kernel_file.h"

namespace kopt {
namespace {

std::string refusal(const std::string& source, const std::set<std::string>& tunables = {}) {
  auto s = check_device_code_only(source, "k.cu", tunables);
  return s ? "" : s.error();
}

#define EXPECT_REFUSED(source, line, words)                           \
  do {                                                                \
    std::string why = refusal(source);                                \
    EXPECT_NE(why.find("k.cu:" #line ":"), std::string::npos) << why; \
    EXPECT_NE(why.find(words), std::string::npos) << why;             \
  } while (0)
#define EXPECT_PASSES(source) EXPECT_EQ(refusal(source), "")

const char* const kKernel = "__global__ void k(float* x) { x[0] = 1; }\n";

TEST(DeviceCodeRules, ConditionsOnCompilerMacrosAreRefusedInEverySpelling) {
  EXPECT_REFUSED(std::string("#ifndef __CUDACC_RTC__\n#endif\n") + kKernel, 1, "__CUDACC_RTC__");
  EXPECT_REFUSED("\n#if defined(__NVCC__)\n#endif\n", 2, "__NVCC__");
  EXPECT_REFUSED("#if __CUDA_ARCH__ >= 800\n#endif\n", 1, "__CUDA_ARCH__");
  EXPECT_REFUSED("#ifdef __CUDACC__\n#endif\n", 1, "__CUDACC__");
  // A macro that names it, a digraph '#', a line splice inside the name, a comment in between.
  EXPECT_REFUSED("#define RTC __CUDACC_RTC__\n", 1, "__CUDACC_RTC__");
  EXPECT_REFUSED("%:ifndef __CUDACC_RTC__\n%:endif\n", 1, "__CUDACC_RTC__");
  EXPECT_REFUSED("#ifndef __CUDACC\\\n_RTC__\n#endif\n", 1, "__CUDACC_RTC__");
  EXPECT_REFUSED("# /* c */ ifndef /* c */ __NVCC__\n#endif\n", 1, "__NVCC__");
  // A host header's macro (nvcc includes cuda_runtime.h, NVRTC does not), __has_include, a name
  // pasted together, a macro defined only inside a branch.
  EXPECT_REFUSED("#ifdef CUDART_VERSION\n#endif\n", 1, "CUDART_VERSION");
  EXPECT_REFUSED("#if __has_include(<cstdio>)\n#endif\n", 1, "__has_include");
  EXPECT_REFUSED("#define CAT(a, b) a##b\n", 1, "##");
  EXPECT_REFUSED("#if 0\n#define HOSTY 1\n#endif\n#ifdef HOSTY\n#endif\n", 4, "HOSTY");
  EXPECT_REFUSED("#define N M\n#if N\n#endif\n", 2, "'M'");
  // Twins: conditions on the plan's tunables and on the file's own macros pass.
  EXPECT_EQ(refusal("#ifndef BLOCK\n#define BLOCK 256\n#endif\n", {"BLOCK"}), "");
  EXPECT_PASSES("#define N 4\n#define M (N * 2)\n#if M > 4 && defined(N)\n#endif\n");
  EXPECT_PASSES("#undef SOMETHING\n#ifdef SOMETHING\n#endif\n");
  // The names inside strings and comments are text, not tokens.
  EXPECT_PASSES(
      "// #ifdef __CUDACC_RTC__\n/* __NVCC__ */\n__device__ const char* s = \"__CUDACC__\";\n");
}

TEST(DeviceCodeRules, HostCodeIsRefused) {
  EXPECT_REFUSED("int helper(int x) { return x; }\n", 1, "host function 'helper'");
  EXPECT_REFUSED(std::string(kKernel) + "__host__ __device__ float f(float x) { return x; }\n", 2,
                 "__host__");
  EXPECT_REFUSED("__attribute__((constructor)) void f() {}\n", 1, "constructor");
  EXPECT_REFUSED("__device__ __attribute__((__destructor__)) void f() {}\n", 1, "destructor");
  EXPECT_REFUSED("[[gnu::constructor]] void f() {}\n", 1, "constructor");
  EXPECT_REFUSED("extern \"C\" int system(const char*);\nint x = system(\"touch m\");\n", 1,
                 "'system' is host code");
  EXPECT_REFUSED("struct S { S(); };\nstatic S s;\n", 2, "'s' is host code");
  EXPECT_REFUSED("struct S { static inline int x = 1; };\n", 1, "static inline data member");
  EXPECT_REFUSED("struct S {};\nstruct S s;\n", 2, "'s' is host code");
  EXPECT_REFUSED("#define SI static inline\nstruct S { SI int x = 1; };\n", 2, "static inline");
  EXPECT_REFUSED("asm(\".section .init_array\");\n", 1, "asm");
  EXPECT_REFUSED("auto run = [] { return 0; }();\n", 1, "'run' is host code");
  EXPECT_REFUSED("#pragma GCC optimize(\"O0\")\n", 1, "#pragma GCC");
  EXPECT_REFUSED("_Pragma(\"once\")\n", 1, "_Pragma");
  EXPECT_REFUSED("?\?=define X 1\n", 1, "trigraph");  // ??= written so g++ keeps it
  // A macro cannot add the marker, swallow it, or split declarations.
  EXPECT_REFUSED("#define D __device__\nD int f() { return 0; }\n", 2, "host function 'f'");
  EXPECT_REFUSED("#define K __global__ void k() {}\n__device__ K int f() { return 0; }\n", 2,
                 "macro 'K'");
  EXPECT_REFUSED("#define ARGS (int x)\n__device__ void g ARGS { } int h() { return 0; }\n", 2,
                 "second '{' body");
  // A branch cannot hide the marker or move a body's end.
  EXPECT_REFUSED("#define ON 0\n#if ON\n__device__\n#endif\nint f() { return 0; }\n", 4,
                 "inside a declaration");
  EXPECT_REFUSED(
      "#define ON 0\n__device__ void f() {\n#if ON\n{\n#endif\n}\nint h() { return 0; }\n", 5,
      "balanced");
  EXPECT_REFUSED("#define __device__\n", 1, "reserved");
  EXPECT_EQ(refusal("", {"__device__"}).find("reserved") != std::string::npos, true);
}

TEST(DeviceCodeRules, DeviceCodeInItsUsualShapesPasses) {
  EXPECT_PASSES(R"(#include <cuda_fp16.h>
#define TILE 32
#pragma unroll
namespace {
constexpr int kWarp = 32;
__device__ __forceinline__ float sq(float v) { return v * v; }
template <typename T, int N = (1 > 2)>
__device__ T twice(T v) { return v + v; }
struct __align__(16) Pair { float a, b; __device__ float sum() const { return a + b; } };
enum class Mode : int { kA, kB };
typedef struct { int x; } Plain;
struct Ahead;
template <typename T> struct traits;
template <> struct traits<float> { typedef unsigned int bits; };
using Vec = float4;
}
__constant__ float table[4] = {1, 2, 3, 4};
__device__ int counter;
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
extern "C" __global__ void __launch_bounds__(256) k(const float* __restrict__ x, float* y, int n) {
  __shared__ float tile[TILE];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  auto f = [&](int j) { return x[j]; };
#if TILE > 16
  if (i < n) y[i] = sq(f(i)) + table[0];
#else
  if (i < n) y[i] = 0;
#endif
  [[maybe_unused]] int unused_value = 0;
  const char* s = R"raw(text with "quotes" and }{ )raw";
  (void)s; (void)tile;
}
extern "C" {
__global__ void k2(int* p) { p[0] = ceil_div(3, 2); }
}
)");
}

TEST(DeviceCodeRules, LinearOnHostileSizes) {
  // 100 KB of one token after `#define G __global__`, a deep macro chain, a long file of kernels.
  EXPECT_PASSES("#define G __global__\n__device__ const char* s = \"" + std::string(100000, 'a') +
                "\";\n");
  std::string chain;
  for (int i = 0; i < 20000; ++i)
    chain += "#define M" + std::to_string(i + 1) + " M" + std::to_string(i) + " M" +
             std::to_string(i) + "\n";
  chain += "#if M20000\n#endif\n";
  EXPECT_NE(refusal(chain), "");
  // The 541-byte doubling bomb: refused before NVRTC would expand 2^30 tokens; its twin with a
  // few doublings passes.
  std::string bomb = "#define A0 1+1\n";
  for (int i = 1; i <= 30; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + "+A" +
            std::to_string(i - 1) + "\n";
  EXPECT_NE(refusal(bomb + "__device__ int v = A30;\n").find("macro bomb"), std::string::npos);
  EXPECT_NE(refusal(bomb + "#if A30\n#endif\n").find("macro bomb"), std::string::npos);
  EXPECT_PASSES(bomb + "__device__ int v = A10;\n");
  std::string many;
  for (int i = 0; i < 5000; ++i) many += "__global__ void k" + std::to_string(i) + "() {}\n";
  EXPECT_PASSES(many);
}

// Every kernel the project ships, with its plan's tunables, passes the rule and the compile gate
// (which applies it before NVRTC).
TEST(DeviceCodeRules, EveryShippedKernelPasses) {
  int checked = 0;
  for (const char* folder : {"tasks", "tests/sandbox"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(KOPT_SOURCE_DIR) / folder)) {
      if (entry.path().extension() != ".cu") continue;
      auto text = read_file(entry.path());
      ASSERT_TRUE(text) << text.error();
      std::set<std::string> tunables;
      if (auto file = parse_kernel_file(*text, entry.path().string(), nullptr))
        for (const auto& t : file->tunables) tunables.insert(t.name);
      auto s = check_device_code_only(*text, entry.path().string(), tunables);
      EXPECT_TRUE(s) << s.error();
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(DeviceCodeRules, TheCompileGateRefusesBeforeNvrtc) {
  CompileRequest request;
  request.source =
      "#ifndef __CUDACC_RTC__\nint host() { return 0; }\n#endif\n" + std::string(kKernel);
  request.origin = "candidate.cu";
  request.arch = "sm_90";
  request.kernel_names = {"k"};
  auto out = compile_kernel(request, nullptr);
  ASSERT_TRUE(out) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_NE(out->log.find("candidate.cu:1: device code only"), std::string::npos) << out->log;
  request.source = kKernel;
  out = compile_kernel(request, nullptr);
  ASSERT_TRUE(out) << out.error();
  EXPECT_TRUE(out->ok) << out->log;
}

TEST(CudaTokens, LiteralsCommentsSplicesAndDigraphs) {
  auto tokens =
      tokenize_cuda("a /* x\n */ b // c\n\"s\\\"t\" u8'c' R\"d(x)\")d\" <% %: \\\n e", "t");
  ASSERT_TRUE(tokens) << tokens.error();
  std::vector<std::string> texts;
  for (const auto& t : *tokens) texts.push_back(t.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"a", "b", "\"s\\\"t\"", "u8'c'", "R\"d(x)\")d\"", "{",
                                             "#", "e"}));
  EXPECT_FALSE(tokenize_cuda("/* open", "t"));
  EXPECT_FALSE(tokenize_cuda("\"open\n\"", "t"));
}

}  // namespace
}  // namespace kopt
