// Credit for the memory's examples (issue 36): a plan whose child gains credits only the shown
// pairs whose technique it applies, read the same way retrieval labels pairs (techniques.h).
#include <gtest/gtest.h>

#include "memory_store/techniques.h"
#include "src/orchestrator/work_context.h"

namespace kopt::orchestrator {
namespace {

memory::RetrievedPair shown(int64_t id, std::vector<std::string> techniques) {
  memory::RetrievedPair r;
  r.pair.id = id;
  r.techniques = std::move(techniques);
  return r;
}

TEST(ExampleCredit, OnlyPairsWhoseTechniqueThePlanAppliesAreCredited) {
  std::vector<memory::RetrievedPair> examples = {shown(1, {"vector_loads"}),
                                                 shown(2, {"warp_shuffle", "online_softmax"}),
                                                 shown(3, {}), shown(4, {"tensor_cores"})};
  auto plan = memory::techniques_in(
      "Online softmax: one pass with a running max, reduced across the warp with __shfl_xor_sync");
  EXPECT_EQ(pairs_used_by_plan(examples, plan), (std::vector<int64_t>{2}));
  // A plan naming no technique credits nothing: it cannot be told which example helped.
  EXPECT_TRUE(pairs_used_by_plan(examples, memory::techniques_in("Try something else")).empty());
  EXPECT_EQ(pairs_used_by_plan(examples, {"vector_loads", "tensor_cores"}),
            (std::vector<int64_t>{1, 4}));
}

// The coder implementing a plan sees first the examples that teach what the plan does.
TEST(ExampleCredit, TheCodersExamplesPutThePlansTechniquesFirst) {
  std::vector<memory::RetrievedPair> examples = {shown(1, {"vector_loads"}),
                                                 shown(2, {"warp_shuffle", "online_softmax"}),
                                                 shown(3, {}), shown(4, {"tensor_cores"})};
  put_plan_techniques_first(examples, {"tensor_cores", "warp_shuffle"});
  std::vector<int64_t> order;
  for (const auto& e : examples) order.push_back(e.pair.id);
  EXPECT_EQ(order, (std::vector<int64_t>{2, 4, 1, 3}));
}

}  // namespace
}  // namespace kopt::orchestrator
