// The sandbox wire protocol, version 2: one JSON object per line on the worker's stdin (requests)
// and stdout (responses). Every message carries "v" (the protocol version) and "id".
//
//   (first, unasked)                                 <- {"v":2,"id":0,"ok":true,"hello":{...}}
//   {"v":2,"id":1,"op":"ping"}                       -> {"v":2,"id":1,"ok":true,"device":{...}}
//   {"v":2,"id":2,"op":"evaluate", ...EvalRequest}   -> {"v":2,"id":2,"ok":true,"result":{...}}
//   {"v":2,"id":3,"op":"shutdown"}                   -> {"v":2,"id":3,"ok":true}
// and "peaks", "check_task" (sandbox/worker/hygiene.h) and "cublaslt" (sandbox/worker/
// cublaslt_baseline.h), each answering with what it measured or {"ok":false,"error":"..."}.
// A request the worker cannot understand gets {"ok":false,"error":"..."}. A response with
// "fatal":true means the worker's CUDA context is broken and it exits after sending it.
// Version 2 added the hello: the worker's first line, written as soon as its process runs and
// before anything slow. Until it arrives the worker may still be waiting in a scheduler's queue
// (srun), which the supervisor must not mistake for a hang (README.md, "Running on Slurm").
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/verdict.h"
#include "sandbox/kernel_profile.h"

namespace kopt {

class JsonReader;

// 2: the worker's hello line first (a worker queued by Slurm is waiting, not hung), stress rounds
// (EvalOptions::stress, Mismatch::stress; task.json format 2), the profile pass
// (EvalOptions::profile, EvalResult::profile).
inline constexpr int kProtocolVersion = 2;

struct KernelSource {
  std::string source;
  std::string origin;                       // a file name, for logs and messages
  std::map<std::string, int64_t> tunables;  // values chosen for this evaluation (else defaults)
};

struct EvalOptions {
  std::string arch;   // empty: the worker's GPU
  uint64_t seed = 0;  // 0: the worker draws a fresh seed
  int rounds = 5;     // rounds of fresh random inputs per shape
  bool check_holdout = true;
  bool time = true;  // false: verify only
  int min_samples = 10;
  double max_noise = 0.005;  // stop when the relative noise of the median falls below this
  double max_gpu_seconds = 0.5;
  double max_wall_seconds = 20;
  double suspicious_speedup = 10.0;
  // Hang detection: a candidate's run may take hang_factor x the trusted kernel's time at the
  // same shape, and never less than hang_floor_seconds, before it is a timeout.
  double hang_factor = 20.0;
  // Half a second is thousands of times what any task's trusted kernel takes at its small shapes,
  // and each hang costs the GPU the floor plus a worker restart.
  double hang_floor_seconds = 0.5;
  // And never more than this (0: no ceiling): under compute-sanitizer the factor x a slow
  // reference's time can pass the tool's wall limit, and a run the supervisor cuts off says
  // nothing of what finished (sanitizer_runner.cc sets it below its wall limit).
  double hang_ceiling_seconds = 0;
  // Before and after timing: no other process may hold compute on the GPU, its clocks may not be
  // held down, and the worker's probe kernel must run within probe_tolerance of its best known
  // length in SM cycles on this GPU; otherwise the verdict is gpu_busy and no number is reported.
  bool check_gpu_quiet = true;
  // Under compute-sanitizer (sandbox/sanitizer_runner.cc sets it): every buffer is its own
  // allocation of exactly its payload, no guard zones, so memcheck sees any access past it.
  bool exact_allocations = false;
  double probe_tolerance = 0.10;
  // Shapes whose inputs and outputs together exceed large_shape_bytes get large_shape_rounds
  // rounds (at most `rounds`): every small shape has had the full rounds by then, and these
  // shapes dominate verification time (tasks/README.md, "Verification rounds").
  int large_shape_rounds = 1;
  int64_t large_shape_bytes = int64_t(64) << 20;
  // Verification draws its rounds from input sets the worker keeps per (task, reference, shape),
  // pool_sets of them for shapes up to large_shape_bytes, 4 above (sandbox/worker/input_pool.h).
  // A request with an explicit seed (a reproduction) always gets fresh inputs from that seed.
  bool reuse_inputs = true;
  int pool_sets = 8;
  // Samples of at least long_sample_ms each are stable to far below max_noise after a few:
  // min_samples_long of them suffice (sandbox/timing_stats.h).
  int min_samples_long = 5;
  double long_sample_ms = 10.0;
  // The baseline's samples of earlier evaluations in this worker (sandbox/worker/
  // baseline_history.h): fresh_baseline_samples fresh ones are interleaved with the candidate's
  // and, when they agree with the history within baseline_drift, complete the baseline's summary.
  bool reuse_baseline_samples = true;
  int fresh_baseline_samples = 2;
  double baseline_drift = 0.01;
  // The task's stress rounds (extreme but valid inputs), after the sweep: off only to measure
  // their cost or to show what they catch (tasks/README.md, "Stress rounds").
  bool stress = true;
  // The task's drawn shapes (task.json `draws`), after the stress rounds: off only to measure
  // their cost or to show what they catch (tasks/README.md, "Drawn shapes").
  bool draws = true;
  // Shapes at the candidate's own integer literals and tunables, either side of each
  // (sandbox/source_thresholds.h); input families chosen by each input's role
  // (sandbox/input_families.h); the task's round past 2^31 elements where the GPU's memory
  // holds it (`wide`); the task's constants drawn from their declared ranges on the drawn
  // shapes. Off only to measure their cost or to show what they catch (tasks/README.md).
  bool thresholds = true;
  bool families = true;
  bool wide = true;
  bool vary_constants = true;
  // Extra rounds beside a co-running kernel that holds a share of the SMs and loads and stores
  // through DRAM (sandbox/worker/co_runner.h), for kernels whose source shows communication
  // between blocks (sandbox/inter_block_scan.h): a race between blocks shows where blocks run in
  // another order. Off by default: on 4 x H200 (bench/results/h200x4-2026-11-28-mutation-session9)
  // they killed no mutant the other rounds missed, the removed acquire fence 3d036cf4dcfb
  // included, while costing 4 rounds for every kernel with a global atomic. By the gate's rule
  // (bench/README.md) that is not a defence; `"corun": true` in a request's options runs them.
  bool corun = false;
  // Hardware counters of a verified candidate at the timed shape, outside the timed samples
  // (sandbox/worker/profile_pass.h): "" none; "cupti" kopt's own pass through CUPTI's range
  // profiler; "bracket" one run between cuProfilerStart/Stop for an outside profiler (ncu
  // --profile-from-start off), which measures it instead.
  std::string profile;
  // With "cupti": only a candidate whose median is below this (a new best of its task); 0: any.
  double profile_below_us = 0;
  // Screening (0: off, every candidate gets the whole gate). A timed candidate is verified at the
  // task's declared shapes, then timed; only one whose median is below this (one that may beat
  // its task's best beyond the noise) gets the rest of the gate: the stress rounds, the input
  // families, the drawn, threshold and holdout shapes and the round past 2^31 elements. Any other
  // ends with verdict `screened`: timed honestly, never a win nor exported (issue 35: the rest
  // of the gate was 0.5-1 s of every evaluation on an H200).
  double full_gate_below_us = 0;
  // Screening timing first: the declared shapes wait with the rest of the gate, so a candidate
  // above the bar is checked only at the timed shape (every timed sample's outputs against the
  // reference, its guard zones and inputs) and a would-be best gets the whole gate after timing.
  // Saves the declared shapes' runs of every screened candidate (daemon.search.screen_time_first).
  bool screen_time_first = false;
  // Verification starts no new shape after this many seconds of it (0: no limit); the shapes left
  // out are counted in the verdict's detail. The sanitizer's runs are bounded so, by time rather
  // than by shape size (sandbox/sanitizer_runner.h).
  double verify_budget_seconds = 0;
};

struct EvalRequest {
  std::string task_json;  // task.json as text
  KernelSource reference;
  std::optional<KernelSource> baseline;  // timed interleaved with the candidate when present
  KernelSource candidate;
  EvalOptions options;
};

struct KernelResources {
  int registers = 0;
  int local_bytes = 0;  // spills and local arrays per thread
  int static_shared_bytes = 0;
  int64_t dynamic_shared_bytes = 0;
  double occupancy = 0;  // theoretical, 0..1, of the heaviest launch
};

// A kernel's resources as JSON: the worker's answer and the memory's evaluations.resources_json
// carry the same keys, written and read only here.
nlohmann::json resources_to_json(const KernelResources& resources);
// Reads the keys resources_to_json writes (absent ones keep their defaults, mistyped ones are
// errors under `path`); which other keys may stand beside them is the caller's rule.
KernelResources resources_from_json(JsonReader& reader, const nlohmann::json& object,
                                    const std::string& path);

struct TimingSummary {
  double median_us = 0;
  double noise = 0;  // relative standard error of the median (sandbox/timing_stats.h)
  double min_us = 0;
  int samples = 0;
  int discarded = 0;  // throttled or outlier samples thrown away
};

struct Mismatch {
  std::string output;
  std::string shape;  // "rows=7 cols=4097"
  int64_t index = -1;
  double expected = 0;
  double actual = 0;
  int round = 0;
  std::string phase;   // "sweep", "stress", "holdout", "timing"
  std::string stress;  // the stress round's name, in phase "stress"
};

struct EvalResult {
  Verdict verdict = Verdict::kCrash;
  std::string detail;  // one readable line (or the compile log)
  std::string compile_log;
  double compile_ms = 0;
  bool compile_cache_hit = false;
  std::string image_sha256;  // of the CUBIN that was loaded and judged ("" before it compiled)
  std::optional<Mismatch> mismatch;
  std::optional<TimingSummary> candidate_time;
  std::optional<TimingSummary> baseline_time;
  std::optional<KernelResources> resources;
  double speedup = 0;      // baseline median / candidate median
  double sol_us = 0;       // speed-of-light time for the default shape
  double sol_percent = 0;  // sol_us / candidate median * 100
  double verify_ms = 0, time_ms = 0, total_ms = 0;
  // Verification's shapes that finished every round (a failure ends the count at its shape):
  // what tells a run under compute-sanitizer that checked nothing from one that ran out of time.
  // -1: unknown (the supervisor's own verdict: the worker never answered or died).
  int64_t shapes_verified = 0;
  nlohmann::json device;         // name, cc, driver, cuda, sms
  nlohmann::json gpu_check;      // the busy-GPU checks around timing (probe, processes)
  nlohmann::json verify_phases;  // where verification's time went (ms per phase, runs)
  nlohmann::json timing_facts;   // how the timing was taken (warm-ups, baseline samples)
  nlohmann::json phases;         // where the worker's total went: ms per step of the evaluation
  std::optional<KernelProfile> profile;
  // Why a requested profile is missing ("profiling unavailable: ..."); said once per worker.
  std::string profile_note;
};

nlohmann::json to_json(const EvalRequest& request);
// Also accepts a whole "evaluate" request line (the envelope keys v, id and op are skipped);
// any other unknown key is an error. Missing options keep their defaults.
Result<EvalRequest> eval_request_from_json(const nlohmann::json& j);
// The "options" object alone, for other requests that time (sandbox/worker/cublaslt_baseline.h):
// missing keys keep their defaults; unknown keys and bad values are errors naming `path`.
Result<EvalOptions> eval_options_from_json(const nlohmann::json& j,
                                           const std::string& path = "$.options");
// Non-finite numbers (a NaN left in an output) travel as the strings "nan", "inf", "-inf",
// because JSON has no literal for them.
nlohmann::json to_json(const EvalResult& result);
Result<EvalResult> eval_result_from_json(const nlohmann::json& j);

// A protocol line's envelope: version and id, and the whole object for the rest.
struct Message {
  int version = 0;
  int64_t id = 0;
  nlohmann::json body;
};

// {"v":kProtocolVersion,"id":id,"op":op}: the start of every request.
nlohmann::json make_request(int64_t id, const std::string& op);
// {"v":kProtocolVersion,"id":id,"ok":ok}: the start of every response.
nlohmann::json make_response(int64_t id, bool ok);
// The worker's first line: its pid and host, so that the daemon knows it really runs.
nlohmann::json make_hello();
// Whether a parsed message's body is the worker's hello.
bool is_hello(const nlohmann::json& body);
// One line of the protocol: compact JSON and '\n'. Invalid UTF-8 in strings (a kernel source,
// a compile log) is replaced instead of throwing.
std::string encode_line(const nlohmann::json& message);
// Parses one line: a JSON object with an integer "v" and "id". The version is not compared
// here, so the caller can say which version the other side speaks.
Result<Message> parse_message(const std::string& line);

}  // namespace kopt
