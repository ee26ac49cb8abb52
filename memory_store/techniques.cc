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
      {"online_softmax", {"online"}, {"running max", "running sum", "single-pass softmax"}},
      {"shared_tiling", {"tile", "tiling", "smem", "shared_mem"}, {"shared memory", "__shared__"}},
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
       {"__expf", "expf_fast", "__fdividef", "rsqrtf", "exp2f", "__frcp", "__logf"},
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

// Runs of letters, digits, '_', '.', ':' and '-', without leading '_' and trailing '.'/'-'.
std::set<std::string> tokens_of(const std::string& text) {
  std::set<std::string> tokens;
  std::string token;
  auto flush = [&] {
    size_t first = token.find_first_not_of('_');
    while (!token.empty() && (token.back() == '.' || token.back() == '-')) token.pop_back();
    if (first != std::string::npos && first < token.size()) tokens.insert(token.substr(first));
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

bool mentions(const Technique& t, const std::string& text, const std::set<std::string>& tokens) {
  for (const auto& phrase : t.phrases) {
    if (text.find(phrase) != std::string::npos) return true;
  }
  for (const auto& stem : t.stems) {
    std::string bare = stem.substr(std::min(stem.find_first_not_of('_'), stem.size()));
    for (auto it = tokens.lower_bound(bare); it != tokens.end(); ++it) {
      if (it->compare(0, bare.size(), bare) != 0) break;
      return true;
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

std::vector<std::string> pair_techniques(std::string_view lesson, std::string_view slow_terms,
                                         std::string_view fast_terms) {
  std::set<std::string> slow = tokens_of(lower(slow_terms));
  std::string added;
  for (const auto& term : tokens_of(lower(fast_terms))) {
    if (!slow.count(term)) added += term + " ";
  }
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

}  // namespace kopt::memory
