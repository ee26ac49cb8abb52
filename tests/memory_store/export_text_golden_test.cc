// The fixed texts every export writes, pinned byte for byte: splitting their templates into
// named parts (issue 38) must not change a character of what an export holds. A deliberate
// change to a text updates its digest here in the same commit.
#include <gtest/gtest.h>

#include "common/sha256.h"
#include "exchange/export_selftest_codegen.h"

namespace kopt::exporter {
namespace {

TEST(ExportTextGolden, SelftestSupportHeaderIsUnchanged) {
  std::string text = selftest_support_header();
  EXPECT_EQ(text.size(), 9848u);
  EXPECT_EQ(sha256_hex(text), "484658ee4169f7ee8db5fdba04f89229f99bcb4bc9f7b5c060587869283a7d41");
}

}  // namespace
}  // namespace kopt::exporter
