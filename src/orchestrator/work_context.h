// Turning what the search loop knows (task spec, verified kernels, retrieved pairs) into what the
// agents are told (agents/agent_context.h): plain text and numbers, nothing of CUPTI or SQLite.
#pragma once

#include <vector>

#include "agents/agent_context.h"
#include "memory_store/retrieval.h"
#include "src/orchestrator/beam.h"
#include "src/orchestrator/run_recorder.h"
#include "src/orchestrator/task_state.h"

namespace kopt::orchestrator {

agents::TaskBrief make_brief(const TaskSpec& task, const GpuIdentity& gpu, double sol_us);
agents::Measurements measurements_of(const VerifiedKernel& kernel);
// One line per beam member other than `current`: "kernel 12 (coder): 1.84x, 71% SOL".
std::vector<std::string> beam_lines(const Beam& beam, int64_t current);

// Examples and warnings for a prompt from retrieved pairs, each with the diff of its kernels.
void add_memory_examples(const std::vector<memory::RetrievedPair>& pairs, RunRecorder& recorder,
                         agents::WorkContext& context);

}  // namespace kopt::orchestrator
