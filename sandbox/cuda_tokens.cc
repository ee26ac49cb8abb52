#include "sandbox/cuda_tokens.h"

namespace kopt {

namespace {

bool is_identifier_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}
bool is_identifier_char(unsigned char c) {
  return is_identifier_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Phase 2: the text with every backslash-newline removed, and the physical line of each kept
// character. GCC also joins a backslash followed by spaces and then a newline; so do we.
struct SplicedText {
  std::string text;
  std::vector<int> line;
};

SplicedText splice_lines(std::string_view source) {
  SplicedText out;
  out.text.reserve(source.size());
  out.line.reserve(source.size() + 1);
  int line = 1;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\') {
      size_t j = i + 1;
      while (j < source.size() && (source[j] == ' ' || source[j] == '\t' || source[j] == '\r')) ++j;
      if (j < source.size() && source[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    out.text += source[i];
    out.line.push_back(line);
    if (source[i] == '\n') ++line;
  }
  out.line.push_back(line);  // the position one past the end
  return out;
}

// Longest punctuators first; digraphs map to the token they spell.
struct Punct {
  std::string_view spelling;
  std::string_view token;
};
constexpr Punct kPuncts[] = {
    {"%:%:", "##"}, {"...", "..."}, {"->*", "->*"}, {"<<=", "<<="}, {">>=", ">>="}, {"<=>", "<=>"},
    {"##", "##"},   {"%:", "#"},    {"<%", "{"},    {"%>", "}"},    {":>", "]"},    {"::", "::"},
    {"->", "->"},   {"<<", "<<"},   {">>", ">>"},   {"<=", "<="},   {">=", ">="},   {"==", "=="},
    {"!=", "!="},   {"&&", "&&"},   {"||", "||"},   {"++", "++"},   {"--", "--"},   {"+=", "+="},
    {"-=", "-="},   {"*=", "*="},   {"/=", "/="},   {"%=", "%="},   {"&=", "&="},   {"|=", "|="},
    {"^=", "^="},   {".*", ".*"},
};

class Tokenizer {
 public:
  Tokenizer(std::string_view source, const std::string& origin)
      : spliced_(splice_lines(source)), s_(spliced_.text), origin_(origin) {}

  Result<std::vector<CudaToken>> run() {
    // Anywhere, literals and comments included: "??/" is a backslash to a host compiler that
    // honours trigraphs, so it could end a string or a comment where NVRTC does not.
    for (size_t t = s_.find("??"); t != std::string::npos; t = s_.find("??", t + 1)) {
      if (t + 2 < s_.size() &&
          std::string_view("=/'()!<>-").find(s_[t + 2]) != std::string_view::npos)
        return error(t, "trigraph '" + s_.substr(t, 3) +
                            "' refused: a host compiler may read it as another character");
    }
    bool new_line = true;
    bool space = false;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\n') {
        new_line = true;
        space = true;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
        space = true;
        ++i_;
      } else if (s_.compare(i_, 2, "//") == 0) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        space = true;
      } else if (s_.compare(i_, 2, "/*") == 0) {
        size_t end = s_.find("*/", i_ + 2);
        if (end == std::string::npos) return error(i_, "a /* comment is not closed");
        i_ = end + 2;  // a comment is one space, even across lines: a directive goes on
        space = true;
      } else {
        size_t start = i_;
        CudaToken token;
        if (auto s = read_token(token); !s) return make_error(s.error());
        token.line = line_at(start);
        token.starts_line = new_line;
        token.space_before = space;
        tokens_.push_back(std::move(token));
        new_line = false;
        space = false;
      }
    }
    return std::move(tokens_);
  }

 private:
  int line_at(size_t pos) const { return spliced_.line[std::min(pos, spliced_.line.size() - 1)]; }

  Error error(size_t pos, const std::string& what) const {
    return make_error(origin_ + ":" + std::to_string(line_at(pos)) + ": " + what);
  }

  Status read_token(CudaToken& token) {
    unsigned char c = static_cast<unsigned char>(s_[i_]);
    if (is_identifier_start(c) ||
        (c == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'u' || s_[i_ + 1] == 'U'))) {
      size_t start = i_;
      while (i_ < s_.size()) {
        unsigned char d = static_cast<unsigned char>(s_[i_]);
        if (is_identifier_char(d)) {
          ++i_;
        } else if (d == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'u' || s_[i_ + 1] == 'U')) {
          i_ += 2;  // a universal character name is part of the identifier
        } else {
          break;
        }
      }
      std::string word = s_.substr(start, i_ - start);
      if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'') && is_literal_prefix(word))
        return read_literal(token, start, !word.empty() && word.back() == 'R');
      token.kind = CudaToken::Kind::kIdentifier;
      token.text = std::move(word);
      return ok_status();
    }
    if (is_digit(s_[i_]) || (s_[i_] == '.' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1]))) {
      size_t start = i_;
      while (i_ < s_.size()) {
        char d = s_[i_];
        if ((d == '+' || d == '-') &&
            (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E' || s_[i_ - 1] == 'p' || s_[i_ - 1] == 'P')) {
          ++i_;
        } else if (is_identifier_char(static_cast<unsigned char>(d)) || d == '.' ||
                   (d == '\'' && i_ + 1 < s_.size() &&
                    is_identifier_char(static_cast<unsigned char>(s_[i_ + 1])))) {
          ++i_;
        } else {
          break;
        }
      }
      token.kind = CudaToken::Kind::kNumber;
      token.text = s_.substr(start, i_ - start);
      return ok_status();
    }
    if (s_[i_] == '"' || s_[i_] == '\'') return read_literal(token, i_, false);
    for (const auto& p : kPuncts) {
      if (s_.compare(i_, p.spelling.size(), p.spelling) != 0) continue;
      // C++ lexes "<::" as "<" "::" unless the next character is ':' or '>'.
      token.kind = CudaToken::Kind::kPunct;
      token.text = p.token;
      i_ += p.spelling.size();
      return ok_status();
    }
    if (s_.compare(i_, 2, "<:") == 0 &&
        !(s_.compare(i_, 3, "<::") == 0 &&
          (i_ + 3 >= s_.size() || (s_[i_ + 3] != ':' && s_[i_ + 3] != '>')))) {
      token.kind = CudaToken::Kind::kPunct;
      token.text = "[";
      i_ += 2;
      return ok_status();
    }
    token.kind =
        std::string_view("{}[]()<>;:,.?~!+-*/%^&|=#").find(s_[i_]) != std::string_view::npos
            ? CudaToken::Kind::kPunct
            : CudaToken::Kind::kOther;
    token.text = std::string(1, s_[i_]);
    ++i_;
    return ok_status();
  }

  static bool is_literal_prefix(const std::string& word) {
    static const char* const kPrefixes[] = {"L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"};
    for (const char* p : kPrefixes)
      if (word == p) return true;
    return false;
  }

  // A string or character literal from `start` (its prefix included); i_ is on the quote.
  Status read_literal(CudaToken& token, size_t start, bool raw) {
    char quote = s_[i_];
    token.kind = quote == '"' ? CudaToken::Kind::kString : CudaToken::Kind::kChar;
    if (raw && quote == '"') {
      size_t open = s_.find('(', i_ + 1);
      if (open == std::string::npos || open - i_ - 1 > 16)
        return error(start, "a raw string literal without a valid delimiter");
      std::string close = ")" + s_.substr(i_ + 1, open - i_ - 1) + "\"";
      size_t end = s_.find(close, open + 1);
      if (end == std::string::npos) return error(start, "a raw string literal is not closed");
      i_ = end + close.size();
    } else {
      for (++i_; i_ < s_.size() && s_[i_] != quote; ++i_) {
        if (s_[i_] == '\n') return error(start, "a string or character literal is not closed");
        if (s_[i_] == '\\') ++i_;
      }
      if (i_ >= s_.size()) return error(start, "a string or character literal is not closed");
      ++i_;
    }
    token.text = s_.substr(start, i_ - start);
    return ok_status();
  }

  SplicedText spliced_;
  const std::string& s_;
  const std::string& origin_;
  size_t i_ = 0;
  std::vector<CudaToken> tokens_;
};

}  // namespace

Result<std::vector<CudaToken>> tokenize_cuda(std::string_view source, const std::string& origin) {
  return Tokenizer(source, origin).run();
}

}  // namespace kopt
