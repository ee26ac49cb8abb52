// The confined compiler (kopt-compile, real NVRTC in a child, no GPU): each way of reaching a
// host file is refused with the include named and no canary in the log; compile bombs end in a
// compile error naming the limit, within the limit's time, and the asking process goes on; the
// child sees no key of ours; the cache keeps ok results and compile errors, never a limit hit.
#include "sandbox/confined/confined_compile.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "sandbox/confined/landlock.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

const char* kCanaryKey = "kopt-canary-3f1e2d9c7b";
const std::string kKernel =
    "\nextern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n";

// 10^8 copies of a statement: the preprocessor's memory and time grow without end.
const std::string kMacroBomb =
    "#define L0(x) x x x x x x x x x x\n#define L1(x) L0(L0(x))\n#define L2(x) L1(L1(x))\n"
    "#define L3(x) L2(L2(x))\nextern \"C\" __global__ void k(float* x) { L3(x[0] += 1.0f;) }\n";

CompileRequest request_for(const std::string& source) {
  CompileRequest request;
  request.source = source;
  request.origin = "candidate.cu";
  request.arch = "sm_90a";
  request.kernel_names = {"k"};
  return request;
}

class ConfinedCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KOPT_TEST_API_KEY", kCanaryKey, 1);
    canary_file_ = std::filesystem::canonical(dir_.path()) / "canary_secret.h";
    testing::write_text(canary_file_, std::string("int secret = 1; // ") + kCanaryKey + "\n");
  }
  void TearDown() override { ::unsetenv("KOPT_TEST_API_KEY"); }

  // Refused, naming `named`, with neither canary in the log.
  void expect_refused(const std::string& source, const std::string& named) {
    auto start = Clock::now();
    auto out = compile_confined(request_for(source), nullptr);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_FALSE(out->ok);
    EXPECT_TRUE(contains(out->log, named)) << out->log;
    EXPECT_FALSE(contains(out->log, kCanaryKey)) << out->log;
    EXPECT_FALSE(contains(out->log, "int secret")) << out->log;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  }

  TempDir dir_;
  std::filesystem::path canary_file_;
};

TEST_F(ConfinedCompile, GoodKernelCompilesInTheChild) {
  auto out = compile_confined(request_for(kKernel), nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_TRUE(out->ok) << out->log;
  EXPECT_EQ(out->cubin.compare(0, 4,
                               "\x7f"
                               "ELF"),
            0);
  EXPECT_EQ(out->lowered_names.at("k"), "k");
  EXPECT_EQ(out->key, compile_cache_key(request_for(kKernel)));
}

TEST_F(ConfinedCompile, ToolkitHeadersStillCompile) {
  auto out = compile_confined(
      request_for("#include <cuda_bf16.h>\nextern \"C\" __global__ void k(__nv_bfloat16* x) "
                  "{ x[0] = __float2bfloat16(1.0f); }\n"),
      nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_TRUE(out->ok) << out->log;
}

TEST_F(ConfinedCompile, ProcSelfEnvironIsRefused) {
  expect_refused("#include \"/proc/self/environ\"\n" + kKernel, "/proc/self/environ");
}

TEST_F(ConfinedCompile, AbsolutePathIsRefused) {
  expect_refused("#include \"" + canary_file_.string() + "\"\n" + kKernel, canary_file_.string());
}

TEST_F(ConfinedCompile, EscapingRelativePathIsRefused) {
  std::string climb;
  for (int i = 0; i < 12; ++i) climb += "../";
  std::string name = climb + canary_file_.relative_path().string();
  expect_refused("#include <" + name + ">\n" + kKernel, name);
}

TEST_F(ConfinedCompile, FifoIsRefusedWithoutHanging) {
  auto fifo = canary_file_.parent_path() / "pipe.h";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused("#include \"" + fifo.string() + "\"\n" + kKernel, fifo.string());
}

TEST_F(ConfinedCompile, ComputedIncludeIsRefused) {
  expect_refused("#define SECRET \"" + canary_file_.string() + "\"\n#include SECRET\n" + kKernel,
                 "#include SECRET");
}

TEST_F(ConfinedCompile, StringifiedFileIsRefused) {
  expect_refused("#define S(...) #__VA_ARGS__\n__device__ const char* s = S(\n#include \"" +
                     canary_file_.string() + "\"\n);\n" + kKernel,
                 canary_file_.string());
}

TEST_F(ConfinedCompile, MacroBombEndsAtTheMemoryLimit) {
  CompileLimits limits;
  limits.address_space_bytes = 1ull << 30;
  auto start = Clock::now();
  auto out = compile_confined(request_for(kMacroBomb), nullptr, limits);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(contains(out->log, "the compiler exceeded its limit of 1024 MiB of memory"))
      << out->log;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(static_cast<int>(limits.wall_seconds)));
  // The asking process goes on compiling.
  auto next = compile_confined(request_for(kKernel), nullptr);
  ASSERT_TRUE(next.ok()) << next.error();
  EXPECT_TRUE(next->ok) << next->log;
}

TEST_F(ConfinedCompile, CompileBombEndsAtTheCpuLimit) {
  CompileLimits limits;
  limits.address_space_bytes = 16ull << 30;
  limits.cpu_seconds = 1;
  auto start = Clock::now();
  auto out = compile_confined(request_for(kMacroBomb), nullptr, limits);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(contains(out->log, "the compiler exceeded its limit of 1 s of CPU time")) << out->log;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
}

TEST_F(ConfinedCompile, CompileBombEndsAtTheWallLimit) {
  CompileLimits limits;
  limits.address_space_bytes = 16ull << 30;
  limits.wall_seconds = 0.5;
  auto start = Clock::now();
  auto out = compile_confined(request_for(kMacroBomb), nullptr, limits);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(contains(out->log, "the compiler exceeded its limit of 0.5 s of wall time"))
      << out->log;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ConfinedCompile, HugeSourceIsRefusedAtTheSizeLimit) {
  std::string huge = kKernel + std::string(9u << 20, ' ');
  auto start = Clock::now();
  auto out = compile_confined(request_for(huge), nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(contains(out->log, "over the limit of 262144 bytes")) << out->log;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ConfinedCompile, CacheKeepsResultsAndErrorsButNotLimitHits) {
  TempDir cache_dir;
  CompileCache cache(cache_dir.path());
  auto first = compile_confined(request_for(kKernel), &cache);
  ASSERT_TRUE(first.ok() && first->ok);
  auto again = compile_confined(request_for(kKernel), &cache);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->cubin, first->cubin);

  std::string broken = "extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }\n";
  auto error = compile_confined(request_for(broken), &cache);
  ASSERT_TRUE(error.ok());
  EXPECT_FALSE(error->ok);
  EXPECT_TRUE(contains(error->log, "undefined_name")) << error->log;
  EXPECT_TRUE(compile_confined(request_for(broken), &cache)->cache_hit);

  CompileLimits tight;
  tight.wall_seconds = 0.5;
  tight.address_space_bytes = 16ull << 30;
  auto bomb = compile_confined(request_for(kMacroBomb), &cache, tight);
  ASSERT_TRUE(bomb.ok());
  EXPECT_FALSE(bomb->ok);
  EXPECT_FALSE(cache.lookup(compile_cache_key(request_for(kMacroBomb))).has_value());
}

TEST(EnvironmentSubset, KeepsOnlyTheNamedVariables) {
  ::setenv("KOPT_TEST_API_KEY", kCanaryKey, 1);
  ::setenv("KOPT_KEEP_ME", "1", 1);
  auto env = environment_subset({"PATH", "KOPT_KEEP_*"});
  ::unsetenv("KOPT_TEST_API_KEY");
  ::unsetenv("KOPT_KEEP_ME");
  bool path = false, kept = false;
  for (const auto& entry : env) {
    EXPECT_FALSE(contains(entry, kCanaryKey)) << entry;
    path = path || entry.rfind("PATH=", 0) == 0;
    kept = kept || entry == "KOPT_KEEP_ME=1";
  }
  EXPECT_TRUE(path);
  EXPECT_TRUE(kept);
}

TEST(Landlock, ConfinedProcessCannotReadOutsideItsFolders) {
  TempDir dir;
  testing::write_text(dir.path() / "allowed" / "a.txt", "ok\n");
  testing::write_text(dir.path() / "denied.txt", "secret\n");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string note = restrict_file_access({{dir.path() / "allowed"}, {}});
    if (!note.empty()) ::_exit(2);  // no Landlock on this kernel
    int allowed = ::open((dir.path() / "allowed" / "a.txt").c_str(), O_RDONLY);
    int denied = ::open((dir.path() / "denied.txt").c_str(), O_RDONLY);
    int environ_fd = ::open("/proc/self/environ", O_RDONLY);
    ::_exit(allowed >= 0 && denied < 0 && environ_fd < 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "this kernel has no Landlock";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace kopt
