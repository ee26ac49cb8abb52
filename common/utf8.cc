#include "common/utf8.h"

namespace kopt {

namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid, shortest UTF-8 sequence starting at text[i], 0 when there is none.
size_t sequence_length(std::string_view text, size_t i, char32_t* code_point) {
  unsigned char c = static_cast<unsigned char>(text[i]);
  size_t length = c < 0x80           ? 1
                  : (c >> 5) == 0x6  ? 2
                  : (c >> 4) == 0xE  ? 3
                  : (c >> 3) == 0x1E ? 4
                                     : 0;
  if (length == 0 || i + length > text.size()) return 0;
  char32_t cp = length == 1 ? c : length == 2 ? c & 0x1F : length == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < length; ++k) {
    unsigned char next = static_cast<unsigned char>(text[i + k]);
    if (!is_continuation(next)) return 0;
    cp = (cp << 6) | (next & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return length;
}

}  // namespace

std::vector<char32_t> utf8_code_points(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = kReplacementCharacter;
    size_t length = sequence_length(text, i, &cp);
    out.push_back(length ? cp : kReplacementCharacter);
    i += length ? length : 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    size_t length = sequence_length(text, i, &cp);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    size_t length = sequence_length(text, i, &cp);
    if (length == 0) {
      append_utf8(out, kReplacementCharacter);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // A character is at most 4 bytes: step back over at most 3 continuation bytes.
  for (int k = 0; k < 3 && cut > 0 && is_continuation(static_cast<unsigned char>(text[cut])); ++k)
    --cut;
  return text.substr(0, cut);
}

std::string_view utf8_suffix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t start = text.size() - max_bytes;
  for (int k = 0;
       k < 3 && start < text.size() && is_continuation(static_cast<unsigned char>(text[start]));
       ++k)
    ++start;
  return text.substr(start);
}

std::string clip_utf8(std::string_view text, size_t max_bytes, std::string_view marker) {
  if (text.size() <= max_bytes) return valid_utf8(text);
  return valid_utf8(utf8_prefix(text, max_bytes)) + std::string(marker);
}

std::string clip_utf8_middle(std::string_view text, size_t max_bytes, std::string_view marker) {
  if (text.size() <= max_bytes) return valid_utf8(text);
  size_t head = max_bytes * 2 / 3;
  return valid_utf8(utf8_prefix(text, head)) + std::string(marker) +
         valid_utf8(utf8_suffix(text, max_bytes - head));
}

std::string first_line_clipped(std::string_view text, size_t max_bytes) {
  return clip_utf8(text.substr(0, text.find('\n')), max_bytes);
}

}  // namespace kopt
