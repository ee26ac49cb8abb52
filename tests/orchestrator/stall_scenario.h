// The stalling-model scenario of issue 13, shared by its test and its bench: a daemon process
// (kopt_test_daemon: `kopt run` with the fake evaluator) against the fake LLM server answering
// as a model that stalls (tests/support/stalling_model.h) over real HTTP, and what the run cost:
// LLM calls, dollars, and the new kernels it evaluated (distinct up to renaming and comments).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/support/stalling_model.h"

namespace kopt::testing {

struct StallScenario {
  std::string daemon;      // the kopt_test_daemon binary to run (this build's, or main's)
  bool anthropic = false;  // the provider's shape
  StallingModelOptions model;
  std::vector<std::string> tasks = {"softmax", "axpy"};
  double max_usd = 6.40;
  int64_t candidates_per_task = 400;
  double hours = 0.05;  // three minutes at most
  // Extra keys for the config's "daemon" section (the stall settings); none for a daemon built
  // before they existed, which would refuse them.
  nlohmann::json daemon_config = nlohmann::json::object();
  nlohmann::json agent_config = nlohmann::json::object();  // merged into every agent
  double temperature = 0.2;     // configured for every agent, so a stall can raise it
  double input_per_mtok = 1.0;  // prices: a call of 3000 + 1500 tokens costs $0.009
  double output_per_mtok = 4.0;
};

struct StallReport {
  int exit_code = -1;
  std::string stdout_text, stderr_text, log;
  double seconds = 0;
  int64_t llm_calls = 0;  // every call the daemon recorded
  int64_t coder_calls = 0;
  double usd = 0;
  int64_t evaluations = 0;          // every evaluation, tuner included
  int64_t new_kernels = 0;          // coder kernels evaluated, distinct by fingerprint
  int64_t calls_while_stalled = 0;  // calls after the last new kernel the model wrote (per task)
  double usd_while_stalled = 0;
  StallingModelStats model;
  nlohmann::json status;  // `kopt status --json` after the run

  double calls_per_new_kernel() const;
  double usd_per_new_kernel() const;
};

// Runs the scenario in `dir` (a fresh database, tasks copied from the source tree).
Result<StallReport> run_stall_scenario(const StallScenario& scenario,
                                       const std::filesystem::path& dir);

// One markdown table row: | name | calls | new kernels | calls/kernel | $ | $/kernel | ... |
std::string stall_report_row(const std::string& name, const StallScenario& scenario,
                             const StallReport& report);
std::string stall_report_header();

}  // namespace kopt::testing
