#include "tests/orchestrator/fake_evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "common/strings.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::testing {

namespace {

// The value of `key=` on a "// test-evaluator:" line, or "".
std::string script_value(const std::string& source, const std::string& key) {
  for (const std::string& line : split(source, '\n')) {
    std::string t = trim(line);
    if (!starts_with(t, "// test-evaluator:")) continue;
    for (const std::string& word : split(t.substr(18), ' ')) {
      if (starts_with(word, key + "=")) return word.substr(key.size() + 1);
    }
  }
  return "";
}

// Everything after `key=` to the end of its "// test-evaluator:" line (a value with spaces), or "".
std::string script_rest_of_line(const std::string& source, const std::string& key) {
  for (const std::string& line : split(source, '\n')) {
    std::string t = trim(line);
    if (!starts_with(t, "// test-evaluator:")) continue;
    size_t at = t.find(key + "=", 18);
    if (at != std::string::npos && t[at - 1] == ' ') return trim(t.substr(at + key.size() + 1));
  }
  return "";
}

double scripted_number(const std::string& source, const std::string& key, double fallback) {
  std::string value = script_value(source, key);
  return value.empty() ? fallback : std::atof(value.c_str());
}

// The scripted time of a parsed kernel file at its default tunables.
double scripted_time(const KernelFile& file) {
  double time = scripted_number(file.source, "time_us", 100.0);
  auto values = file.tunable_values({});
  auto block = values.find("BLOCK");
  if (block != values.end() && block->second > 0) {
    time *= 1.0 + 0.1 * std::fabs(std::log2(static_cast<double>(block->second) / 512.0));
  }
  return time;
}

TimingSummary timing(double median) {
  TimingSummary t;
  t.median_us = median;
  t.min_us = median * 0.98;
  t.noise = 0.002;
  t.samples = 20;
  return t;
}

// The counters of a memory-bound kernel that the fake GPU "measures": DRAM throughput tracks the
// share of the speed of light reached, so each kernel's numbers follow from its scripted times.
KernelProfile derived_profile(double median_us, double sol_us) {
  constexpr double kDramBytesPerUs = 3.35e6;  // an H100's 3.35 TB/s
  KernelProfile p;
  p.kernels = 1;
  p.duration_us = median_us;
  p.dram_percent = std::min(95.0, 100.0 * sol_us / median_us);
  p.dram_read_bytes = kDramBytesPerUs * sol_us * 2 / 3;  // axpy-like: two reads per write
  p.dram_write_bytes = kDramBytesPerUs * sol_us / 3;
  p.l2_hit_percent = 12;
  p.l1_hit_percent = 0;
  p.sm_percent = p.dram_percent / 4;
  p.occupancy_percent = 75;
  p.instructions = 1e6;
  p.stalls = {{"long_scoreboard", 60}, {"selected", 15}, {"wait", 10}, {"not_selected", 8}};
  p.passes = 15;
  p.profile_ms = 500;
  return p;
}

// What the real worker's profile pass would answer: a profile only when one is asked for and the
// candidate is a new best (faster than profile_below_us, or any with 0); a scripted profile_note
// (e.g. "profiling unavailable: ...") instead of the counters, on every such candidate.
void add_profile(const EvalRequest& request, EvalResult& result) {
  const EvalOptions& options = request.options;
  double median = result.candidate_time->median_us;
  if (options.profile != "cupti") return;
  if (options.profile_below_us > 0 && median >= options.profile_below_us) return;
  std::string note = script_rest_of_line(request.candidate.source, "profile_note");
  if (!note.empty()) {
    result.profile_note = note;
    return;
  }
  result.profile = derived_profile(median, result.sol_us);
}

}  // namespace

FakeEvaluator::FakeEvaluator(Options options) : options_(std::move(options)) {
  if (!options_.compile_cache.empty()) cache_.emplace(options_.compile_cache);
}

std::vector<std::string> FakeEvaluator::sources() const {
  std::lock_guard lock(mutex_);
  return sources_;
}

namespace {

// The device object an H100's worker reports, under `gpu_name`.
nlohmann::json fake_device(const std::string& gpu_name) {
  return {{"name", gpu_name},
          {"cc", "9.0"},
          {"arch", "sm_90a"},
          {"sms", 132},
          {"driver", "580.0"},
          {"ordinal", 0},
          // As an H100's worker reports them: DRAM and FP32 measured, tensor peaks from the
          // datasheet.
          {"peaks",
           {{"dram_bytes_per_s", 3.0e12},
            {"fp32_flops", 5.1e13},
            {"tf32_tensor_flops", 4.95e14},
            {"bf16_tensor_flops", 9.89e14},
            {"fp8_tensor_flops", 1.979e15},
            {"source", "measured 2026-11-27"}}}};
}

}  // namespace

Result<EvalResult> FakeEvaluator::evaluate(const EvalRequest& request) {
  int now = ++running_;
  int seen = max_concurrent_.load();
  while (now > seen && !max_concurrent_.compare_exchange_weak(seen, now)) {
  }
  struct Leave {
    std::atomic<int>& running;
    ~Leave() { --running; }
  } leave{running_};
  ++evaluations_;
  if (sanitizing_.load() > 0) ++during_sanitize_;
  {
    std::lock_guard lock(mutex_);
    sources_.push_back(request.candidate.source);
  }
  if (options_.delay.count() > 0) std::this_thread::sleep_for(options_.delay);

  auto task = parse_task(request.task_json, "task.json");
  if (!task) return make_error("the fake evaluator cannot read the task: " + task.error());
  EvalResult result;
  result.device = fake_device(options_.gpu_name);
  auto file = parse_kernel_file(request.candidate.source, request.candidate.origin, &*task);
  if (!file) {
    result.verdict = Verdict::kInvalidPlan;
    result.detail = file.error();
    return result;
  }
  auto compiled = compile_kernel(make_compile_request(*file, request.candidate.tunables, "sm_90a"),
                                 cache_ ? &*cache_ : nullptr);
  if (!compiled) return make_error(compiled.error());
  if (!compiled->ok) {
    result.verdict = Verdict::kCompileError;
    result.detail = "compile error";
    result.compile_log = compiled->log;
    return result;
  }
  std::string verdict = script_value(request.candidate.source, "verdict");
  // Screening timing first (EvalOptions::screen_time_first): a fault scripted at the declared
  // shapes alone ("fault=declared") shows only below the bar, where they run with the rest of the
  // gate; any other is at the timed shape too, whose every sample the timing loop checks.
  if (request.options.screen_time_first && request.options.full_gate_below_us > 0 &&
      script_value(request.candidate.source, "fault") == "declared" &&
      scripted_time(*file) >= request.options.full_gate_below_us)
    verdict.clear();
  if (!verdict.empty() && verdict != "ok") {
    auto parsed = parse_verdict(verdict);
    result.verdict = parsed ? *parsed : Verdict::kCrash;
    result.detail = "scripted verdict " + verdict;
    if (result.verdict == Verdict::kIncorrect) {
      Mismatch m;
      m.output = task->outputs.front().name;
      m.shape = "n=1023";
      m.index = 1020;
      m.expected = 1.5;
      m.actual = 0;
      m.phase = "sweep";
      result.mismatch = m;
    }
    return result;
  }
  double median = scripted_time(*file);
  result.verdict = Verdict::kOk;
  result.detail = "verified (scripted)";
  result.candidate_time = timing(median);
  if (request.baseline) {
    auto base = parse_kernel_file(request.baseline->source, "baseline.cu", &*task);
    if (!base) return make_error("the baseline does not parse: " + base.error());
    double baseline_us = scripted_time(*base);
    result.baseline_time = timing(baseline_us);
    result.speedup = baseline_us / median;
  }
  result.sol_us = scripted_number(request.candidate.source, "sol_us", 50.0);
  result.sol_percent = 100.0 * result.sol_us / median;
  result.resources = KernelResources{24, 0, 0, 0, 1.0};
  if (screen(request, median, result)) return result;
  add_profile(request, result);
  return result;
}

// As the worker's finish_gate(): under a screen, a kernel not below the bar keeps its times and
// ends `screened`; one below it gets the rest of the gate, where a scripted gate_verdict fires.
bool FakeEvaluator::screen(const EvalRequest& request, double median, EvalResult& result) {
  const EvalOptions& options = request.options;
  if (options.full_gate_below_us > 0 && median >= options.full_gate_below_us) {
    result.verdict = Verdict::kScreened;
    result.detail = "screened (scripted)";
    ++screened_;
    return true;
  }
  std::string verdict = script_value(request.candidate.source, "gate_verdict");
  if (verdict.empty()) return false;
  auto parsed = parse_verdict(verdict);
  result.verdict = parsed ? *parsed : Verdict::kCrash;
  result.detail = "scripted verdict " + verdict + " in the rest of the gate";
  result.candidate_time.reset();
  result.baseline_time.reset();
  result.speedup = 0;
  return true;
}

SanitizerOutcome FakeEvaluator::sanitize(const EvalRequest& request) {
  ++sanitizing_;
  ++sanitized_;
  {
    std::lock_guard lock(mutex_);
    sanitized_sources_.push_back(request.candidate.source);
  }
  if (options_.sanitize_delay.count() > 0) std::this_thread::sleep_for(options_.sanitize_delay);
  SanitizerOutcome outcome;
  outcome.ran = true;
  outcome.note = "fake memcheck, racecheck, synccheck, initcheck";
  std::string tool = script_value(request.candidate.source, "sanitizer");
  if (!tool.empty()) {
    outcome.finding =
        SanitizerFinding{tool, "Race reported (scripted)", "kernel", "candidate.cu:1"};
  }
  --sanitizing_;
  return outcome;
}

std::vector<std::string> FakeEvaluator::sanitized_sources() const {
  std::lock_guard lock(mutex_);
  return sanitized_sources_;
}

FakeEvaluator::Options fake_evaluator_options_from_env() {
  FakeEvaluator::Options options;
  if (const char* delay = std::getenv("KOPT_FAKE_DELAY_MS"); delay && *delay) {
    options.delay = std::chrono::milliseconds(std::atol(delay));
  }
  // A device that reports a hostile name (tests/hostile/): the name reaches the store and exports.
  if (const char* name = std::getenv("KOPT_FAKE_GPU_NAME"); name && *name) options.gpu_name = name;
  return options;
}

}  // namespace kopt::testing
