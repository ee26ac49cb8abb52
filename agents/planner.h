// The planner: from a task, the kernel to improve, its measurements and what memory knows,
// proposes several distinct optimization plans (AccelOpt's planner, with retrieval instead of a
// fixed list of summaries). It writes no code; the coder does.
#pragma once

#include <string>
#include <vector>

#include "agents/agent_call.h"
#include "agents/agent_context.h"
#include "common/result.h"

namespace kopt::agents {

struct Plan {
  std::string title;   // a few words: "float4 loads, grid-stride loop"
  std::string detail;  // what to change and why it should be faster
};

// The title with case, spaces and punctuation removed: the same plan written twice has the
// same key ("Float4 loads!" and "float4 loads").
std::string plan_key(const std::string& title);

// Reads the planner's answer: {"plans": [{"title", "detail"}]} or a bare array, where each plan
// may also be a plain string. Plans with an empty title and detail are dropped, and so are
// near-duplicates (same title ignoring case and punctuation). An error when none is left.
Result<std::vector<Plan>> parse_plans(const std::string& reply);

class Planner {
 public:
  explicit Planner(AgentCaller& caller) : caller_(caller) {}

  // Asks for `count` plans to improve context.current; returns at most `count`.
  Result<std::vector<Plan>> propose(const WorkContext& context, int count, AgentUsage& usage);

 private:
  AgentCaller& caller_;
};

}  // namespace kopt::agents
