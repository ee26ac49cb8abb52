// What the agents are told: plain descriptions of a task, a kernel and its measurements, and the
// pairs retrieved from memory. The orchestrator fills these from the evaluator's results and the
// memory store; the agents turn them into prompt text and know nothing of CUPTI or SQLite.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kopt::agents {

struct TaskBrief {
  std::string name;
  std::string description;
  std::vector<std::string> tags;
  std::string sizes;  // "n=67108864" (the timed shape) and the sweep, one line
  std::string gpu;    // "NVIDIA H100 80GB HBM3 (sm_90a, 132 SMs)"
  std::string bound;  // "memory-bound" or "compute-bound", with the speed-of-light time
  // The task contract (src/orchestrator/task_contract.h): first in every planner and coder
  // prompt, the same text for the whole task.
  std::string contract;
};

// How a kernel did on the GPU. Zero means "not measured".
struct Measurements {
  double median_us = 0;
  double noise = 0;        // relative
  double baseline_us = 0;  // the task's baseline, timed interleaved
  double speedup = 0;      // over the baseline
  double sol_us = 0;       // speed-of-light time of the operation
  double sol_percent = 0;  // sol_us / median_us * 100
  // The best production baseline measured for the task on this GPU model (cuBLASLt, PyTorch
  // eager or torch.compile): the time users get today, the target to beat. "" and 0: none.
  std::string production_name;
  double production_us = 0;
  int registers = 0;
  int local_bytes = 0;  // spills and local arrays per thread
  int static_shared_bytes = 0;
  int64_t dynamic_shared_bytes = 0;
  double occupancy = 0;  // theoretical, 0..1
  std::string tunables;  // "BLOCK=256" as evaluated
  // Hardware counters of the kernel's profile pass in one line ("DRAM 61% of peak, L2 hit 12%,
  // ..., top stalls: long scoreboard 48%"); empty where it was not profiled.
  std::string where_time_goes;
};

struct KernelSnapshot {
  std::string source;  // the whole kernel file
  std::optional<Measurements> measurements;
};

// A pair from memory, shown to the planner and coder as an example (speedup > 1) or as a
// warning (speedup < 1).
struct MemoryExample {
  int64_t pair_id = 0;
  std::string task;
  double speedup = 0;  // before / after
  std::string summary;
  std::vector<std::string> tags;
  std::string diff;  // unified diff from the slower to the faster kernel (may be shortened)
  // "its result (40.00 us) is as fast as torch_compile (45.00 us) or faster" when the faster
  // kernel reached the best production baseline of its task; "" otherwise.
  std::string reached_production;
};

// Everything an agent working on one kernel of one task may need.
struct WorkContext {
  TaskBrief task;
  KernelSnapshot current;
  std::vector<MemoryExample> examples;   // positive pairs
  std::vector<MemoryExample> warnings;   // negative pairs
  std::vector<std::string> tried_plans;  // earlier plans on this task with their outcome
  std::vector<std::string> beam;         // the other kernels kept for this task, one line each
  // What the tuner found on this task's kernels, one line each (TaskSearch::tuner_facts): what
  // the tunables are worth, told once instead of as memory examples.
  std::vector<std::string> tuner_facts;
  // What memory knows per technique, merged (memory_store/technique_cards.h): the planner's
  // curated lessons, shown beside the raw examples.
  std::vector<std::string> technique_cards;
  // The coder's recent answers that repeated kernels already judged, with what those scored,
  // one line each: a model that repeats itself is told so in its next prompt.
  std::vector<std::string> repeats;
  std::optional<double> temperature;  // raised while the model stalls; unset: as configured
};

// "median 301.2 us (noise 0.4%), 1.02x over the baseline (307.1 us), 89.3% of speed of light
// (268.9 us), the production baseline to beat and the SOL score S against it; 16 registers, no
// spills, ...", several lines; "not measured yet" when empty.
std::string describe_measurements(const std::optional<Measurements>& m);

// The "where the time goes" section: the counters' line, or why there is none.
std::string describe_where_time_goes(const std::optional<Measurements>& m);

// Examples as numbered blocks: speedup, task, lesson, tags, diff; `empty_text` when none.
std::string describe_examples(const std::vector<MemoryExample>& examples,
                              const std::string& empty_text);

// The placeholders every task-level template shares (task_*, gpu, bound).
std::map<std::string, std::string> task_values(const TaskBrief& task);

// task_values() plus the current kernel, its measurements and the memory's examples and
// warnings: what the planner's and the coder's prompts share.
std::map<std::string, std::string> work_values(const WorkContext& context);

// `text` cut to at most `max_chars`, keeping its start and end and saying how much was cut.
std::string shorten(const std::string& text, size_t max_chars);

}  // namespace kopt::agents
