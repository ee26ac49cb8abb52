// What the daemon's children inherit: the worker's and the compiler's environments hold no key
// (a canary set in this process never reaches a spawned child), no descriptor leaks past exec
// except the ones handed over by number, and the limits are in force when the child starts.
#include "sandbox/confined/child_environment.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/foundation/test_support.h"

namespace kopt {
namespace {

using namespace std::chrono_literals;
using testing::contains;

const char* kCanary = "kopt-canary-env-71c0ffee";

// Runs `argv` with `options` to completion and returns its stdout.
std::string output_of(const std::vector<std::string>& argv, Subprocess::Options options) {
  options.stderr_mode = Subprocess::StderrMode::kCapture;
  auto child = Subprocess::start(argv, options);
  EXPECT_TRUE(child.ok()) << child.error();
  if (!child.ok()) return "";
  child->close_stdin();
  auto out = child->read_all(std::chrono::steady_clock::now() + 20s);
  EXPECT_TRUE(out.ok()) << out.error();
  child->wait_for(5s);
  return out.ok() ? *out : "";
}

class ChildEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("OPENAI_API_KEY", kCanary, 1);
    ::setenv("KOPT_PROVIDER_TOKEN", kCanary, 1);  // an allowed prefix, a secret-looking name
    ::setenv("CUDA_VISIBLE_DEVICES", "3", 1);
    ::setenv("KOPT_CACHE_DIR", "/tmp/kopt-cache-test", 1);
  }
  void TearDown() override {
    for (const char* name :
         {"OPENAI_API_KEY", "KOPT_PROVIDER_TOKEN", "CUDA_VISIBLE_DEVICES", "KOPT_CACHE_DIR"})
      ::unsetenv(name);
  }
};

TEST_F(ChildEnvironment, WorkerEnvironmentKeepsCudaAndKoptButNoSecret) {
  auto env = worker_environment();
  std::string all;
  for (const auto& e : env) all += e + "\n";
  EXPECT_FALSE(contains(all, kCanary)) << all;
  EXPECT_TRUE(contains(all, "CUDA_VISIBLE_DEVICES=3\n")) << all;
  EXPECT_TRUE(contains(all, "KOPT_CACHE_DIR=/tmp/kopt-cache-test\n")) << all;
  EXPECT_TRUE(contains(all, "PATH=")) << all;
}

TEST_F(ChildEnvironment, CompilerEnvironmentHasNoSecret) {
  for (const auto& e : compiler_environment()) EXPECT_FALSE(contains(e, kCanary)) << e;
}

TEST_F(ChildEnvironment, SecretNamesAreRecognized) {
  EXPECT_TRUE(is_secret_name("ANTHROPIC_API_KEY"));
  EXPECT_TRUE(is_secret_name("kopt_github_token"));
  EXPECT_TRUE(is_secret_name("DB_PASSWORD"));
  EXPECT_FALSE(is_secret_name("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(is_secret_name("KOPT_HOME"));
}

TEST_F(ChildEnvironment, SpawnedWorkerSeesOnlyItsEnvironment) {
  Subprocess::Options options;
  options.environment = worker_environment();
  options.limits = worker_limits();
  std::string env = output_of({"env"}, options);
  EXPECT_FALSE(contains(env, kCanary)) << env;
  EXPECT_TRUE(contains(env, "CUDA_VISIBLE_DEVICES=3")) << env;
  // Without the option the child inherits everything: the canary proves the test can fail.
  EXPECT_TRUE(contains(output_of({"env"}, {}), kCanary));
}

TEST_F(ChildEnvironment, WorkerLimitsAreInForceAtStart) {
  Subprocess::Options options;
  options.limits = worker_limits();
  std::string limits = output_of({"sh", "-c", "ulimit -c; ulimit -n"}, options);
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  std::string expected_files = std::to_string(std::min<rlim_t>(nofile.rlim_max, 4096));
  EXPECT_EQ(limits, "0\n" + expected_files + "\n");
}

TEST(SpawnDescriptors, OnlyPipesAndNamedDescriptorsReachTheChild) {
  // Opened without O_CLOEXEC, as a log file opened by a library may be.
  int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 3);
  int handed[2];
  ASSERT_EQ(::pipe(handed), 0);
  ASSERT_EQ(::write(handed[1], "private\n", 8), 8);
  ::close(handed[1]);
  Subprocess::Options options;
  options.pass_fds = {{handed[0], 7}};
  std::string script =
      "[ -e /proc/self/fd/" + std::to_string(leaked) + " ] && echo leaked || echo closed; cat <&7";
  // The descriptor number must not collide with 7 for the check to mean anything.
  ASSERT_NE(leaked, 7);
  EXPECT_EQ(output_of({"sh", "-c", script}, options), "closed\nprivate\n");
  ::close(leaked);
  ::close(handed[0]);
}

TEST(SpawnDescriptors, MissingProgramIsAnError) {
  auto child = Subprocess::start({"kopt-no-such-program-xyz"}, Subprocess::Options{});
  ASSERT_FALSE(child.ok());
  EXPECT_TRUE(contains(child.error(), "cannot start 'kopt-no-such-program-xyz'")) << child.error();
  auto bad = Subprocess::start({"/nonexistent/kopt-x"}, Subprocess::Options{});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "No such file")) << bad.error();
}

}  // namespace
}  // namespace kopt
