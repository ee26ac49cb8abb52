// Includes from the toolkit only: every way of making NVRTC open a file outside the CUDA
// include roots is refused with the include named, and its correct twin (a toolkit header)
// passes. The compile-level proofs (the file is never read, the log holds no canary) are in
// confined_compile_test.cc.
#include "sandbox/include_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::contains;
using testing::TempDir;

const std::string kKernel = "\n__global__ void k(float* x) { x[0] = 1; }\n";

std::optional<std::string> check(const std::string& source) {
  return check_includes(source, "cand.cu", toolkit_include_roots());
}

void expect_refused(const std::string& source, const std::string& named) {
  auto refusal = check(source);
  ASSERT_TRUE(refusal.has_value()) << "not refused:\n" << source;
  EXPECT_TRUE(contains(*refusal, named)) << *refusal;
  EXPECT_TRUE(contains(*refusal, "cand.cu(")) << *refusal;
}

TEST(IncludePolicy, ToolkitRootsAreRealFolders) {
  auto roots = toolkit_include_roots();
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(roots[1].filename(), "cccl");
}

TEST(IncludePolicy, ToolkitHeadersPass) {
  EXPECT_EQ(check("#include <cuda_bf16.h>\n#include \"mma.h\"\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("#include <cub/block/block_reduce.cuh>\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("  #  include <cuda/std/limits> // trailing\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("%:include <cuda_fp16.h>\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("#if __has_include(<cuda_fp8.h>)\n#endif\n" + kKernel), std::nullopt);
  // A header the toolkit lacks is only a false __has_include, not a refusal.
  EXPECT_EQ(check("#if __has_include(<nonexistent_kopt.h>)\n#endif\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("#define TILE 32\n#pragma unroll\n_Pragma(\"unroll 4\")\n" + kKernel),
            std::nullopt);
}

TEST(IncludePolicy, NoIncludeAtAllPasses) {
  EXPECT_EQ(check(kKernel), std::nullopt);
  EXPECT_EQ(check(""), std::nullopt);
}

TEST(IncludePolicy, AbsolutePathsAreRefused) {
  expect_refused("#include \"/proc/self/environ\"\n" + kKernel, "#include \"/proc/self/environ\"");
  expect_refused("#include </etc/passwd>\n" + kKernel, "#include </etc/passwd>");
  expect_refused("#include \"/usr/local/cuda/include/cuda_bf16.h\"\n" + kKernel, "absolute");
}

TEST(IncludePolicy, EscapingRelativePathsAreRefused) {
  expect_refused("#include \"../../../../../../etc/passwd\"\n" + kKernel, "'..'");
  expect_refused("#include <cub/../../../../../../etc/passwd>\n" + kKernel, "'..'");
}

TEST(IncludePolicy, HeadersOutsideTheToolkitAreRefused) {
  expect_refused("#include <stdio.h>\n" + kKernel, "#include <stdio.h>");
  expect_refused("#include \"candidate_helper.h\"\n" + kKernel, "no header of that name");
}

TEST(IncludePolicy, ComputedIncludesAreRefused) {
  expect_refused("#define F \"/proc/self/environ\"\n#include F\n" + kKernel, "computed include");
  expect_refused("#define P(x) <x>\n#include P(stdio.h)\n" + kKernel, "computed include");
  expect_refused("#include_next <cuda_bf16.h>\n" + kKernel, "#include_next");
  expect_refused("#import <cuda_bf16.h>\n" + kKernel, "#import");
  expect_refused("#embed \"/etc/passwd\"\n" + kKernel, "#embed");
  expect_refused("#define H <stdio.h>\n#if __has_include(H)\n#endif\n" + kKernel, "__has_include");
  expect_refused("#if __has_include(\"/etc/shadow\")\n#endif\n" + kKernel, "absolute");
  expect_refused("#if __has_include_next(<x.h>)\n#endif\n" + kKernel, "__has_include_next");
}

TEST(IncludePolicy, DisguisedDirectivesAreFound) {
  // A line continuation inside the directive, a comment between '#' and 'include', a digraph.
  expect_refused("#inc\\\nlude \"/etc/passwd\"\n" + kKernel, "/etc/passwd");
  expect_refused("# /* c */ include \"/etc/passwd\"\n" + kKernel, "/etc/passwd");
  expect_refused("%:include \"/etc/passwd\"\n" + kKernel, "/etc/passwd");
  // A block comment before the directive on its line is only a space.
  expect_refused("/* a */ #include \"/etc/passwd\"\n" + kKernel, "/etc/passwd");
  // Inside the argument of a stringizing macro (the quote-a-whole-file trick).
  expect_refused(
      "#define S(...) #__VA_ARGS__\nconst char* s = S(\n#include \"/etc/shadow\"\n);\n" + kKernel,
      "/etc/shadow");
  // A digit separator is no character literal that could hide the rest of the line's code.
  expect_refused("int a = 1'000'/*\n#endif\n#include \"/etc/passwd\"\n*/;" + kKernel, "passwd");
  // A raw string holding a quote and a comment opener hides nothing after it.
  expect_refused("const char* r = R\"x( \" /* )x\";\n#include \"/etc/passwd\"\n// */\n" + kKernel,
                 "passwd");
}

TEST(IncludePolicy, IncludesInCommentsAndStringsAreIgnored) {
  EXPECT_EQ(check("// #include \"/etc/passwd\"\n/* #include </etc/shadow> */\n" + kKernel),
            std::nullopt);
  EXPECT_EQ(check("const char* s = \"#include </etc/passwd>\";\n" + kKernel), std::nullopt);
  EXPECT_EQ(check("const char* r = R\"(#include </etc/passwd>)\";\n" + kKernel), std::nullopt);
}

TEST(IncludePolicy, FileOpeningPragmasAreRefused) {
  expect_refused("#pragma GCC dependency \"/etc/shadow\"\n" + kKernel, "dependency");
  expect_refused("_Pragma(\"GCC dependency \\\"/etc/shadow\\\"\")\n" + kKernel, "dependency");
  expect_refused("#define P(x) _Pragma(x)\n" + kKernel, "_Pragma");
  expect_refused("?\?=include \"/etc/passwd\"\n" + kKernel, "trigraph");
}

TEST(IncludePolicy, ToolkitMacroNamesAreNotTheCandidates) {
  expect_refused("#define __THRUST_DEVICE_SYSTEM_ROOT /etc\n" + kKernel, "__THRUST");
  expect_refused("#undef _LIBCUDACXX_X\n" + kKernel, "_LIBCUDACXX_X");
  expect_refused("#define CUB_NS_PREFIX x\n" + kKernel, "CUB_NS_PREFIX");
}

TEST(IncludePolicy, UnterminatedRawStringIsRefused) {
  expect_refused("const char* r = R\"x( never closed\n#include \"/etc/passwd\"\n", "raw string");
}

TEST(IncludePolicy, NonRegularFilesAndLinksOutOfTheRootAreRefused) {
  // Roots of our own: a FIFO and a link to a file outside them, as a toolkit could hold.
  TempDir dir;
  auto root = std::filesystem::canonical(dir.path());
  ASSERT_EQ(::mkfifo((root / "fifo.h").c_str(), 0600), 0);
  testing::write_text(dir.path() / "outside" / "secret.h", "int secret;\n");
  std::filesystem::create_directories(root / "inc");
  std::filesystem::create_symlink(root / "outside" / "secret.h", root / "inc" / "link.h");
  testing::write_text(root / "inc" / "good.h", "\n");
  std::vector<std::filesystem::path> roots = {root / "inc"};
  std::filesystem::create_symlink(root / "fifo.h", root / "inc" / "fifo.h");
  auto fifo = check_includes("#include \"fifo.h\"\n", "c.cu", {root});
  ASSERT_TRUE(fifo);
  EXPECT_TRUE(contains(*fifo, "not a regular file")) << *fifo;
  auto link = check_includes("#include \"link.h\"\n", "c.cu", roots);
  ASSERT_TRUE(link);
  EXPECT_TRUE(contains(*link, "outside the toolkit")) << *link;
  EXPECT_EQ(check_includes("#include \"good.h\"\n", "c.cu", roots), std::nullopt);
}

TEST(IncludePolicy, LineNumbersCountContinuedLines) {
  auto refusal = check("int a;\\\n\n\n#include </etc/passwd>\n");
  ASSERT_TRUE(refusal);
  EXPECT_TRUE(contains(*refusal, "cand.cu(4)")) << *refusal;
}

}  // namespace
}  // namespace kopt
