// Timing and the sanitizer lane on one GPU (issue 35). The daemon's sanitizer lane runs
// compute-sanitizer on the GPU its timing worker uses, beside candidate evaluation; a number taken
// while the lane computes would be wrong, so the two take turns:
// - a timing worker holds a TimingTurn (exclusive) from the quiet-GPU check before timing to the
//   check after it, and for the profile pass;
// - a yielding worker (the lane's: kopt-sandbox --yield-to-timing) holds a YieldingTurn (shared)
//   around each unit of its GPU work (a step of its evaluation, one shape's rounds), and starts
//   none while a timing turn is held or asked for.
// So verification overlaps the sanitizer, and timing waits at most for the lane's current unit.
// Several timing workers on one GPU (daemon.workers_per_gpu, kopt-sandbox --share-gpu) are
// co-workers: each computes in YieldingTurns like the lane's worker, except that it times and
// profiles in its own TimingTurn, never while holding a unit (flock locks belong to open files, so
// a unit held would block its own turn). So k verifications overlap and no timing overlaps another
// worker's kernels.
// Two flock(2) files per GPU do it: a gate (timing takes it exclusively first, so a waiting timer
// keeps new shared units from starting; no writer starves) and the turn itself. A yielding worker
// also registers its pid and its parent's (the compute-sanitizer process) for the GPU, so the
// quiet-GPU checks of a worker that holds the timing turn count it as kopt's own (it waits, idle,
// then); the probe kernel before and after timing still judges, and any other process is still
// another user.
// Without the folder (an unwritable temp folder) there are no turns and no registrations: the
// lane's process is then another process and timing refuses the GPU as busy, never the reverse.
// The lane backs off (kLaneBackoffFactor): a run of a slow kernel under memcheck holds the GPU for
// seconds, and on one H200 timers waited 63 s of a 160 s night for such runs; after each run a
// timer waited for, the lane stays off the GPU three times that run's length, so timers lose at
// most about a quarter of the GPU to it, and with no timer waiting it runs on. Its verification
// budget does not count these waits (yielding_waits_ms), so its coverage does not shrink.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

// The per-user folder of the turn files: $TMPDIR/kopt-gpu-turns-<uid>, made 0700 and refused
// (empty path) when it is not a real folder of this user.
std::filesystem::path gpu_turn_directory();

// "0000:41:00.0" -> a file-name-safe key; what every worker of one GPU agrees on.
std::string gpu_turn_key(const std::string& gpu_id);

// The longest a timing worker waits for its turn: a lane unit that runs longer (racecheck on a
// slow kernel) must not push the candidate past its request's deadline. Past it, timing goes on
// without the turn, and the lane's worker is then another process to the quiet-GPU checks.
inline constexpr double kTimingTurnMaxWaitSeconds = 20;

// A flock(2) on one file of the turn folder, held until destroyed (closing the descriptor
// releases it): the one mechanism under the turns below and the worker's WideRoundTurn. Not held
// without the folder or the file, or when an exclusive_by deadline passes first.
class TurnLock {
 public:
  TurnLock() = default;
  // `operation` (LOCK_SH or LOCK_EX) on the file `name`, waiting as long as it takes.
  static TurnLock wait(const std::string& name, int operation);
  // An exclusive lock on the file `name` within `deadline`, polled (flock(2) has no timeout).
  static TurnLock exclusive_by(const std::string& name,
                               std::chrono::steady_clock::time_point deadline);
  TurnLock(TurnLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  TurnLock& operator=(TurnLock&& other) noexcept;
  ~TurnLock() { release(); }
  bool held() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void release();

 private:
  explicit TurnLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Not copyable (it owns its locks), as the turns below.
class TimingTurn {
 public:
  explicit TimingTurn(const std::string& gpu_id,
                      double max_wait_seconds = kTimingTurnMaxWaitSeconds);
  ~TimingTurn();
  double waited_ms() const { return waited_ms_; }
  bool held() const { return turn_.held(); }

 private:
  std::string key_;
  TurnLock gate_, turn_;  // the turn is released first, then the gate
  double waited_ms_ = 0;
};

// A unit held is this process's current unit (yield_point() lets a waiting timer in within it).
class YieldingTurn {
 public:
  explicit YieldingTurn(const std::string& gpu_id);
  YieldingTurn(YieldingTurn&&) = default;
  ~YieldingTurn();
  double waited_ms() const { return waited_ms_; }
  bool held() const { return turn_.held(); }

 private:
  TurnLock turn_;
  double waited_ms_ = 0;
};

// After a run of the lane's worker that a timer waited for, the lane takes no turn for this many
// times the run's length (at most kLaneBackoffMaxSeconds). Co-workers (timing workers) never
// back off: they time themselves.
inline constexpr double kLaneBackoffFactor = 3;
inline constexpr double kLaneBackoffMaxSeconds = 30;

// Milliseconds this process has waited for its GPU's turns as a yielding worker (units, yield
// points, back-offs) since it started: the verification budget leaves them out.
double yielding_waits_ms();

// A point within a unit where this worker's GPU work is done (its stream idle, after a run's
// wait): if a timer waits for the turn (it holds the gate), the unit lets the turn go, waits for
// the timer's turn to end and takes it back, so a timer waits for one run of the lane's worker,
// not for a whole shape's rounds (issue 35: units of 10-15 s under memcheck at large shapes).
// The lane's worker also backs off there (kLaneBackoffFactor) before it takes the turn back.
// Returns the milliseconds it waited (0: no timer waited). A no-op outside a unit.
double yield_point();

// This process (and its parent, unless `with_parent` is false) registered as a yielding worker of
// the GPU until destroyed. The lane's parent is compute-sanitizer, whose context is the tool's;
// a co-worker's parent is the daemon (or whatever started it), which is nobody's business here.
class YieldingRegistration {
 public:
  explicit YieldingRegistration(const std::string& gpu_id, bool with_parent = true);
  ~YieldingRegistration();
  YieldingRegistration(const YieldingRegistration&) = delete;
  YieldingRegistration& operator=(const YieldingRegistration&) = delete;

 private:
  std::filesystem::path path_;
};

// Whether this process yields to timing (kopt-sandbox --yield-to-timing sets it at start).
void set_yielding_worker(bool yielding);
bool yielding_worker();
// Whether this process shares its GPU with other timing workers (kopt-sandbox --share-gpu).
void set_co_worker(bool co_worker);
bool co_worker();

// What a step of an evaluation does on the GPU, for the turn it runs in.
enum class GpuUse {
  kHost,      // no GPU work: never in a unit (a unit waits while another worker times)
  kCompute,   // verification, input generation, module loads: in a unit where units are taken
  kPerShape,  // takes a unit per shape itself: none around the whole step
  kTimed,     // times or profiles: takes the TimingTurn inside unless this is the lane's worker
};
// The shared unit a step of kind `use` runs in for this process: the lane's worker takes one
// around every step but kPerShape and kHost (its timing is never reported, so it takes no
// TimingTurn); a co-worker around kCompute steps only (a unit around kTimed would block its own
// TimingTurn); a lone timing worker none, nor anyone around kHost. Empty optional: no unit.
std::optional<YieldingTurn> step_unit(GpuUse use, const std::string& gpu_id);
// Whether this process times in the GPU's TimingTurn: every worker but the lane's.
inline bool takes_timing_turn() { return !yielding_worker(); }

// The pids of the GPU's live yielding workers and their parents: each registered entry whose
// process still runs with the start time it registered (a reused pid is not one).
std::vector<unsigned> registered_yielding_pids(const std::string& gpu_id);

// What the quiet-GPU checks count as kopt's own on the GPU: KOPT_OWN_GPU_PIDS, and the registered
// yielding workers only while this process holds the GPU's timing turn (they cannot compute then;
// at any other time, or after a turn that timed out, they are other processes).
std::vector<unsigned> kopt_gpu_pids(const std::string& gpu_id);
// Whether this process holds the timing turn of `gpu_id` now.
bool holds_timing_turn(const std::string& gpu_id);

}  // namespace kopt
