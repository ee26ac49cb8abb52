// Terminal and HTML escaping of model text: hostile strings for each target, and plain text that
// must come through unchanged.
#include <gtest/gtest.h>

#include <string>

#include "common/text_escape.h"

namespace kopt {
namespace {

TEST(TerminalText, EscapeSequencesAndLineBreaksBecomeVisible) {
  EXPECT_EQ(terminal_text("plain title: 2x faster, ok"), "plain title: 2x faster, ok");
  EXPECT_EQ(terminal_text("\x1b]0;pwned\x07red"), "\\x1b]0;pwned\\x07red");
  EXPECT_EQ(terminal_text("a\nINFO fake line\rb"), "a\\nINFO fake line\\rb");
  EXPECT_EQ(terminal_text("tab\tkept"), "tab\tkept");
  EXPECT_EQ(terminal_text("\x7f\x08"), "\\x7f\\x08");
  EXPECT_EQ(terminal_text("\xc2\x9b"
                          "31m"),
            "\\u009b31m");  // the one-byte CSI
  EXPECT_EQ(terminal_text("abc\xe2\x80\xae"
                          "cba"),
            "abc\\u202ecba");  // right-to-left override
  EXPECT_EQ(terminal_text("caf\xc3\xa9 \xe2\x86\x92 ok"), "caf\xc3\xa9 \xe2\x86\x92 ok");
  EXPECT_EQ(terminal_text("\xff"), "\xef\xbf\xbd");  // invalid UTF-8 becomes U+FFFD
  EXPECT_EQ(terminal_text("\"\"\" ${x} */ \\"), "\"\"\" ${x} */ \\");  // inert on a terminal
}

TEST(HtmlText, MarkupAndControlsAreInert) {
  EXPECT_EQ(html_text("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(html_text("a\x1b[31mb\nc"), "a[31mb\nc");
  EXPECT_EQ(html_text("speedup 2.3x"), "speedup 2.3x");
}

}  // namespace
}  // namespace kopt
