#include "agents/prompt_template.h"

#include <algorithm>
#include <stdexcept>

#include "common/files.h"
#include "common/strings.h"

namespace kopt::agents {

namespace {

bool is_name_start(char c) { return c >= 'a' && c <= 'z'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '_'; }

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

Result<PromptTemplate> PromptTemplate::parse(const std::string& text, const std::string& origin) {
  PromptTemplate tpl;
  tpl.origin_ = origin;
  std::vector<std::string> errors;
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string::npos) {
      literal += text.substr(i);
      break;
    }
    literal += text.substr(i, open - i);
    int line = line_of_offset(text, open);
    size_t p = open + 2;
    while (p < text.size() && text[p] == ' ') ++p;
    size_t name_start = p;
    if (p < text.size() && is_name_start(text[p])) {
      while (p < text.size() && is_name_char(text[p])) ++p;
    }
    std::string name = text.substr(name_start, p - name_start);
    while (p < text.size() && text[p] == ' ') ++p;
    if (name.empty() || text.compare(p, 2, "}}") != 0) {
      size_t end = text.find('\n', open);
      std::string shown = text.substr(open, std::min<size_t>(40, end - open));
      errors.push_back(origin + ":" + std::to_string(line) + ": malformed placeholder '" + shown +
                       "': write {{name}} with a lower-case name of letters, digits and _");
      // Skip the braces so one mistake is reported once.
      literal += "{{";
      i = open + 2;
      continue;
    }
    if (!literal.empty()) tpl.pieces_.push_back({false, std::move(literal), 0});
    literal.clear();
    tpl.pieces_.push_back({true, name, line});
    i = p + 2;
  }
  if (!literal.empty()) tpl.pieces_.push_back({false, std::move(literal), 0});
  if (!errors.empty()) return make_error(join(errors, "\n"));
  return tpl;
}

Result<PromptTemplate> PromptTemplate::parse_checked(const std::string& text,
                                                     const std::string& origin,
                                                     const TemplateSpec& spec) {
  auto tpl = parse(text, origin);
  if (!tpl) return tpl;
  std::vector<std::string> errors;
  for (const Piece& piece : tpl->pieces_) {
    if (!piece.placeholder || contains(spec.known, piece.text)) continue;
    errors.push_back(origin + ":" + std::to_string(piece.line) + ": unknown placeholder {{" +
                     piece.text + "}}" + did_you_mean(piece.text, spec.known) + "; " + spec.file +
                     " may use {{" + join(spec.known, "}}, {{") + "}}");
  }
  std::vector<std::string> used = tpl->placeholders();
  for (const std::string& name : spec.required) {
    if (!contains(used, name)) {
      errors.push_back(origin + ": missing required placeholder {{" + name + "}}: without it " +
                       "the agent cannot do its job");
    }
  }
  if (!errors.empty()) return make_error(join(errors, "\n"));
  return tpl;
}

std::string PromptTemplate::render(const std::map<std::string, std::string>& values) const {
  return render_marked(values).text;
}

PromptTemplate::Rendered PromptTemplate::render_marked(
    const std::map<std::string, std::string>& values) const {
  Rendered rendered;
  std::string& out = rendered.text;
  for (const Piece& piece : pieces_) {
    if (!piece.placeholder) {
      out += piece.text;
      continue;
    }
    if (piece.text == kStablePrefixEnd) {
      rendered.stable_prefix_bytes = out.size();
      continue;
    }
    auto it = values.find(piece.text);
    if (it == values.end()) {
      throw std::logic_error(origin_ + ":" + std::to_string(piece.line) + ": no value for {{" +
                             piece.text + "}}");
    }
    out += it->second;
  }
  return rendered;
}

std::vector<std::string> PromptTemplate::placeholders() const {
  std::vector<std::string> names;
  for (const Piece& piece : pieces_) {
    if (piece.placeholder && !contains(names, piece.text)) names.push_back(piece.text);
  }
  return names;
}

}  // namespace kopt::agents
