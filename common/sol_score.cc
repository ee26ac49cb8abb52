#include "common/sol_score.h"

#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace kopt {

namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

}  // namespace

Result<double> sol_score(double kernel_us, double reference_us, double sol_us) {
  if (!positive(kernel_us) || !positive(reference_us) || !positive(sol_us)) {
    return make_error("S needs positive times (kernel " + fixed(kernel_us, 3) + " us, reference " +
                      fixed(reference_us, 3) + " us, speed of light " + fixed(sol_us, 3) + " us)");
  }
  if (kernel_us < sol_us) {
    return make_error("suspicious: the kernel (" + fixed(kernel_us, 3) +
                      " us) is faster than the speed-of-light bound (" + fixed(sol_us, 3) +
                      " us); re-verify it or check the task's flops and bytes");
  }
  if (reference_us <= sol_us) {
    return make_error("the reference (" + fixed(reference_us, 3) +
                      " us) is at or below the speed-of-light bound (" + fixed(sol_us, 3) +
                      " us), so S is undefined; the task's flops or bytes undercount its work");
  }
  return 1.0 / (1.0 + (kernel_us - sol_us) / (reference_us - sol_us));
}

Standing standing(double kernel_us, double baseline_us, double sol_us,
                  const std::optional<ProductionReference>& production) {
  Standing s;
  if (!positive(kernel_us)) {
    s.score_note = "no kernel time";
    return s;
  }
  if (positive(baseline_us)) s.speedup_vs_baseline = baseline_us / kernel_us;
  if (production && positive(production->median_us)) {
    s.speedup_vs_production = production->median_us / kernel_us;
    s.production_name = production->name;
  }
  if (positive(sol_us)) s.sol_percent = sol_us / kernel_us * 100.0;
  double reference = s.production_name.empty() ? baseline_us : production->median_us;
  s.score_reference = s.production_name.empty() ? "baseline.cu" : s.production_name;
  if (!positive(sol_us)) {
    s.score_note = "no speed-of-light bound";
    return s;
  }
  auto score = sol_score(kernel_us, reference, sol_us);
  if (score) {
    s.score = *score;
  } else {
    s.score_note = score.error();
  }
  return s;
}

std::string format_production_speedup(const Standing& s) {
  std::string text = s.production_name.empty()
                         ? std::string("none measured")
                         : fixed(s.speedup_vs_production, 2) + "x " + s.production_name;
  if (s.not_installed.empty()) return text;
  return text + "; " + join(s.not_installed, ", ") + " not installed (" +
         (s.production_name.empty() ? std::string("nothing measured stands in")
                                    : s.production_name + " stands in") +
         ")";
}

std::string format_score(const Standing& s) {
  if (!s.score) return "S - (" + s.score_note + ")";
  std::string text = "S " + fixed(*s.score, 2) + " vs " + s.score_reference;
  if (s.production_name.empty()) text += " (no production baseline measured)";
  return text;
}

nlohmann::json standing_json(const Standing& s) {
  // Null, not 0, for what was not measured: a script must not read "0x production".
  nlohmann::json j = {
      {"speedup_vs_baseline", s.speedup_vs_baseline},
      {"speedup_vs_production",
       s.production_name.empty() ? nlohmann::json() : nlohmann::json(s.speedup_vs_production)},
      {"production_baseline", nullptr},
      {"sol_percent", s.sol_percent},
      {"sol_score", nullptr},
      {"sol_score_reference", s.score_reference}};
  if (!s.production_name.empty()) j["production_baseline"] = s.production_name;
  if (!s.not_installed.empty()) j["libraries_not_installed"] = s.not_installed;
  if (s.score) {
    j["sol_score"] = *s.score;
  } else {
    j["sol_score_note"] = s.score_note;
  }
  return j;
}

}  // namespace kopt
