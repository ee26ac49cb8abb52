// The Myers line diff and its unified output.
#include "memory_store/line_diff.h"

#include <gtest/gtest.h>

#include <random>

namespace kopt::memory {
namespace {

// Applies a unified diff to `before` (strictly: context and deletions must match).
std::string apply_patch(const std::string& before, const std::string& diff) {
  auto old_lines = split_lines(before);
  auto lines = split_lines(diff);
  std::vector<std::string> out;
  size_t next_old = 0;
  for (size_t i = 2; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("@@ -", 0) == 0) {
      size_t start = std::stoul(line.substr(4));
      size_t count = std::stoul(line.substr(line.find(',') + 1));
      size_t first = count == 0 ? start : start - 1;
      while (next_old < first) out.push_back(old_lines.at(next_old++));
      continue;
    }
    char op = line[0];
    std::string text = line.substr(1);
    if (op == ' ' || op == '-') {
      if (old_lines.at(next_old) != text) throw std::runtime_error("mismatch: " + text);
      ++next_old;
      if (op == ' ') out.push_back(text);
    } else if (op == '+') {
      out.push_back(text);
    }
  }
  while (next_old < old_lines.size()) out.push_back(old_lines[next_old++]);
  std::string result;
  for (const auto& l : out) result += l + "\n";
  return result;
}

TEST(LineDiffTest, EqualTextsHaveNoDiff) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y"), "");
  EXPECT_EQ(unified_diff("", "", "x", "y"), "");
}

TEST(LineDiffTest, OneChangedLineWithContext) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(unified_diff(before, after, "slow.cu", "fast.cu"),
            "--- slow.cu\n+++ fast.cu\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(LineDiffTest, InsertIntoEmptyAndDeleteAll) {
  EXPECT_EQ(unified_diff("", "a\nb\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(unified_diff("a\nb\n", "", "x", "y"), "--- x\n+++ y\n@@ -1,2 +0,0 @@\n-a\n-b\n");
}

TEST(LineDiffTest, DistantChangesMakeSeparateHunks) {
  std::string before, after;
  for (int i = 0; i < 30; ++i) {
    before += std::to_string(i) + "\n";
    after += (i == 2 || i == 25 ? "x" : std::to_string(i)) + "\n";
  }
  std::string diff = unified_diff(before, after, "a", "b", 3);
  EXPECT_NE(diff.find("@@ -1,6 +1,6 @@"), std::string::npos) << diff;
  EXPECT_NE(diff.find("@@ -23,7 +23,7 @@"), std::string::npos) << diff;
}

TEST(LineDiffTest, EditScriptIsMinimal) {
  // ABCABBA -> CBABAC: the classic Myers example has 5 edits.
  auto chars = [](const std::string& s) {
    std::vector<std::string> v;
    for (char c : s) v.push_back(std::string(1, c));
    return v;
  };
  auto ops = diff_lines(chars("ABCABBA"), chars("CBABAC"));
  int edits = 0;
  for (const auto& op : ops) edits += op.kind != DiffOp::Kind::kEqual;
  EXPECT_EQ(edits, 5);
}

TEST(LineDiffTest, RandomDiffsApplyBack) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string before, after;
    int n = static_cast<int>(rng() % 40), m = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) before += std::to_string(rng() % 6) + "\n";
    for (int i = 0; i < m; ++i) after += std::to_string(rng() % 6) + "\n";
    std::string diff = unified_diff(before, after, "a", "b", static_cast<int>(rng() % 4));
    if (before == after) continue;
    EXPECT_EQ(apply_patch(before, diff), after) << "round " << round << "\n" << diff;
  }
}

}  // namespace
}  // namespace kopt::memory
