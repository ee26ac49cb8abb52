// common/: SHA-256, string helpers and "did you mean", file helpers.
#include <gtest/gtest.h>

#include <thread>

#include "common/files.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using testing::TempDir;

TEST(Sha256, KnownVectors) {
  // FIPS 180-2 / NIST examples.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),  // 56 bytes
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),  // 112 bytes
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, BinaryDataWithNulBytes) {
  std::string data("a\0b", 3);
  EXPECT_NE(sha256_hex(data), sha256_hex("a"));
  EXPECT_EQ(sha256_hex(data).size(), 64u);
}

// Every length around the padding boundaries (55, 56, 63, 64, 119, 120, 128) against coreutils.
TEST(Sha256, AgreesWithSha256sumAtEveryPaddingBoundary) {
  auto tool = run_command({"sha256sum", "--version"}, "", std::chrono::seconds(10));
  if (!tool.ok() || tool->exit_code != 0) GTEST_SKIP() << "sha256sum is not installed";
  for (size_t length = 0; length <= 200; ++length) {
    std::string data;
    for (size_t i = 0; i < length; ++i) data += static_cast<char>((i * 131 + 7) & 0xff);
    auto out = run_command({"sha256sum"}, data, std::chrono::seconds(10));
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(sha256_hex(data), out->stdout_text.substr(0, 64)) << "length " << length;
  }
}

TEST(Strings, DidYouMean) {
  std::vector<std::string> keys = {"tolerance", "tags", "sizes", "shapes"};
  EXPECT_EQ(did_you_mean("toleranse", keys), " (did you mean 'tolerance'?)");
  EXPECT_EQ(did_you_mean("shape", keys), " (did you mean 'shapes'?)");
  EXPECT_EQ(did_you_mean("completely_unrelated", keys), "");
  EXPECT_EQ(did_you_mean("x", {}), "");
  EXPECT_EQ(closest_match("f33", {"f32", "f16", "bf16", "i32", "i64"}), "f32");
  EXPECT_EQ(closest_match("evl", {"doctor", "tasks", "eval"}), "eval");
  EXPECT_EQ(closest_match("zzzzzz", {"doctor", "tasks", "eval"}), "");
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Strings, SplitTrimJoin) {
  EXPECT_EQ(split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(trim("  \t x y \r\n"), "x y");
  EXPECT_EQ(trim(" \n "), "");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_TRUE(starts_with("i64:n", "i64:"));
  EXPECT_FALSE(starts_with("i6", "i64:"));
}

TEST(Files, WriteFileAtomicCreatesAndReplaces) {
  TempDir dir;
  auto path = dir / "a" / "b" / "file.bin";
  std::string binary("x\0y\n", 4);
  ASSERT_TRUE(write_file_atomic(path, binary).ok());
  auto text = read_file(path);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(*text, binary);
  ASSERT_TRUE(write_file_atomic(path, "short").ok());
  EXPECT_EQ(*read_file(path), "short");
  ASSERT_TRUE(write_file_atomic(path, "").ok());
  EXPECT_EQ(*read_file(path), "");
  // No temporary files are left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(Files, WriteFileAtomicFromManyThreadsLeavesOneWholeFile) {
  TempDir dir;
  auto path = dir / "shared.txt";
  std::vector<std::thread> threads;
  std::vector<std::string> contents;
  for (int t = 0; t < 8; ++t) contents.push_back(std::string(200000, static_cast<char>('a' + t)));
  std::atomic<int> failures = 0;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i)
        if (!write_file_atomic(path, contents[t]).ok()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(std::find(contents.begin(), contents.end(), *text), contents.end())
      << "the file is one writer's whole content";
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(Files, WriteFileAtomicFailureNamesThePath) {
  TempDir dir;
  testing::write_text(dir / "plain", "x");
  auto status = write_file_atomic(dir / "plain" / "under" / "file", "data");
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(testing::contains(status.error(), (dir / "plain").string())) << status.error();
}

TEST(Files, ReadFileErrorsNameThePath) {
  TempDir dir;
  auto missing = read_file(dir / "missing.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(testing::contains(missing.error(), (dir / "missing.txt").string()))
      << missing.error();
  EXPECT_TRUE(testing::contains(missing.error(), "No such file")) << missing.error();
  auto directory = read_file(dir.path());
  ASSERT_FALSE(directory.ok()) << "reading a directory is an error, not an empty file";
  EXPECT_TRUE(testing::contains(directory.error(), dir.path().string())) << directory.error();
}

TEST(Files, LineOfOffset) {
  std::string text = "a\nbc\n\nd";
  EXPECT_EQ(line_of_offset(text, 0), 1);
  EXPECT_EQ(line_of_offset(text, 1), 1);  // the newline itself is on line 1
  EXPECT_EQ(line_of_offset(text, 2), 2);
  EXPECT_EQ(line_of_offset(text, 5), 3);
  EXPECT_EQ(line_of_offset(text, 6), 4);
  EXPECT_EQ(line_of_offset(text, 1000), 4);
}

TEST(Files, DirectoriesHonourOverrides) {
  TempDir dir;
  ::setenv("KOPT_HOME", (dir / "home").c_str(), 1);
  ::setenv("KOPT_CACHE_DIR", (dir / "cache").c_str(), 1);
  EXPECT_EQ(data_directory(), dir / "home");
  EXPECT_EQ(cache_directory(), dir / "cache");
  ::unsetenv("KOPT_HOME");
  ::unsetenv("KOPT_CACHE_DIR");
  ::setenv("XDG_DATA_HOME", (dir / "xdg").c_str(), 1);
  EXPECT_EQ(data_directory(), dir / "xdg" / "kopt");
  ::unsetenv("XDG_DATA_HOME");
}

}  // namespace
}  // namespace kopt
