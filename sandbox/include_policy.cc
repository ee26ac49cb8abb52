#include "sandbox/include_policy.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string_view>

#include "sandbox/compiler.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

// The source after phase 2 of translation (backslash-newline removed), with the original line
// of every character for messages. Only an exact backslash-newline is spliced: where a compiler
// splices more (a backslash, spaces, newline) the scan sees more code than the compiler, which
// can only refuse more, never hide a directive inside what it takes for a comment.
struct Spliced {
  std::string text;
  std::vector<int> line;
};

Spliced splice_lines(const std::string& source) {
  Spliced out;
  out.text.reserve(source.size());
  out.line.reserve(source.size());
  int line = 1;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
      ++line;
      ++i;
      continue;
    }
    out.text += source[i];
    out.line.push_back(line);
    if (source[i] == '\n') ++line;
  }
  return out;
}

bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Names the toolkit's own computed includes are built from (thrust's
// `#include __THRUST_DEVICE_SYSTEM_..._HEADER`): a candidate that defines one could steer a
// toolkit header to any file, so reserved names and the libraries' prefixes are not its to
// define.
bool is_toolkit_reserved(std::string_view name) {
  if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || std::isupper(name[1]))) return true;
  for (std::string_view prefix : {"THRUST_", "CUB_", "CCCL_", "LIBCUDACXX_", "CUDA_", "NV_"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

bool is_under(const fs::path& path, const fs::path& root) {
  auto [r, p] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return r == root.end();
}

class IncludeScanner {
 public:
  IncludeScanner(const std::string& source, const std::string& origin,
                 const std::vector<fs::path>& roots)
      : spliced_(splice_lines(source)), t_(spliced_.text), origin_(origin), roots_(roots) {}

  std::vector<std::string> run() {
    size_t i = 0;
    while (i < t_.size() && problems_.size() < kMaxProblems) i = step(i);
    return problems_;
  }

 private:
  static constexpr size_t kMaxProblems = 20;

  char at(size_t i) const { return i < t_.size() ? t_[i] : '\0'; }

  size_t step(size_t i) {
    char c = t_[i];
    char next = at(i + 1);
    if (c == '/' && next == '/') return std::min(t_.find('\n', i), t_.size());
    if (c == '/' && next == '*') {
      size_t end = t_.find("*/", i + 2);
      return end == std::string::npos ? t_.size() : end + 2;
    }
    if (c == '"' || c == '\'') return skip_quoted(i);
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && std::isdigit(static_cast<unsigned char>(next))))
      return skip_pp_number(i);
    if (is_identifier_start(c)) return on_identifier(i);
    if (c == '#') return on_hash(i, i + 1);
    if (c == '%' && next == ':') return on_hash(i, i + 2);
    if (c == '?' && next == '?' && (at(i + 2) == '=' || at(i + 2) == '/')) {
      refuse(i, std::string("a trigraph ('??") + at(i + 2) + "') is refused");
      return i + 3;
    }
    return i + 1;
  }

  // A string or character literal ends at its closing quote or, unterminated, at the newline.
  size_t skip_quoted(size_t i) const {
    char quote = t_[i];
    size_t j = i + 1;
    while (j < t_.size() && t_[j] != quote && t_[j] != '\n') j += t_[j] == '\\' ? 2 : 1;
    if (j >= t_.size()) return t_.size();
    return t_[j] == quote ? j + 1 : j;
  }

  // A preprocessing number, digit separators included: the ' in 1'000 starts no literal.
  size_t skip_pp_number(size_t i) const {
    size_t j = i;
    while (j < t_.size()) {
      char c = t_[j];
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (at(j + 1) == '+' || at(j + 1) == '-'))
        j += 2;
      else if (is_identifier_char(c) || c == '.')
        ++j;
      else if (c == '\'' && is_identifier_char(at(j + 1)))
        j += 2;
      else
        break;
    }
    return j;
  }

  size_t identifier_end(size_t i) const {
    while (i < t_.size() && is_identifier_char(t_[i])) ++i;
    return i;
  }

  // Spaces, tabs and block comments inside one line.
  size_t skip_space(size_t j) const {
    while (j < t_.size()) {
      if (t_[j] == ' ' || t_[j] == '\t' || t_[j] == '\v' || t_[j] == '\f' || t_[j] == '\r') {
        ++j;
      } else if (t_[j] == '/' && at(j + 1) == '*') {
        size_t end = t_.find("*/", j + 2);
        j = end == std::string::npos ? t_.size() : end + 2;
      } else {
        break;
      }
    }
    return j;
  }

  std::string rest_of_line(size_t i) const {
    size_t end = std::min(t_.find('\n', i), t_.size());
    std::string text = t_.substr(i, std::min<size_t>(end - i, 100));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
  }

  size_t on_identifier(size_t i) {
    size_t end = identifier_end(i);
    std::string_view word(t_.data() + i, end - i);
    if ((word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR") &&
        at(end) == '"')
      return skip_raw_string(i, end + 1);
    if (word.substr(0, 13) == "__has_include") return on_has_include(i, end, word);
    if (word == "_Pragma" || word == "__pragma") return on_pragma_operator(i, end);
    return end;
  }

  // R"delim( ... )delim": the scan must not take a quote or "/*" inside one for code.
  size_t skip_raw_string(size_t i, size_t open) {
    size_t paren = open;
    while (paren < t_.size() && paren - open <= 16 && t_[paren] != '(' &&
           !std::isspace(static_cast<unsigned char>(t_[paren])) && t_[paren] != ')' &&
           t_[paren] != '\\')
      ++paren;
    if (at(paren) != '(') return open - 1;  // not a raw string the compiler accepts either
    std::string closing = ")" + t_.substr(open, paren - open) + "\"";
    size_t end = t_.find(closing, paren + 1);
    if (end == std::string::npos) {
      refuse(i, "an unterminated raw string literal is refused");
      return t_.size();
    }
    return end + closing.size();
  }

  // A header name at `j`: <...> or "..." on one line; nullopt when the operand is anything else.
  std::optional<std::pair<std::string, size_t>> header_name(size_t j) const {
    char open = at(j);
    if (open != '<' && open != '"') return std::nullopt;
    char close = open == '<' ? '>' : '"';
    size_t end = j + 1;
    while (end < t_.size() && t_[end] != close && t_[end] != '\n') ++end;
    if (end >= t_.size() || t_[end] != close) return std::nullopt;
    return std::make_pair(t_.substr(j + 1, end - j - 1), end + 1);
  }

  size_t on_hash(size_t i, size_t after_hash) {
    size_t j = skip_space(after_hash);
    if (!is_identifier_start(at(j))) return j > i ? j : i + 1;
    size_t end = identifier_end(j);
    std::string_view directive(t_.data() + j, end - j);
    std::string shown = "#" + std::string(directive);
    if (directive == "include") {
      size_t operand = skip_space(end);
      auto name = header_name(operand);
      if (!name) {
        refuse(i, "'#include " + rest_of_line(operand) +
                      "' is refused: a computed include (a macro for the header name); write "
                      "the header's name as <name.h>");
        return operand;
      }
      check_header(i, "#include " + t_.substr(operand, name->second - operand), name->first, false);
      return name->second;
    }
    if (directive == "include_next" || directive == "import" || directive == "embed" ||
        directive == "include_macros") {
      refuse(i, "'" + shown + "' is refused (only #include of toolkit headers)");
      return end;
    }
    if (directive == "pragma") {
      check_pragma(i, rest_of_line(end));
      return end;
    }
    if (directive == "define" || directive == "undef") {
      size_t name_start = skip_space(end);
      size_t name_end = identifier_end(name_start);
      std::string_view name(t_.data() + name_start, name_end - name_start);
      if (is_toolkit_reserved(name))
        refuse(i, "'" + shown + " " + std::string(name) +
                      "' is refused: names beginning with '_' and an uppercase letter or '__', "
                      "and the prefixes THRUST_, CUB_, CCCL_, LIBCUDACXX_, CUDA_, NV_, belong "
                      "to the toolkit");
      return name_end;
    }
    return end;
  }

  size_t on_has_include(size_t i, size_t end, std::string_view word) {
    if (word != "__has_include") {
      refuse(i, "'" + std::string(word) + "' is refused");
      return end;
    }
    size_t j = skip_space(end);
    if (at(j) == '(') {
      size_t operand = skip_space(j + 1);
      if (auto name = header_name(operand)) {
        check_header(i, "__has_include(" + t_.substr(operand, name->second - operand) + ")",
                     name->first, true);
        return name->second;
      }
    }
    refuse(i, "'__has_include" + rest_of_line(end) +
                  "' is refused: only a literal <name.h> or \"name.h\" may be asked for");
    return j;
  }

  size_t on_pragma_operator(size_t i, size_t end) {
    size_t j = skip_space(end);
    if (at(j) == '(') {
      size_t operand = skip_space(j + 1);
      if (at(operand) == 'L' || at(operand) == 'u' || at(operand) == 'U') {
        while (is_identifier_char(at(operand))) ++operand;
      }
      if (at(operand) == '"') {
        size_t close = skip_quoted(operand);
        check_pragma(i, t_.substr(operand, close - operand));
        return close;
      }
    }
    refuse(i, "'_Pragma" + rest_of_line(end) + "' is refused: only a literal string may be given");
    return j;
  }

  // Pragmas that open or name files (GCC's dependency, include_alias, system_header).
  void check_pragma(size_t i, const std::string& text) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : {"dependency", "include", "import", "embed", "system_header"}) {
      if (lower.find(word) != std::string::npos) {
        refuse(i, "'#pragma " + text + "' is refused: a pragma that names files");
        return;
      }
    }
  }

  void check_header(size_t i, const std::string& shown, const std::string& name, bool probe_only) {
    auto refuse_header = [&](const std::string& why) {
      refuse(i, "'" + shown + "' is refused: " + why +
                    " (only headers of the CUDA toolkit may be included)");
    };
    if (name.empty()) return refuse_header("an empty header name");
    if (name.front() == '/') return refuse_header("an absolute path");
    for (char c : name) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f ||
          c == '\\')
        return refuse_header("a character that no toolkit header name has");
    }
    for (const auto& part : fs::path(name)) {
      if (part == "..") return refuse_header("a path that climbs out with '..'");
    }
    for (const auto& root : roots_) {
      std::error_code ec;
      // realpath reads links and directory entries; the header itself is never opened here.
      fs::path real = fs::canonical(root / name, ec);
      if (ec) continue;
      bool inside = std::any_of(roots_.begin(), roots_.end(),
                                [&](const fs::path& r) { return is_under(real, r); });
      if (!inside) return refuse_header("it resolves outside the toolkit");
      if (!fs::is_regular_file(real, ec)) return refuse_header("not a regular file");
      return;
    }
    if (!probe_only) refuse_header("no header of that name in the CUDA toolkit");
  }

  void refuse(size_t i, const std::string& why) {
    int line = i < spliced_.line.size() ? spliced_.line[i] : 0;
    problems_.push_back(origin_ + "(" + std::to_string(line) + "): error: " + why);
  }

  Spliced spliced_;
  const std::string& t_;
  const std::string& origin_;
  const std::vector<fs::path>& roots_;
  std::vector<std::string> problems_;
};

}  // namespace

namespace {

// The folders under the toolkit's include folder named by `subfolders` ("" is the folder
// itself), realpath'ed, in order; missing ones are left out.
std::vector<fs::path> toolkit_include_folders(std::initializer_list<const char*> subfolders) {
  std::vector<fs::path> folders;
  fs::path include = cuda_home() / "include";
  for (const char* sub : subfolders) {
    std::error_code ec;
    fs::path real = fs::canonical(include / sub, ec);
    if (!ec && fs::is_directory(real, ec)) folders.push_back(real);
  }
  return folders;
}

}  // namespace

std::vector<fs::path> toolkit_include_roots() { return toolkit_include_folders({"", "cccl"}); }

std::vector<fs::path> toolkit_header_folders() {
  return toolkit_include_folders(
      {"crt", "cooperative_groups", "cooperative_groups/details", "nvtx3", "nvtx3/nvtxDetail"});
}

std::optional<std::string> check_includes(const std::string& source, const std::string& origin,
                                          const std::vector<fs::path>& roots) {
  auto problems = IncludeScanner(source, origin, roots).run();
  if (problems.empty()) return std::nullopt;
  std::string log;
  for (const auto& p : problems) log += p + "\n";
  return log;
}

}  // namespace kopt
