// The busy-GPU check with a helper of kopt's own running (sandbox/own_gpu_processes.h), on a fake
// NVML process list: a declared helper of this user is kopt's own, anything else is another user.
#include "sandbox/own_gpu_processes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

namespace kopt {
namespace {

// PIDs 100..199 belong to user 1000, 200..299 to user 0, others do not exist.
std::optional<unsigned> fake_owner(unsigned pid) {
  if (pid >= 100 && pid < 200) return 1000u;
  if (pid >= 200 && pid < 300) return 0u;
  return std::nullopt;
}

GpuActivity activity(std::vector<unsigned> pids) {
  GpuActivity a;
  for (unsigned pid : pids) a.processes.push_back({pid, 1u << 30, "p" + std::to_string(pid)});
  return a;
}

TEST(OwnGpuProcesses, OnlyWellFormedPidsOfThisUserAreDeclared) {
  EXPECT_EQ(parse_own_gpu_pids("101,150", 1000, fake_owner), (std::vector<unsigned>{101, 150}));
  // Another user's process (201), a missing one (999), junk and a zero are not kopt's own.
  EXPECT_EQ(parse_own_gpu_pids("201,999,abc,,0,-5,101x,120", 1000, fake_owner),
            (std::vector<unsigned>{120}));
  EXPECT_TRUE(parse_own_gpu_pids("", 1000, fake_owner).empty());
}

TEST(OwnGpuProcesses, ADeclaredHelperIsNotAnotherUser) {
  std::vector<GpuProcess> declared;
  auto others = foreign_processes(activity({42, 101}), 42, {101}, &declared);
  EXPECT_TRUE(others.empty());
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_EQ(declared[0].pid, 101u);
}

TEST(OwnGpuProcesses, AnUndeclaredProcessIsStillAnotherUser) {
  std::vector<GpuProcess> declared;
  auto others = foreign_processes(activity({42, 101, 150}), 42, {101}, &declared);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].pid, 150u);
  EXPECT_EQ(declared.size(), 1u);
  // Without the declaration the helper counts too: the check before this change.
  EXPECT_EQ(foreign_processes(activity({42, 101}), 42, {}).size(), 1u);
}

TEST(OwnGpuProcesses, TheEnvironmentDeclaresOnlyThisUsersLiveProcesses) {
  std::string self = std::to_string(::getpid());
  ASSERT_EQ(::setenv(kOwnGpuPidsVariable, (self + ",1").c_str(), 1), 0);
  auto pids = own_gpu_pids();
  ::unsetenv(kOwnGpuPidsVariable);
  // This process is ours; PID 1 is ours only when the test runs as its owner (root in a container).
  ASSERT_FALSE(pids.empty());
  EXPECT_EQ(pids.front(), static_cast<unsigned>(::getpid()));
  bool pid1_ours = proc_owner(1) && *proc_owner(1) == static_cast<unsigned>(::getuid());
  EXPECT_EQ(pids.size(), pid1_ours ? 2u : 1u);
  EXPECT_TRUE(own_gpu_pids().empty());
}

}  // namespace
}  // namespace kopt
