// Free text (a GPU name, a task description, a kernel title, a lesson) made safe for the one
// language it is pasted into. Generated files mix languages, and a newline, a quote or a `${`
// in free text must never end a comment or a string and become code: every free-text field that
// reaches a generated file goes through the function for its target, or is left out.
#pragma once

#include <string>
#include <string_view>

namespace kopt {

// One line of plain text: control characters (newline, carriage return, escape, DEL, the
// Unicode line and paragraph separators, NEL) become spaces and invalid UTF-8 becomes U+FFFD.
std::string one_line_text(std::string_view text);

// A CMake quoted argument, quotes included: `\`, `"`, `$` and `@` escaped, so nothing is
// expanded or ended (a `;` inside quotes does not split); control characters as \n, \t, \r or
// removed.
std::string cmake_quoted(std::string_view text);

// Text for a `#` line comment of CMake or Python: one line that cannot open a CMake bracket
// comment.
std::string hash_comment_text(std::string_view text);

// A C++ string literal, quotes included: ASCII only (everything else as octal escapes), `?`
// escaped so no trigraph forms.
std::string cpp_string_literal(std::string_view text);

// Text for a C++ comment, `//` or `/* */`: one line, no `*/` or `/*`, no trailing backslash
// (which would continue a `//` comment onto the next line).
std::string cpp_comment_text(std::string_view text);

// A Python 3 string literal, quotes included: ASCII only (\uXXXX for the rest), so it is inert
// in any source position (never `"""`, never a line break).
std::string python_string_literal(std::string_view text);

// Inline markdown: one line with markdown's inline syntax characters (\ ` * _ { } [ ] ( ) # + !
// | ~) backslash-escaped, `<`, `>`, `&` as entities, and a leading list or heading marker
// escaped, so no emphasis, link, HTML, code span, list or table cell break forms.
std::string markdown_text(std::string_view text);


// Text for a terminal or a log line: control characters (escape sequences, carriage return,
// backspace, newline, the C1 range with its one-byte CSI, DEL), the Unicode line separators and
// the bidirectional overrides are shown as visible escapes (\n, \x1b, \u202e) so model text can
// neither move the cursor, recolour, retitle the terminal, nor forge a log line; invalid UTF-8
// becomes U+FFFD. A tab stays a tab.
std::string terminal_text(std::string_view text);

// terminal_text() for text shown as a block of lines (a kernel, a diff, a prompt): the same,
// except that a newline stays a newline.
std::string terminal_block_text(std::string_view text);

// HTML or SVG element content and quoted attribute values: & < > " ' as entities, control
// characters other than tab and newline removed.
std::string html_text(std::string_view text);

}  // namespace kopt
