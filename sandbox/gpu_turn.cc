#include "sandbox/gpu_turn.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "common/files.h"
#include "sandbox/own_gpu_processes.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_yielding{false};
std::atomic<bool> g_co_worker{false};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The file `name` of the turn folder opened for locking, or -1 (no folder, no file).
int open_lock_file(const std::string& name) {
  fs::path dir = gpu_turn_directory();
  if (dir.empty()) return -1;
  return ::open((dir / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

// Field 22 of /proc/PID/stat: when the process started (clock ticks after boot), what tells a
// registered process from a later one that reuses its pid.
std::optional<unsigned long long> start_time(unsigned pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text->substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string registration_prefix(const std::string& gpu_id) {
  return gpu_turn_key(gpu_id) + ".yielding-";
}

std::mutex g_held_mutex;
std::multiset<std::string> g_held;  // keys of the timing turns this process holds

// This process's current unit: its GPU's key and the descriptor of its shared turn lock (a moved
// YieldingTurn keeps the descriptor, so the record stays true). One at a time: a worker runs one
// evaluation step at a time.
struct CurrentUnit {
  std::string key;
  int turn_fd = -1;
};
std::mutex g_unit_mutex;
CurrentUnit g_unit;

// The lane's back-off (kLaneBackoffFactor): since when its current run holds the turn, the time
// before which it takes none, and what it waited in all.
std::mutex g_backoff_mutex;
Clock::time_point g_run_since, g_not_before;
double g_waits_ms = 0;

bool backs_off() { return g_yielding && !g_co_worker; }

void add_waits(double ms) {
  std::lock_guard lock(g_backoff_mutex);
  g_waits_ms += ms;
}

// A run that held the turn since g_run_since made a timer wait: no turn for a while.
void back_off_after_run() {
  if (!backs_off()) return;
  std::lock_guard lock(g_backoff_mutex);
  auto now = Clock::now();
  auto pause = std::min<Clock::duration>(
      std::chrono::duration_cast<Clock::duration>((now - g_run_since) * kLaneBackoffFactor),
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(kLaneBackoffMaxSeconds)));
  g_not_before = now + pause;
}

void wait_out_back_off() {
  if (!backs_off()) return;
  Clock::time_point until;
  {
    std::lock_guard lock(g_backoff_mutex);
    until = g_not_before;
  }
  if (Clock::now() < until) std::this_thread::sleep_until(until);
}

void note_run_start() {
  std::lock_guard lock(g_backoff_mutex);
  g_run_since = Clock::now();
}

// Whether a timer holds or awaits the gate of `key` now (it holds it exclusively from its ask to
// the end of its turn; units only pass it).
bool timer_waits(const std::string& key) {
  int gate = open_lock_file(key + ".gate");
  if (gate < 0) return false;
  bool waits = ::flock(gate, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(gate);
  return waits;
}

}  // namespace

fs::path gpu_turn_directory() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) return {};
  fs::path dir = base / ("kopt-gpu-turns-" + std::to_string(::getuid()));
  (void)::mkdir(dir.c_str(), 0700);
  struct stat info {};
  // Another user's folder (or a link planted under this name) is no place for this user's locks.
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid())
    return {};
  return dir;
}

std::string gpu_turn_key(const std::string& gpu_id) {
  std::string key = gpu_id.empty() ? "gpu" : gpu_id;
  std::replace_if(
      key.begin(), key.end(),
      [](char c) { return !(std::isalnum(static_cast<unsigned char>(c)) || c == '.'); }, '_');
  return key;
}

TurnLock TurnLock::wait(const std::string& name, int operation) {
  TurnLock lock(open_lock_file(name));
  while (lock.held() && ::flock(lock.fd_, operation) != 0) {
    if (errno != EINTR) lock.release();  // an open file is no lock: held() must not say so
  }
  return lock;
}

TurnLock TurnLock::exclusive_by(const std::string& name, Clock::time_point deadline) {
  TurnLock lock(open_lock_file(name));
  while (lock.held()) {
    if (::flock(lock.fd_, LOCK_EX | LOCK_NB) == 0) break;
    if ((errno != EWOULDBLOCK && errno != EINTR) || Clock::now() >= deadline)
      lock.release();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return lock;
}

TurnLock& TurnLock::operator=(TurnLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void TurnLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases its lock
  fd_ = -1;
}

TimingTurn::TimingTurn(const std::string& gpu_id, double max_wait_seconds)
    : key_(gpu_turn_key(gpu_id)) {
  auto asked = Clock::now();
  auto deadline = asked + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(max_wait_seconds));
  // The gate first: from then on no yielding unit starts; then the turn: the running unit ends.
  gate_ = TurnLock::exclusive_by(key_ + ".gate", deadline);
  if (gate_.held()) turn_ = TurnLock::exclusive_by(key_ + ".turn", deadline);
  if (turn_.held()) {
    std::lock_guard lock(g_held_mutex);
    g_held.insert(key_);
  } else {
    gate_.release();
  }
  waited_ms_ = ms_since(asked);
}

TimingTurn::~TimingTurn() {
  if (turn_.held()) {
    std::lock_guard lock(g_held_mutex);
    g_held.erase(g_held.find(key_));
  }
}

bool holds_timing_turn(const std::string& gpu_id) {
  std::lock_guard lock(g_held_mutex);
  return g_held.count(gpu_turn_key(gpu_id)) > 0;
}

YieldingTurn::YieldingTurn(const std::string& gpu_id) {
  auto asked = Clock::now();
  wait_out_back_off();
  // Through the gate (shared): a timer holding or awaiting it goes first. The gate is let go
  // at the end of this constructor; the shared turn stays held.
  TurnLock gate = TurnLock::wait(gpu_turn_key(gpu_id) + ".gate", LOCK_SH);
  if (!gate.held()) return;
  turn_ = TurnLock::wait(gpu_turn_key(gpu_id) + ".turn", LOCK_SH);
  waited_ms_ = ms_since(asked);
  if (backs_off()) add_waits(waited_ms_);
  if (turn_.held()) {
    note_run_start();
    std::lock_guard lock(g_unit_mutex);
    g_unit = {gpu_turn_key(gpu_id), turn_.fd()};
  }
}

YieldingTurn::~YieldingTurn() {
  if (!turn_.held()) return;
  std::string key;
  {
    std::lock_guard lock(g_unit_mutex);
    if (g_unit.turn_fd == turn_.fd()) {
      key = g_unit.key;
      g_unit = {};
    }
  }
  if (!key.empty() && timer_waits(key)) back_off_after_run();
}

double yielding_waits_ms() {
  std::lock_guard lock(g_backoff_mutex);
  return g_waits_ms;
}

double yield_point() {
  CurrentUnit unit;
  {
    std::lock_guard lock(g_unit_mutex);
    unit = g_unit;
  }
  if (unit.turn_fd < 0) return 0;
  if (!timer_waits(unit.key)) return 0;
  auto asked = Clock::now();
  back_off_after_run();
  ::flock(unit.turn_fd, LOCK_UN);
  wait_out_back_off();  // the gate is not held meanwhile: timers come and go
  // Back through the gate, as a new unit enters: after this timer's turn, before a later timer.
  TurnLock through = TurnLock::wait(unit.key + ".gate", LOCK_SH);
  while (::flock(unit.turn_fd, LOCK_SH) != 0 && errno == EINTR) {
  }
  note_run_start();
  double waited = ms_since(asked);
  if (backs_off()) add_waits(waited);
  return waited;
}

YieldingRegistration::YieldingRegistration(const std::string& gpu_id, bool with_parent) {
  fs::path dir = gpu_turn_directory();
  if (dir.empty()) return;
  std::string text;
  std::vector<unsigned> pids = {unsigned(::getpid())};
  if (with_parent) pids.push_back(unsigned(::getppid()));
  for (unsigned pid : pids) {
    if (auto started = start_time(pid))
      text += std::to_string(pid) + " " + std::to_string(*started) + "\n";
  }
  path_ = dir / (registration_prefix(gpu_id) + std::to_string(::getpid()));
  if (!write_file_atomic(path_, text)) path_.clear();
}

YieldingRegistration::~YieldingRegistration() {
  std::error_code ignored;
  if (!path_.empty()) fs::remove(path_, ignored);
}

void set_yielding_worker(bool yielding) { g_yielding = yielding; }
bool yielding_worker() { return g_yielding; }
void set_co_worker(bool co_worker) { g_co_worker = co_worker; }
bool co_worker() { return g_co_worker; }

std::optional<YieldingTurn> step_unit(GpuUse use, const std::string& gpu_id) {
  std::optional<YieldingTurn> unit;
  if (use == GpuUse::kPerShape || use == GpuUse::kHost) return unit;
  if (yielding_worker() || (co_worker() && use == GpuUse::kCompute)) unit.emplace(gpu_id);
  return unit;
}

std::vector<unsigned> registered_yielding_pids(const std::string& gpu_id) {
  std::vector<unsigned> pids;
  fs::path dir = gpu_turn_directory();
  if (dir.empty()) return pids;
  std::string prefix = registration_prefix(gpu_id);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    auto text = read_file(entry.path());
    if (!text) continue;
    std::istringstream lines(*text);
    unsigned pid = 0;
    unsigned long long started = 0;
    bool alive = false;
    while (lines >> pid >> started) {
      if (start_time(pid) != started) continue;  // gone, or its pid reused
      pids.push_back(pid);
      alive = true;
    }
    // A worker killed before it could remove its entry: no process of it runs any more.
    if (!alive) fs::remove(entry.path(), ec);
  }
  return pids;
}

std::vector<unsigned> kopt_gpu_pids(const std::string& gpu_id) {
  std::vector<unsigned> pids = own_gpu_pids();
  if (!holds_timing_turn(gpu_id)) return pids;
  for (unsigned pid : registered_yielding_pids(gpu_id)) {
    // Only this user's processes, as KOPT_OWN_GPU_PIDS (own_gpu_processes.h).
    if (proc_owner(pid) == ::getuid()) pids.push_back(pid);
  }
  return pids;
}

}  // namespace kopt
