// The supervisor against a misbehaving stand-in worker (fake_worker.cc): hangs, deaths, fatal
// errors, garbage, version skew and workers that cannot start. No GPU needed.
#include "sandbox/evaluator.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "sandbox/evaluator_pool.h"

namespace kopt {
namespace {

using Clock = std::chrono::steady_clock;

SandboxOptions fake_options(std::vector<std::string> extra = {}) {
  SandboxOptions options;
  options.worker = KOPT_FAKE_WORKER;
  options.device = 0;
  options.extra_args = std::move(extra);
  options.start_timeout_seconds = 5;
  options.deadline_slack_seconds = 0.5;
  options.exit_grace_seconds = 2;
  return options;
}

// A request whose candidate tells the fake worker how to behave.
EvalRequest request_for(const std::string& behaviour) {
  EvalRequest request;
  request.task_json = "{}";
  request.reference = {"// reference", "reference.cu", {}};
  request.candidate = {"// " + behaviour, behaviour + ".cu", {}};
  request.options.max_wall_seconds = 0.5;
  request.options.rounds = 3;
  request.options.seed = 42;
  return request;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// True when `pid` is gone or a zombie (killed, not yet reaped by whoever adopted it).
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// Evaluates an ordinary candidate and checks the answer came from a live worker.
void expect_healthy(SandboxEvaluator& evaluator) {
  auto result = evaluator.evaluate(request_for("fine"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kOk) << result->detail;
}

TEST(SandboxEvaluator, EvaluatesThroughTheProtocol) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("fine"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kOk);
  EXPECT_EQ(result->detail, "echo fine.cu rounds=3 seed=42");  // the request arrived intact
  ASSERT_TRUE(result->candidate_time.has_value());
  EXPECT_EQ(result->candidate_time->median_us, 12.5);
  EXPECT_EQ(result->device["ordinal"], 0);
  // The worker is long-lived: the second request reaches the same process.
  pid_t pid = evaluator.worker_pid();
  auto again = evaluator.evaluate(request_for("fine"));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->device["pid"], pid);
  EXPECT_EQ(again->device["requests"], 3);  // ping + two evaluations
  EXPECT_EQ(evaluator.workers_started(), 1);
}

TEST(SandboxEvaluator, PassesDeviceAndCommandPrefix) {
  SandboxOptions options = fake_options();
  options.device = 3;
  options.command_prefix = {"env", "KOPT_FAKE_GREETING=from-prefix"};
  EXPECT_EQ(sandbox_command(options),
            (std::vector<std::string>{"env", "KOPT_FAKE_GREETING=from-prefix", KOPT_FAKE_WORKER,
                                      "--device", "3"}));
  SandboxEvaluator evaluator(options);
  auto device = evaluator.start();
  ASSERT_TRUE(device.ok()) << device.error();
  EXPECT_EQ((*device)["ordinal"], 3);
  EXPECT_EQ((*device)["greeting"], "from-prefix");
  options.device = -1;
  EXPECT_EQ(sandbox_command(options).size(), 3u);  // no --device at all
}

TEST(SandboxEvaluator, HangIsATimeoutAndTheNextRequestGetsAFreshWorker) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  pid_t first = evaluator.worker_pid();
  auto begin = Clock::now();
  auto result = evaluator.evaluate(request_for("HANG"));
  double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kTimeout);
  EXPECT_TRUE(contains(result->detail, "no answer within 1.0 s")) << result->detail;
  EXPECT_EQ(result->shapes_verified, -1);  // unknown: the worker never said
  EXPECT_GE(seconds, 0.9);                 // max_wall_seconds 0.5 + slack 0.5
  EXPECT_LT(seconds, 5);
  EXPECT_TRUE(process_dead(first));
  EXPECT_EQ(evaluator.worker_pid(), -1);
  expect_healthy(evaluator);
  EXPECT_NE(evaluator.worker_pid(), first);
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, TimeoutKillsTheWorkersWholeProcessGroup) {
  std::filesystem::path pid_file =
      std::filesystem::path(::testing::TempDir()) / ("kopt-hang-child-" + std::to_string(getpid()));
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("HANG_CHILD " + pid_file.string()));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kTimeout);
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  std::filesystem::remove(pid_file);
  ASSERT_GT(child, 0);
  // The grandchild was killed with the group (it may linger as a zombie until reaped).
  for (int i = 0; i < 100 && !process_dead(child); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(process_dead(child));
  if (!process_dead(child)) ::kill(child, SIGKILL);
}

TEST(SandboxEvaluator, DeathIsACrashWithTheSignal) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("DIE"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(result->detail, "died during the request (killed by signal 11"))
      << result->detail;
  EXPECT_EQ(result->device["name"], "fake");  // still says which GPU it was
  expect_healthy(evaluator);
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, ExitMidRequestIsACrashWithTheStatus) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("EXIT"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(result->detail, "(exit 5)")) << result->detail;
  expect_healthy(evaluator);
}

TEST(SandboxEvaluator, CrashDetailQuotesTheWorkersLastStderrLines) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  auto result = evaluator.evaluate(request_for("STDERR"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(result->detail,
                       "worker stderr: fake worker: about to fail | fake worker: "
                       "CUDA_ERROR_ILLEGAL_ADDRESS"))
      << result->detail;
}

TEST(SandboxEvaluator, FatalAnswerIsKeptAndTheNextRequestGetsAFreshWorker) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  pid_t first = evaluator.worker_pid();
  auto result = evaluator.evaluate(request_for("FATAL"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_EQ(result->detail, "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS");  // the worker's
  EXPECT_EQ(evaluator.worker_pid(), -1);
  auto next = evaluator.evaluate(request_for("fine"));
  ASSERT_TRUE(next.ok()) << next.error();
  EXPECT_EQ(next->verdict, Verdict::kOk);
  EXPECT_NE(next->device["pid"], first);
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, GarbageLineIsAProtocolCrash) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("GARBAGE"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(result->detail, "broke the protocol (not JSON): 'this is not a protocol"))
      << result->detail;
  expect_healthy(evaluator);
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, ReplyLineOverTheCapIsACrashAndTheDaemonGoesOn) {
  SandboxOptions options = fake_options();
  options.max_reply_bytes = 4096;
  SandboxEvaluator evaluator(options);
  auto under = evaluator.evaluate(request_for("LONG 3000"));
  ASSERT_TRUE(under.ok()) << under.error();
  EXPECT_EQ(under->verdict, Verdict::kOk) << under->detail.substr(0, 300);
  auto over = evaluator.evaluate(request_for("LONG 5000"));
  ASSERT_TRUE(over.ok()) << over.error();
  EXPECT_EQ(over->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(over->detail, "exceeds 4096 bytes")) << over->detail;
  // The worker that sent it is gone; the next candidate gets a fresh one.
  expect_healthy(evaluator);
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, AnswerToAnotherIdIsAProtocolCrash) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("WRONG_ID"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kCrash);
  EXPECT_TRUE(contains(result->detail, "answered with")) << result->detail;
  expect_healthy(evaluator);
}

TEST(SandboxEvaluator, RefusedRequestIsAnErrorAndTheWorkerStays) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  pid_t pid = evaluator.worker_pid();
  auto result = evaluator.evaluate(request_for("REFUSE"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(), "refused the request: cannot parse the task"))
      << result.error();
  expect_healthy(evaluator);
  EXPECT_EQ(evaluator.worker_pid(), pid);
}

TEST(SandboxEvaluator, SlowAnswerWithinTheDeadlineIsFine) {
  SandboxEvaluator evaluator(fake_options());
  auto result = evaluator.evaluate(request_for("SLOW 300"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kOk);
}

TEST(SandboxEvaluator, WorkerKilledWhileIdleIsReplacedWithoutAVerdict) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  pid_t first = evaluator.worker_pid();
  ::kill(first, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Not the next candidate's fault: it gets a fresh worker and its own verdict.
  expect_healthy(evaluator);
  EXPECT_NE(evaluator.worker_pid(), first);
}

TEST(SandboxEvaluator, ProtocolVersionMismatchIsRefused) {
  // A worker one version ahead of this kopt.
  SandboxEvaluator evaluator(fake_options({"--version=" + std::to_string(kProtocolVersion + 1)}));
  auto result = evaluator.evaluate(request_for("fine"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(
      contains(result.error(), "speaks sandbox protocol v" + std::to_string(kProtocolVersion + 1) +
                                   " but this kopt speaks v" + std::to_string(kProtocolVersion)))
      << result.error();
  EXPECT_EQ(evaluator.worker_pid(), -1);
}

TEST(SandboxEvaluator, WorkerThatCannotStartSaysWhy) {
  SandboxEvaluator evaluator(fake_options({"--start=fail"}));
  auto result = evaluator.evaluate(request_for("fine"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(), "cannot start: no NVIDIA driver: libcuda.so.1 not found"))
      << result.error();
  // Each request tries again (the GPU may come back), and fails the same clear way.
  auto again = evaluator.start();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(evaluator.workers_started(), 2);
}

TEST(SandboxEvaluator, MissingWorkerBinaryIsAnError) {
  SandboxOptions options = fake_options();
  options.worker = "/nonexistent/kopt-sandbox";
  SandboxEvaluator evaluator(options);
  auto result = evaluator.evaluate(request_for("fine"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(),
                       "cannot start the sandbox worker: cannot start "
                       "'/nonexistent/kopt-sandbox'"))
      << result.error();
}

TEST(SandboxEvaluator, SilentExitAtStartUpReportsTheStatus) {
  SandboxEvaluator evaluator(fake_options({"--start=silent"}));
  auto result = evaluator.start();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(), "exited during start-up (exit 4)")) << result.error();
}

TEST(SandboxEvaluator, GarbageAtStartUpIsAnError) {
  SandboxEvaluator evaluator(fake_options({"--start=garbage"}));
  auto result = evaluator.start();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(), "malformed line at start-up (not JSON): 'Segmentation"))
      << result.error();
}

TEST(SandboxEvaluator, HangAtStartUpTimesOut) {
  SandboxOptions options = fake_options({"--start=hang"});
  options.start_timeout_seconds = 0.5;
  SandboxEvaluator evaluator(options);
  auto result = evaluator.start();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(contains(result.error(), "did not answer its first ping within 0.5 s"))
      << result.error();
}

TEST(SandboxEvaluator, OtherOperationsGoThroughCall) {
  SandboxEvaluator evaluator(fake_options());
  auto pong = evaluator.call("ping", {}, 5);
  ASSERT_TRUE(pong.ok()) << pong.error();
  EXPECT_EQ((*pong)["device"]["name"], "fake");
  auto unknown = evaluator.call("peeks", {{"detail", 1}}, 5);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error(), "peeks: unknown op 'peeks'")) << unknown.error();
  // A hang is an error for call(), and costs only that worker.
  auto hung = evaluator.call("evaluate", nlohmann::json::parse(R"({"task_json": "{}",
      "reference": {"source": ""}, "candidate": {"source": "HANG"}})"),
                             0.3);
  ASSERT_FALSE(hung.ok());
  EXPECT_TRUE(contains(hung.error(), "no answer within 0.3 s")) << hung.error();
  expect_healthy(evaluator);
}

TEST(SandboxEvaluator, ShutdownLetsTheWorkerExitCleanly) {
  SandboxEvaluator evaluator(fake_options());
  ASSERT_TRUE(evaluator.start().ok());
  pid_t pid = evaluator.worker_pid();
  evaluator.shutdown();
  EXPECT_EQ(evaluator.worker_pid(), -1);
  EXPECT_TRUE(process_dead(pid));
  expect_healthy(evaluator);  // and starts again on demand
}

TEST(SandboxEvaluator, ConcurrentCallersAreServedOneAfterAnother) {
  SandboxEvaluator evaluator(fake_options());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto r = evaluator.evaluate(request_for("fine"));
      if (r.ok() && r->verdict == Verdict::kOk) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(evaluator.workers_started(), 1);
}

TEST(SandboxEvaluator, BusyGpuIsWaitedForAndOnlyTheQuietAnswerReturned) {
  SandboxOptions options = fake_options();
  options.busy_retry_seconds = 30;
  options.busy_quick_pause_seconds = 0.05;
  options.busy_first_pause_seconds = 0.05;
  SandboxEvaluator evaluator(options);
  auto result = evaluator.evaluate(request_for("BUSY 3"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kOk) << result->detail;
  EXPECT_EQ(result->device["requests"], 5);  // ping, three busy answers, the quiet one
  EXPECT_EQ(evaluator.workers_started(), 1);
}

// Session 8 (H200): single slow checks on a warm GPU cost pauses of 5, 10, 20 and 40 s, 80 s of a
// 123 s run. The first retries now come after a short fixed pause; only a GPU that stays busy
// gets the doubling ones.
TEST(SandboxEvaluator, BusyPausesAreShortAtFirstThenDouble) {
  SandboxOptions options;  // the defaults the daemon uses
  std::vector<double> pauses;
  for (int retry = 0; retry < 9; ++retry) pauses.push_back(busy_pause_seconds(options, retry));
  EXPECT_EQ(pauses, (std::vector<double>{1, 1, 5, 10, 20, 40, 80, 120, 120}));
  options.busy_quick_retries = 0;
  EXPECT_EQ(busy_pause_seconds(options, 0), 5);
  EXPECT_EQ(busy_pause_seconds(options, 1000), 120);
}

TEST(SandboxEvaluator, OneBusyVerdictIsRetriedAfterTheQuickPause) {
  SandboxOptions options = fake_options();
  options.busy_retry_seconds = 900;  // as the daemon sets it
  options.busy_quick_pause_seconds = 0.2;
  options.busy_first_pause_seconds = 60;
  SandboxEvaluator evaluator(options);
  auto begin = Clock::now();
  auto result = evaluator.evaluate(request_for("BUSY 1"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kOk) << result->detail;
  double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  EXPECT_GE(seconds, 0.2);
  EXPECT_LT(seconds, 20.0);  // not the 60 s pause
}

TEST(SandboxEvaluator, BusyGpuPastTheRetryWindowIsReturnedAsGpuBusy) {
  SandboxEvaluator evaluator(fake_options());  // busy_retry_seconds 0, as kopt eval uses it
  auto result = evaluator.evaluate(request_for("BUSY 1"));
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kGpuBusy);
  EXPECT_FALSE(result->candidate_time.has_value());
  EXPECT_TRUE(contains(result->detail, "other process")) << result->detail;
}

TEST(SandboxEvaluator, CancelledPausesEndTheWaitForAQuietGpu) {
  SandboxOptions options = fake_options();
  options.busy_retry_seconds = 600;
  options.busy_first_pause_seconds = 60;
  SandboxEvaluator evaluator(options);
  auto begin = Clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    evaluator.cancel_pauses();
  });
  auto result = evaluator.evaluate(request_for("BUSY 1000"));
  stopper.join();
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(result->verdict, Verdict::kGpuBusy);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - begin).count(), 30.0);
}

TEST(EvaluatorPool, SpreadsConcurrentRequestsOverItsDevices) {
  auto pool = EvaluatorPool::for_devices(fake_options(), {0, 1});
  ASSERT_EQ(pool->size(), 2u);
  std::mutex mutex;
  std::set<int> devices;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      auto r = pool->evaluate(request_for("SLOW 300"));
      ASSERT_TRUE(r.ok()) << r.error();
      std::lock_guard lock(mutex);
      devices.insert(r->device["ordinal"].get<int>());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(devices, (std::set<int>{0, 1}));  // both busy at once, so both were used
  EXPECT_TRUE(contains(pool->name(), "--device 1"));
}

TEST(EvaluatorPool, UtilizationCountsBusyAndIdleTimeBetweenEvaluations) {
  auto pool = EvaluatorPool::for_devices(fake_options(), {0});
  EXPECT_EQ(pool->utilization().evaluations, 0);
  EXPECT_EQ(pool->utilization().idle_fraction(), 0.0);
  ASSERT_TRUE(pool->evaluate(request_for("SLOW 300")).ok());
  // The worker waits for the next candidate: at least as long as it was busy.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_TRUE(pool->evaluate(request_for("SLOW 300")).ok());
  auto u = pool->utilization();
  EXPECT_EQ(u.evaluations, 2);
  EXPECT_EQ(u.members, 1);
  EXPECT_GE(u.busy_seconds, 0.6);
  EXPECT_GE(u.span_seconds, u.busy_seconds + 0.4);
  EXPECT_GT(u.idle_fraction(), 0.1);
  EXPECT_LT(u.idle_fraction(), 0.6);
}

// Where a judged candidate's time went on the daemon's side (the run log's phase line): the
// queue for a free GPU and the whole exchange with the worker.
TEST(EvaluatorPool, SaysHowLongARequestQueuedAndTheExchangeTook) {
  auto pool = EvaluatorPool::for_devices(fake_options(), {0});
  Result<EvalResult> first = make_error("not run"), second = make_error("not run");
  std::thread a([&] { first = pool->evaluate(request_for("SLOW 300")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  second = pool->evaluate(request_for("SLOW 300"));
  a.join();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_GE(second->phases["daemon.gpu_wait"].get<double>(), 200);  // behind the first
  EXPECT_LT(first->phases["daemon.gpu_wait"].get<double>(), 200);
  for (const auto* r : {&*first, &*second})
    EXPECT_GE(r->phases["daemon.exchange"].get<double>(), 290);
}

TEST(EvaluatorPool, OneMembersHangDoesNotCostTheOthersResult) {
  auto pool = EvaluatorPool::for_devices(fake_options(), {0, 1});
  Result<EvalResult> hung = make_error("not run"), fine = make_error("not run");
  std::thread a([&] { hung = pool->evaluate(request_for("HANG")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread b([&] { fine = pool->evaluate(request_for("fine")); });
  a.join();
  b.join();
  ASSERT_TRUE(hung.ok() && fine.ok());
  EXPECT_EQ(hung->verdict, Verdict::kTimeout);
  EXPECT_EQ(fine->verdict, Verdict::kOk);
  auto after = pool->evaluate(request_for("fine"));
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_EQ(after->verdict, Verdict::kOk);
}

// A launcher that keeps the worker waiting, as srun does while the job is queued, saying why on
// stderr first.
SandboxOptions queued_options(double queue_seconds) {
  SandboxOptions options = fake_options();
  options.label = "GPU 0";
  options.start_timeout_seconds = 0.5;
  options.command_prefix = {"sh", "-c",
                            "echo 'srun: job 7 queued and waiting for resources' >&2; sleep " +
                                std::to_string(queue_seconds) + "; exec \"$@\"",
                            "launcher"};
  return options;
}

// Polls `evaluator.waiting()` until it has a line, for up to `seconds`.
std::vector<std::string> waiting_lines(const Evaluator& evaluator, double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    auto lines = evaluator.waiting();
    if (!lines.empty()) return lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

TEST(SandboxEvaluator, TimeInALaunchersQueueIsWaitingNotAHang) {
  // 2.5 s in the queue against a start-up limit of 0.5 s: the limit counts from the hello.
  SandboxEvaluator evaluator(queued_options(2.5));
  std::thread request([&] { expect_healthy(evaluator); });
  auto lines = waiting_lines(evaluator, 2);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(contains(lines[0], "GPU 0: waiting")) << lines[0];
  EXPECT_TRUE(contains(lines[0], "(srun: job 7 queued and waiting for resources)")) << lines[0];
  request.join();
  EXPECT_TRUE(evaluator.waiting().empty());
  EXPECT_EQ(evaluator.workers_started(), 1);
}

TEST(SandboxEvaluator, AWorkerThatRunsButNeverAnswersIsStillAHangAfterItsHello) {
  SandboxOptions options = queued_options(0.2);
  options.extra_args = {"--start=hang"};
  SandboxEvaluator evaluator(options);
  auto started = evaluator.start();
  ASSERT_FALSE(started.ok());
  EXPECT_TRUE(contains(started.error(), "did not answer its first ping within 0.5 s"))
      << started.error();
}

TEST(SandboxEvaluator, StoppingTheDaemonEndsTheWaitInTheQueue) {
  SandboxEvaluator evaluator(queued_options(60));
  Result<nlohmann::json> started = make_error("not yet");
  std::thread request([&] { started = evaluator.start(); });
  ASSERT_EQ(waiting_lines(evaluator, 2).size(), 1u);
  auto cancelled = std::chrono::steady_clock::now();
  evaluator.cancel_pauses();
  request.join();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled, std::chrono::seconds(4));
  ASSERT_FALSE(started.ok());
  EXPECT_TRUE(contains(started.error(), "was still waiting to start when the daemon stopped"))
      << started.error();
}

}  // namespace
}  // namespace kopt
