// Structured inputs: index tensors generated under constraints, and values planted where a
// production kernel meets them (issue 33). Paged attention needs block tables that are shuffled,
// non-contiguous and padded past each sequence's last page, sequence lengths that hit their edge
// values (0, 1, exact multiples of the page size), and KV slots no sequence reads holding NaN
// (vLLM's bug: an unused V slot times probability 0 is NaN); a quantised GEMM with act-order needs
// a shuffled group index; a fused MoE needs routing where some experts get no token and some get
// every token. These keys extend an input's `init` (tasks/README.md, "Structured inputs"); some
// name another input, so the cross-input checks run once all inputs are read.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "sandbox/dtype.h"

namespace kopt {

struct InitSpec;
struct TaskSpec;
struct TensorSpec;
struct StressRound;
using ShapeBinding = std::map<std::string, int64_t>;

// Slots of a paged pool that no sequence reads: filled with NaN after the pool's own draw.
struct StaleSlots {
  std::string table;    // the block table input (i32 [rows, max_pages])
  std::string lengths;  // the lengths input (i32 [rows])
  std::string page;     // tokens per page (an expression)
  std::string slot;     // elements per token slot (an expression: kv_heads * d)
  bool empty() const { return table.empty(); }
};

// Routing logits: whole columns (experts) raised above or lowered below every other value.
struct RoutingSkew {
  std::string experts;  // the row length (an expression)
  std::string hot;      // columns raised: every row picks them first (an expression, may be "0")
  std::string cold;     // columns lowered: no row picks them while top_k <= experts - cold
  bool empty() const { return experts.empty(); }
};

struct StructuredInit {
  // randint: values every draw holds at least once (random positions), where in low..high-1.
  std::vector<std::string> edges;
  // "permutation": a random permutation of 0..row-1 per row (row: the innermost dimension),
  // each value divided by `divide` (act-order's g_idx: a shuffled k / group).
  std::string divide;
  bool shuffle = true;  // false: 0..row-1 in order (g_idx without act-order: k / group)
  // "pages": a block table [rows, max_pages] for the lengths input `lengths`, `page` tokens a
  // page, pages drawn from shuffled permutations of 0..pool-1; entries past a row's last page
  // hold `pad` ("unused": a page no row reads, where one exists; else that integer).
  std::string lengths, page, pool, pad;
  StaleSlots stale;
  RoutingSkew routing;

  bool any() const {
    return !edges.empty() || !divide.empty() || !lengths.empty() || !stale.empty() ||
           !routing.empty();
  }
};

// The init keys this file adds (read_init_object accepts them).
const std::vector<std::string>& structured_init_keys();
// The distributions this file adds: "permutation", "pages".
bool is_structured_dist(const std::string& dist);

// Reads the structured keys of the init object `node` at `path` into `init.structured` (syntax
// and expressions; the inputs they name are checked by check_structured_inputs).
void read_structured_init(JsonReader& reader, const nlohmann::json& node, const std::string& path,
                          DType dtype, const std::set<std::string>& symbols, InitSpec& init);

// Short text for describe_init: ", edges 0, 1, page", ", a shuffled page table", ...
std::string describe_structured(const InitSpec& init);

// Cross-input rules of `init` (input `index` of `task`, at `path`): a named input exists, comes
// earlier (it is filled first) and is an integer tensor.
void check_structured_inputs(JsonReader& reader, const TaskSpec& task, size_t index,
                             const InitSpec& init, const std::string& path);

// check_structured_inputs for every input's init and every stress round's override.
void check_task_structured(JsonReader& reader, const TaskSpec& task);

// The rules that need a shape: expressions positive, a table wide enough for the longest
// length, the pool's element count a multiple of page * slot, hot + cold <= experts.
// `round` (or nullptr) gives the inits of the inputs named.
void check_structured_at_shape(JsonReader& reader, const TaskSpec& task, const TensorSpec& input,
                               const StressRound* round, const ShapeBinding& sizes,
                               const std::string& path);

// The inputs whose fill reads `name` (directly or through another): refilled with it.
std::vector<std::string> structured_dependents(const TaskSpec& task, const std::string& name);

}  // namespace kopt
