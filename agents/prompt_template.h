// Prompt templates: plain text files with named placeholders, `{{task_description}}`, that the
// agents fill in. A template is checked once, when it is loaded, against the placeholders its
// agent knows and the ones it cannot work without, so a typo in a prompt file is an error at
// start ("prompts/coder.txt:12: unknown placeholder {{curent_kernel}} (did you mean ...)"), never
// a prompt with a hole in it at 3 a.m.
//
// Syntax: `{{name}}` (spaces inside the braces allowed), name = [a-z][a-z0-9_]*. Any other `{{`
// is an error, so a mistyped placeholder cannot slip through as literal text. Substituted values
// are not scanned again: a kernel's source may contain anything.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace kopt::agents {

// The placeholder that marks where a prompt's stable prefix ends (render_marked).
inline constexpr const char* kStablePrefixEnd = "stable_prefix_end";

// What a template may and must use.
struct TemplateSpec {
  std::string file;                   // "coder.txt"
  std::vector<std::string> known;     // every placeholder the agent fills in
  std::vector<std::string> required;  // the subset the template must use
};

class PromptTemplate {
 public:
  // Parses `text`; `origin` names the file in messages.
  static Result<PromptTemplate> parse(const std::string& text, const std::string& origin);

  // Parses and checks against `spec`: every placeholder known, every required one present.
  static Result<PromptTemplate> parse_checked(const std::string& text, const std::string& origin,
                                              const TemplateSpec& spec);

  // The text with every placeholder replaced. A placeholder without a value is a bug in the
  // calling agent (the spec promised it) and throws std::logic_error.
  std::string render(const std::map<std::string, std::string>& values) const;

  // render(), and where the placeholder {{stable_prefix_end}} stood (it renders as nothing): the
  // text before it is the same in every call of a task, which a provider's prompt cache keeps.
  // 0 where the template has none.
  struct Rendered {
    std::string text;
    size_t stable_prefix_bytes = 0;
  };
  Rendered render_marked(const std::map<std::string, std::string>& values) const;

  // Placeholder names in order of first use.
  std::vector<std::string> placeholders() const;
  const std::string& origin() const { return origin_; }

 private:
  struct Piece {
    bool placeholder = false;
    std::string text;  // literal text, or the placeholder's name
    int line = 0;      // where the placeholder is
  };

  std::string origin_;
  std::vector<Piece> pieces_;
};

}  // namespace kopt::agents
