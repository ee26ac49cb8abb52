#include "common/verdict.h"

#include "common/enum_names.h"

namespace kopt {
namespace {
constexpr EnumNameTable<Verdict, 14> kNames = {{
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
    {Verdict::kSanitizing, "sanitizing"},
}};
static_assert(names_each_enumerator(kNames, Verdict::kSanitizing));
}  // namespace

std::string verdict_name(Verdict verdict) { return enum_name(kNames, verdict, "unknown"); }

std::optional<Verdict> parse_verdict(const std::string& name) {
  return enum_from_name(kNames, name);
}

}  // namespace kopt
