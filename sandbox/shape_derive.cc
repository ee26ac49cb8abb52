#include "sandbox/shape_derive.h"

#include <numeric>
#include <set>

#include "sandbox/task_spec.h"

namespace kopt {
namespace {

constexpr int kDerivedCount = 4;
constexpr int64_t kDerivedMaxBytes = int64_t(16) << 20;

// Every shape the task lists, bound to its defaults.
std::vector<ShapeBinding> listed_shapes(const TaskSpec& task) {
  std::vector<ShapeBinding> out = {task.sizes};
  for (const auto* list : {&task.shapes, &task.holdout})
    for (const auto& s : *list) out.push_back(task.bind(s));
  for (const auto& round : task.stress)
    for (const auto& s : round.shapes) out.push_back(task.bind(s));
  return out;
}

bool holds_everywhere(const std::vector<ShapeBinding>& shapes, const std::string& a,
                      const std::string& b, bool (*relation)(int64_t, int64_t)) {
  for (const auto& s : shapes)
    if (!relation(s.at(a), s.at(b))) return false;
  return true;
}

// The relations between pairs of sizes that every listed shape keeps: equality (the later name
// becomes computed from the earlier), divisibility and order, as constraints.
void derive_relations(const std::vector<ShapeBinding>& shapes, const std::set<std::string>& varying,
                      DrawSpec& spec, std::vector<ShapeConstraint>& order) {
  const ShapeBinding& names = shapes.front();
  for (const auto& [a, va] : names) {
    for (const auto& [b, vb] : names) {
      if (a == b || (!varying.count(a) && !varying.count(b))) continue;
      if (a < b && varying.count(b) && !spec.computed.count(a) &&
          holds_everywhere(shapes, a, b, [](int64_t x, int64_t y) { return x == y; })) {
        spec.computed[b] = a;
        spec.ranges.erase(b);
        continue;
      }
      if (spec.computed.count(a) || spec.computed.count(b)) continue;
      bool divides =
          holds_everywhere(shapes, a, b,
                           [](int64_t x, int64_t y) { return y > 0 && x % y == 0; }) &&
          !holds_everywhere(shapes, b, a, [](int64_t x, int64_t y) { return y > 0 && x % y == 0; });
      bool some_above_one = false;
      for (const auto& s : shapes) some_above_one |= s.at(b) > 1;
      if (divides && some_above_one && varying.count(a))
        spec.constraints.push_back({a + " % " + b + " == 0", a + " % " + b, "==", "0"});
      if (holds_everywhere(shapes, a, b, [](int64_t x, int64_t y) { return x <= y; }) &&
          !holds_everywhere(shapes, a, b, [](int64_t x, int64_t y) { return x == y; }))
        order.push_back({a + " <= " + b, a, "<=", b});
    }
  }
}

bool draws_fit(const TaskSpec& task, const DrawSpec& spec) {
  TaskSpec probe = task;
  probe.draws = spec;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    if (!draw_shapes(probe, seed)) return false;
  return true;
}

}  // namespace

DrawSpec derive_draw_spec(const TaskSpec& task) {
  DrawSpec spec;
  spec.max_bytes = kDerivedMaxBytes;
  std::vector<ShapeBinding> shapes = listed_shapes(task);
  std::set<std::string> varying;
  for (const auto& [name, v] : task.sizes) {
    int64_t lo = v, hi = v, gcd = 0;
    for (const auto& s : shapes) {
      lo = std::min(lo, s.at(name));
      hi = std::max(hi, s.at(name));
      gcd = std::gcd(gcd, s.at(name));
    }
    if (lo == hi) continue;  // one value everywhere: a fixed dimension of the kernels
    varying.insert(name);
    SizeRange range;
    range.multiple = std::max<int64_t>(1, gcd);
    range.min = std::max<int64_t>(range.multiple, lo);
    range.max = 2 * hi;
    spec.ranges[name] = range;
  }
  if (spec.ranges.empty()) return spec;
  std::vector<ShapeConstraint> order;
  derive_relations(shapes, varying, spec, order);
  spec.count = kDerivedCount;
  // Order relations may be coincidences of the listed shapes (rows <= cols everywhere): kept
  // when the draw still fits with them, dropped when it does not.
  DrawSpec with_order = spec;
  with_order.constraints.insert(with_order.constraints.end(), order.begin(), order.end());
  if (!order.empty() && draws_fit(task, with_order)) {
    spec = with_order;
  } else if (!draws_fit(task, spec)) {
    spec.count = 0;
    spec.derived = "no drawn shape within 16 MiB keeps the relations of the listed shapes";
    return spec;
  }
  std::string text;
  for (const auto& [name, r] : spec.ranges)
    text += (text.empty() ? "" : ", ") + name + " " + std::to_string(r.min) + ".." +
            std::to_string(r.max) + (r.multiple > 1 ? " by " + std::to_string(r.multiple) : "");
  for (const auto& [name, expr] : spec.computed) text += ", " + name + " = " + expr;
  for (const auto& c : spec.constraints) text += ", " + c.text;
  spec.derived = "derived from the listed shapes: " + text;
  return spec;
}

}  // namespace kopt
