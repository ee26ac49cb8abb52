#include "sandbox/kernel_profile.h"

#include <algorithm>
#include <cstdio>

#include "common/json_limits.h"
#include "common/json_reader.h"

namespace kopt {

using nlohmann::json;

double KernelProfile::bank_conflict_percent() const {
  return shared_wavefronts > 0 ? 100.0 * bank_conflicts / shared_wavefronts : 0.0;
}

std::vector<StallShare> KernelProfile::top_stalls(size_t count) const {
  std::vector<StallShare> top;
  for (const auto& s : stalls) {
    if (s.reason == "selected") continue;
    if (top.size() == count) break;
    top.push_back(s);
  }
  return top;
}

std::string stall_display_name(const std::string& reason) {
  std::string name = reason;
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

namespace {

std::string percent(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value < 9.95 && value > 0 ? "%.1f%%" : "%.0f%%", value);
  return text;
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, bytes < 10e6 ? "%.2f MB" : "%.0f MB", bytes * 1e-6);
  return text;
}

}  // namespace

std::string describe_profile(const KernelProfile& p) {
  std::string line = "DRAM " + percent(p.dram_percent) + " of peak (" + megabytes(p.dram_bytes()) +
                     "), L2 hit " + percent(p.l2_hit_percent) + ", L1 hit " +
                     percent(p.l1_hit_percent) + ", SM throughput " + percent(p.sm_percent) +
                     ", achieved occupancy " + percent(p.occupancy_percent);
  if (p.tensor_percent >= 0) line += ", tensor pipes " + percent(p.tensor_percent);
  auto top = p.top_stalls(3);
  if (!top.empty()) {
    line += ", top stalls:";
    for (size_t i = 0; i < top.size(); ++i)
      line += (i ? ", " : " ") + stall_display_name(top[i].reason) + " " + percent(top[i].percent);
  }
  if (p.bank_conflicts > 0)
    line +=
        ", shared-memory bank conflicts " + percent(p.bank_conflict_percent()) + " of wavefronts";
  if (p.kernels > 1) line += " (" + std::to_string(p.kernels) + " kernels)";
  return line;
}

namespace {

// Every number of a profile under its JSON key (the member's name): to_json writes, and
// kernel_profile_from_json accepts and reads, these lists; the stalls, a list of objects, apart.
constexpr std::pair<const char*, int KernelProfile::*> kCounts[] = {
    {"kernels", &KernelProfile::kernels},
    {"passes", &KernelProfile::passes},
};
constexpr std::pair<const char*, double KernelProfile::*> kMeasures[] = {
    {"duration_us", &KernelProfile::duration_us},
    {"dram_read_bytes", &KernelProfile::dram_read_bytes},
    {"dram_write_bytes", &KernelProfile::dram_write_bytes},
    {"dram_percent", &KernelProfile::dram_percent},
    {"l2_hit_percent", &KernelProfile::l2_hit_percent},
    {"l1_hit_percent", &KernelProfile::l1_hit_percent},
    {"sm_percent", &KernelProfile::sm_percent},
    {"occupancy_percent", &KernelProfile::occupancy_percent},
    {"tensor_percent", &KernelProfile::tensor_percent},
    {"instructions", &KernelProfile::instructions},
    {"shared_wavefronts", &KernelProfile::shared_wavefronts},
    {"bank_conflicts", &KernelProfile::bank_conflicts},
    {"profile_ms", &KernelProfile::profile_ms},
};

std::vector<std::string> profile_keys() {
  std::vector<std::string> keys = {"stalls"};
  for (const auto& [key, member] : kCounts) keys.emplace_back(key);
  for (const auto& [key, member] : kMeasures) keys.emplace_back(key);
  return keys;
}

}  // namespace

json to_json(const KernelProfile& p) {
  json j = {{"stalls", json::array()}};
  for (const auto& s : p.stalls)
    j["stalls"].push_back({{"reason", s.reason}, {"percent", s.percent}});
  for (const auto& [key, member] : kCounts) j[key] = p.*member;
  for (const auto& [key, member] : kMeasures) j[key] = p.*member;
  return j;
}

Result<KernelProfile> kernel_profile_from_json(const json& j, const std::string& path) {
  JsonReader r("kernel profile");
  if (!j.is_object()) return make_error("kernel profile: " + path + ": expected an object");
  KernelProfile p;
  r.check_keys(j, path, profile_keys());
  for (const auto& [key, member] : kCounts)
    if (auto v = r.integer_field(j, path, key, true)) p.*member = static_cast<int>(*v);
  for (const auto& [key, member] : kMeasures)
    if (auto v = r.number_field(j, path, key, true)) p.*member = *v;
  if (const json* stalls = r.typed_field(j, path, "stalls", json::value_t::array, true)) {
    r.each_object(*stalls, path + ".stalls", [&](const json& s, const std::string& at) {
      r.check_keys(s, at, {"reason", "percent"});
      StallShare share;
      if (auto v = r.string_field(s, at, "reason", true)) share.reason = *v;
      if (auto v = r.number_field(s, at, "percent", true)) share.percent = *v;
      p.stalls.push_back(share);
    });
  }
  if (!r.ok()) return make_error(r.message());
  return p;
}

std::optional<KernelProfile> stored_kernel_profile(const std::string& profile_json) {
  auto j = parse_json_bounded(profile_json);
  if (j.is_discarded() || !j.is_object() || j.empty()) return std::nullopt;
  auto profile = kernel_profile_from_json(j);
  if (!profile) return std::nullopt;
  return *profile;
}

}  // namespace kopt
