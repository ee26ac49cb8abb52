#include "sandbox/verdict.h"

#include <array>
#include <utility>

namespace kopt {
namespace {
constexpr std::array<std::pair<Verdict, const char*>, 13> kNames = {{
    {Verdict::kOk, "ok"},
    {Verdict::kCompileError, "compile_error"},
    {Verdict::kInvalidPlan, "invalid_plan"},
    {Verdict::kLaunchError, "launch_error"},
    {Verdict::kIncorrect, "incorrect"},
    {Verdict::kNondeterministic, "nondeterministic"},
    {Verdict::kOutOfBounds, "out_of_bounds"},
    {Verdict::kModifiedInput, "modified_input"},
    {Verdict::kTimeout, "timeout"},
    {Verdict::kCrash, "crash"},
    {Verdict::kSuspicious, "suspicious"},
    {Verdict::kGpuBusy, "gpu_busy"},
    {Verdict::kSanitizer, "sanitizer"},
}};
}  // namespace

std::string verdict_name(Verdict verdict) {
  for (const auto& [v, name] : kNames)
    if (v == verdict) return name;
  return "unknown";
}

std::optional<Verdict> parse_verdict(const std::string& name) {
  for (const auto& [v, n] : kNames)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace kopt
