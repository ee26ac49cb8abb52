#include "sandbox/worker/probe_reading.h"

#include <algorithm>
#include <cstdio>

namespace kopt::worker {
namespace {

double median(std::vector<double> values) {
  auto middle = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

Result<ProbeReading> read_probe(const std::vector<FmaRep>& reps) {
  if (reps.size() < 2) return make_error("the busy-GPU probe needs a launch past its warm-up");
  std::vector<double> us, mhz;
  for (size_t i = 1; i < reps.size(); ++i) {
    // A launch with no clock would be a probe that cannot be judged: an error, not a pass.
    if (!(reps[i].sm_mhz > 0)) return make_error("the busy-GPU probe's SM clock did not read");
    us.push_back(reps[i].ms * 1e3);
    mhz.push_back(reps[i].sm_mhz);
  }
  ProbeReading reading{.us = median(us), .sm_mhz = median(mhz)};
  reading.kilocycles = reading.us * reading.sm_mhz / 1e3;
  return reading;
}

std::optional<std::string> probe_over_best(const ProbeReading& reading, double best_kilocycles,
                                           double tolerance) {
  if (!(best_kilocycles > 0) || reading.kilocycles <= best_kilocycles * (1 + tolerance))
    return std::nullopt;
  char text[240];
  std::snprintf(text, sizeof text,
                "the probe kernel took %.0f thousand SM cycles (%.1f us at %.0f MHz), %.0f%% over "
                "its best %.0f thousand on this GPU",
                reading.kilocycles, reading.us, reading.sm_mhz,
                100 * (reading.kilocycles / best_kilocycles - 1), best_kilocycles);
  return std::string(text);
}

}  // namespace kopt::worker
