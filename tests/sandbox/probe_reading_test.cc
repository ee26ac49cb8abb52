// The busy-GPU probe's reading (sandbox/worker/probe_reading.h) on the CPU, with launch times and
// in-kernel clocks as an H200 gave them (2026-11-28): a warm or power-capped GPU is not called
// busy, another context's time slices are, and one odd launch moves neither way.
#include "sandbox/worker/probe_reading.h"

#include <gtest/gtest.h>

namespace kopt::worker {
namespace {

// The warm-up launch first (slower: the module's first run), then `n` launches alike.
std::vector<FmaRep> launches(int n, double ms, double mhz) {
  std::vector<FmaRep> reps = {{.ms = 0.42, .sm_mhz = mhz}};
  for (int i = 0; i < n; ++i) reps.push_back({.ms = ms, .sm_mhz = mhz});
  return reps;
}

// A cold H200: 323 us at 1976 MHz.
double cold_best() { return read_probe(launches(9, 0.323, 1976)).value().kilocycles; }

TEST(ProbeReading, CountsCyclesFromMediansPastTheWarmUp) {
  auto reading = read_probe(launches(9, 0.323, 1976));
  ASSERT_TRUE(reading.ok()) << reading.error();
  EXPECT_NEAR(reading->us, 323, 1e-9);
  EXPECT_NEAR(reading->sm_mhz, 1976, 1e-9);
  EXPECT_NEAR(reading->kilocycles, 638.248, 1e-6);
  std::vector<FmaRep> slow_warm_up = launches(9, 0.323, 1976);
  slow_warm_up[0].ms = 50;  // clocks ramping from idle: not judged
  EXPECT_NEAR(read_probe(slow_warm_up)->kilocycles, reading->kilocycles, 1e-9);
}

TEST(ProbeReading, AWarmGpuAtItsBestIsQuiet) {
  // After 20 s of full FMA load: 322-326 us at 1978 MHz. The old rule (us scaled by NVML's
  // samples) had stored a best of 289 us, so this read as 12-16% over.
  auto warm = read_probe(launches(9, 0.326, 1978));
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(probe_over_best(*warm, cold_best(), 0.10), std::nullopt);
}

TEST(ProbeReading, ALowerClockIsNotAnotherUser) {
  // Under a power cap the SM clock drops and the probe takes longer by as much: same cycles.
  auto capped = read_probe(launches(9, 0.323 * 1976 / 1500, 1500));
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(probe_over_best(*capped, cold_best(), 0.10), std::nullopt);
}

TEST(ProbeReading, AnotherContextsTimeSlicesAreBusy) {
  // Beside another process's kernels: 2480-2700 us per launch at an unchanged 1978 MHz.
  auto shared = read_probe(launches(9, 2.52, 1978));
  ASSERT_TRUE(shared.ok());
  auto over = probe_over_best(*shared, cold_best(), 0.10);
  ASSERT_TRUE(over.has_value());
  EXPECT_NE(over->find("over its best 638 thousand"), std::string::npos) << *over;
  // Just past the tolerance is busy too; just within it is not.
  EXPECT_TRUE(probe_over_best(*read_probe(launches(9, 0.323 * 1.12, 1976)), cold_best(), 0.10));
  EXPECT_FALSE(probe_over_best(*read_probe(launches(9, 0.323 * 1.08, 1976)), cold_best(), 0.10));
}

TEST(ProbeReading, OneOddLaunchMovesNeitherWay) {
  // A few launches preempted mid-kernel could read a low clock (cycles paused, time running): the
  // medians keep the rest's clock, so the delay still shows.
  std::vector<FmaRep> shared = launches(9, 2.52, 1978);
  shared[3].sm_mhz = shared[7].sm_mhz = 250;
  EXPECT_TRUE(probe_over_best(*read_probe(shared), cold_best(), 0.10));
  // One launch delayed by a hiccup of the host does not make a quiet GPU busy.
  std::vector<FmaRep> quiet = launches(9, 0.323, 1976);
  quiet[5].ms = 3.0;
  EXPECT_FALSE(probe_over_best(*read_probe(quiet), cold_best(), 0.10));
}

TEST(ProbeReading, NoBestYetIsNeverTooSlow) {
  EXPECT_FALSE(probe_over_best(*read_probe(launches(9, 2.52, 1978)), 0, 0.10));
}

TEST(ProbeReading, AProbeWithoutAClockOrTimedLaunchIsAnError) {
  EXPECT_FALSE(read_probe(launches(9, 0.323, 0)).ok());
  EXPECT_FALSE(read_probe(launches(0, 0.323, 1976)).ok());
}

}  // namespace
}  // namespace kopt::worker
