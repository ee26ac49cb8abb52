// The built-in tuner: sweeps the tunables a kernel file declares (block size, items per thread,
// vector width) with no LLM at all. Small spaces are tried whole; larger ones one tunable at a
// time around the best configuration so far (coordinate descent), each pass centred on the
// winner of the last, until nothing new is left or the per-kernel cap is reached.
//
// A configuration becomes a kernel file of its own: the same code with the chosen values moved
// to the front of each tunable's list (the default), so every stored kernel is exactly what was
// timed, and exporting the best one needs no separate record of its settings.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/kernel_file.h"

namespace kopt::orchestrator {

using TunableConfig = std::map<std::string, int64_t>;

// "BLOCK=256 VEC=4"; "defaults" for an empty config.
std::string describe_config(const TunableConfig& config);
// {"BLOCK":256,"VEC":4}
std::string config_json(const TunableConfig& config);

// The kernel file `source` with each tunable's list reordered so that config's value comes first.
// The plan block is rewritten (as formatted JSON); the code is left as it is. Tunables not in
// `config` keep their order.
Result<std::string> with_default_tunables(const std::string& source, const TunableConfig& config);

// Plans the sweep of one kernel's tunables.
class TunerSweep {
 public:
  TunerSweep(std::vector<Tunable> tunables, int max_configs);

  // The defaults of the kernel as declared.
  const TunableConfig& defaults() const { return defaults_; }
  bool has_space() const;  // more than one configuration exists

  // The next configurations to try around `best`, none of them in `tried` (the defaults count
  // as tried). Empty when the sweep is over. Never more than the cap over the sweep's life.
  std::vector<TunableConfig> next_batch(const TunableConfig& best);
  // Marks a configuration as tried (results arrive out of order).
  void mark_tried(const TunableConfig& config) { tried_.insert(config); }
  int proposed() const { return proposed_; }

 private:
  std::vector<Tunable> tunables_;
  TunableConfig defaults_;
  int max_configs_;
  int proposed_ = 0;
  bool exhaustive_done_ = false;
  std::set<TunableConfig> tried_;
};

}  // namespace kopt::orchestrator
