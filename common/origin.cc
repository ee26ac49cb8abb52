#include "common/origin.h"

#include "common/enum_names.h"

namespace kopt {
namespace {
constexpr EnumNames<Origin, 4> kNames = {{"", "baseline", "coder", "tuner"}};
static_assert(names_each_enumerator(kNames, Origin::kTuner));
}  // namespace

std::string origin_name(Origin origin) { return enum_name(kNames, origin, ""); }

std::optional<Origin> parse_origin(const std::string& name) { return enum_from_name(kNames, name); }

}  // namespace kopt
