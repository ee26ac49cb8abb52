#include "common/verdict.h"

#include "common/enum_names.h"

namespace kopt {
namespace {
constexpr EnumNames<Verdict, 15> kNames = {{"ok", "compile_error", "invalid_plan", "launch_error",
                                            "incorrect", "nondeterministic", "out_of_bounds",
                                            "modified_input", "timeout", "crash", "suspicious",
                                            "gpu_busy", "sanitizer", "sanitizing", "screened"}};
static_assert(names_each_enumerator(kNames, Verdict::kScreened));
}  // namespace

std::string verdict_name(Verdict verdict) { return enum_name(kNames, verdict, "unknown"); }

std::optional<Verdict> parse_verdict(const std::string& name) {
  return enum_from_name(kNames, name);
}

}  // namespace kopt
