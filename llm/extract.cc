#include "llm/extract.h"

#include <algorithm>

#include "common/json_limits.h"
#include "common/strings.h"

namespace kopt {

using nlohmann::json;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Fence {
  char mark = 0;      // '`' or '~'
  size_t length = 0;  // three or more
  std::string info;   // the rest of the line
};

// A fence line: optional indentation, then three or more backticks or tildes.
bool parse_fence(std::string_view line, Fence& fence) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || (line[i] != '`' && line[i] != '~')) return false;
  char mark = line[i];
  size_t end = line.find_first_not_of(mark, i);
  size_t length = (end == std::string_view::npos ? line.size() : end) - i;
  if (length < 3) return false;
  fence.mark = mark;
  fence.length = length;
  fence.info = end == std::string_view::npos ? "" : trim(line.substr(end));
  return true;
}

// The tag is the info string's first word ("cuda title=x" -> "cuda", "{.cpp}" -> "cpp").
std::string language_of(const std::string& info) {
  std::string word = info.substr(0, info.find_first_of(" \t"));
  word.erase(std::remove_if(word.begin(), word.end(), [](char c) { return c == '{' || c == '}'; }),
             word.end());
  if (!word.empty() && word[0] == '.') word.erase(0, 1);
  return lower(word);
}

bool language_matches(const std::string& tag, const std::string& wanted) {
  if (tag == wanted) return true;
  static const std::vector<std::string> kCudaAliases = {"cu", "cuh", "c++", "cpp", "cxx"};
  if (wanted == "cuda")
    return std::find(kCudaAliases.begin(), kCudaAliases.end(), tag) != kCudaAliases.end();
  return false;
}

const CodeBlock* longest(const std::vector<const CodeBlock*>& blocks) {
  const CodeBlock* best = nullptr;
  for (const CodeBlock* b : blocks) {
    if (!best || b->code.size() > best->code.size()) best = b;
  }
  return best;
}

// The end (one past) of the balanced value starting at text[start] ('{' or '['), skipping
// brackets inside strings; npos when unbalanced or nested deeper than any value kopt parses.
size_t balanced_end(std::string_view text, size_t start) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return std::string_view::npos;
    } else if (c == '}' || c == ']') {
      if (depth == 0 || --depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// Models often break a long JSON string across lines with a raw newline (or tab), which strict
// JSON forbids. Escapes raw control characters inside strings; everything else is untouched.
std::string escape_raw_controls_in_strings(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string && !escaped && static_cast<unsigned char>(c) < 0x20) {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : " ";
      continue;
    }
    out += c;
    if (escaped) {
      escaped = false;
    } else if (in_string && c == '\\') {
      escaped = true;
    } else if (c == '"') {
      in_string = !in_string;
    }
  }
  return out;
}

// Bounded in depth (json_limits.h): a `[[[...]]]` answer 100,000 deep parses, then overflows
// the stack when the value is copied or dumped.
std::optional<json> parse_structured(std::string_view text) {
  json value = parse_json_bounded(text);
  if (value.is_discarded() && json_nesting_depth(text) <= kMaxJsonDepth) {
    value = parse_json_bounded(escape_raw_controls_in_strings(text));
  }
  if (value.is_discarded() || !(value.is_object() || value.is_array())) return std::nullopt;
  return value;
}

}  // namespace

std::vector<CodeBlock> find_code_blocks(std::string_view text) {
  std::vector<CodeBlock> blocks;
  std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    Fence open;
    if (!parse_fence(lines[i], open)) continue;
    CodeBlock block;
    block.language = language_of(open.info);
    block.closed = false;
    size_t j = i + 1;
    std::vector<std::string> body;
    for (; j < lines.size(); ++j) {
      Fence close;
      if (parse_fence(lines[j], close) && close.mark == open.mark && close.length >= open.length &&
          close.info.empty()) {
        block.closed = true;
        break;
      }
      std::string line = lines[j];
      if (!line.empty() && line.back() == '\r') line.pop_back();
      body.push_back(std::move(line));
    }
    // Text ending in a newline splits into a last empty line, which is no line of the block.
    if (!block.closed && !body.empty() && body.back().empty()) body.pop_back();
    block.code = join(body, "\n");
    if (!body.empty()) block.code += "\n";
    blocks.push_back(std::move(block));
    i = j;  // continue after the closing fence (or at the end)
  }
  return blocks;
}

Result<std::string> extract_code_block(std::string_view text, std::string_view language) {
  std::vector<CodeBlock> blocks = find_code_blocks(text);
  std::string wanted = lower(language);
  std::vector<const CodeBlock*> tagged, untagged;
  for (const auto& b : blocks) {
    if (trim(b.code).empty()) continue;
    if (wanted.empty() || language_matches(b.language, wanted)) {
      tagged.push_back(&b);
    } else if (b.language.empty()) {
      untagged.push_back(&b);
    }
  }
  if (const CodeBlock* b = longest(tagged)) return b->code;
  if (const CodeBlock* b = longest(untagged)) return b->code;
  if (blocks.empty()) return make_error("the response has no fenced code block");
  std::vector<std::string> seen;
  for (const auto& b : blocks) seen.push_back(b.language.empty() ? "(untagged)" : b.language);
  return make_error("the response has no " + (wanted.empty() ? std::string("non-empty") : wanted) +
                    " code block (blocks found: " + join(seen, ", ") + ")");
}

Result<json> extract_json(std::string_view text) {
  if (auto whole = parse_structured(trim(text))) return *whole;
  for (const auto& b : find_code_blocks(text)) {
    if (b.language != "json" && !b.language.empty()) continue;
    if (auto value = parse_structured(b.code)) return *value;
  }
  // Prose around a bare value: try each opening bracket in turn (bounded, replies are small).
  int tries = 0;
  for (size_t start = text.find_first_of("{["); start != std::string_view::npos && tries < 64;
       start = text.find_first_of("{[", start + 1), ++tries) {
    size_t end = balanced_end(text, start);
    if (end == std::string_view::npos) continue;
    if (auto value = parse_structured(text.substr(start, end - start))) return *value;
  }
  return make_error("the response has no JSON object or array");
}

}  // namespace kopt
