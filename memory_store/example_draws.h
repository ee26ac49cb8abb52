// The randomised example slot of each prompt, logged so that a night with a real model can be
// scored off-policy later: of the examples retrieval shows, one slot holds a pair drawn at
// random from the eligible candidates (retrieval.h, RetrievalQuery::draw_index), and its row
// here says which pair it was, among how many, with what probability (the propensity), what
// else the prompt showed and which plans the prompt led to. An inverse-propensity estimate of
// "what if another pair had filled the slot" reads these rows with the plans' outcomes. The
// table comes with schema version 7 (schema.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "memory_store/records.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

Result<int64_t> add_example_draw(sql::Database& db, const ExampleDrawRecord& draw);
// The plans a prompt led to, known only once the planner answered (plans table ids).
Status set_draw_plans(sql::Database& db, int64_t draw_id, const std::vector<int64_t>& plan_ids);
// Oldest first; `run_id` narrows to one run.
Result<std::vector<ExampleDrawRecord>> list_example_draws(sql::Database& db,
                                                          std::optional<int64_t> run_id);

// Schema version 7: the example_draws table.
Status migrate_to_version_7(sql::Database& db);

}  // namespace kopt::memory
