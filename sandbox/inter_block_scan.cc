#include "sandbox/inter_block_scan.h"

#include <array>
#include <cctype>
#include <set>

#include "sandbox/cuda_tokens.h"

namespace kopt {
namespace {

using Kind = CudaToken::Kind;
using Tokens = std::vector<CudaToken>;

bool is_punct(const CudaToken& t, std::string_view text) {
  return t.kind == Kind::kPunct && t.text == text;
}

// Words that may lead an atomic's first argument before the name it works on (a cast).
bool is_type_word(const std::string& word) {
  static const std::set<std::string> kWords = {
      "unsigned", "signed", "int",  "long",   "short", "char",          "float",
      "double",   "const",  "bool", "__half", "void",  "__nv_bfloat16", "volatile"};
  return kWords.count(word) > 0 || (word.size() > 2 && word.ends_with("_t"));
}

// Names declared __shared__, and pointers declared from them ("float* p = s + k;"): the
// accesses through them stay within a block.
std::set<std::string> shared_names(const Tokens& t) {
  std::set<std::string> names;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].text != "__shared__") continue;
    std::string declared;  // the last identifier before the declarator ends
    for (size_t j = i + 1; j < t.size(); ++j) {
      if (t[j].kind == Kind::kIdentifier) declared = t[j].text;
      if (is_punct(t[j], "[") || is_punct(t[j], ";") || is_punct(t[j], "=") || is_punct(t[j], ","))
        break;
    }
    if (!declared.empty()) names.insert(declared);
  }
  for (size_t i = 2; i < t.size(); ++i) {
    if (!is_punct(t[i], "=") || t[i - 1].kind != Kind::kIdentifier || !is_punct(t[i - 2], "*"))
      continue;
    for (size_t j = i + 1; j < t.size() && !is_punct(t[j], ";") && !is_punct(t[j], ","); ++j)
      if (t[j].kind == Kind::kIdentifier && names.count(t[j].text)) {
        names.insert(t[i - 1].text);
        break;
      }
  }
  return names;
}

// The tokens from `begin` to the end of its expression or declarator: the next ';', '{', or a
// ',' or ')' outside the parentheses and brackets opened within it.
size_t extent_end(const Tokens& t, size_t begin) {
  int depth = 0;
  for (size_t j = begin; j < t.size(); ++j) {
    if (is_punct(t[j], "(") || is_punct(t[j], "[")) ++depth;
    if (is_punct(t[j], ";") || is_punct(t[j], "{")) return j;
    if ((is_punct(t[j], ")") || is_punct(t[j], "]")) && depth-- == 0) return j;
    if (is_punct(t[j], ",") && depth == 0) return j;
  }
  return t.size();
}

// Whether an atomic call at `i` (its name) works on a shared name: the first name of its first
// argument that is not part of a cast.
bool atomic_on_shared(const Tokens& t, size_t i, const std::set<std::string>& shared) {
  if (i + 1 >= t.size() || !is_punct(t[i + 1], "(")) return false;
  size_t end = extent_end(t, i + 2);
  for (size_t j = i + 2; j < end; ++j)
    if (t[j].kind == Kind::kIdentifier && !is_type_word(t[j].text))
      return shared.count(t[j].text) > 0;
  return false;
}

// A `volatile` access or declaration whose extent names shared memory (a warp reduction over
// "volatile float* s = sdata") is within a block; `asm volatile` is no access at all.
bool volatile_communicates(const Tokens& t, size_t i, const std::set<std::string>& shared) {
  if (i > 0 && (t[i - 1].text == "asm" || t[i - 1].text == "__asm__" || t[i - 1].text == "__asm"))
    return false;
  size_t end = extent_end(t, i + 1);
  for (size_t j = i + 1; j < end; ++j)
    if (t[j].text == "__shared__" || (t[j].kind == Kind::kIdentifier && shared.count(t[j].text)))
      return false;
  return true;
}

// The PTX of an asm statement that orders or shares global memory between blocks: an acquire
// or release access, a volatile or relaxed one, a fence past the block, an atomic or reduction
// that is not on shared memory. "" when none.
std::string ptx_sign(const std::string& text) {
  static const std::array<const char*, 10> kOrdering = {
      "ld.acquire", "st.release", "ld.volatile", "st.volatile", "ld.relaxed",
      "st.relaxed", "membar.gl",  "membar.sys",  "fence.sc",    "fence.acq_rel"};
  for (const char* m : kOrdering)
    if (text.find(m) != std::string::npos) return m;
  for (const char* m : {"atom.", "red."}) {
    for (size_t at = text.find(m); at != std::string::npos; at = text.find(m, at + 1)) {
      // The mnemonic itself, not the end of another word ("shared." holds "red.").
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '.'))
        continue;
      size_t stop = text.find_first_of(" \t;", at);
      if (text.substr(at, stop - at).find(".shared") == std::string::npos)
        return std::string(m) + "global";
    }
  }
  return "";
}

// The sign at token `i`, or "".
std::string sign_at(const Tokens& t, size_t i, const std::set<std::string>& shared, bool in_asm) {
  const std::string& w = t[i].text;
  if (t[i].kind == Kind::kString) {
    std::string ptx = in_asm ? ptx_sign(w) : "";
    return ptx.empty() ? "" : "asm " + ptx;
  }
  if (t[i].kind != Kind::kIdentifier) return "";
  if (w == "__threadfence" || w == "__threadfence_system" || w == "this_grid" ||
      w == "grid_group" || w == "__ldcv" || w == "__ldcg" || w == "__stcg" || w == "__stwt")
    return w;
  if (w == "volatile") return volatile_communicates(t, i, shared) ? w : "";
  bool scoped = i > 0 && is_punct(t[i - 1], "::");
  if (scoped &&
      (w == "atomic" || w == "atomic_ref" || w == "atomic_flag" || w == "atomic_thread_fence"))
    return "cuda::" + w;
  if (w.starts_with("__atomic_") || w.starts_with("__nv_atomic_")) return w;
  if (w.starts_with("atomic") && !w.ends_with("_block") && !atomic_on_shared(t, i, shared))
    return i + 1 < t.size() && is_punct(t[i + 1], "(") ? w : "";
  return "";
}

}  // namespace

std::vector<InterBlockSign> inter_block_signs(std::string_view source) {
  auto tokens = tokenize_cuda(source, "candidate");
  if (!tokens) return {{"a source the scan cannot read", 0}};
  const Tokens& t = *tokens;
  std::set<std::string> shared = shared_names(t);
  std::vector<InterBlockSign> signs;
  size_t asm_end = 0;  // tokens before it are an asm statement's operands
  for (size_t i = 0; i < t.size() && signs.size() < kMaxInterBlockSigns; ++i) {
    if (t[i].text == "asm" || t[i].text == "__asm__" || t[i].text == "__asm") {
      size_t open = i + 1;
      while (open < t.size() && !is_punct(t[open], "(") && !is_punct(t[open], ";")) ++open;
      if (open < t.size() && is_punct(t[open], "(")) asm_end = extent_end(t, open + 1);
    }
    std::string what = sign_at(t, i, shared, i < asm_end);
    if (!what.empty()) signs.push_back({what, t[i].line});
  }
  return signs;
}

std::string describe_inter_block_signs(const std::vector<InterBlockSign>& signs) {
  std::string text;
  for (const auto& s : signs)
    text += (text.empty() ? "" : ", ") + s.what +
            (s.line > 0 ? " (line " + std::to_string(s.line) + ")" : "");
  return text;
}

}  // namespace kopt
