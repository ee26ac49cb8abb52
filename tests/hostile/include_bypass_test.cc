// The include path through the toolkit itself (issue 34, cause 1): thrust computes an include
// from macros built of ordinary words (`#include __THRUST_DEVICE_SYSTEM_TAG_HEADER` is
// <thrust/system/cuda/detail/execution_policy.h>), so a candidate that defines `cuda` or
// `thrust` once made NVRTC open any file. Each attack here runs through the compile gate in
// this process, where no Landlock confines it (the worker's own compile path), and must be
// refused without the canary file ever being opened (inotify watches it) and without its text in
// the log; the same attack through NVRTC with the old search paths does open it, so the watch
// would see a bypass.
#include <gtest/gtest.h>
#include <nvrtc.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>

#include "common/strings.h"
#include "sandbox/compiler.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/include_policy.h"
#include "sandbox/toolkit_headers.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

const char* kCanaryText = "kopt_secret_canary_9d2f";
const std::string kKernel = "\nextern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
const char* kThrustHeader = "thrust/iterator/detail/device_system_tag.h";

// Counts opens of one file while it lives.
class OpenWatch {
 public:
  explicit OpenWatch(const std::filesystem::path& file)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0) watch_ = ::inotify_add_watch(fd_, file.c_str(), IN_OPEN | IN_ACCESS);
  }
  ~OpenWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ready() const { return fd_ >= 0 && watch_ >= 0; }
  int events() {
    int count = 0;
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(fd_, buffer, sizeof buffer)) > 0;) {
      for (char* p = buffer; p < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(p);
        ++count;
        p += sizeof(inotify_event) + event->len;
      }
    }
    return count;
  }

 private:
  int fd_ = -1;
  int watch_ = -1;
};

class IncludeBypass : public ::testing::Test {
 protected:
  void SetUp() override {
    canary_ = std::filesystem::canonical(dir_.path()) / "canary_secret.h";
    testing::write_text(canary_, std::string("int ") + kCanaryText + " = 42;\n");
  }

  // From the toolkit's include root up to / and down to the canary: what `cuda` is defined as.
  std::string relative_canary() const {
    std::string climb;
    for (int i = 0; i < 24; ++i) climb += "../";
    return climb + canary_.relative_path().string();
  }

  static CompileRequest request_for(const std::string& source) {
    CompileRequest request;
    request.source = source;
    request.origin = "candidate.cu";
    request.arch = "sm_90a";
    request.kernel_names = {"k"};
    return request;
  }

  // Refused by the gate naming `macro`; the canary never opened, its text nowhere in the log.
  void expect_refused_unopened(const CompileRequest& request, const std::string& macro) {
    OpenWatch watch(canary_);
    ASSERT_TRUE(watch.ready());
    auto out = compile_kernel(request, nullptr);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_FALSE(out->ok);
    EXPECT_TRUE(contains(out->log, "'" + macro + "' is refused")) << out->log;
    EXPECT_TRUE(contains(out->log, "builds an #include path")) << out->log;
    EXPECT_FALSE(contains(out->log, kCanaryText)) << out->log;
    EXPECT_FALSE(contains(out->log, canary_.filename().string())) << out->log;
    EXPECT_EQ(watch.events(), 0) << "the compile opened " << canary_;
  }

  TempDir dir_;
  std::filesystem::path canary_;
};

// The proof that the watch sees the attack: NVRTC as kopt called it before (the toolkit's
// folders as search paths, no headers in memory) opens the canary and quotes it.
TEST_F(IncludeBypass, TheAttackOpensTheFileThroughSearchPaths) {
  OpenWatch watch(canary_);
  ASSERT_TRUE(watch.ready());
  std::string source =
      "#define cuda " + relative_canary() + ">\n#include <" + kThrustHeader + ">\n" + kKernel;
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, source.c_str(), "candidate.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  std::vector<std::string> options = {"-arch=sm_90a", "--std=c++17", "--no-source-include"};
  for (const auto& root : toolkit_include_roots())
    options.push_back("--include-path=" + root.string());
  std::vector<const char*> pointers;
  for (const auto& o : options) pointers.push_back(o.c_str());
  (void)nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  EXPECT_GT(watch.events(), 0);
  EXPECT_TRUE(contains(log, kCanaryText)) << log;
}

TEST_F(IncludeBypass, RelativePathThroughCudaIsRefusedUnopened) {
  expect_refused_unopened(request_for("#define cuda " + relative_canary() + ">\n#include <" +
                                      kThrustHeader + ">\n" + kKernel),
                          "cuda");
}

TEST_F(IncludeBypass, AbsolutePathThroughThrustIsRefusedUnopened) {
  expect_refused_unopened(request_for("#define thrust " + canary_.string() + ">\n#include <" +
                                      kThrustHeader + ">\n" + kKernel),
                          "thrust");
}

TEST_F(IncludeBypass, EveryWordOfThePathIsRefused) {
  for (const char* word : {"system", "detail", "execution_policy", "h"}) {
    SCOPED_TRACE(word);
    expect_refused_unopened(request_for(std::string("#define ") + word + " " + canary_.string() +
                                        ">\n#include <" + kThrustHeader + ">\n" + kKernel),
                            word);
  }
  // #undef, and a define after the include (a later include of the same header reads it).
  expect_refused_unopened(
      request_for(std::string("#include <") + kThrustHeader + ">\n#undef cuda\n" + kKernel),
      "cuda");
}

TEST_F(IncludeBypass, TunableOfThatNameIsRefused) {
  CompileRequest request = request_for(std::string("#include <") + kThrustHeader + ">\n" + kKernel);
  request.defines["cuda"] = 1;
  expect_refused_unopened(request, "cuda");
}

// The same words stay free for kernels that include no header building a path from them.
TEST_F(IncludeBypass, WordsAreFreeWithoutSuchAHeader) {
  auto out = compile_kernel(request_for("#include <cuda_fp16.h>\n#define detail 4\n#define h 2\n"
                                        "extern \"C\" __global__ void k(float* x) { x[0] = "
                                        "detail * h; }\n"),
                            nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_TRUE(out->ok) << out->log;
}

TEST(ToolkitHeaders, ThrustPathWordsAreCollected) {
  auto set = toolkit_headers_for(std::string("#include <") + kThrustHeader + ">\n");
  for (const char* word : {"thrust", "system", "cuda", "detail", "execution_policy", "h"})
    EXPECT_TRUE(set->include_macro_names.count(word)) << word;
  EXPECT_FALSE(set->include_macro_names.count("k"));
  // The header itself and what it includes, by the names its includes write.
  EXPECT_NE(std::find(set->names.begin(), set->names.end(), kThrustHeader), set->names.end());
}

TEST(ToolkitHeaders, ClosureFollowsQuotedNeighbours) {
  auto set = toolkit_headers_for("#include <cuda_fp16.h>\n#include <mma.h>\n");
  for (const char* name : {"cuda_fp16.h", "cuda_fp16.hpp", "mma.h", "crt/mma.h", "mma.hpp"})
    EXPECT_NE(std::find(set->names.begin(), set->names.end(), name), set->names.end()) << name;
  for (const auto& name : set->names) EXPECT_NE(name.front(), '/') << name;
}

// NVRTC gets no search path: the only files it can open are the ones given in memory.
TEST(ToolkitHeaders, NvrtcHasNoSearchPath) {
  CompileRequest request;
  request.arch = "sm_90a";
  for (const auto& option : compile_options(request))
    EXPECT_FALSE(contains(option, "include-path") || option.rfind("-I", 0) == 0) << option;
}

// A name no toolkit header has is not looked for on disk: NVRTC says it has no search list, so
// the same refusal comes whether or not such a file exists anywhere (no existence probe).
TEST(ToolkitHeaders, MissingNamesAreNotSearchedFor) {
  CompileRequest request;
  request.origin = "candidate.cu";
  request.arch = "sm_90a";
  request.kernel_names = {"k"};
  // A header that exists nowhere in the toolkit: the gate refuses it before NVRTC.
  request.source = "#include <kopt_no_such_header.h>\n" + kKernel;
  auto out = compile_kernel(request, nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_FALSE(out->ok);
  EXPECT_TRUE(contains(out->log, "no header of that name")) << out->log;
}

// Diagnostics inside a toolkit header do not quote the header's lines.
TEST(ToolkitHeaders, LogQuotesOnlyTheCandidatesOwnLines) {
  CompileRequest request;
  request.origin = "candidate.cu";
  request.arch = "sm_90a";
  request.kernel_names = {"k"};
  request.source = "#define max 1\n#include <cuda/std/limits>\n" + kKernel;
  auto out = compile_kernel(request, nullptr);
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_FALSE(out->ok) << out->log;
  EXPECT_TRUE(contains(out->log, "(a line of a toolkit header, not shown)")) << out->log;
  EXPECT_FALSE(contains(out->log, "/kopt/kernel.cu")) << out->log;
  // Every quoted line (indented, with a caret below) follows a diagnostic in candidate.cu.
  auto lines = split(out->log, '\n');
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    bool caret = lines[i + 1].find('^') != std::string::npos &&
                 lines[i + 1].find_first_not_of(" ^") == std::string::npos;
    if (caret) {
      EXPECT_EQ(lines[i - 1].rfind("candidate.cu(", 0), 0u) << out->log;
    }
  }
}

}  // namespace
}  // namespace kopt
