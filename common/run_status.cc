#include "common/run_status.h"

#include "common/enum_names.h"

namespace kopt {
namespace {
constexpr EnumNames<RunStatus, 5> kNames = {
    {"running", "finished", "budget", "interrupted", "failed"}};
static_assert(names_each_enumerator(kNames, RunStatus::kFailed));
}  // namespace

std::string run_status_name(RunStatus status) { return enum_name(kNames, status, "unknown"); }

std::optional<RunStatus> parse_run_status(const std::string& name) {
  return enum_from_name(kNames, name);
}

}  // namespace kopt
