// Keeps the FTS5 retrieval indexes (schema version 2) in step with the rows they describe.
// Rows are indexed from C++ rather than by triggers because the indexed words of a kernel are
// extracted from its source by index_terms(); deletions are handled by triggers.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "memory_store/sqlite_database.h"

namespace kopt::memory {

// Indexes pair `pair_id`: its summary, tags, task and the words of both kernels' sources.
Status index_pair(sql::Database& db, int64_t pair_id);
// Indexes kernel `kernel_id`: the words of its source and its task.
Status index_kernel(sql::Database& db, int64_t kernel_id);

// Indexes row `id` just written in `transaction` (with index_pair or index_kernel) and commits:
// a stored pair or kernel is never without its index entry. Returns `id`.
Result<int64_t> index_and_commit(sql::Database& db, sql::Transaction& transaction, int64_t id,
                                 Status (*index)(sql::Database& db, int64_t id));

}  // namespace kopt::memory
