// The GPU's timing turns (sandbox/gpu_turn.h), on the CPU: what lets the sanitizer lane's worker
// run beside the timing worker without ever computing while a candidate is timed. Threads stand
// in for the two processes (flock(2) locks belong to open files, so two descriptors of one
// process conflict as two processes would).
#include "sandbox/gpu_turn.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"

namespace kopt {
namespace {

using namespace std::chrono_literals;
using kopt::testing::TempDir;

constexpr const char* kGpu = "00000000:41:00.0";
using Millis = std::chrono::milliseconds;

class GpuTurnTest : public ::testing::Test {
 protected:
  GpuTurnTest() {
    const char* old = std::getenv("TMPDIR");
    if (old) old_tmpdir_ = old;
    ::setenv("TMPDIR", dir_.path().c_str(), 1);
  }
  ~GpuTurnTest() override {
    if (old_tmpdir_.empty())
      ::unsetenv("TMPDIR");
    else
      ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
  }

  TempDir dir_;
  std::string old_tmpdir_;
};

TEST_F(GpuTurnTest, TheFolderIsThisUsersAndTheKeyIsAFileName) {
  auto folder = gpu_turn_directory();
  ASSERT_FALSE(folder.empty());
  EXPECT_EQ(folder.parent_path(), dir_.path());
  EXPECT_EQ(gpu_turn_key("00000000:41:00.0"), "00000000_41_00.0");
  EXPECT_EQ(gpu_turn_key("a/../b"), "a_.._b");
  EXPECT_EQ(gpu_turn_key(""), "gpu");
}

// A folder of another kind under the name (here a file): no turns, and nothing registered, so
// the lane's worker counts as another process (timing refuses the GPU) instead of as kopt's own.
TEST_F(GpuTurnTest, AFolderThatIsNotAFolderGivesNoTurnsAndNoRegistrations) {
  std::ofstream(dir_ / ("kopt-gpu-turns-" + std::to_string(::getuid()))) << "planted";
  EXPECT_TRUE(gpu_turn_directory().empty());
  TimingTurn timing(kGpu);
  EXPECT_FALSE(timing.held());
  YieldingRegistration registered(kGpu);
  EXPECT_TRUE(registered_yielding_pids(kGpu).empty());
}

// The timer waits for the lane's running unit to end, never beyond it.
TEST_F(GpuTurnTest, TimingWaitsForTheYieldingUnitInProgress) {
  std::atomic<bool> unit_started{false};
  std::thread lane([&] {
    YieldingTurn unit(kGpu);
    ASSERT_TRUE(unit.held());
    unit_started = true;
    std::this_thread::sleep_for(300ms);
  });
  while (!unit_started) std::this_thread::sleep_for(1ms);
  TimingTurn timing(kGpu);
  EXPECT_TRUE(timing.held());
  EXPECT_GE(timing.waited_ms(), 200);
  lane.join();
}

// While a candidate is timed the lane starts no unit; it goes on after the turn ends.
TEST_F(GpuTurnTest, NoYieldingUnitStartsDuringATimingTurn) {
  std::atomic<bool> unit_ran{false};
  std::thread lane;
  {
    TimingTurn timing(kGpu);
    ASSERT_TRUE(timing.held());
    lane = std::thread([&] {
      YieldingTurn unit(kGpu);
      unit_ran = true;
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(unit_ran) << "the lane computed while a candidate was timed";
  }
  lane.join();
  EXPECT_TRUE(unit_ran);
}

// A timer that waits for a unit to end goes before every unit asked for after it: a busy lane
// (units back to back) never starves timing.
TEST_F(GpuTurnTest, AWaitingTimerGoesBeforeLaterUnits) {
  std::mutex order_mutex;
  std::vector<std::string> order;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(order_mutex);
    order.push_back(what);
  };
  std::atomic<bool> first_started{false};
  std::thread first([&] {
    YieldingTurn unit(kGpu);
    first_started = true;
    std::this_thread::sleep_for(300ms);
    note("unit 1 ends");
  });
  while (!first_started) std::this_thread::sleep_for(1ms);
  std::thread timer([&] {
    TimingTurn timing(kGpu);
    note("timing");
    std::this_thread::sleep_for(100ms);
  });
  std::this_thread::sleep_for(100ms);  // the timer is waiting for unit 1 now
  std::thread second([&] {
    YieldingTurn unit(kGpu);
    note("unit 2");
  });
  first.join();
  timer.join();
  second.join();
  EXPECT_EQ(order, (std::vector<std::string>{"unit 1 ends", "timing", "unit 2"}));
}

// Within a long unit (a shape's rounds under a tool) the lane's worker reaches a yield point after
// each run: a waiting timer times there, not after the whole unit, and no run of the lane falls
// inside the timing; the unit goes on after it. Without a waiting timer a yield point does nothing.
TEST_F(GpuTurnTest, AYieldPointLetsAWaitingTimerInWithinAUnit) {
  std::mutex order_mutex;
  std::vector<std::string> order;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(order_mutex);
    order.push_back(what);
  };
  EXPECT_EQ(yield_point(), 0) << "outside a unit";
  std::atomic<bool> unit_started{false};
  double yielded_ms = 0;
  std::thread lane([&] {
    YieldingTurn unit(kGpu);
    ASSERT_TRUE(unit.held());
    EXPECT_EQ(yield_point(), 0) << "no timer waits yet";
    unit_started = true;
    for (int run = 0; run < 12; ++run) {  // 12 runs of 50 ms: a 600 ms unit
      note("run");
      std::this_thread::sleep_for(50ms);
      yielded_ms += yield_point();
    }
  });
  while (!unit_started) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(60ms);
  double waited_ms = 0;
  {
    TimingTurn timing(kGpu);
    ASSERT_TRUE(timing.held());
    waited_ms = timing.waited_ms();
    note("timing starts");
    std::this_thread::sleep_for(150ms);
    note("timing ends");
  }
  lane.join();
  EXPECT_LT(waited_ms, 300) << "the timer waited for the whole unit";
  EXPECT_GE(yielded_ms, 100) << "the lane did not wait for the timing";
  auto starts = std::find(order.begin(), order.end(), "timing starts");
  ASSERT_NE(starts, order.end());
  EXPECT_EQ(*(starts + 1), "timing ends") << "the lane ran while a candidate was timed";
  EXPECT_EQ(std::count(order.begin(), order.end(), "run"), 12);
}

// Two yielding units (one lane worker per GPU; more would still only share) do not wait for each
// other, and a turn of another GPU is another file.
TEST_F(GpuTurnTest, UnitsShareAndGpusAreApart) {
  YieldingTurn a(kGpu);
  auto started = std::chrono::steady_clock::now();
  YieldingTurn b(kGpu);
  TimingTurn other("00000000:42:00.0");
  EXPECT_TRUE(b.held());
  EXPECT_TRUE(other.held());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 100ms);
}

TEST_F(GpuTurnTest, ARegisteredWorkerAndItsParentAreKoptsOwnUntilItEnds) {
  unsigned self = unsigned(::getpid()), parent = unsigned(::getppid());
  {
    YieldingRegistration registered(kGpu);
    auto pids = registered_yielding_pids(kGpu);
    EXPECT_NE(std::find(pids.begin(), pids.end(), self), pids.end());
    EXPECT_NE(std::find(pids.begin(), pids.end(), parent), pids.end());
    auto own = kopt_gpu_pids(kGpu);
    EXPECT_EQ(std::find(own.begin(), own.end(), self), own.end())
        << "kopt's own only while the timing turn keeps it from computing";
    {
      TimingTurn timing(kGpu);
      ASSERT_TRUE(timing.held());
      EXPECT_TRUE(holds_timing_turn(kGpu));
      own = kopt_gpu_pids(kGpu);
      EXPECT_NE(std::find(own.begin(), own.end(), self), own.end());
      EXPECT_NE(std::find(own.begin(), own.end(), parent), own.end());
      own = kopt_gpu_pids("00000000:42:00.0");
      EXPECT_EQ(std::find(own.begin(), own.end(), self), own.end()) << "another GPU's turn";
    }
    EXPECT_FALSE(holds_timing_turn(kGpu));
    EXPECT_TRUE(registered_yielding_pids("00000000:42:00.0").empty()) << "another GPU's";
  }
  EXPECT_TRUE(registered_yielding_pids(kGpu).empty());
}

// A lane unit longer than the timer may wait: timing goes on without the turn (the request's
// deadline stays safe), and the lane's worker is then another process to the quiet checks.
TEST_F(GpuTurnTest, ATurnNotHadInTimeLeavesTheLaneAnotherProcess) {
  YieldingRegistration registered(kGpu);
  std::atomic<bool> unit_started{false}, release{false};
  std::thread lane([&] {
    YieldingTurn unit(kGpu);
    unit_started = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  while (!unit_started) std::this_thread::sleep_for(1ms);
  {
    TimingTurn timing(kGpu, 0.2);
    EXPECT_FALSE(timing.held());
    EXPECT_GE(timing.waited_ms(), 150);
    EXPECT_FALSE(holds_timing_turn(kGpu));
    auto own = kopt_gpu_pids(kGpu);
    EXPECT_EQ(std::find(own.begin(), own.end(), unsigned(::getpid())), own.end());
  }
  // The gate it gave up is free again: the lane's next unit is not held up by it.
  release = true;
  lane.join();
  auto started = std::chrono::steady_clock::now();
  YieldingTurn next(kGpu);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 100ms);
}

// An entry left by a killed worker: its pid now names another process (a start time that does
// not match) or none. Neither is kopt's own, and the entry goes.
TEST_F(GpuTurnTest, AStaleEntryIsNoOnesAndIsRemoved) {
  auto folder = gpu_turn_directory();
  ASSERT_FALSE(folder.empty());
  auto entry = folder / (gpu_turn_key(kGpu) + ".yielding-99999");
  std::ofstream(entry) << ::getpid() << " 1\n" << 4194303 << " 77\n";
  EXPECT_TRUE(registered_yielding_pids(kGpu).empty());
  EXPECT_FALSE(std::filesystem::exists(entry));
}

// The lane's back-off (kLaneBackoffFactor): after a 200 ms run a timer waited for, the lane's
// worker takes no turn for three times that, so the timer's next turns come at once; its waits
// are counted for the verification budget to leave out. A co-worker never backs off.
double lane_pause_after_a_waited_run_ms(bool co_worker) {
  set_yielding_worker(true);
  set_co_worker(co_worker);
  double waits_before = yielding_waits_ms();
  std::atomic<bool> unit_started{false};
  Millis next_run_after_yield{0};
  std::thread lane([&] {
    YieldingTurn unit(kGpu);
    unit_started = true;
    std::this_thread::sleep_for(200ms);  // one run of the lane's worker
    auto yielded = std::chrono::steady_clock::now();
    yield_point();
    next_run_after_yield =
        std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - yielded);
  });
  while (!unit_started) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);
  double later_wait_ms = 0;
  {
    TimingTurn first(kGpu);
    EXPECT_TRUE(first.held());
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(100ms);  // the timer's host work, then its next candidate
  {
    TimingTurn second(kGpu);
    later_wait_ms = second.waited_ms();
  }
  lane.join();
  if (!co_worker) {
    EXPECT_LT(later_wait_ms, 50) << "the lane ran again while the timer had its next candidate";
    EXPECT_GE(yielding_waits_ms() - waits_before, 500) << "the waits were not counted";
  } else {
    EXPECT_EQ(yielding_waits_ms(), waits_before) << "a co-worker's waits counted as the lane's";
  }
  set_yielding_worker(false);
  set_co_worker(false);
  return double(next_run_after_yield.count());
}

TEST_F(GpuTurnTest, ALaneRunATimerWaitedForBacksOffThreeTimesItsLength) {
  EXPECT_GE(lane_pause_after_a_waited_run_ms(false), 3 * 200 - 20);
}

TEST_F(GpuTurnTest, ACoWorkerNeverBacksOff) {
  EXPECT_LT(lane_pause_after_a_waited_run_ms(true), 3 * 200 - 20);
}

TEST(YieldingWorker, OnlyAWorkerToldSoYields) {
  EXPECT_FALSE(yielding_worker());
  set_yielding_worker(true);
  EXPECT_TRUE(yielding_worker());
  set_yielding_worker(false);
}

}  // namespace
}  // namespace kopt
