// Turning what the search loop knows (task spec, verified kernels, retrieved pairs) into what the
// agents are told (agents/agent_context.h): plain text and numbers, nothing of CUPTI or SQLite.
#pragma once

#include <optional>
#include <vector>

#include "agents/agent_context.h"
#include "common/sol_score.h"
#include "memory_store/retrieval.h"
#include "src/orchestrator/beam.h"
#include "src/orchestrator/run_recorder.h"
#include "src/orchestrator/task_state.h"

namespace kopt::orchestrator {

agents::TaskBrief make_brief(const TaskSpec& task, const GpuIdentity& gpu, double sol_us);
// `production`: the task's best production baseline on this GPU model, named to the model as the
// target to beat (none: not said).
agents::Measurements measurements_of(
    const VerifiedKernel& kernel,
    const std::optional<ProductionReference>& production = std::nullopt);
// One line per beam member other than `current`: "kernel 12 (coder): 1.84x, 71% SOL".
std::vector<std::string> beam_lines(const Beam& beam, int64_t current);

// Examples and warnings for a prompt from retrieved pairs, each with the diff of its kernels and,
// where its faster kernel reached its task's best production baseline, that fact.
void add_memory_examples(const std::vector<memory::RetrievedPair>& pairs, RunRecorder& recorder,
                         agents::WorkContext& context);

// The shown pairs a plan may credit when its child gains: those teaching a technique the plan
// names (`plan_techniques`, techniques_in of its title and detail). A pair whose techniques the
// plan does not use was not what helped, and a pair that names none cannot be told apart.
std::vector<int64_t> pairs_used_by_plan(const std::vector<memory::RetrievedPair>& shown,
                                        const std::vector<std::string>& plan_techniques);

// What a plan applies: techniques_in() of its title and detail, the one reading that records the
// plan, ranks the coder's examples and credits them.
std::vector<std::string> plan_techniques(const agents::Plan& plan);

// `pairs` with those that teach one of `plan_techniques` first, each group in its order: the
// coder's examples for the plan it implements.
void put_plan_techniques_first(std::vector<memory::RetrievedPair>& pairs,
                               const std::vector<std::string>& plan_techniques);

}  // namespace kopt::orchestrator
