#include "memory_store/techniques.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kopt::memory {

namespace {

struct Technique {
  std::string name;
  std::vector<std::string> stems;    // a token that starts with one (leading '_' ignored)
  std::vector<std::string> phrases;  // a substring of the lower-cased text
};

const std::vector<Technique>& techniques() {
  static const std::vector<Technique> kTechniques = {
      {"vector_loads",
       {"float4", "float2", "int4", "uint4", "int2", "uint2", "double2", "vectoriz", "vec4",
        "ld.global.v4", "ld.global.nc.v4"},
       {"vector load", "vector store", "vector width", "128-bit load", "wide load"}},
      {"warp_shuffle", {"shfl", "shuffle"}, {"warp reduction", "warp-level reduc"}},
      // "_online" names a kernel like softmax_online; a bare "online" phrase would match
      // "nonlinear".
      {"online_softmax",
       {"online"},
       {"running max", "running sum", "single-pass softmax", "_online"}},
      // Not every __shared__ array is a tile: a block reduction's scratch is one too (the label
      // audit of bench/results/cpu-devbox-2026-11-27-memory-measures found 17 such).
      {"shared_tiling", {"tile", "tiling", "smem", "shared_mem"}, {"shared memory"}},
      {"smem_padding", {"padding", "padded", "swizzl"}, {"bank conflict", "bank-conflict"}},
      {"cp_async", {"cp.async", "cp_async", "memcpy_async", "pipeline_", "cuda::pipeline"}, {}},
      {"tensor_cores",
       {"wmma", "mma_sync", "mma.sync", "wgmma", "ldmatrix", "mma"},
       {"tensor core", "tensor-core"}},
      {"split_k", {"split_k", "splitk", "split-k"}, {"split k"}},
      {"fusion", {"fus"}, {"single pass", "one pass", "single kernel", "one kernel"}},
      {"register_resident",
       {"register-resident"},
       {"in registers", "register resident", "register-held", "held in register",
        "kept in register"}},
      {"unrolling", {"unroll"}, {}},
      {"launch_config",
       {"__launch_bounds__", "launch_bounds", "occupancy", "grid-stride"},
       {"block size", "threads per block", "grid stride", "blocks per sm"}},
      {"fast_math",
       // rsqrtf is the standard reciprocal square root (2 ulp), not a fast-math trade.
       {"__expf", "expf_fast", "__fdividef", "exp2f", "__frcp", "__logf"},
       {"fast math", "fast-math", "fast exp", "approximate exp"}},
      {"packed_half", {"half2", "__hadd2", "__hmul2", "bfloat162", "bf162", "__hfma2"}, {}},
  };
  return kTechniques;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Runs of letters, digits, '_', '.', ':' and '-', without trailing '.'/'-'; each with its
// leading underscores and, where it has some, also without them.
std::set<std::string> tokens_of(const std::string& text) {
  std::set<std::string> tokens;
  std::string token;
  auto flush = [&] {
    while (!token.empty() && (token.back() == '.' || token.back() == '-')) token.pop_back();
    size_t first = token.find_first_not_of('_');
    if (first != std::string::npos) {
      tokens.insert(token);
      if (first > 0) tokens.insert(token.substr(first));
    }
    token.clear();
  };
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '_' || c == '.' || c == ':' || c == '-') {
      token += c;
    } else {
      flush();
    }
  }
  flush();
  return tokens;
}

// Whether `token` starts with `stem` at a word boundary: a stem ending in a digit ("float2",
// "half2") must end where the name ends or a separator follows, so "__float2bfloat16" and
// "__half2float" (conversions) are not vector or packed types; an alphabetic stem is a prefix
// ("vectoriz" names "vectorized").
bool starts_with_stem(const std::string& token, const std::string& stem) {
  if (token.compare(0, stem.size(), stem) != 0) return false;
  if (token.size() == stem.size() || !std::isdigit(static_cast<unsigned char>(stem.back()))) {
    return true;
  }
  return !std::isalnum(static_cast<unsigned char>(token[stem.size()]));
}

bool mentions(const Technique& t, const std::string& text, const std::set<std::string>& tokens) {
  for (const auto& phrase : t.phrases) {
    if (text.find(phrase) != std::string::npos) return true;
  }
  for (const auto& stem : t.stems) {
    // A stem written with underscores ("__expf") names the intrinsic, not "expf".
    for (auto it = tokens.lower_bound(stem); it != tokens.end(); ++it) {
      if (it->compare(0, stem.size(), stem) != 0) break;
      if (starts_with_stem(*it, stem)) return true;
    }
  }
  return false;
}

}  // namespace

const std::vector<std::string>& technique_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& t : techniques()) names.push_back(t.name);
    return names;
  }();
  return kNames;
}

std::vector<std::string> techniques_in(std::string_view text) {
  std::string low = lower(text);
  std::set<std::string> tokens = tokens_of(low);
  std::vector<std::string> found;
  for (const auto& t : techniques()) {
    if (mentions(t, low, tokens)) found.push_back(t.name);
  }
  return found;
}

namespace {

// The labels of a lesson and of the tokens a change added, in the order of technique_names().
std::vector<std::string> lesson_and_added(std::string_view lesson, const std::string& added) {
  std::vector<std::string> from_lesson = techniques_in(lesson);
  std::vector<std::string> from_code = techniques_in(added);
  std::vector<std::string> found;
  for (const auto& name : technique_names()) {
    bool in = std::count(from_lesson.begin(), from_lesson.end(), name) ||
              std::count(from_code.begin(), from_code.end(), name);
    if (in) found.push_back(name);
  }
  return found;
}

// The tokens of `fast` that `slow` lacks, space-separated.
std::string added_tokens(std::string_view slow, std::string_view fast) {
  std::set<std::string> before = tokens_of(lower(slow));
  std::string added;
  for (const auto& token : tokens_of(lower(fast))) {
    if (!before.count(token)) added += token + " ";
  }
  return added;
}

}  // namespace

std::vector<std::string> pair_techniques(std::string_view lesson, std::string_view slow_terms,
                                         std::string_view fast_terms) {
  return lesson_and_added(lesson, added_tokens(slow_terms, fast_terms));
}

std::string without_comments(std::string_view source) {
  std::string out(source);
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '"') {  // a string literal: skip it whole
      for (++i; i < out.size() && out[i] != '"'; ++i) i += out[i] == '\\';
      continue;
    }
    if (out[i] == '/' && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i) out[i] = out[i] == '\n' ? '\n' : ' ';
      --i;
    }
  }
  return out;
}

std::vector<std::string> techniques_in_code(std::string_view source) {
  return techniques_in(without_comments(source));
}

std::vector<std::string> pair_techniques_from_code(std::string_view lesson,
                                                   std::string_view slow_source,
                                                   std::string_view fast_source) {
  return lesson_and_added(
      lesson, added_tokens(without_comments(slow_source), without_comments(fast_source)));
}

}  // namespace kopt::memory
