#include "common/text_escape.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/utf8.h"

namespace kopt {

namespace {

// Characters that end or break a line somewhere (a terminal, an editor, Python's splitlines).
bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029;
}

// Characters with a meaning anywhere in a line of markdown (emphasis, code, links, images,
// tables, strikethrough, headings, escapes).
bool is_markdown_inline_syntax(char32_t cp) {
  return cp < 0x80 &&
         std::string_view("\\`*_{}[]()#+!|~").find(static_cast<char>(cp)) != std::string_view::npos;
}

std::string hex_escape(const char* format, unsigned value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// The backslash escapes CMake, C++ and Python quoted strings share: a backslash before each
// character of `backslashed`, \n and \t, and \r where `escape_return`. False for any other
// character, which the caller writes its own way.
bool append_backslash_escape(std::string& out, char32_t cp, std::string_view backslashed,
                             bool escape_return) {
  if (cp < 0x80 && cp != 0 && backslashed.find(static_cast<char>(cp)) != std::string_view::npos) {
    out += '\\';
    out += static_cast<char>(cp);
  } else if (cp == '\n') {
    out += "\\n";
  } else if (cp == '\t') {
    out += "\\t";
  } else if (cp == '\r' && escape_return) {
    out += "\\r";
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string one_line_text(std::string_view text) {
  std::string out;
  for (char32_t cp : utf8_code_points(text)) append_utf8(out, is_control(cp) ? U' ' : cp);
  return out;
}

std::string cmake_quoted(std::string_view text) {
  std::string out = "\"";
  for (char32_t cp : utf8_code_points(text)) {
    if (!append_backslash_escape(out, cp, "\\\"$@", true) && !is_control(cp)) append_utf8(out, cp);
  }
  return out + "\"";
}

std::string hash_comment_text(std::string_view text) {
  std::string line = one_line_text(text);
  // "#[[" or "#[=[" would open a bracket comment spanning lines; the caller writes "# " first,
  // and a leading '[' is kept apart from it anyway.
  if (!line.empty() && line.front() == '[') line.insert(line.begin(), ' ');
  return line;
}

std::string cpp_string_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    // No \r: a carriage return is octal like every other control character.
    if (append_backslash_escape(out, c, "\\\"?", false)) continue;
    if (c < 0x20 || c >= 0x7F) {
      out += hex_escape("\\%03o", c);  // octal: at most 3 digits, never eats what follows
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string cpp_comment_text(std::string_view text) {
  std::string line = one_line_text(text), out;
  for (size_t i = 0; i < line.size(); ++i) {
    out += line[i];
    // "*/" would end a block comment, "/*" opens one inside another (a warning), "??/" was a
    // backslash trigraph before C++17.
    if (i + 1 < line.size() &&
        ((line[i] == '*' && line[i + 1] == '/') || (line[i] == '/' && line[i + 1] == '*') ||
         (line[i] == '?' && line[i + 1] == '?'))) {
      out += ' ';
    }
  }
  // A backslash at the end of a // comment (spaces after it included) continues the comment on
  // the next line: the generated code there would vanish.
  while (!out.empty() && (out.back() == '\\' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string python_string_literal(std::string_view text) {
  std::string out = "\"";
  for (char32_t cp : utf8_code_points(text)) {
    if (append_backslash_escape(out, cp, "\\\"", true)) continue;
    if (cp < 0x20 || cp == 0x7F) {
      out += hex_escape("\\x%02x", static_cast<unsigned>(cp));
    } else if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      out += hex_escape("\\u%04x", static_cast<unsigned>(cp));
    } else {
      out += hex_escape("\\U%08x", static_cast<unsigned>(cp));
    }
  }
  return out + "\"";
}

std::string markdown_text(std::string_view text) {
  std::string out;
  std::vector<char32_t> points = utf8_code_points(text);
  // At the start of a line "-", "=", "1." and "1)" open a list or underline a heading.
  size_t digits = 0;
  while (digits < points.size() && points[digits] >= '0' && points[digits] <= '9') ++digits;
  size_t marker =
      !points.empty() && (points[0] == '-' || points[0] == '=') ? 0
      : digits > 0 && digits < points.size() && (points[digits] == '.' || points[digits] == ')')
          ? digits
          : std::string::npos;
  for (size_t i = 0; i < points.size(); ++i) {
    char32_t cp = points[i];
    if (i == marker) out += '\\';
    if (is_control(cp)) {
      out += ' ';
    } else if (cp == '<') {
      out += "&lt;";
    } else if (cp == '>') {
      out += "&gt;";
    } else if (cp == '&') {
      out += "&amp;";
    } else if (is_markdown_inline_syntax(cp)) {
      out += '\\';
      out += static_cast<char>(cp);
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

namespace {

bool is_bidi_control(char32_t cp) {
  return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
         cp == 0x200F || cp == 0x061C;
}

}  // namespace

namespace {

std::string terminal_escaped(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : utf8_code_points(text)) {
    if (cp == '\t' || (cp == '\n' && keep_newlines)) {
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += hex_escape("\\x%02x", static_cast<unsigned>(cp));
    } else if (is_control(cp) || is_bidi_control(cp)) {
      out += hex_escape("\\u%04x", static_cast<unsigned>(cp));
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

}  // namespace

std::string terminal_text(std::string_view text) { return terminal_escaped(text, false); }

std::string terminal_block_text(std::string_view text) { return terminal_escaped(text, true); }

std::string html_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : utf8_code_points(text)) {
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (cp == '\t' || cp == '\n' || !is_control(cp)) append_utf8(out, cp);
    }
  }
  return out;
}

}  // namespace kopt
