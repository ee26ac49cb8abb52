// The NVRTC compile gate and its content-addressed cache (real NVRTC, no GPU needed).
#include "sandbox/compiler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "sandbox/cubin_state.h"
#include "sandbox/include_policy.h"
#include "sandbox/kernel_file.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

const char* kExternC = R"(
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

const char* kMangled = R"(
__global__ void scale(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";

CompileRequest request_for(const std::string& source, std::vector<std::string> kernels) {
  CompileRequest request;
  request.source = source;
  request.origin = "test.cu";
  request.arch = "sm_90a";
  request.kernel_names = std::move(kernels);
  return request;
}

CompileOutput compile_ok(const CompileRequest& request, const CompileCache* cache = nullptr) {
  auto out = compile_kernel(request, cache);
  EXPECT_TRUE(out.ok()) << out.error();
  if (!out.ok()) return {};
  EXPECT_TRUE(out->ok) << out->log;
  return *out;
}

bool looks_like_elf(const std::string& binary) {
  return binary.size() > 64 && binary.compare(0, 4,
                                              "\x7f"
                                              "ELF") == 0;
}

TEST(Compiler, ExternCKernelCompilesToCubin) {
  CompileOutput out = compile_ok(request_for(kExternC, {"axpy"}));
  EXPECT_TRUE(looks_like_elf(out.cubin));
  EXPECT_EQ(out.lowered_names.at("axpy"), "axpy");
  EXPECT_FALSE(out.cache_hit);
  EXPECT_EQ(out.key.size(), 64u);
  // The resource report of ptxas is in the log, which holds no NUL (NVRTC puts one before it).
  EXPECT_NE(out.log.find("Used "), std::string::npos) << out.log;
  EXPECT_EQ(out.log.find('\0'), std::string::npos);
}

TEST(Compiler, MangledKernelNameIsLowered) {
  CompileOutput out = compile_ok(request_for(kMangled, {"scale"}));
  EXPECT_TRUE(looks_like_elf(out.cubin));
  const std::string& lowered = out.lowered_names.at("scale");
  EXPECT_EQ(lowered.rfind("_Z", 0), 0u) << lowered;
  EXPECT_TRUE(contains(lowered, "scale")) << lowered;
  EXPECT_TRUE(contains(out.cubin, lowered)) << "the symbol is in the CUBIN";
}

TEST(Compiler, SeveralKernelsInOneFile) {
  CompileOutput out = compile_ok(request_for(std::string(kExternC) + kMangled, {"axpy", "scale"}));
  EXPECT_EQ(out.lowered_names.size(), 2u);
}

TEST(Compiler, SyntaxErrorIsAVerdictWithTheLog) {
  auto out = compile_kernel(
      request_for("extern \"C\" __global__ void broken(float* x) { x[0] = ; }\n", {"broken"}),
      nullptr);
  ASSERT_TRUE(out.ok()) << "a compile error is not an infrastructure error: " << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(out->cubin.empty());
  EXPECT_TRUE(contains(out->log, "test.cu(1)")) << out->log;
  EXPECT_TRUE(contains(out->log, "error")) << out->log;
}

// What a module keeps between launches, read from its CUBIN: the worker loads such a module
// afresh before every timed sample (sandbox/worker/timing_loop.cc).
TEST(CubinState, DeviceVariablesAreStateAndPlainKernelsHaveNone) {
  auto plain = read_cubin_state(compile_ok(request_for(kExternC, {"axpy"})).cubin);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->writable_global_bytes, 0u);
  EXPECT_FALSE(plain->uses_device_heap);
  // __constant__ data cannot be written by a kernel: no state.
  auto constant = read_cubin_state(
      compile_ok(request_for("__constant__ float c_scale[4];\n" + std::string(kMangled) +
                                 "__global__ void use(float* o) { o[0] = c_scale[0]; }\n",
                             {"scale", "use"}))
          .cubin);
  ASSERT_TRUE(constant.ok()) << constant.error();
  EXPECT_EQ(constant->writable_global_bytes, 0u);
  auto counted = read_cubin_state(
      compile_ok(request_for("__device__ unsigned g_calls;\n__device__ float g_table[256] = {1};\n"
                             "extern \"C\" __global__ void count(float* o) {\n"
                             "  o[threadIdx.x] = g_table[threadIdx.x]; ++g_calls;\n}\n",
                             {"count"}))
          .cubin);
  ASSERT_TRUE(counted.ok()) << counted.error();
  EXPECT_EQ(counted->writable_global_bytes, 4u + 256u * 4u);
}

TEST(CubinState, TheDeviceHeapIsRefusedAtTheGate) {
  for (const char* allocation : {"float* p = (float*)malloc(64);", "float* p = new float[16];"}) {
    std::string source = std::string("extern \"C\" __global__ void heap(float* o) {\n  ") +
                         allocation + "\n  p[0] = 1; o[0] = p[0];\n}\n";
    auto out = compile_kernel(request_for(source, {"heap"}), nullptr);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_FALSE(out->ok) << allocation;
    EXPECT_TRUE(out->cubin.empty());
    EXPECT_TRUE(contains(out->log, "device heap")) << out->log;
  }
}

TEST(CubinState, AFileThatIsNotACubinIsAnError) {
  EXPECT_FALSE(read_cubin_state("").ok());
  EXPECT_FALSE(read_cubin_state(std::string("\x7f\x45LF") + std::string(60, '\0')).ok());
  std::string truncated = compile_ok(request_for(kExternC, {"axpy"})).cubin.substr(0, 80);
  EXPECT_FALSE(read_cubin_state(truncated).ok());
}

TEST(Compiler, KernelNameThatIsNotDefinedFails) {
  auto out = compile_kernel(request_for(kExternC, {"axpy", "nope"}), nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(out->cubin.empty());
  EXPECT_TRUE(contains(out->log, "nope")) << out->log;
}

TEST(Compiler, ToolkitHeadersAreOnTheIncludePath) {
  const char* bf16 = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/limits>
extern "C" __global__ void to_bf16(const float* x, __nv_bfloat16* y, __half* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float big = cuda::std::numeric_limits<float>::max();
  if (i < n) { y[i] = __float2bfloat16(fminf(x[i], big)); z[i] = __float2half(x[i]); }
}
)";
  CompileOutput out = compile_ok(request_for(bf16, {"to_bf16"}));
  EXPECT_TRUE(looks_like_elf(out.cubin));
}

TEST(Compiler, DefinesAndAllowedOptionsReachNvrtc) {
  CompileRequest request = request_for(R"(
#if BLOCK != 128
#error BLOCK must be 128
#endif
extern "C" __global__ void k(float* x) { x[threadIdx.x] = __expf(x[threadIdx.x]) / 3.0f; }
)",
                                       {"k"});
  request.defines = {{"BLOCK", 128}};
  request.extra_options = {"--use_fast_math", "-maxrregcount=32"};
  compile_ok(request);
  request.defines = {{"BLOCK", 64}};
  auto wrong = compile_kernel(request, nullptr);
  ASSERT_TRUE(wrong.ok()) << wrong.error();
  EXPECT_FALSE(wrong->ok);
  EXPECT_TRUE(contains(wrong->log, "BLOCK must be 128")) << wrong->log;
}

TEST(Compiler, CompileOptionsListTheArchDefinesAndIncludes) {
  CompileRequest request = request_for(kExternC, {"axpy"});
  request.arch = "sm_80";
  request.defines = {{"BLOCK", 256}};
  request.extra_options = {"--use_fast_math"};
  auto options = compile_options(request);
  auto has = [&](const std::string& o) {
    return std::find(options.begin(), options.end(), o) != options.end();
  };
  EXPECT_TRUE(has("-arch=sm_80"));
  EXPECT_TRUE(has("-DBLOCK=256"));
  EXPECT_TRUE(has("--use_fast_math"));
  // No search path at all: the toolkit's headers come in memory (sandbox/toolkit_headers.h),
  // and never the folder of the source.
  for (const auto& o : options)
    EXPECT_FALSE(o.rfind("--include-path", 0) == 0 || o.rfind("-I", 0) == 0) << o;
  EXPECT_TRUE(has("--no-source-include"));
}

// mma.h (WMMA) includes "mma.hpp" from crt/ by a quoted relative name: NVRTC finds it only
// because the in-memory headers resolve that name as crt/ would (a tensor-core kernel was
// refused once).
TEST(Compiler, ToolkitHeadersThatIncludeNeighboursCompile) {
  const char* wmma = R"(#include <mma.h>
#include <cooperative_groups.h>
using namespace nvcuda;
extern "C" __global__ void tile(const __half* a, const __half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
  cooperative_groups::this_thread_block().sync();
}
)";
  compile_ok(request_for(wmma, {"tile"}));
}

// e4m3 tensors are __nv_fp8_e4m3 pointers (tasks/README.md): cuda_fp8.h passes the include
// policy and compiles under NVRTC with kopt's options, conversions and the PTX cvt included.
TEST(Compiler, Fp8HeaderPassesThePolicyAndCompiles) {
  const char* fp8 = R"(#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void dot(const __nv_fp8_e4m3* x, const __nv_fp8_e4m3* w, const float* s,
                               __nv_bfloat16* out, __nv_fp8_e4m3* q, int k) {
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += (float)x[i] * (float)w[i];
  out[0] = __float2bfloat16(acc * s[0]);
  q[0] = __nv_fp8_e4m3(acc);
}
)";
  EXPECT_EQ(check_includes(fp8, "fp8.cu", toolkit_include_roots()), std::nullopt);
  CompileOutput out = compile_ok(request_for(fp8, {"dot"}));
  EXPECT_TRUE(looks_like_elf(out.cubin));
}

TEST(Compiler, InvalidArchIsAnError) {
  for (const char* arch : {"sm_5", "sm_30", "compute_90", "sm_90x", "90", "", "sm_90a;rm"}) {
    EXPECT_FALSE(is_valid_arch(arch)) << arch;
    CompileRequest request = request_for(kExternC, {"axpy"});
    request.arch = arch;
    auto out = compile_kernel(request, nullptr);
    ASSERT_FALSE(out.ok()) << arch;
    EXPECT_TRUE(contains(out.error(), "invalid architecture")) << out.error();
  }
  for (const char* arch : {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_120"})
    EXPECT_TRUE(is_valid_arch(arch)) << arch;
}

TEST(Compiler, NvrtcVersionIsKnown) {
  std::string version = nvrtc_version();
  EXPECT_NE(version, "unknown");
  EXPECT_TRUE(contains(version, ".")) << version;
}

TEST(Compiler, MakeCompileRequestFromAKernelFile) {
  auto file = parse_kernel_file(testing::good_kernel_source(), "/some/dir/baseline.cu", nullptr);
  ASSERT_TRUE(file.ok()) << file.error();
  CompileRequest request = make_compile_request(*file, {{"BLOCK", 128}}, "sm_90");
  EXPECT_EQ(request.origin, "baseline.cu");
  EXPECT_EQ(request.arch, "sm_90");
  EXPECT_EQ(request.defines.at("BLOCK"), 128);
  EXPECT_EQ(request.kernel_names, (std::vector<std::string>{"axpy"}));
  EXPECT_EQ(make_compile_request(*file, {}, "sm_90").defines.at("BLOCK"), 256);
  CompileOutput out = compile_ok(request);
  EXPECT_EQ(out.lowered_names.at("axpy"), "axpy");
}

// --- the cache ---------------------------------------------------------------------------

std::filesystem::path entry_json(const CompileCache& cache, const std::string& key) {
  return cache.dir() / key.substr(0, 2) / (key + ".json");
}
std::filesystem::path entry_cubin(const CompileCache& cache, const std::string& key) {
  return cache.dir() / key.substr(0, 2) / (key + ".cubin");
}

TEST(CompileCache, SecondCompileIsAHitWithTheSameCubinAndNoCompile) {
  TempDir dir;
  CompileCache cache(dir.path());
  CompileRequest request = request_for(kExternC, {"axpy"});
  CompileOutput first = compile_ok(request, &cache);
  EXPECT_FALSE(first.cache_hit);
  ASSERT_TRUE(std::filesystem::exists(entry_json(cache, first.key)));
  ASSERT_TRUE(std::filesystem::exists(entry_cubin(cache, first.key)));

  // Mark the cached log: NVRTC could never produce this text, so seeing it back proves that the
  // second result came from the cache and NVRTC did not run. The entry files must stay untouched.
  auto text = read_file(entry_json(cache, first.key));
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  j["log"] = "marker: served from the cache";
  ASSERT_TRUE(write_file_atomic(entry_json(cache, first.key), j.dump()).ok());
  auto json_mtime = std::filesystem::last_write_time(entry_json(cache, first.key));
  auto cubin_mtime = std::filesystem::last_write_time(entry_cubin(cache, first.key));

  CompileOutput second = compile_ok(request, &cache);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.log, "marker: served from the cache");
  EXPECT_EQ(second.cubin, first.cubin);  // byte-identical
  EXPECT_EQ(second.lowered_names, first.lowered_names);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(std::filesystem::last_write_time(entry_json(cache, first.key)), json_mtime);
  EXPECT_EQ(std::filesystem::last_write_time(entry_cubin(cache, first.key)), cubin_mtime);
}

TEST(CompileCache, AnyChangeToTheInputsMisses) {
  TempDir dir;
  CompileCache cache(dir.path());
  CompileRequest base =
      request_for(std::string(kExternC) + "#ifndef B\n#define B 1\n#endif\n", {"axpy"});
  base.defines = {{"B", 1}};
  CompileOutput first = compile_ok(base, &cache);
  ASSERT_TRUE(compile_ok(base, &cache).cache_hit);

  std::vector<std::pair<std::string, CompileRequest>> variants;
  CompileRequest r = base;
  r.source += "// a comment changes the source\n";
  variants.push_back({"source", r});
  r = base;
  r.defines = {{"B", 2}};
  variants.push_back({"define value", r});
  r = base;
  r.defines = {{"B", 1}, {"C", 1}};  // B stays: the source tests it (device-code rule)
  variants.push_back({"define name", r});
  r = base;
  r.arch = "sm_80";
  variants.push_back({"arch", r});
  r = base;
  r.extra_options = {"--use_fast_math"};
  variants.push_back({"options", r});
  std::set<std::string> keys = {first.key};
  for (const auto& [what, request] : variants) {
    CompileOutput out = compile_ok(request, &cache);
    EXPECT_FALSE(out.cache_hit) << what;
    EXPECT_TRUE(keys.insert(out.key).second) << what << " gives a key of its own";
  }
  // The original is still cached.
  EXPECT_TRUE(compile_ok(base, &cache).cache_hit);
}

TEST(CompileCache, CorruptEntriesAreMisses) {
  TempDir dir;
  CompileCache cache(dir.path());
  CompileRequest request = request_for(kMangled, {"scale"});
  CompileOutput good = compile_ok(request, &cache);

  struct Corruption {
    const char* what;
    std::function<void()> apply;
  };
  std::vector<Corruption> corruptions = {
      {"garbage metadata", [&] { testing::write_text(entry_json(cache, good.key), "{not json"); }},
      {"empty metadata", [&] { testing::write_text(entry_json(cache, good.key), ""); }},
      {"metadata of the wrong shape",
       [&] { testing::write_text(entry_json(cache, good.key), R"({"ok": "yes"})"); }},
      {"truncated cubin",
       [&] { testing::write_text(entry_cubin(cache, good.key), good.cubin.substr(0, 100)); }},
      {"flipped byte in the cubin",
       [&] {
         std::string bad = good.cubin;
         bad[bad.size() / 2] ^= 0x5a;
         testing::write_text(entry_cubin(cache, good.key), bad);
       }},
      {"missing cubin", [&] { std::filesystem::remove(entry_cubin(cache, good.key)); }},
  };
  for (const auto& c : corruptions) {
    c.apply();
    EXPECT_FALSE(cache.lookup(good.key).has_value()) << c.what;
    CompileOutput again = compile_ok(request, &cache);
    EXPECT_FALSE(again.cache_hit) << c.what;
    EXPECT_EQ(again.cubin, good.cubin) << c.what;
    // The recompile repaired the entry.
    CompileOutput repaired = compile_ok(request, &cache);
    EXPECT_TRUE(repaired.cache_hit) << c.what;
    EXPECT_EQ(repaired.cubin, good.cubin) << c.what;
  }
}

TEST(CompileCache, CompileErrorsAreCachedWithTheirLog) {
  TempDir dir;
  CompileCache cache(dir.path());
  CompileRequest request = request_for("__global__ void k() { undefined_thing(); }\n", {"k"});
  auto first = compile_kernel(request, &cache);
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->ok);
  auto second = compile_kernel(request, &cache);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_FALSE(second->ok);
  EXPECT_EQ(second->log, first->log);
  EXPECT_TRUE(second->cubin.empty());
}

TEST(CompileCache, UnwritableCacheDirectoryStillCompiles) {
  TempDir dir;
  testing::write_text(dir / "file", "x");
  CompileCache cache(dir / "file" / "cache");  // a path under a regular file
  CompileOutput out = compile_ok(request_for(kExternC, {"axpy"}), &cache);
  EXPECT_TRUE(looks_like_elf(out.cubin));
  EXPECT_FALSE(compile_ok(request_for(kExternC, {"axpy"}), &cache).cache_hit);
}

}  // namespace
}  // namespace kopt
