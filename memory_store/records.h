// Plain records the memory store reads and writes. They know nothing of LLM clients, CUPTI or
// the sandbox: a verdict is its string name ("ok", "incorrect", see common/verdict.h), JSON
// blobs (configs, tunables, resources) travel as text. Times are ISO-8601 UTC strings
// ("2026-11-22T03:14:07Z"); an empty created_at means "now" when a record is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/call_totals.h"
#include "common/origin.h"
#include "common/run_status.h"
#include "common/verdict.h"

namespace kopt::memory {

// A task as the memory knows it: enough to tell whether its spec changed, and to export.
struct TaskRecord {
  int64_t id = 0;
  std::string name;
  std::string spec_hash;          // sha256 of task.json's bytes (TaskSpec::spec_hash)
  std::vector<std::string> tags;  // operation family first, as in task.json
  std::string spec_json;          // task.json as read
  std::string updated_at;
  // sha256 of the canonical task.json and reference.cu (sandbox/judging_spec.h) as the last run
  // saw them; empty when unknown (recorded before schema version 4, or imported).
  std::string judging_spec_sha256;
};

// Who wrote a kernel: an agent with a model and prompt template, or the built-in tuner.
struct KernelOrigin {
  Origin agent = Origin::kUnknown;
  std::string model;            // LLM model name, empty for the tuner
  std::string prompt_template;  // template file name, empty for the tuner
  bool tuner = false;
};

// A kernel file, content-addressed by the SHA-256 of its source.
struct KernelRecord {
  int64_t id = 0;
  std::string sha256;                // filled in by the store
  std::string source;                // the whole .cu text including its kopt:plan
  std::string task;                  // task name
  std::optional<int64_t> parent_id;  // the kernel it was derived from
  std::optional<int64_t> run_id;
  KernelOrigin origin;
  std::string tunables_json = "{}";  // tunable values it was written for
  std::string created_at;
};

// The GPU and software an evaluation ran on.
struct GpuInfo {
  std::string model;               // "NVIDIA H100 80GB HBM3"
  std::string compute_capability;  // "9.0"
  std::string driver_version;      // "580.159.04"
  std::string cuda_version;        // "13.0"
};

// The outcome of judging one kernel on one GPU.
struct EvaluationRecord {
  int64_t id = 0;
  int64_t kernel_id = 0;
  std::string task;
  std::optional<int64_t> run_id;
  GpuInfo gpu;
  Verdict verdict = Verdict::kCrash;  // kOk is the only verified verdict
  std::string detail;
  std::string tunables_json = "{}";  // the tunable values this evaluation used
  double median_us = 0;
  double noise = 0;        // relative spread of the median
  double baseline_us = 0;  // the task's baseline, timed interleaved
  double speedup = 0;      // baseline_us / median_us
  double sol_percent = 0;  // share of the speed-of-light bound reached, 0..100
  std::string resources_json = "{}";
  // Hardware counters of the profile pass, as JSON text ("{}": not profiled); the sandbox's
  // KernelProfile form, which the memory stores without reading.
  std::string profile_json = "{}";
  std::string created_at;
  // What the verdict was reached under: the task's judging spec (TaskRecord) and the verifier's
  // version (sandbox/judging_spec.h). '' and 0: unknown (judged before schema version 4).
  std::string judging_spec_sha256;
  int verifier_version = 0;
};

// A slow-to-fast pair: the change from `slow_kernel_id` (before) to `fast_kernel_id` (after).
// A negative pair records a change that made things slower (speedup < 1); it is kept as a warning.
struct PairRecord {
  int64_t id = 0;
  int64_t slow_kernel_id = 0;
  int64_t fast_kernel_id = 0;
  std::string task;
  double speedup = 0;  // before_us / after_us
  std::string gpu_model;
  std::string gpu_arch;           // "sm_90"
  std::string summary;            // why it is faster (or, for a negative, why it was slower)
  std::vector<std::string> tags;  // operation family first, then techniques
  bool is_negative = false;       // derived: speedup < 1
  int64_t lineage_root_id = 0;    // derived: the first ancestor of the slow kernel
  int64_t retrieved_count = 0;    // how often it was put in a prompt
  int64_t improved_count = 0;     // how often the kernel built from that prompt improved
  std::string created_at;
};

// One daemon run.
struct RunRecord {
  int64_t id = 0;
  std::string config_json = "{}";
  std::string started_at;
  std::string finished_at;  // empty while running
  RunStatus status = RunStatus::kRunning;
};

// One request to an LLM. Never holds a key or a prompt: only accounting.
struct LlmCallRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  std::string agent;
  std::string provider;
  std::string model;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  double latency_ms = 0;
  std::string status;  // the LLM client's status name: kLlmCallOk, "http_429", "timeout"...
  std::string error;   // the provider's message, already stripped of credentials by the caller
  std::string created_at;
};

// The status of an LLM call that answered (llm_status_name(LlmStatus::kOk); the memory knows no
// LLM client, so it keeps the name).
inline constexpr const char* kLlmCallOk = "ok";

// Sums over a run's LLM calls.
using RunTotals = CallTotals;

// The stored names of a verdict, an origin and a run status (columns evaluations.verdict,
// kernels.origin_agent, runs.status), parsed by every reader of those columns. The daemon writes
// only names from their tables and the import refuses others, so a name outside them means a
// database edited by hand: it reads as the value that claims least (a crash, no origin, a failed
// run), never as a verified kernel or a finished run.
Verdict stored_verdict(const std::string& name);
Origin stored_origin(const std::string& name);
RunStatus stored_run_status(const std::string& name);

// A plan the model proposed and what became of it (plan_store.h).
struct PlanRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  std::string task;
  std::optional<int64_t> parent_kernel_id;
  std::string title;
  std::string detail;
  std::string technique;                  // techniques.h labels, space-separated; "" when none
  std::string outcome = "queued";         // "queued", "verified 1.21x its parent", "incorrect: ..."
  std::vector<int64_t> child_kernel_ids;  // every kernel judged for it
  std::string created_at;
};

// A prompt and its answer, kept for `kopt memory transcripts` (plan_store.h).
struct TranscriptRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  std::string agent;
  std::string task;
  std::string template_file;
  std::string system;
  std::string prompt;
  std::string answer;
  std::string status;
  bool cut = false;  // a text was longer than kMaxTranscriptChars and was shortened
  std::string created_at;
  int64_t prompt_chars = 0;  // as stored (list_transcripts() leaves the texts out)
  int64_t answer_chars = 0;
};

// The randomised example slot of one prompt (example_draws.h).
struct ExampleDrawRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  std::string task;
  std::string agent;  // "planner", "coder"
  std::optional<int64_t> parent_kernel_id;
  int64_t pair_id = 0;            // the pair the slot showed
  double propensity = 0;          // the probability of that draw (1 / candidates when uniform)
  int64_t candidates = 0;         // how many pairs the draw chose among
  int64_t slot = 0;               // its position among the prompt's examples (0: first)
  std::vector<int64_t> shown;     // every pair the prompt showed, the drawn one included
  std::vector<int64_t> plan_ids;  // the plans the prompt led to (plans table)
  std::string created_at;
};

}  // namespace kopt::memory
