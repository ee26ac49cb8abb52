// The summarizer: for a slow-to-fast pair, the short, general lesson of what made the second
// kernel faster (or, for a regression, what to avoid). The lesson is stored with the pair and
// shown to later prompts, so it must make sense without the code: technique, reason, condition.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/agent_call.h"
#include "agents/agent_context.h"
#include "common/result.h"

namespace kopt::agents {

struct PairFacts {
  TaskBrief task;
  std::string before_source;  // the parent kernel
  std::string after_source;   // the candidate derived from it
  std::optional<Measurements> before;
  std::optional<Measurements> after;
  double speedup = 0;  // before / after: > 1 faster, < 1 a regression
  std::string diff;    // unified diff before -> after
};

struct Lesson {
  std::string summary;            // two or three sentences
  std::vector<std::string> tags;  // techniques, lower-case with dashes: "vectorized-loads"
};

// Reads {"lesson": "...", "tags": [...]}; a reply without JSON is taken as the lesson itself.
// An error for an empty lesson.
Result<Lesson> parse_lesson(const std::string& reply);

class Summarizer {
 public:
  explicit Summarizer(AgentCaller& caller) : caller_(caller) {}

  Result<Lesson> summarize(const PairFacts& facts, AgentUsage& usage);

 private:
  AgentCaller& caller_;
};

}  // namespace kopt::agents
