#include "sandbox/device_code_scope.h"

#include <algorithm>

namespace kopt {

namespace {

enum class FrameKind { kNamespace, kClass, kBody };

// One declaration at namespace or class scope: its tokens at that level (a nested body becomes
// one "{}" marker), so "struct S { ... } s;" reads as `struct S {} s ;`.
struct Decl {
  std::vector<const CudaToken*> tokens;
  int line = 0;
  int depth = 0;  // ( [ and braces inside parentheses
  int bodies = 0;
  bool function_body = false;
  bool class_body = false;
  void clear() { *this = Decl{}; }
};

struct Frame {
  FrameKind kind = FrameKind::kNamespace;
  Decl decl;               // for namespace and class frames
  int depth = 0;           // ( and [ inside a body frame
  bool ends_decl = false;  // a function body: its closing brace ends the declaration
};

Frame frame_of(FrameKind kind, bool ends_decl = false) {
  Frame frame;
  frame.kind = kind;
  frame.ends_decl = ends_decl;
  return frame;
}

const CudaToken kBodyMarker{CudaToken::Kind::kPunct, "{}", 0, false, false};

bool is(const CudaToken* t, std::string_view text) { return t && t->text == text; }
bool is_identifier(const CudaToken* t) { return t && t->kind == CudaToken::Kind::kIdentifier; }

class DeclarationChecker {
 public:
  DeclarationChecker(const std::string& origin, const std::map<std::string, MacroFacts>& macros)
      : origin_(origin), macros_(macros) {}

  Status run(const std::vector<CodeItem>& code) {
    frames_.push_back(Frame{});
    for (const auto& item : code) {
      Status s = item.token ? on_token(*item.token) : on_condition(item);
      if (!s) return s;
    }
    Frame& last = frames_.back();
    if (last.kind != FrameKind::kBody && !last.decl.tokens.empty())
      return classify(last.kind, last.decl);
    return ok_status();
  }

 private:
  Error error(int line, const std::string& what) const {
    return make_error(origin_ + ":" + std::to_string(line) + ": device code only: " + what);
  }

  // A branch may hold whole declarations, or balanced code inside a body: then no choice of
  // branch moves a declaration's start or a body's end, and checking every branch is enough.
  Status on_condition(const CodeItem& item) {
    Frame& f = frames_.back();
    int depth = f.kind == FrameKind::kBody ? f.depth : f.decl.depth;
    if (f.kind != FrameKind::kBody && !f.decl.tokens.empty())
      return error(item.line, "a preprocessor condition inside a declaration (begun on line " +
                                  std::to_string(f.decl.line) +
                                  "): put whole declarations in each branch");
    if (item.opens_group) {
      groups_.push_back({frames_.size(), depth});
      return ok_status();
    }
    if (groups_.empty()) return ok_status();  // a stray #else/#endif: the compiler says so
    if (groups_.back().first != frames_.size() || groups_.back().second != depth)
      return error(item.line,
                   "a preprocessor branch opens or closes a brace or parenthesis that it does "
                   "not close or open: every branch must be balanced");
    if (item.closes_group) groups_.pop_back();
    return ok_status();
  }

  Status on_token(const CudaToken& t) {
    Frame& f = frames_.back();
    if (f.kind == FrameKind::kBody) {
      if (t.text == "{") {
        frames_.push_back(frame_of(FrameKind::kBody));
      } else if (t.text == "}") {
        return close_frame();
      } else if (t.text == "(" || t.text == "[") {
        ++f.depth;
      } else if (t.text == ")" || t.text == "]") {
        --f.depth;
      }
      return ok_status();
    }
    Decl& d = f.decl;
    if (d.tokens.empty()) d.line = t.line;
    if (t.text == "(" || t.text == "[" || (d.depth > 0 && t.text == "{")) {
      ++d.depth;
    } else if ((t.text == ")" || t.text == "]" || t.text == "}") && d.depth > 0) {
      --d.depth;
    } else if (d.depth == 0 && t.text == ";") {
      d.tokens.push_back(&t);
      Status s = classify(f.kind, d);
      d.clear();
      return s;
    } else if (d.depth == 0 && t.text == "{") {
      return open_body(f);
    } else if (d.depth == 0 && t.text == "}") {
      if (!d.tokens.empty()) {
        if (Status s = classify(f.kind, d); !s) return s;
      }
      return close_frame();
    }
    d.tokens.push_back(&t);
    return ok_status();
  }

  Status close_frame() {
    if (frames_.size() == 1) return ok_status();  // a stray '}': the compiler says so
    Frame closed = std::move(frames_.back());
    frames_.pop_back();
    Frame& parent = frames_.back();
    if (closed.ends_decl) {
      Status s = classify(parent.kind, parent.decl);
      parent.decl.clear();
      return s;
    }
    return ok_status();
  }

  Status open_body(Frame& f) {
    Decl& d = f.decl;
    size_t start = skip_prefix(d.tokens);
    if (f.kind == FrameKind::kNamespace && opens_namespace(d.tokens, start)) {
      d.clear();
      frames_.push_back(frame_of(FrameKind::kNamespace));
      return ok_status();
    }
    if (d.bodies > 0)
      return error(d.line, "a declaration with a second '{' body: the first ends before line " +
                               std::to_string(d.line) + " or a macro hides its parentheses");
    ++d.bodies;
    d.tokens.push_back(&kBodyMarker);
    if (is_class_head(d.tokens, start)) {
      d.class_body = true;
      frames_.push_back(frame_of(FrameKind::kClass));
    } else if (is_function_head(d.tokens, start)) {
      d.function_body = true;
      frames_.push_back(frame_of(FrameKind::kBody, true));
    } else {
      frames_.push_back(frame_of(FrameKind::kBody));
    }
    return ok_status();
  }

  // Attributes, template headers and extern "C" in front of a declaration.
  static size_t skip_prefix(const std::vector<const CudaToken*>& t) {
    size_t i = 0;
    while (i < t.size()) {
      if (is(t[i], "[") && i + 1 < t.size() && is(t[i + 1], "[")) {
        int depth = 0;
        for (; i < t.size(); ++i) {
          if (is(t[i], "[")) ++depth;
          if (is(t[i], "]") && --depth == 0) break;
        }
        ++i;
      } else if (is(t[i], "template")) {
        ++i;
        if (i < t.size() && is(t[i], "<")) {
          int depth = 0;
          int parens = 0;  // "int N = (1 > 2)" closes no angle
          for (; i < t.size(); ++i) {
            if (is(t[i], "(")) ++parens;
            if (is(t[i], ")")) --parens;
            if (parens > 0) continue;
            if (is(t[i], "<")) ++depth;
            if (is(t[i], ">")) --depth;
            if (is(t[i], ">>")) depth -= 2;
            if (depth <= 0) break;
          }
          ++i;
        }
      } else if (is(t[i], "extern") && i + 1 < t.size() &&
                 t[i + 1]->kind == CudaToken::Kind::kString) {
        i += 2;
      } else {
        break;
      }
    }
    return i;
  }

  static bool opens_namespace(const std::vector<const CudaToken*>& t, size_t start) {
    if (start == t.size()) return start > 0 && is(t[start - 1], "\"C\"");  // extern "C" {
    if (is(t[start], "inline")) ++start;
    return start < t.size() && is(t[start], "namespace");
  }

  static bool is_class_head(const std::vector<const CudaToken*>& t, size_t start) {
    if (start >= t.size()) return false;
    if (is(t[start], "typedef")) ++start;
    if (start >= t.size()) return false;
    const std::string& first = t[start]->text;
    if (first != "struct" && first != "class" && first != "union" && first != "enum") return false;
    // "struct S* f() const {" is a function returning a struct: its head ends like one.
    const CudaToken* last = t.size() >= 2 ? t[t.size() - 2] : nullptr;  // before the marker
    static const std::set<std::string> kFunctionTail = {")",        "const", "volatile", "noexcept",
                                                        "override", "&",     "&&"};
    return !(last && kFunctionTail.count(last->text));
  }

  static bool is_function_head(const std::vector<const CudaToken*>& t, size_t start) {
    int depth = 0;
    for (size_t i = start; i < t.size(); ++i) {
      if (depth == 0 && is(t[i], "=") && !(i > 0 && is(t[i - 1], "operator"))) return false;
      if (is(t[i], "(")) {
        if (depth == 0) return true;
        ++depth;
      }
      if (is(t[i], "[")) ++depth;
      if (is(t[i], ")") || is(t[i], "]")) --depth;
    }
    return false;
  }

  // The declared name, for messages: the identifier before the first '(' '=' '[' or ';'.
  static std::string name_of(const std::vector<const CudaToken*>& t, size_t start) {
    std::string name;
    for (size_t i = start; i < t.size(); ++i) {
      if (is(t[i], "(") || is(t[i], "=") || is(t[i], "[") || is(t[i], ";") || is(t[i], "{}")) break;
      if (is_identifier(t[i])) name = t[i]->text;
    }
    return name.empty() ? "?" : name;
  }

  Status classify(FrameKind kind, const Decl& d) {
    const auto& t = d.tokens;
    size_t start = skip_prefix(t);
    if (start >= t.size() || (start + 1 == t.size() && is(t[start], ";"))) return ok_status();
    // Identifiers written at the top level of the head (what the declaration says of itself)
    // and every identifier it may expand to (what macros may add).
    std::set<std::string> literal;
    std::set<std::string> expanded;
    int depth = 0;
    for (size_t i = start; i < t.size(); ++i) {
      if (is(t[i], "(") || is(t[i], "[")) ++depth;
      if (is(t[i], ")") || is(t[i], "]")) --depth;
      if (!is_identifier(t[i])) continue;
      if (depth == 0) literal.insert(t[i]->text);
      expanded.insert(t[i]->text);
      auto m = macros_.find(t[i]->text);
      if (m == macros_.end()) continue;
      if (m->second.has_separator)
        return error(d.line, "macro '" + m->first +
                                 "' expands to '{', '}' or ';' outside a function body: "
                                 "write the declaration out");
      expanded.insert(m->second.identifiers.begin(), m->second.identifiers.end());
    }
    std::string name = name_of(t, start);
    auto has = [&](const std::set<std::string>& set, std::initializer_list<const char*> names) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return set.count(n); });
    };
    bool compile_time = has(literal, {"constexpr", "consteval"});
    if (kind == FrameKind::kClass) {
      if (!d.function_body && has(expanded, {"static"}) && has(expanded, {"inline"}) &&
          !compile_time)
        return error(d.line, "static inline data member '" + name +
                                 "': it is initialised on the host when a program starts");
      return ok_status();
    }
    const std::string& first = t[start]->text;
    if (first == "typedef" || first == "using" || first == "static_assert" || first == "namespace")
      return ok_status();
    // A class declared ahead ("struct S;", "template <typename T> struct traits;") is a type,
    // not code; "struct S s;" (two names) still declares a host variable below.
    if ((first == "struct" || first == "class" || first == "union") && !d.class_body &&
        start + 1 < t.size() && is_identifier(t[start + 1]) &&
        (start + 2 == t.size() || (start + 3 == t.size() && is(t[start + 2], ";"))))
      return ok_status();
    if (first == "asm" || first == "__asm__" || first == "__asm")
      return error(d.line, "asm outside a function is host code");
    if (d.function_body) {
      if (has(literal, {"__global__", "__device__"}) || compile_time) return ok_status();
      return error(d.line, "host function '" + name +
                               "': a kernel file holds device code only (mark it __device__ or "
                               "__global__)");
    }
    if (d.class_body) {
      auto marker = std::find(t.begin(), t.end(), &kBodyMarker);
      bool declares_variable = std::any_of(marker, t.end(), is_identifier);
      if (!declares_variable) return ok_status();
    }
    if (has(literal, {"__device__", "__constant__", "__shared__", "__managed__", "__global__"}) ||
        compile_time)
      return ok_status();
    return error(d.line, "namespace-scope declaration '" + name +
                             "' is host code: a variable must be __device__, __constant__ or "
                             "constexpr, a function __device__ or __global__");
  }

  const std::string& origin_;
  const std::map<std::string, MacroFacts>& macros_;
  std::vector<Frame> frames_;
  std::vector<std::pair<size_t, int>> groups_;  // frame count and depth at each open #if
};

}  // namespace

Status check_declarations(const std::vector<CodeItem>& code, const std::string& origin,
                          const std::map<std::string, MacroFacts>& macros) {
  return DeclarationChecker(origin, macros).run(code);
}

}  // namespace kopt
