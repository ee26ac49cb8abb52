// Several timing workers on one GPU (issue 35, daemon.workers_per_gpu): the daemon's pool holds
// k workers per GPU, each told to share its GPU; the key and the flag are validated; and the turn
// logic co-workers follow (sandbox/gpu_turn.h) never lets one time while another holds a unit.
// On the CPU: real worker processes (the fake worker stands in for the GPU) and real flock(2)
// files in forked processes; the GPU itself is SharedGpuWorkersOnGpu's (shared_gpu_gpu_test.cc).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/subprocess.h"
#include "config/config.h"
#include "sandbox/evaluator_pool.h"
#include "sandbox/gpu_turn.h"
#include "src/orchestrator/daemon.h"
#include "src/orchestrator/progress.h"
#include "src/orchestrator/run_settings.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/temp_dir.h"

namespace kopt {
namespace {

using kopt::testing::TempDir;
using orchestrator::pool_workers;
using orchestrator::PoolWorkers;

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::vector<SandboxOptions> fake_gpus(const std::vector<int>& gpus) {
  DaemonConfig local;
  auto options = orchestrator::sandbox_options_for(local, KOPT_FAKE_WORKER, gpus);
  EXPECT_TRUE(options.ok()) << options.error();
  for (auto& o : *options) {
    o.start_timeout_seconds = 5;
    o.exit_grace_seconds = 2;
  }
  return *options;
}

TEST(SharedGpuPool, KWorkersPerGpuEachToldToShareAndNamed) {
  PoolWorkers pool = pool_workers(fake_gpus({0, 3}), 2);
  ASSERT_EQ(pool.members.size(), 4u);
  EXPECT_EQ(pool.gpu_of_member, (std::vector<int>{0, 0, 1, 1}));
  std::vector<std::string> labels;
  for (const SandboxOptions& o : pool.members) {
    labels.push_back(o.label);
    EXPECT_TRUE(has(o.extra_args, "--share-gpu")) << o.label;
    EXPECT_TRUE(has(o.environment, "KOPT_WORKERS_PER_GPU=2")) << o.label;
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"GPU 0 worker 1/2", "GPU 0 worker 2/2",
                                              "GPU 3 worker 1/2", "GPU 3 worker 2/2"}));
  EXPECT_EQ(pool.members[2].device, 3);

  // One per GPU: as before, nothing shared and nothing said.
  PoolWorkers alone = pool_workers(fake_gpus({0, 3}), 1);
  ASSERT_EQ(alone.members.size(), 2u);
  EXPECT_EQ(alone.gpu_of_member, (std::vector<int>{0, 1}));
  EXPECT_FALSE(has(alone.members[0].extra_args, "--share-gpu"));
  EXPECT_TRUE(alone.members[0].environment.empty());
  EXPECT_EQ(alone.members[1].label, "GPU 3");
}

// Through a template (srun, ssh) each worker is a job of its own: one per GPU whatever k says;
// otherwise the flag wins over the key, the key over the default (the settings resolver).
TEST(SharedGpuPool, TemplateWorkersStayOnePerGpu) {
  auto resolve = [](const DaemonConfig& daemon, std::optional<int64_t> flag) {
    return orchestrator::resolve_run_settings(daemon, {.workers_per_gpu = flag}, nullptr);
  };
  DaemonConfig local;
  EXPECT_EQ(resolve(local, std::nullopt).workers_per_gpu, 1);
  local.workers_per_gpu = 4;
  EXPECT_EQ(resolve(local, std::nullopt).workers_per_gpu, 4);
  EXPECT_EQ(resolve(local, 2).workers_per_gpu, 2);
  EXPECT_EQ(resolve(local, 2).workers_note, "");
  DaemonConfig slurm = local;
  slurm.worker_command = {"{worker}", "--device", "{gpu}"};
  auto clamped = resolve(slurm, 3);
  EXPECT_EQ(clamped.workers_per_gpu, 1);
  EXPECT_NE(clamped.workers_note.find("one worker per GPU"), std::string::npos)
      << clamped.workers_note;
  auto options = orchestrator::sandbox_options_for(slurm, "kopt-sandbox", {0, 1});
  ASSERT_TRUE(options.ok()) << options.error();
  PoolWorkers pool = pool_workers(*options, clamped.workers_per_gpu);
  ASSERT_EQ(pool.members.size(), 2u);
  EXPECT_FALSE(has(pool.members[0].extra_args, "--share-gpu"));
}

// A pool of fake worker processes (tests/support's fake kopt-sandbox) that each take `ms` per
// evaluation (KOPT_FAKE_EVAL_MS), and a request they judge ok.
EvaluatorPool fake_worker_pool(PoolWorkers workers, int ms) {
  std::vector<std::unique_ptr<Evaluator>> members;
  for (SandboxOptions& o : workers.members) {
    o.environment.push_back("KOPT_FAKE_EVAL_MS=" + std::to_string(ms));
    members.push_back(std::make_unique<SandboxEvaluator>(std::move(o)));
  }
  return EvaluatorPool(std::move(members), workers.gpu_of_member);
}

EvalRequest fine_request() {
  EvalRequest request;
  request.task_json = "{}";
  request.reference = {"// reference", "reference.cu", {}};
  request.candidate = {"// fine", "fine.cu", {}};
  request.options.max_wall_seconds = 5;
  return request;
}

// Real worker processes: four members on two GPUs evaluate at once, each its own process, the
// environment entries reach them (KOPT_FAKE_EVAL_MS makes the fake worker take 300 ms), and
// the busy share counts a GPU busy while any of its workers evaluates.
TEST(SharedGpuPool, MembersRunAtOnceAndTheGpusBusyShareCountsAnyWorker) {
  PoolWorkers workers = pool_workers(fake_gpus({0, 1}), 2);
  EvaluatorPool pool = fake_worker_pool(std::move(workers), 300);
  EXPECT_EQ(pool.size(), 4u);
  std::string name = pool.name();
  EXPECT_NE(name.find("pool of 4: 2 x "), std::string::npos) << name;
  EXPECT_NE(name.find("--device 0 --share-gpu; 2 x "), std::string::npos) << name;
  EXPECT_NE(name.find("--device 1 --share-gpu"), std::string::npos) << name;

  EvalRequest request = fine_request();
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::set<int64_t> pids;
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto result = pool.evaluate(request);
      ASSERT_TRUE(result.ok()) << result.error();
      std::lock_guard lock(mutex);
      pids.insert(result->device.value("pid", int64_t{0}));
    });
  }
  for (auto& t : threads) t.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(pids.size(), 4u) << "each member is a worker process of its own";
  auto u = pool.utilization();
  EXPECT_EQ(u.members, 4);
  EXPECT_EQ(u.gpus, 2);
  EXPECT_EQ(u.evaluations, 4);
  EXPECT_GE(u.busy_seconds, 4 * 0.29) << "KOPT_FAKE_EVAL_MS did not reach the workers";
  EXPECT_LT(seconds, 4 * 0.3) << "the members did not evaluate at once";
  // Both workers of a GPU overlapped: the GPU's busy time is about one evaluation, not two.
  EXPECT_LT(u.gpu_busy_seconds, u.busy_seconds * 0.75);
  EXPECT_LE(u.idle_fraction(), u.member_idle_fraction());
}

// Co-workers that overlap without a gap: the GPU's busy stretch is still open when the busy
// share is read, and counts up to the last evaluation's end (it read as 100% idle before).
TEST(SharedGpuPool, AnOpenBusyStretchCountsUpToTheLastEnd) {
  PoolWorkers workers = pool_workers(fake_gpus({0}), 2);
  EvaluatorPool pool = fake_worker_pool(std::move(workers), 300);
  EvalRequest request = fine_request();
  std::thread first([&] { ASSERT_TRUE(pool.evaluate(request).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::thread second([&] { ASSERT_TRUE(pool.evaluate(request).ok()); });
  first.join();  // the second still runs: the GPU has not been idle since the first began
  auto u = pool.utilization();
  second.join();
  ASSERT_EQ(u.evaluations, 1);
  EXPECT_GE(u.gpu_busy_seconds, 0.25) << "the open stretch was not counted";
  EXPECT_LT(u.idle_fraction(), 0.2);
}

// Fewer jobs than members: each goes to the GPU with the fewest of its workers busy, so two jobs
// on two GPUs of two workers each never share one GPU while the other idles.
TEST(SharedGpuPool, AJobGoesToTheLeastBusyGpu) {
  PoolWorkers workers = pool_workers(fake_gpus({0, 1}), 2);
  EvaluatorPool pool = fake_worker_pool(std::move(workers), 200);
  EvalRequest request = fine_request();
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    std::mutex mutex;
    std::multiset<int> devices;
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&] {
        auto result = pool.evaluate(request);
        ASSERT_TRUE(result.ok()) << result.error();
        std::lock_guard lock(mutex);
        devices.insert(result->device.value("ordinal", -1));
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(devices, (std::multiset<int>{0, 1})) << "round " << round;
  }
}

std::string config_error(const std::string& daemon) {
  auto config = parse_config(R"({"format": 1, "daemon": )" + daemon + "}", "/etc/kopt/k.json");
  return config ? "" : config.error();
}

TEST(WorkersPerGpuSetting, TheKeyIsValidatedWithFileAndPath) {
  auto good = parse_config(R"({"format": 1, "daemon": {"workers_per_gpu": 4}})", "k.json");
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->daemon.workers_per_gpu, 4);
  auto unset = parse_config(R"({"format": 1})", "k.json");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->daemon.workers_per_gpu.has_value());
  for (const char* bad : {R"({"workers_per_gpu": 0})", R"({"workers_per_gpu": 9})",
                          R"({"workers_per_gpu": "two"})", R"({"workers_per_gpu": 1.5})"}) {
    std::string e = config_error(bad);
    EXPECT_NE(e.find("/etc/kopt/k.json"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("$.daemon.workers_per_gpu"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(config_error(R"({"workers_per_gpu": 9})").find("at most 8"), std::string::npos);
}

std::optional<orchestrator::DaemonInvocation> parse_flags(std::vector<std::string> args,
                                                          int& code) {
  args.insert(args.begin(), "kopt run");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return orchestrator::parse_run_arguments(int(argv.size()), argv.data(), code);
}

TEST(WorkersPerGpuSetting, TheFlagIsOneToEight) {
  int code = -1;
  auto three = parse_flags({"--workers-per-gpu", "3"}, code);
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->workers_per_gpu, 3);
  auto none = parse_flags({}, code);
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->workers_per_gpu.has_value());
  for (const char* bad : {"0", "9", "-1", "two"}) {
    code = -1;
    EXPECT_FALSE(parse_flags({"--workers-per-gpu", bad}, code).has_value()) << bad;
    EXPECT_EQ(code, 2) << bad;
  }
}

// The daemon as a process (the fake evaluator for the GPU): k workers per GPU are k job slots
// per GPU, and the log says so.
TEST(WorkersPerGpuSetting, TheDaemonSaysItAndKeepsTheirSlotsBusy) {
  TempDir dir;
  kopt::testing::isolate_environment(dir.path());
  kopt::testing::copy_task("axpy", dir / "tasks");
  auto out = run_command({KOPT_TEST_DAEMON, "--db", (dir / "memory.db").string(), "--no-display",
                          "--tasks", (dir / "tasks").string(), "--workers-per-gpu", "3"},
                         "", std::chrono::seconds(120));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
  EXPECT_NE(out->stderr_text.find("3 workers per GPU on 1 GPU(s)"), std::string::npos)
      << out->stderr_text;
  // Tuner-only: 2 x slots + 1, the slots being GPUs x workers per GPU.
  EXPECT_NE(out->stderr_text.find("up to 7 jobs at once"), std::string::npos) << out->stderr_text;
}

// The live table and `kopt status`: the GPUs' busy share, said how it is counted with co-workers.
TEST(WorkersPerGpuSetting, TheBusyShareSaysHowItIsCounted) {
  orchestrator::RunProgress p;
  p.gpu_busy_fraction = 0.9;
  p.workers_per_gpu = 2;
  auto again = orchestrator::RunProgress::from_json(p.to_json());
  EXPECT_EQ(again.workers_per_gpu, 2);
  std::string text;
  for (const auto& line : orchestrator::render_progress(again, 200)) text += line + "\n";
  EXPECT_NE(text.find("GPU busy 90.0% since the first evaluation (2 workers per GPU, busy while "
                      "any evaluates)"),
            std::string::npos)
      << text;
  p.workers_per_gpu = 1;
  text.clear();
  for (const auto& line : orchestrator::render_progress(p, 200)) text += line + "\n";
  EXPECT_EQ(text.find("workers per GPU"), std::string::npos) << text;
}

// Which steps run in a unit, by the worker's role: a co-worker never holds a unit around a timed
// step (its own TimingTurn would wait for it), the lane's worker holds one around every step that
// computes, a lone worker none.
class TurnFolder : public ::testing::Test {
 protected:
  TurnFolder() {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", dir_.path().c_str(), 1);
  }
  ~TurnFolder() override {
    set_co_worker(false);
    set_yielding_worker(false);
    if (old_.empty())
      ::unsetenv("TMPDIR");
    else
      ::setenv("TMPDIR", old_.c_str(), 1);
  }
  TempDir dir_;
  std::string old_;
};

constexpr const char* kGpu = "00000000:41:00.0";

TEST_F(TurnFolder, StepUnitsByRole) {
  auto units = [] {
    std::string taken;
    for (GpuUse use : {GpuUse::kHost, GpuUse::kCompute, GpuUse::kPerShape, GpuUse::kTimed})
      taken += step_unit(use, kGpu) ? "U" : "-";
    return taken;
  };
  EXPECT_EQ(units(), "----");
  EXPECT_TRUE(takes_timing_turn());
  set_co_worker(true);
  EXPECT_EQ(units(), "-U--");
  EXPECT_TRUE(takes_timing_turn());
  set_co_worker(false);
  set_yielding_worker(true);
  EXPECT_EQ(units(), "-U-U");
  EXPECT_FALSE(takes_timing_turn());
}

// A co-worker registers itself alone: its parent (the daemon) is nobody's concern here.
TEST_F(TurnFolder, ACoWorkerRegistersWithoutItsParent) {
  YieldingRegistration registered(kGpu, /*with_parent=*/false);
  auto pids = registered_yielding_pids(kGpu);
  EXPECT_EQ(pids, (std::vector<unsigned>{unsigned(::getpid())}));
}

double now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // one clock for every process of the machine
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// One co-worker's evaluations, as worker_main and Evaluation::run drive the turns: a few
// verification units (each shape), then the timed step in the TimingTurn. Appends "pid U|T start
// end" lines to `log` (O_APPEND: whole lines); exits 1 where a turn was not had.
[[noreturn]] void co_worker_process(const std::string& log, int evaluations) {
  set_co_worker(true);
  YieldingRegistration registered(kGpu, false);
  int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600);
  auto note = [&](char kind, double start) {
    std::string line = std::to_string(::getpid()) + " " + kind + " " + std::to_string(start) + " " +
                       std::to_string(now_ms()) + "\n";
    (void)!::write(fd, line.data(), line.size());
  };
  for (int e = 0; e < evaluations; ++e) {
    for (int shape = 0; shape < 3; ++shape) {
      auto unit = step_unit(GpuUse::kCompute, kGpu);
      if (!unit || !unit->held()) std::_Exit(1);
      double start = now_ms();
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      note('U', start);
    }
    if (step_unit(GpuUse::kTimed, kGpu)) std::_Exit(1);  // would block its own turn
    TimingTurn turn(kGpu, 10);
    if (!turn.held() || !holds_timing_turn(kGpu)) std::_Exit(1);
    double start = now_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    note('T', start);
  }
  ::close(fd);
  std::_Exit(0);
}

struct Interval {
  long pid;
  char kind;
  double start, end;
};

// Two co-workers on one GPU, as two processes: neither times while the other holds a unit or
// its own timing turn, both get every turn (no self-deadlock), and their units do overlap
// (verification on a shared GPU runs at once).
TEST_F(TurnFolder, TwoCoWorkersNeverTimeWhileTheOtherComputes) {
  std::string log = (dir_ / "turns.log").string();
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) co_worker_process(log, 12);
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a co-worker missed a turn or held a unit around its timing";
  }
  std::vector<Interval> all;
  auto text = read_file(log);
  ASSERT_TRUE(text.ok()) << text.error();
  std::istringstream lines(*text);
  Interval i{};
  while (lines >> i.pid >> i.kind >> i.start >> i.end) all.push_back(i);
  ASSERT_EQ(all.size(), 2u * 12 * 4);
  int overlapping_units = 0;
  for (const Interval& a : all) {
    for (const Interval& b : all) {
      if (a.pid == b.pid || a.start >= b.end || b.start >= a.end) continue;
      EXPECT_FALSE(a.kind == 'T' || b.kind == 'T')
          << a.pid << " " << a.kind << " [" << a.start << ", " << a.end << "] overlaps " << b.pid
          << " " << b.kind << " [" << b.start << ", " << b.end << "]";
      if (a.kind == 'U' && b.kind == 'U') ++overlapping_units;
    }
  }
  EXPECT_GT(overlapping_units, 0) << "the co-workers' units never ran at once";
}

}  // namespace
}  // namespace kopt
