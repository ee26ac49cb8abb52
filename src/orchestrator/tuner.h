// The built-in tuner: sweeps the tunables a kernel file declares (block size, items per thread,
// vector width) with no LLM at all. The space is the cross product of the declared values. A
// space within the per-kernel cap is tried whole. A larger one is searched in rungs, successive
// halving style: the first rung is every one-tunable move from the defaults plus configurations
// drawn from the whole product (so interactions between tunables get a chance), half the cap in
// all; each later rung keeps the best third of what verified so far and spends half the budget
// left on the neighbours of those survivors, the best survivor's first. Promising regions get
// more evaluations, and the cap bounds the sweep.
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
  // How many configurations the cross product holds (at most kSpaceCap: "more than a billion").
  int64_t space() const { return space_; }
  static constexpr int64_t kSpaceCap = int64_t(1) << 30;

  // The next rung: configurations not tried yet (the defaults count as tried). Empty when the
  // sweep is over. Never more than the cap over the sweep's life. `best` steers the rung when
  // no result was recorded (a sweep whose results live elsewhere).
  std::vector<TunableConfig> next_batch(const TunableConfig& best);
  // A judged configuration and its speedup (0 when it did not verify): later rungs grow from
  // the best of these.
  void record(const TunableConfig& config, double speedup);
  int proposed() const { return proposed_; }

 private:
  std::vector<TunableConfig> whole_space() const;
  std::vector<TunableConfig> first_rung(int budget);
  std::vector<TunableConfig> survivors(const TunableConfig& best) const;
  std::vector<TunableConfig> neighbours(const TunableConfig& center) const;
  TunableConfig drawn_config();

  std::vector<Tunable> tunables_;
  TunableConfig defaults_;
  int max_configs_;
  int64_t space_ = 1;
  int proposed_ = 0;
  int rung_ = 0;
  uint64_t draw_state_;
  std::set<TunableConfig> tried_;
  std::map<TunableConfig, double> results_;
};

// The sweep's tunables by name ("BLOCK", "VEC") and its size ("96 configurations", "more than a
// billion configurations"): what the log and the planner's tuner facts say of a sweep.
std::vector<std::string> tunable_names(const TunerSweep& sweep);
std::string describe_space(const TunerSweep& sweep);

}  // namespace kopt::orchestrator
