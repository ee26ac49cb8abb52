#include "sandbox/device_code_rules.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "sandbox/cuda_tokens.h"
#include "sandbox/device_code_scope.h"

namespace kopt {

namespace {

using Kind = CudaToken::Kind;

// Names a compiler defines differently for NVRTC and for nvcc's host pass: refused anywhere.
const std::set<std::string> kCompilerDependent = {"__CUDACC_RTC__", "__NVCC__", "__CUDA_ARCH__",
                                                  "__CUDACC__", "__CUDA_ARCH_LIST__"};
// Spellings that build names, pragmas or storage the rules cannot follow.
const std::map<std::string, std::string> kRefusedNames = {
    {"__host__", "__host__ marks host code"},
    {"_Pragma", "_Pragma is refused (it can issue any pragma)"},
    {"__pragma", "__pragma is refused"},
    {"__declspec", "__declspec is refused"},
    // The clock of the compile: a kernel verified today and exported (or recompiled) tomorrow
    // would not be the same kernel. __FILE__, __LINE__ and __COUNTER__ stay: every compile
    // names the program alike (sandbox/compiler.cc), so the same text expands alike.
    {"__DATE__",
     "__DATE__ is refused: it changes with the day of the compile, so the kernel "
     "that runs would not be the kernel that was verified"},
    {"__TIME__",
     "__TIME__ is refused: it changes with the time of the compile, so the kernel "
     "that runs would not be the kernel that was verified"},
    {"__TIMESTAMP__",
     "__TIMESTAMP__ is refused: it changes with the time of the compile, so "
     "the kernel that runs would not be the kernel that was verified"},
};
// Attributes a kernel may carry; constructor, destructor, section, alias, ifunc, init_priority
// and the rest of the host-facing ones are refused.
const std::set<std::string> kAllowedAttributes = {
    "aligned",     "always_inline", "noinline", "unused",      "maybe_unused", "noreturn",
    "nodiscard",   "likely",        "unlikely", "fallthrough", "deprecated",   "const",
    "pure",        "hot",           "cold",     "flatten",     "may_alias",    "packed",
    "vector_size", "nonnull",       "restrict", "gnu",         "nv",           "clang"};
const std::set<std::string> kAllowedPragmas = {
    "unroll",          "nounroll",        "once",          "nv_diag_suppress",
    "nv_diag_default", "nv_diag_warning", "nv_diag_error", "nv_diag_once",
    "diag_suppress",   "diag_default",    "diag_warning",  "nv_diagnostic"};
// Keywords the declaration rules read: a macro of that name would change what they see.
const std::set<std::string> kProtectedKeywords = {
    "static",   "inline", "constexpr",    "consteval", "constinit", "extern",  "struct",
    "class",    "union",  "enum",         "namespace", "template",  "typedef", "using",
    "operator", "asm",    "thread_local", "const",     "defined",   "true",    "false"};

bool is_reserved(const std::string& name) {
  return name.size() >= 2 && name[0] == '_' &&
         (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
}

std::string attribute_name(std::string name) {
  if (name.size() > 4 && name.starts_with("__") && name.ends_with("__"))
    name = name.substr(2, name.size() - 4);
  return name;
}

struct Directive {
  size_t begin = 0;  // the '#'
  size_t end = 0;    // one past its last token
  std::string name;  // "define", "if", ...; "" for the null directive
};

class DeviceCodeRules {
 public:
  DeviceCodeRules(const std::vector<CudaToken>& tokens, const std::string& origin,
                  const std::set<std::string>& defined_outside)
      : t_(tokens), origin_(origin), known_(defined_outside) {}

  Status run() {
    for (const auto& name : known_) {
      if (is_reserved(name) || kProtectedKeywords.count(name))
        return make_error(origin_ + ": device code only: the plan defines '" + name +
                          "', a reserved name or keyword");
    }
    if (Status s = check_names(); !s) return s;
    std::vector<CodeItem> code;
    for (size_t i = 0; i < t_.size();) {
      if (t_[i].text == "#" && t_[i].starts_line) {
        Directive d = directive_at(i);
        if (Status s = check_directive(d, code); !s) return s;
        i = d.end;
        continue;
      }
      if (t_[i].text == "#" || t_[i].text == "##")
        return error(t_[i].line, "'" + t_[i].text + "' outside a preprocessor directive");
      code.push_back({&t_[i], t_[i].line});
      ++i;
    }
    auto facts = macro_facts(code);
    if (!facts) return make_error(facts.error());
    return check_declarations(code, origin_, *facts);
  }

 private:
  Error error(int line, const std::string& what) const {
    return make_error(origin_ + ":" + std::to_string(line) + ": device code only: " + what);
  }

  // Names refused wherever they appear, directives and macro bodies included: with ## refused,
  // a macro can only move tokens that are written somewhere in the file.
  Status check_names() const {
    for (size_t i = 0; i < t_.size(); ++i) {
      const CudaToken& tok = t_[i];
      if (tok.kind == Kind::kIdentifier) {
        if (kCompilerDependent.count(tok.text))
          return error(tok.line, "'" + tok.text +
                                     "' differs between NVRTC and a host compiler; a kernel file "
                                     "must mean the same to both");
        if (auto r = kRefusedNames.find(tok.text); r != kRefusedNames.end())
          return error(tok.line, r->second);
        if (tok.text == "__attribute__" || tok.text == "__attribute") {
          if (Status s = check_attribute_names(i + 1, 2); !s) return s;
        }
      } else if (tok.text == "[" && i + 1 < t_.size() && t_[i + 1].text == "[") {
        if (Status s = check_attribute_names(i, 2); !s) return s;
      }
    }
    return ok_status();
  }

  // Identifiers at `name_depth` inside the bracket group opening at `open` are attribute names.
  Status check_attribute_names(size_t open, int name_depth) const {
    int depth = 0;
    for (size_t i = open; i < t_.size(); ++i) {
      const std::string& x = t_[i].text;
      if (x == "(" || x == "[") ++depth;
      if (x == ")" || x == "]") {
        if (--depth <= 0) return ok_status();
      }
      if (depth == name_depth && t_[i].kind == Kind::kIdentifier &&
          !kAllowedAttributes.count(attribute_name(x)))
        return error(t_[i].line, "attribute '" + x + "' is refused (only " +
                                     "aligned, noinline, unused and the like are allowed)");
      if (depth == 0) return ok_status();
    }
    return ok_status();
  }

  Directive directive_at(size_t hash) const {
    Directive d;
    d.begin = hash;
    d.end = hash + 1;
    while (d.end < t_.size() && !t_[d.end].starts_line) ++d.end;
    if (hash + 1 < d.end) d.name = t_[hash + 1].text;
    return d;
  }

  Status check_directive(const Directive& d, std::vector<CodeItem>& code) {
    int line = t_[d.begin].line;
    const std::string& n = d.name;
    if (n.empty() || n == "include" || n == "line" || n == "error" || n == "warning" || n == "else")
      return n == "else" ? (code.push_back({nullptr, line}), ok_status()) : ok_status();
    if (n == "define" || n == "undef") return define(d, line);
    if (n == "pragma") {
      if (d.begin + 2 < d.end && kAllowedPragmas.count(t_[d.begin + 2].text)) return ok_status();
      return error(line, "#pragma " + (d.begin + 2 < d.end ? t_[d.begin + 2].text : "") +
                             " is refused (allowed: unroll, nv_diag_suppress and the like)");
    }
    if (n == "endif") {
      --conditional_depth_;
      code.push_back({nullptr, line, false, true});
      return ok_status();
    }
    bool opens = n == "if" || n == "ifdef" || n == "ifndef";
    if (!opens && n != "elif" && n != "elifdef" && n != "elifndef")
      return error(line, "#" + n + " is not allowed in a kernel file");
    for (size_t i = d.begin + 2; i < d.end; ++i) {
      if (t_[i].kind != Kind::kIdentifier) continue;
      const std::string& id = t_[i].text;
      if (id == "defined" || id == "true" || id == "false") continue;
      if (Status s = check_known(id, line, "#" + n); !s) return s;
      if (Status s = check_expansion(id, line); !s) return s;
    }
    if (opens) ++conditional_depth_;
    code.push_back({nullptr, line, opens, false});
    return ok_status();
  }

  // A condition may test only what both compilers agree on: the plan's tunables and macros this
  // file defines or undefines outside any condition, and through them only such names.
  Status check_known(const std::string& id, int line, const std::string& directive) {
    return walk_macros(id, line, [&](const std::string& name, const auto*) -> Status {
      if (known_.count(name)) return ok_status();
      return error(line, directive + " tests '" + name +
                             "', which this file does not define before it: a condition may "
                             "test only macros the file defines outside any condition (or the "
                             "plan's tunables), since NVRTC and a host compiler predefine "
                             "different ones");
    });
  }

  // Visits `start` and every name reachable from it through macro bodies, each once, with its
  // definitions (nullptr for a name that is no macro); stops at the first visit that fails. The
  // walk has a budget: a chain of many macros costs a refusal, not minutes.
  template <typename Visit>
  Status walk_macros(const std::string& start, int line, Visit visit) {
    std::vector<std::string> todo = {start};
    std::set<std::string> seen;
    while (!todo.empty()) {
      std::string name = todo.back();
      todo.pop_back();
      if (!seen.insert(name).second) continue;
      if (++work_ > kWorkBudget) return error(line, "macros nest too deep for the gate to follow");
      auto m = definitions_.find(name);
      const auto* definitions = m == definitions_.end() ? nullptr : &m->second;
      if (Status s = visit(name, definitions); !s) return s;
      if (!definitions) continue;
      for (const auto& def : *definitions)
        todo.insert(todo.end(), def.identifiers.begin(), def.identifiers.end());
    }
    return ok_status();
  }

  struct Definition {
    std::set<std::string> identifiers;  // in the body, parameters left out
    std::vector<std::string> uses;      // the same, once per occurrence
    uint64_t other_tokens = 0;          // the rest of the body, parameters included
    bool has_separator = false;
  };

  // The most tokens macro `root` can expand to (any of its definitions, through other macros),
  // capped just past kExpansionCap. Iterative: a chain of thousands of macros costs no stack.
  uint64_t expansion_size(const std::string& root) {
    if (auto known = sizes_.find(root); known != sizes_.end()) return known->second;
    struct Item {
      std::string name;
      bool children_pushed;
    };
    std::vector<Item> stack = {{root, false}};
    std::set<std::string> open;  // on the path: a macro does not expand inside itself
    while (!stack.empty()) {
      if (sizes_.count(stack.back().name)) {
        stack.pop_back();
        continue;
      }
      const auto& defs = definitions_.at(stack.back().name);
      if (!stack.back().children_pushed) {
        stack.back().children_pushed = true;
        open.insert(stack.back().name);
        std::vector<Item> children;
        for (const auto& def : defs)
          for (const auto& id : def.uses)
            if (definitions_.count(id) && !sizes_.count(id) && !open.count(id))
              children.push_back({id, false});
        for (auto& child : children) stack.push_back(std::move(child));
        continue;
      }
      uint64_t largest = 1;
      for (const auto& def : defs) {
        uint64_t total = def.other_tokens;
        for (const auto& id : def.uses) {
          auto size = sizes_.find(id);
          total += size != sizes_.end() ? size->second : 1;
          if (total > kExpansionCap) break;
        }
        largest = std::max(largest, std::min<uint64_t>(total, kExpansionCap + 1));
      }
      sizes_[stack.back().name] = largest;
      open.erase(stack.back().name);
      stack.pop_back();
    }
    return sizes_.at(root);
  }

  Status check_expansion(const std::string& name, int line) {
    if (!definitions_.count(name) || expansion_size(name) <= kExpansionCap) return ok_status();
    return error(line, "macro '" + name + "' expands to more than " +
                           std::to_string(kExpansionCap) +
                           " tokens (a macro bomb): the compiler would not finish");
  }

  Status define(const Directive& d, int line) {
    if (d.begin + 2 >= d.end || t_[d.begin + 2].kind != Kind::kIdentifier)
      return ok_status();  // the compiler reports the malformed directive
    const CudaToken& name = t_[d.begin + 2];
    if (is_reserved(name.text) || kProtectedKeywords.count(name.text))
      return error(line, "#" + d.name + " of '" + name.text + "', a reserved name or keyword");
    if (conditional_depth_ == 0) known_.insert(name.text);
    if (d.name == "undef") return ok_status();
    size_t body = d.begin + 3;
    std::set<std::string> params;
    if (body < d.end && t_[body].text == "(" && !t_[body].space_before) {
      for (++body; body < d.end && t_[body].text != ")"; ++body)
        if (t_[body].kind == Kind::kIdentifier) params.insert(t_[body].text);
      ++body;
    }
    Definition def;
    for (size_t i = body; i < d.end; ++i) {
      const std::string& x = t_[i].text;
      if (x == "##")
        return error(line, "token pasting ('##') is refused: it builds names the gate cannot see");
      if (x == "{" || x == "}" || x == ";") def.has_separator = true;
      if (t_[i].kind == Kind::kIdentifier && !params.count(x) && x != "__VA_ARGS__") {
        def.identifiers.insert(x);
        def.uses.push_back(x);
      } else {
        ++def.other_tokens;
      }
    }
    definitions_[name.text].push_back(std::move(def));
    return ok_status();
  }

  // Each macro's identifiers through other macros (every definition counts), for the macros the
  // code uses. The walk has a budget: a chain of many macros costs a refusal, not minutes.
  Result<std::map<std::string, MacroFacts>> macro_facts(const std::vector<CodeItem>& code) {
    std::map<std::string, MacroFacts> facts;
    for (const auto& item : code) {
      if (!item.token || item.token->kind != Kind::kIdentifier) continue;
      const std::string& name = item.token->text;
      if (!definitions_.count(name) || facts.count(name)) continue;
      if (Status s = check_expansion(name, item.line); !s) return make_error(s.error());
      MacroFacts& f = facts[name];
      auto walked = walk_macros(name, item.line, [&](const std::string&, const auto* definitions) {
        if (!definitions) return ok_status();
        for (const auto& def : *definitions) {
          f.has_separator = f.has_separator || def.has_separator;
          f.identifiers.insert(def.identifiers.begin(), def.identifiers.end());
        }
        return ok_status();
      });
      if (!walked) return make_error(walked.error());
    }
    return facts;
  }

  const std::vector<CudaToken>& t_;
  const std::string& origin_;
  std::set<std::string> known_;
  std::map<std::string, std::vector<Definition>> definitions_;
  int conditional_depth_ = 0;
  static constexpr int64_t kWorkBudget = 2'000'000;    // macro look-ups for the whole file
  static constexpr uint64_t kExpansionCap = 1u << 20;  // tokens one macro use may become
  int64_t work_ = 0;
  std::map<std::string, uint64_t> sizes_;
};

}  // namespace

Status check_device_code_only(std::string_view source, const std::string& origin,
                              const std::set<std::string>& defined_outside) {
  auto tokens = tokenize_cuda(source, origin);
  if (!tokens) return make_error(tokens.error());
  return DeviceCodeRules(*tokens, origin, defined_outside).run();
}

}  // namespace kopt
