// What a search measures a task's best kernel by when it shares the night between tasks and
// decides that a task is done: its share of the speed-of-light bound (%SOL) or SOL-ExecBench's
// score S against what users run (common/sol_score.h). Named here, below both the config file's
// reader and the search, so that the two read the same three names.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopt {

enum class ScoreBasis {
  // S where a production baseline was measured for the task on this GPU model, %SOL elsewhere.
  kAuto,
  // S always: against the best production baseline, else against the task's baseline.cu.
  kSolScore,
  // %SOL always (the rule before production baselines existed).
  kSolPercent,
};

// "auto", "sol_score", "sol_percent", in the enum's order.
const std::vector<std::string>& score_basis_names();
const std::string& score_basis_name(ScoreBasis basis);
// The basis named `name`, or nothing for an unknown name.
std::optional<ScoreBasis> parse_score_basis(const std::string& name);

}  // namespace kopt
