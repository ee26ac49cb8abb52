// UTF-8 at the edge: every string kopt receives (a model's answer, an endpoint's error body, a
// compile log, an imported row) may hold any bytes, and a string cut at a byte count may end in
// half a character. nlohmann::json::dump throws on either, so text is made valid once, where it
// enters, and every shortening goes through clip_utf8(), which never splits a character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kopt {

// The Unicode replacement character, what an invalid byte becomes.
inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// The code points of `text`; a byte that does not start a valid, shortest UTF-8 sequence (a
// surrogate, an overlong form, a stray continuation byte, a Latin-1 byte) is one U+FFFD.
std::vector<char32_t> utf8_code_points(std::string_view text);

// Appends `cp` encoded as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// Whether `text` is valid UTF-8 (what json::dump accepts without throwing).
bool is_valid_utf8(std::string_view text);

// `text` with every invalid byte replaced by U+FFFD; valid text is returned unchanged.
std::string valid_utf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary.
std::string_view utf8_prefix(std::string_view text, size_t max_bytes);

// The longest suffix of `text` of at most `max_bytes` bytes that starts on a character boundary.
std::string_view utf8_suffix(std::string_view text, size_t max_bytes);

// The one way kopt shortens text: `text` valid (as valid_utf8), and when longer than
// `max_bytes`, cut on a character boundary to at most `max_bytes` bytes with `marker` appended.
std::string clip_utf8(std::string_view text, size_t max_bytes, std::string_view marker = "...");

// `text` valid, and when longer than `max_bytes`: its first two thirds and its last third on
// character boundaries, joined by `marker` (the start says what was asked, the end what broke).
std::string clip_utf8_middle(std::string_view text, size_t max_bytes, std::string_view marker);

// The first line of `text`, clipped as clip_utf8 does: what a log line or a verdict summary shows
// of a compiler's or an endpoint's message.
std::string first_line_clipped(std::string_view text, size_t max_bytes = 200);

}  // namespace kopt
