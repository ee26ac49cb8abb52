// A worker must not outlive its daemon. The daemon is the only writer of the worker's stdin, so
// its death (even by SIGKILL) closes that pipe: here the test plays the daemon, and the stand-in
// worker is busy forever (as in a hung kernel), so only the stdin watch can end it. The real
// kill -9 of `kopt run` with a real hung kernel is in fault_test.cc (label gpu).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/subprocess.h"

namespace kopt::testing {
namespace {

using Clock = std::chrono::steady_clock;

TEST(ParentWatch, BusyWorkerExitsWithinASecondOfItsStdinClosing) {
  auto probe = Subprocess::start({KOPT_STDIN_WATCH_PROBE});
  ASSERT_TRUE(probe.ok()) << probe.error();
  // Still running while the "daemon" lives.
  EXPECT_FALSE(probe->wait_for(std::chrono::milliseconds(500)).has_value());
  auto closed = Clock::now();
  probe->close_stdin();
  auto status = probe->wait_for(std::chrono::seconds(5));
  double seconds = std::chrono::duration<double>(Clock::now() - closed).count();
  ASSERT_TRUE(status.has_value()) << "the worker outlived its stdin";
  EXPECT_LT(seconds, 2.0);
  EXPECT_TRUE(WIFEXITED(*status)) << describe_wait_status(*status);
}

TEST(ParentWatch, WorkerStaysWhileItsDaemonLives) {
  auto probe = Subprocess::start({KOPT_STDIN_WATCH_PROBE});
  ASSERT_TRUE(probe.ok()) << probe.error();
  // Pending bytes must not wake the watch: only a closed pipe does.
  ASSERT_TRUE(probe->write_all("{\"op\":\"ping\"}\n").ok());
  EXPECT_FALSE(probe->wait_for(std::chrono::milliseconds(1500)).has_value());
}

}  // namespace
}  // namespace kopt::testing
