// The beam of one task: the best verified kernels found so far, kept diverse. Two kernels whose
// code is nearly the same (a tuned copy, a renamed variable) occupy one slot, held by the faster,
// so the planner keeps starting from genuinely different ideas (AccelOpt keeps 6 per task).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/origin.h"
#include "sandbox/protocol.h"

namespace kopt::orchestrator {

// A verified kernel as the search loop knows it.
struct VerifiedKernel {
  int64_t kernel_id = 0;
  std::optional<int64_t> parent_id;
  std::string source;  // the kernel file as stored (tunable defaults are what was timed)
  Origin origin = Origin::kUnknown;  // kBaseline, kTuner, kCoder
  double median_us = 0;
  double noise = 0;
  double baseline_us = 0;
  double speedup = 1;  // over the task's baseline, timed interleaved
  double sol_us = 0;
  double sol_percent = 0;
  std::optional<KernelResources> resources;
  std::optional<KernelProfile> profile;  // hardware counters, when it was profiled
  // Verdict `screened`: verified at the task's declared shapes and timed, not faster than the
  // best beyond the noise, so the rest of the gate never ran. It may seed children from the beam
  // and rank tuner configurations; it never becomes the task's best nor the faster side of a
  // pair (its stored verdict is not 'ok': never a win, never exported).
  bool screened = false;
};

// Similarity of two kernel sources, 0..1: the Jaccard index of their multisets of code tokens
// (identifiers, numbers, operators), comments and the launch plan left out.
double code_similarity(const std::string& a, const std::string& b);

class Beam {
 public:
  Beam(int width, double near_copy_similarity) : width_(width), near_copy_(near_copy_similarity) {}

  // Offers a kernel: it enters when it is among the `width` fastest, replacing a near-copy that
  // is slower; a slower near-copy of a member stays out. Returns whether it entered.
  bool offer(const VerifiedKernel& kernel);

  // Members, fastest (highest speedup) first.
  const std::vector<VerifiedKernel>& members() const { return members_; }
  const VerifiedKernel* best() const { return members_.empty() ? nullptr : &members_.front(); }
  bool contains(int64_t kernel_id) const;
  // Takes out the members `drop` names (a kernel that failed the sanitizer and its descendants);
  // returns their ids.
  std::vector<int64_t> remove_if(const std::function<bool(const VerifiedKernel&)>& drop);
  bool empty() const { return members_.empty(); }

 private:
  int width_;
  double near_copy_;
  std::vector<VerifiedKernel> members_;
};

}  // namespace kopt::orchestrator
