#include "sandbox/worker/gpu_quiet_check.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/files.h"
#include "sandbox/gpu_turn.h"
#include "sandbox/nvml.h"
#include "sandbox/own_gpu_processes.h"

namespace kopt::worker {
namespace {

// About 0.3 ms of FMAs on an H100: long enough that launch jitter is noise, short enough that a
// check costs a few milliseconds.
constexpr int kProbeIterations = 4096;
constexpr int kProbeReps = 9;

std::filesystem::path best_probe_path(const DeviceInfo& info) {
  std::string key = info.name + "_fma4096_at_max_clock_v2";
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return cache_directory() / "probe" / (key + ".json");
}

double read_best_probe_us(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return 0;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("best_median_us") || !j["best_median_us"].is_number()) return 0;
  return j["best_median_us"].get<double>();
}

std::string us_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

// What NVML says: other processes and held-down clocks become problems, the rest facts. Returns
// whether another process holds the GPU.
bool note_activity(const GpuActivity& activity, const std::string& gpu_id, QuietVerdict& verdict,
                   std::vector<std::string>& problems) {
  bool others_present = false;
  std::vector<GpuProcess> declared;
  // The sanitizer lane's yielding worker is kopt's own: it waits while this worker holds its
  // timing turn (sandbox/gpu_turn.h), and the probe below still catches it should it compute.
  auto others = foreign_processes(activity, unsigned(::getpid()), kopt_gpu_pids(gpu_id), &declared);
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& p : others) listed.push_back(describe_process(p));
  verdict.facts["other_processes"] = listed;
  if (!declared.empty()) {
    // kopt's own helpers (own_gpu_processes.h): listed, not counted; the probe still judges.
    nlohmann::json own = nlohmann::json::array();
    for (const auto& p : declared) own.push_back(describe_process(p));
    verdict.facts["own_processes"] = own;
  }
  verdict.facts["sm_clock_mhz"] = activity.sm_clock_mhz;
  verdict.facts["max_sm_clock_mhz"] = activity.max_sm_clock_mhz;
  verdict.facts["clock_events"] = describe_clock_events(activity.clock_event_reasons);
  if (!others.empty()) {
    others_present = true;
    std::string names;
    for (const auto& p : others) names += (names.empty() ? "" : ", ") + describe_process(p);
    problems.push_back(std::to_string(others.size()) + " other process" +
                       (others.size() == 1 ? "" : "es") + " on this GPU: " + names);
  }
  if (clocks_held_down(activity.clock_event_reasons))
    problems.push_back("clocks held down (" + describe_clock_events(activity.clock_event_reasons) +
                       ", SM at " + std::to_string(activity.sm_clock_mhz) + " of " +
                       std::to_string(activity.max_sm_clock_mhz) + " MHz)");
  return others_present;
}

}  // namespace

Result<double> GpuQuietCheck::probe_median_us() {
  auto times = support_.time_fma(kProbeIterations, kProbeReps + 1);
  if (!times) return make_error("the busy-GPU probe failed: " + times.error());
  std::vector<double> timed(times->begin() + 1, times->end());  // the first one warms up
  std::nth_element(timed.begin(), timed.begin() + timed.size() / 2, timed.end());
  return timed[timed.size() / 2] * 1e3;
}

double GpuQuietCheck::sm_clock_mhz() {
  auto now = gpu_activity(device_.info().pci_bus_id);
  return now && now->max_sm_clock_mhz > 0 ? now->sm_clock_mhz : 0;
}

// The probe is compared at the maximum SM clock: a GPU that lowers its clock under its power
// cap runs it slower but is not shared (and interleaved timing cancels the clock in the
// speedup), while time-slicing with another context stretches it at an unchanged clock.
// `max_clock_mhz` 0: unknown, the probe's time as measured.
Result<double> GpuQuietCheck::probe_at_max_clock(unsigned max_clock_mhz, QuietVerdict& verdict) {
  double before = sm_clock_mhz();
  auto us = probe_median_us();
  if (!us) return make_error(us.error());
  double after = sm_clock_mhz();
  verdict.facts["probe_us"] = *us;
  if (before <= 0 || after <= 0 || max_clock_mhz == 0) return *us;
  verdict.facts["probe_sm_clock_mhz"] = (before + after) / 2;
  return *us * (before + after) / 2 / max_clock_mhz;
}

Result<QuietVerdict> GpuQuietCheck::check(double probe_tolerance) {
  QuietVerdict verdict;
  std::vector<std::string> problems;
  bool others_present = false;

  auto activity = gpu_activity(device_.info().pci_bus_id);
  if (activity)
    others_present = note_activity(*activity, device_.info().pci_bus_id, verdict, problems);
  else
    verdict.facts["nvml"] = activity.error();

  unsigned max_clock_mhz = activity ? activity->max_sm_clock_mhz : 0;
  auto path = best_probe_path(device_.info());
  double best = read_best_probe_us(path);
  auto probe = probe_at_max_clock(max_clock_mhz, verdict);
  if (!probe) return make_error(probe.error());
  // A slow first probe may be clocks ramping up after idle: one more try, the faster counts.
  if (best > 0 && *probe > best * (1 + probe_tolerance)) {
    auto again = probe_at_max_clock(max_clock_mhz, verdict);
    if (!again) return make_error(again.error());
    probe = std::min(*probe, *again);
  }
  verdict.facts["probe_us_at_max_clock"] = *probe;
  verdict.facts["best_probe_us"] = best;
  if (best > 0 && *probe > best * (1 + probe_tolerance)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the probe kernel took %s (at the maximum SM clock), %.0f%% over its best %s on "
                  "this GPU",
                  us_text(*probe).c_str(), 100 * (*probe / best - 1), us_text(best).c_str());
    problems.push_back(buf);
  }
  // Only a quiet GPU teaches the cache what "quiet" looks like.
  if (problems.empty() && !others_present && (best == 0 || *probe < best))
    (void)write_file_atomic(
        path, nlohmann::json{{"best_median_us", *probe}, {"gpu", device_.info().name}}.dump(2));
  if (!problems.empty()) {
    verdict.quiet = false;
    for (const auto& p : problems) verdict.reason += (verdict.reason.empty() ? "" : "; ") + p;
  }
  return verdict;
}

}  // namespace kopt::worker
