#include "sandbox/source_thresholds.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "sandbox/cuda_tokens.h"
#include "sandbox/expr.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

const std::set<std::string> kComparisons = {"<", "<=", ">", ">=", "==", "!="};

// An integer literal's value (decimal, hex, octal, binary; u/l suffixes), or -1 for a floating
// literal or one out of range.
int64_t integer_value(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == 'u' || t.back() == 'U' || t.back() == 'l' || t.back() == 'L'))
    t.pop_back();
  if (t.empty()) return -1;
  int base = 10;
  size_t at = 0;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    at = 2;
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
    base = 2;
    at = 2;
  } else if (t.size() > 1 && t[0] == '0') {
    base = 8;
    at = 1;
  }
  int64_t v = 0;
  for (size_t i = at; i < t.size(); ++i) {
    char c = char(std::tolower(static_cast<unsigned char>(t[i])));
    if (c == '\'') continue;  // digit separator
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                                                        : 99;
    if (d >= base) return -1;  // '.', 'e', 'f': a floating literal
    if (v > (int64_t(1) << 40)) return -1;
    v = v * base + d;
  }
  return v;
}

// How far the scanner looks around a literal for the call or comparison it belongs to. A bound
// reads `min(cols, (decltype(cols))393216)`: a few dozen tokens. Bounded so that hostile text (a
// 1 MB statement, min() nested thousands deep) costs linear time, not a walk per literal.
constexpr size_t kMaxWalk = 256;
// The thresholds kept, highest priority first.
constexpr size_t kMaxThresholds = 256;
// The names one literal can bound; the rest of a long call's identifiers add nothing.
constexpr size_t kMaxBoundNames = 8;

// The opening parenthesis of the min()/max() call whose argument token `i` is (`min(n, 4096)`,
// `std::min(k, (int)CAP)`), or 0 where it is none: a clamp is a bound as much as a comparison. A
// parenthesis that is not a clamp's (a cast, a grouping inside the call's argument) is walked
// past; the walk stops at a statement's edge or after kMaxWalk tokens.
size_t clamp_call(const std::vector<CudaToken>& tokens, size_t i) {
  static const std::set<std::string> kClamps = {"min", "max", "umin", "umax", "llmin", "llmax"};
  int depth = 0;
  const size_t floor = i > kMaxWalk ? i - kMaxWalk : 0;
  for (size_t j = i; j-- > floor;) {
    const CudaToken& t = tokens[j];
    if (t.kind != CudaToken::Kind::kPunct) continue;
    if (t.text == ")") ++depth;
    if (t.text == ";" || t.text == "{" || t.text == "}") return 0;
    if (t.text != "(") continue;
    if (depth > 0) {
      --depth;
      continue;
    }
    if (j > 0 && tokens[j - 1].kind == CudaToken::Kind::kIdentifier &&
        kClamps.count(tokens[j - 1].text))
      return j;
  }
  return 0;
}

bool bound_like(const std::vector<CudaToken>& tokens, size_t i) {
  auto punct = [&](size_t j, const char* text) {
    return j < tokens.size() && tokens[j].kind == CudaToken::Kind::kPunct && tokens[j].text == text;
  };
  bool compared = (i > 0 && tokens[i - 1].kind == CudaToken::Kind::kPunct &&
                   kComparisons.count(tokens[i - 1].text)) ||
                  (i + 1 < tokens.size() && tokens[i + 1].kind == CudaToken::Kind::kPunct &&
                   kComparisons.count(tokens[i + 1].text));
  bool array_size = i > 0 && punct(i - 1, "[") && punct(i + 1, "]");
  // A divisor of a size (cols / CHUNK, n % TILE): a tile, and its count's remainder a bound.
  bool divisor = i > 0 && (punct(i - 1, "/") || punct(i - 1, "%"));
  return compared || array_size || divisor || clamp_call(tokens, i) != 0;
}

// The identifiers token `i` bounds: the other side of its comparison, or every identifier of the
// min()/max() call it clamps in. A size of the same name crosses it first.
std::vector<std::string> bounded_names(const std::vector<CudaToken>& tokens, size_t i) {
  std::vector<std::string> names;
  auto identifier = [&](size_t j) {
    return j < tokens.size() && tokens[j].kind == CudaToken::Kind::kIdentifier;
  };
  auto comparison = [&](size_t j) {
    return j < tokens.size() && tokens[j].kind == CudaToken::Kind::kPunct &&
           kComparisons.count(tokens[j].text);
  };
  if (i >= 2 && comparison(i - 1) && identifier(i - 2)) names.push_back(tokens[i - 2].text);
  if (comparison(i + 1) && identifier(i + 2)) names.push_back(tokens[i + 2].text);
  if (size_t open = clamp_call(tokens, i)) {
    int depth = 0;
    const size_t end = std::min(tokens.size(), open + kMaxWalk);
    for (size_t j = open; j < end && names.size() < kMaxBoundNames; ++j) {
      if (tokens[j].text == "(") ++depth;
      if (tokens[j].text == ")" && --depth == 0) break;
      if (identifier(j) && j != open - 1 &&
          std::find(names.begin(), names.end(), tokens[j].text) == names.end())
        names.push_back(tokens[j].text);
    }
  }
  return names;
}

void keep(std::map<int64_t, SourceThreshold>& found, int64_t value, int priority,
          const std::string& origin, const std::vector<std::string>& bounds = {}) {
  if (value < 2) return;
  auto it = found.find(value);
  if (it == found.end() || it->second.priority < priority) {
    std::vector<std::string> kept = it == found.end() ? bounds : it->second.bounds;
    found[value] = SourceThreshold{value, priority, origin, kept};
    it = found.find(value);
  }
  for (const auto& b : bounds)
    if (std::find(it->second.bounds.begin(), it->second.bounds.end(), b) == it->second.bounds.end())
      it->second.bounds.push_back(b);
}

// The source's literals: bound-like ones at 3; a #define's (or a constexpr's) value at 2, or 3
// where its name is used like a bound; the rest at 1.
void scan_source(const std::string& source, std::map<int64_t, SourceThreshold>& found) {
  auto tokens = tokenize_cuda(source, "candidate");
  if (!tokens) return;  // the compile gate reports it; no thresholds from unreadable text
  const auto& tk = *tokens;
  std::map<std::string, int64_t> defines;
  for (size_t i = 0; i + 2 < tk.size(); ++i) {
    if (tk[i].starts_line && tk[i].text == "#" && tk[i + 1].text == "define" &&
        tk[i + 2].kind == CudaToken::Kind::kIdentifier && i + 3 < tk.size() &&
        !tk[i + 3].starts_line && tk[i + 3].kind == CudaToken::Kind::kNumber) {
      int64_t v = integer_value(tk[i + 3].text);
      if (v >= 0) defines[tk[i + 2].text] = v;
    }
    // `constexpr int kMaxSlots = 16;` names a limit as a #define does: its uses in a bound
    // (`min(top_k, kMaxSlots)`) name the size it caps.
    if (tk[i].text == "constexpr") {
      size_t j = i + 1;
      while (j + 2 < tk.size() && j < i + 6 && tk[j + 1].text != "=") ++j;
      if (j + 2 < tk.size() && tk[j].kind == CudaToken::Kind::kIdentifier &&
          tk[j + 1].text == "=" && tk[j + 2].kind == CudaToken::Kind::kNumber) {
        int64_t v = integer_value(tk[j + 2].text);
        if (v >= 0) defines[tk[j].text] = v;
      }
    }
  }
  for (size_t i = 0; i < tk.size(); ++i) {
    if (tk[i].kind == CudaToken::Kind::kNumber) {
      int64_t v = integer_value(tk[i].text);
      if (v >= 0)
        keep(found, v, bound_like(tk, i) ? 3 : 1, "line " + std::to_string(tk[i].line),
             bounded_names(tk, i));
    } else if (tk[i].kind == CudaToken::Kind::kIdentifier && defines.count(tk[i].text)) {
      keep(found, defines[tk[i].text], bound_like(tk, i) ? 3 : 2, "#define " + tk[i].text,
           bounded_names(tk, i));
    }
  }
}

void scan_plan(const KernelFile& kernel, std::map<int64_t, SourceThreshold>& found) {
  std::string text;
  for (const auto& l : kernel.launches) {
    for (const auto* list : {&l.grid, &l.block})
      for (const auto& e : *list) text += e + " ; ";
    text += l.shared_bytes + " ; ";
    for (const auto& a : l.args) text += a.expression + " ; ";
  }
  for (const auto& s : kernel.scratch) text += s.count + " ; ";
  auto tokens = tokenize_cuda(text, "plan");
  if (!tokens) return;
  for (const auto& t : *tokens)
    if (t.kind == CudaToken::Kind::kNumber) keep(found, integer_value(t.text), 1, "plan");
}

// The values either side of `t` for a size drawn in multiples of `m`: the crossing ones (the
// first multiple past t, the first at or past 2t+1) or the ones at and below (the last multiple
// at or below t, and at or below t-1).
std::vector<int64_t> values_around(int64_t t, int64_t m, bool crossing) {
  auto up = [m](int64_t v) { return (v + m - 1) / m * m; };
  auto down = [m](int64_t v) { return v / m * m; };
  if (crossing) return {up(t + 1), up(2 * t + 1)};
  return {down(t), down(t - 1)};
}

// A value of `variable` for which `text` (a computed size using it) comes closest to `wanted`,
// with the other variables as in `all`: a threshold moved one size, so the draw variables that
// tie the computed sizes to it (q_heads = kv_heads * group) are chosen again, keeping the shape
// near the drawn one. Wide ranges are scanned at a bounded number of points.
int64_t closest_variable(const std::string& text, const std::string& variable,
                         const SizeRange& range, int64_t wanted, ShapeBinding all) {
  constexpr int64_t kMaxPoints = 4096;
  // As far as the task lets a threshold shape go (SizeRange::threshold_max): a computed size
  // (hidden = 128 * h128) crosses a cap past its draw range through its variable.
  const int64_t top = std::max(range.max, range.threshold_max);
  const int64_t span = top - range.min;
  const int64_t step = std::max<int64_t>(1, span / kMaxPoints);
  int64_t best = range.min, best_gap = -1;
  for (int64_t v = range.min; v <= top; v += step) {
    all[variable] = v;
    auto value = evaluate_expression(text, all);
    if (!value || *value < 1) continue;
    int64_t gap = *value > wanted ? *value - wanted : wanted - *value;
    if (best_gap < 0 || gap < best_gap) best = v, best_gap = gap;
    if (gap == 0) break;
  }
  return best;
}

// Recomputes the draw's computed sizes and checks its constraints. A computed size that uses
// draw variables gets them chosen again (closest_variable) so that the expression holds: the
// shape must be one the draw itself could have made.
bool settle(const TaskSpec& task, ShapeBinding& shape) {
  ShapeBinding all = shape;
  for (const auto& [name, range] : task.draws.variables) all[name] = range.min;
  std::set<std::string> chosen;
  for (const auto& [name, text] : task.draws.computed) {
    if (auto e = Expr::parse(text)) {
      for (const auto& id : e->identifiers()) {
        auto range = task.draws.variables.find(id);
        if (range == task.draws.variables.end() || !chosen.insert(id).second) continue;
        all[id] = closest_variable(text, id, range->second, shape[name], all);
      }
    }
    auto v = evaluate_expression(text, all);
    if (!v || *v < 1) return false;
    shape[name] = all[name] = *v;
  }
  for (const auto& c : task.draws.constraints) {
    auto holds = constraint_holds(c, all);
    if (!holds || !*holds) return false;
  }
  return true;
}

// `base` with `size` at `value`, the other drawn sizes halved toward their minimum until the
// shape fits `max_bytes`; nullopt when it cannot.
std::optional<ShapeBinding> fit(const TaskSpec& task, ShapeBinding shape, const std::string& size,
                                int64_t value, int64_t max_bytes) {
  shape[size] = value;
  for (int step = 0; step < 64; ++step) {
    if (!settle(task, shape)) return std::nullopt;
    auto bytes = task.tensor_bytes(shape);
    if (!bytes) return std::nullopt;
    if (*bytes <= max_bytes) return shape;
    std::string largest;
    for (const auto& [name, range] : task.draws.ranges) {
      if (name == size || shape[name] <= std::max(range.min, range.multiple)) continue;
      if (largest.empty() || shape[name] > shape[largest]) largest = name;
    }
    if (largest.empty()) return std::nullopt;
    const SizeRange& r = task.draws.ranges.at(largest);
    int64_t halved = std::max(r.min, shape[largest] / 2) / r.multiple * r.multiple;
    shape[largest] = std::max(halved, (r.min + r.multiple - 1) / r.multiple * r.multiple);
  }
  return std::nullopt;
}

// Other drawn shapes to start a crossing from, drawn when first needed: the evaluation's drawn
// shape may break a constraint at the crossing value (top_k = 17 needs experts >= 17; the draw had
// 11), and with it the one shape that crosses a cap would be lost for that seed.
class OtherDraws {
 public:
  OtherDraws(const TaskSpec& task, uint64_t seed) : task_(task), seed_(seed) {}
  std::optional<ShapeBinding> fit_from(const std::string& size, int64_t v, int64_t max_bytes) {
    if (!drawn_) {
      drawn_ = true;
      for (uint64_t k = 1; k <= kDraws; ++k)
        if (auto d = draw_shapes(task_, seed_ + k * 0x9e3779b97f4a7c15ULL); d)
          shapes_.insert(shapes_.end(), d->begin(), d->end());
    }
    for (const auto& other : shapes_)
      if (auto shape = fit(task_, other, size, v, max_bytes)) return shape;
    return std::nullopt;
  }

 private:
  static constexpr uint64_t kDraws = 4;
  const TaskSpec& task_;
  uint64_t seed_;
  std::vector<ShapeBinding> shapes_;
  bool drawn_ = false;
};

// The largest value a threshold shape may give a size: its draw range, or as far past it as the
// task declares (SizeRange::threshold_max).
int64_t reach_max(const SizeRange& range) { return std::max(range.max, range.threshold_max); }

// A computed size a literal bounds by name (fused_moe's `min(hidden, 4096)`, hidden = 128 *
// h128): its variables are chosen again (settle) for a size at or past `v`, within max_bytes,
// else within reach_bytes; nothing where the draw cannot make it.
std::optional<ShapeBinding> computed_size_past(const TaskSpec& task, const ShapeBinding& base,
                                               const std::string& size, int64_t v,
                                               const ThresholdShapeLimits& limits) {
  for (int64_t bytes : {limits.max_bytes, limits.reach_bytes}) {
    if (bytes <= 0) continue;
    // settle() picks the variables whose size comes closest, which may fall short (4096 for 4097
    // in multiples of 128): ask for more, doubling the excess, until it lands at or past v.
    std::optional<ShapeBinding> shape;
    for (int64_t excess = 0; excess <= (int64_t(1) << 20); excess = excess * 2 + 1) {
      shape = fit(task, base, size, v + excess, bytes);
      if (!shape || shape->at(size) >= v) break;
    }
    if (shape && shape->at(size) >= v) return shape;
  }
  return std::nullopt;
}

}  // namespace

std::vector<SourceThreshold> source_thresholds(const KernelFile& kernel,
                                               const std::map<std::string, int64_t>& tunables) {
  std::map<int64_t, SourceThreshold> found;
  scan_source(kernel.source, found);
  scan_plan(kernel, found);
  for (const auto& [name, value] : kernel.tunable_values(tunables))
    keep(found, value, 2, "tunable " + name);
  std::vector<SourceThreshold> out;
  for (const auto& [v, t] : found) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const SourceThreshold& a, const SourceThreshold& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.value > b.value;
  });
  // Shapes are planned for a handful (ThresholdShapeLimits::max_shapes); a source of thousands of
  // distinct literals must not make the planning walk them all for every size.
  if (out.size() > kMaxThresholds) out.resize(kMaxThresholds);
  return out;
}

std::vector<ShapeBinding> threshold_shapes(const TaskSpec& task,
                                           const std::vector<SourceThreshold>& thresholds,
                                           uint64_t seed, const ThresholdShapeLimits& limits,
                                           size_t* named) {
  std::vector<ShapeBinding> out;
  size_t named_here = 0;
  if (!named) named = &named_here;
  *named = 0;
  if (task.draws.ranges.empty() || limits.max_shapes < 1) return out;
  ShapeBinding base = task.bind({});
  if (auto drawn = draw_shapes(task, seed); drawn && !drawn->empty()) base = drawn->front();
  // The cheapest shape: every drawn size at its minimum, where a crossing value needs the bytes.
  ShapeBinding least = base;
  for (const auto& [name, range] : task.draws.ranges)
    least[name] = (range.min + range.multiple - 1) / range.multiple * range.multiple;
  std::set<ShapeBinding> seen;
  int reach_left = limits.reach_bytes > limits.max_bytes ? limits.max_reach_shapes : 0;
  // One value of one size: within max_bytes, else (crossing values only) within reach_bytes.
  OtherDraws others{task, seed};
  auto try_value = [&](const std::string& size, int64_t v, bool crossing) {
    auto shape = fit(task, base, size, v, limits.max_bytes);
    if (!shape && crossing) shape = others.fit_from(size, v, limits.max_bytes);
    bool reach = false;
    if (!shape && crossing && reach_left > 0) {
      // From the drawn shape where it fits (a capped expert count is crossed by tokens that
      // route past it: a dozen tokens, not one), else from the least shape.
      shape = fit(task, base, size, v, limits.reach_bytes);
      if (!shape) shape = fit(task, least, size, v, limits.reach_bytes);
      reach = shape.has_value();
    }
    if (!shape || !seen.insert(*shape).second) return;
    out.push_back(*shape);
    if (reach) --reach_left;
  };
  auto try_computed = [&](const std::string& size, int64_t t) {
    if (!task.draws.computed.count(size)) return;
    for (int64_t v : {t + 1, 2 * t + 1}) {
      auto shape = computed_size_past(task, base, size, v, limits);
      if (shape && seen.insert(*shape).second) out.push_back(*shape);
    }
  };
  // First the sizes a threshold bounds by name, crossing: `min(top_k, 16)` gets top_k = 17 before
  // the other literals' shapes take the budget.
  for (const auto& t : thresholds) {
    for (const auto& name : t.bounds) {
      auto range = task.draws.ranges.find(name);
      if (range == task.draws.ranges.end()) {
        try_computed(name, t.value);
        *named = out.size();
        if (int(out.size()) >= limits.max_shapes) return out;
        continue;
      }
      for (int64_t v : values_around(t.value, range->second.multiple, true)) {
        if (v < range->second.min || v > reach_max(range->second)) continue;
        try_value(name, v, true);
        *named = out.size();
        if (int(out.size()) >= limits.max_shapes) return out;
      }
    }
  }
  for (bool crossing : {true, false}) {
    for (const auto& t : thresholds) {
      for (const auto& [size, range] : task.draws.ranges) {
        if (t.value + 1 < range.min || t.value + 1 > reach_max(range)) continue;
        for (int64_t v : values_around(t.value, range.multiple, crossing)) {
          if (v < range.min || v > reach_max(range)) continue;
          try_value(size, v, crossing);
          if (int(out.size()) >= limits.max_shapes) return out;
        }
      }
    }
  }
  return out;
}

}  // namespace kopt
