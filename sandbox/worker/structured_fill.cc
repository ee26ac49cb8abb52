#include "sandbox/worker/structured_fill.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "sandbox/expr.h"

namespace kopt::worker {
namespace {

constexpr unsigned char kNaNBytes = 0xFF;  // NaN in f32, f16, bf16 and e4m3 alike

Result<std::vector<int64_t>> read_integers(Device& device, const BufferRef& b) {
  std::vector<int64_t> out(size_t(b.elements));
  if (b.dtype == DType::kI64) {
    if (auto s = copy_to_host(device, out.data(), b.ptr, b.bytes()); !s)
      return make_error(s.error());
    return out;
  }
  std::vector<int32_t> narrow(size_t(b.elements));
  if (auto s = copy_to_host(device, narrow.data(), b.ptr, b.bytes()); !s)
    return make_error(s.error());
  std::copy(narrow.begin(), narrow.end(), out.begin());
  return out;
}

Status write_integers(Device& device, const BufferRef& b, const std::vector<int64_t>& values) {
  if (b.dtype == DType::kI64) return copy_to_device(device, b.ptr, values.data(), b.bytes());
  std::vector<int32_t> narrow(values.begin(), values.end());
  return copy_to_device(device, b.ptr, narrow.data(), b.bytes());
}

Result<int64_t> eval(const std::string& text, const ShapeBinding& sizes, const std::string& what) {
  auto v = evaluate_expression(text, sizes);
  if (!v) return make_error(what + " '" + text + "': " + v.error());
  return *v;
}

// The integers of input `name`, which the inputs' order fills before the one that reads it.
Result<std::vector<int64_t>> named_integers(Device& device, const BufferMap& inputs,
                                            const std::string& name) {
  auto it = inputs.find(name);
  if (it == inputs.end()) return make_error("input '" + name + "' is not filled yet");
  return read_integers(device, it->second);
}

// The first of `results` that failed, as a Status (ok when all hold): a step that needs several
// values checks them at once, reporting the first missing one.
template <typename... Results>
Status all_hold(const Results&... results) {
  Status status = ok_status();
  ((status && !results ? void(status = make_error(results.error())) : void()), ...);
  return status;
}

// Each edge value inside low..high-1 at a random position of its own, in at most half the
// elements (a random subset of the edges when there are more).
Status plant_edges(Device& device, const InitSpec& init, const ShapeBinding& sizes,
                   const BufferRef& target, std::mt19937_64& rng) {
  auto low = eval(init.int_low, sizes, "low");
  auto high = eval(init.int_high, sizes, "high");
  if (auto held = all_hold(low, high); !held) return held;
  std::vector<int64_t> values;
  for (const auto& e : init.structured.edges) {
    auto v = eval(e, sizes, "edge");
    if (!v) return make_error(v.error());
    if (*v >= *low && *v < *high && std::find(values.begin(), values.end(), *v) == values.end())
      values.push_back(*v);
  }
  std::shuffle(values.begin(), values.end(), rng);
  std::vector<int64_t> positions;
  // At most half the elements: the uniform draw keeps the rest (a batch of 1 draws plainly).
  while (positions.size() < values.size() && int64_t(positions.size()) < target.elements / 2) {
    int64_t p = int64_t(rng() % uint64_t(target.elements));
    if (std::find(positions.begin(), positions.end(), p) == positions.end()) positions.push_back(p);
  }
  size_t width = dtype_size(target.dtype);
  for (size_t i = 0; i < positions.size(); ++i) {
    int64_t wide = values[i];
    int32_t narrow = int32_t(values[i]);
    const void* bytes = width == 8 ? static_cast<const void*>(&wide) : &narrow;
    if (auto s = copy_to_device(device, target.ptr + uint64_t(positions[i]) * width, bytes, width);
        !s)
      return s;
  }
  return ok_status();
}

Status fill_permutation(Device& device, const TaskSpec& task, const ShapeBinding& sizes,
                        const TensorSpec& input, const InitSpec& init, const BufferRef& target,
                        std::mt19937_64& rng) {
  auto row = input.shape.empty() ? Result<int64_t>(target.elements)
                                 : eval(input.shape.back(), sizes, "the row length");
  auto divide = eval(init.structured.divide, sizes, "divide");
  if (auto held = all_hold(row, divide); !held) return held;
  if (*row < 1 || *divide < 1) return make_error("permutation: empty rows or divide < 1");
  (void)task;
  std::vector<int64_t> values(size_t(target.elements));
  for (int64_t start = 0; start < target.elements; start += *row) {
    auto first = values.begin() + start;
    std::iota(first, first + *row, int64_t(0));
    if (init.structured.shuffle) std::shuffle(first, first + *row, rng);
    std::for_each(first, first + *row, [&](int64_t& v) { v /= *divide; });
  }
  return write_integers(device, target, values);
}

// Pages of every row from successive shuffled permutations of the pool (distinct until the pool
// runs out, then shared, as prefix caching shares them); padding past each row's last page.
Status fill_pages(Device& device, const ShapeBinding& sizes, const BufferMap& inputs,
                  const TensorSpec& input, const InitSpec& init, const BufferRef& target,
                  std::mt19937_64& rng) {
  const StructuredInit& s = init.structured;
  auto page = eval(s.page, sizes, "page");
  auto pool = eval(s.pool, sizes, "pool");
  auto width = eval(input.shape.back(), sizes, "the table's width");
  auto lengths = named_integers(device, inputs, s.lengths);
  if (auto held = all_hold(page, pool, width, lengths); !held) return held;
  int64_t rows = target.elements / std::max<int64_t>(1, *width);
  if (int64_t(lengths->size()) != rows)
    return make_error("pages: " + std::to_string(rows) + " rows but " +
                      std::to_string(lengths->size()) + " lengths");
  std::vector<int64_t> order(static_cast<size_t>(*pool));
  std::vector<int64_t> table(static_cast<size_t>(target.elements), -1);
  std::vector<char> used(size_t(*pool), 0);
  size_t next = order.size();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t len = std::max<int64_t>(0, (*lengths)[size_t(r)]);
    int64_t pages = (len + *page - 1) / *page;
    if (pages > *width)
      return make_error("pages: " + s.lengths + "[" + std::to_string(r) +
                        "] = " + std::to_string(len) + " needs " + std::to_string(pages) +
                        " pages, the table has " + std::to_string(*width));
    for (int64_t j = 0; j < pages; ++j) {
      if (next == order.size()) {
        std::iota(order.begin(), order.end(), int64_t(0));
        std::shuffle(order.begin(), order.end(), rng);
        next = 0;
      }
      int64_t p = order[next++];
      table[size_t(r * *width + j)] = p;
      used[size_t(p)] = 1;
    }
  }
  std::vector<int64_t> unused;
  for (int64_t p = 0; p < *pool; ++p)
    if (!used[size_t(p)]) unused.push_back(p);
  for (auto& entry : table) {
    if (entry >= 0) continue;
    if (s.pad != "unused")
      entry = std::stoll(s.pad);
    else
      entry = unused.empty() ? int64_t(rng() % uint64_t(*pool)) : unused[rng() % unused.size()];
  }
  return write_integers(device, target, table);
}

// NaN bytes over every slot of the pool that no row reads (runs of adjacent slots merged).
Status plant_stale(Device& device, const ShapeBinding& sizes, const BufferMap& inputs,
                   const InitSpec& init, const BufferRef& target) {
  const StaleSlots& s = init.structured.stale;
  auto page = eval(s.page, sizes, "stale.page");
  auto slot = eval(s.slot, sizes, "stale.slot");
  auto table = named_integers(device, inputs, s.table);
  auto lengths = named_integers(device, inputs, s.lengths);
  if (auto held = all_hold(page, slot, table, lengths); !held) return held;
  int64_t slots = target.elements / *slot;
  int64_t pages = slots / *page;
  int64_t rows = int64_t(lengths->size());
  int64_t width = rows > 0 ? int64_t(table->size()) / rows : 0;
  std::vector<char> read(size_t(slots), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t len = std::min((*lengths)[size_t(r)], width * *page);
    for (int64_t j = 0; j < len; ++j) {
      int64_t p = (*table)[size_t(r * width + j / *page)];
      if (p >= 0 && p < pages) read[size_t(p * *page + j % *page)] = 1;
    }
  }
  const CudaDriver& d = device.driver();
  CudaFailure failure;
  uint64_t slot_bytes = uint64_t(*slot) * dtype_size(target.dtype);
  for (int64_t i = 0; i < slots;) {
    if (read[size_t(i)]) {
      ++i;
      continue;
    }
    int64_t end = i;
    while (end < slots && !read[size_t(end)]) ++end;
    if (!device.check(d.cuMemsetD8Async(target.ptr + uint64_t(i) * slot_bytes, kNaNBytes,
                                        uint64_t(end - i) * slot_bytes, device.stream()),
                      "cuMemsetD8Async", &failure))
      return make_error(failure.message);
    i = end;
  }
  return ok_status();
}

// Hot columns just above every other value of their row, cold ones just below: every row picks
// the hot experts first and never a cold one (while top_k <= experts - cold), and the planted
// values still vary by row, so the routing weights do too.
Status plant_routing(Device& device, const ShapeBinding& sizes, const InitSpec& init,
                     const BufferRef& target, std::mt19937_64& rng) {
  const RoutingSkew& r = init.structured.routing;
  auto experts = eval(r.experts, sizes, "routing.experts");
  auto hot = eval(r.hot, sizes, "routing.hot");
  auto cold = eval(r.cold, sizes, "routing.cold");
  if (auto held = all_hold(experts, hot, cold); !held) return held;
  if (*hot + *cold > *experts || *experts < 1) return make_error("routing: hot + cold > experts");
  if (*hot + *cold == 0) return ok_status();
  std::vector<float> values(size_t(target.elements));
  if (auto s = copy_to_host(device, values.data(), target.ptr, target.bytes()); !s) return s;
  std::vector<int64_t> columns(static_cast<size_t>(*experts));
  std::iota(columns.begin(), columns.end(), int64_t(0));
  std::shuffle(columns.begin(), columns.end(), rng);
  std::vector<int> role(static_cast<size_t>(*experts), 0);  // 1 hot, -1 cold
  for (int64_t i = 0; i < *hot + *cold; ++i) role[size_t(columns[size_t(i)])] = i < *hot ? 1 : -1;
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int64_t start = 0; start + *experts <= target.elements; start += *experts) {
    float* row = values.data() + start;
    float lo = 0, hi = 0;
    bool any = false;
    for (int64_t e = 0; e < *experts; ++e) {
      if (role[size_t(e)] != 0) continue;
      lo = any ? std::min(lo, row[e]) : row[e];
      hi = any ? std::max(hi, row[e]) : row[e];
      any = true;
    }
    float span = std::max(hi - lo, 1.0f);
    for (int64_t e = 0; e < *experts; ++e) {
      float step = span * (0.05f + 0.25f * unit(rng)) + 1e-3f * span;
      if (role[size_t(e)] == 1) row[e] = hi + step;
      if (role[size_t(e)] == -1) row[e] = lo - step;
    }
  }
  return copy_to_device(device, target.ptr, values.data(), target.bytes());
}

}  // namespace

bool needs_structured_fill(const InitSpec& init) { return init.structured.any(); }

Status fill_structured(Device& device, const TaskSpec& task, const ShapeBinding& sizes,
                       const BufferMap& inputs, const TensorSpec& input, const InitSpec& init,
                       const BufferRef& target, uint64_t seed) {
  if (target.elements == 0) return ok_status();
  std::mt19937_64 rng(seed ^ 0x6a09e667f3bcc909ULL);
  Status done = ok_status();
  if (init.dist == "permutation")
    done = fill_permutation(device, task, sizes, input, init, target, rng);
  else if (init.dist == "pages")
    done = fill_pages(device, sizes, inputs, input, init, target, rng);
  if (done && !init.structured.edges.empty()) done = plant_edges(device, init, sizes, target, rng);
  if (done && !init.structured.stale.empty())
    done = plant_stale(device, sizes, inputs, init, target);
  if (done && !init.structured.routing.empty())
    done = plant_routing(device, sizes, init, target, rng);
  return done;
}

}  // namespace kopt::worker
