// The orchestrator's name for a task's search (task_search.h).
#pragma once

#include "src/orchestrator/task_search.h"

namespace kopt::orchestrator {

using TaskState = TaskSearch;

}  // namespace kopt::orchestrator
