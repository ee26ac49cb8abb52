#include "common/score_basis.h"

namespace kopt {

const std::vector<std::string>& score_basis_names() {
  static const std::vector<std::string> names = {"auto", "sol_score", "sol_percent"};
  return names;
}

const std::string& score_basis_name(ScoreBasis basis) {
  return score_basis_names().at(static_cast<size_t>(basis));
}

std::optional<ScoreBasis> parse_score_basis(const std::string& name) {
  const auto& names = score_basis_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<ScoreBasis>(i);
  }
  return std::nullopt;
}

}  // namespace kopt
