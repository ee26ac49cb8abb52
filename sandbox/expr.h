// Integer arithmetic expressions over named sizes, used by launch plans (grid, block, shared
// memory, scratch sizes) and by the flops/bytes formulas of a task.
// Grammar: + - * / % with the usual precedence, unary minus, parentheses, integer literals,
// identifiers, and the functions ceil_div(a,b), min(a,b), max(a,b).
// Evaluation is in 64-bit integers; overflow and division by zero are errors, not UB.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/result.h"

namespace kopt {

using Bindings = std::map<std::string, int64_t>;

// Limits on untrusted text (a plan is model output): longer or deeper expressions are refused
// with an error instead of recursing without bound.
inline constexpr size_t kMaxExpressionLength = 1024;
inline constexpr int kMaxExpressionDepth = 64;  // nested parentheses, calls and unary minus

class Expr {
 public:
  // Parses `text`; the error names the column of the problem (or the limit exceeded).
  static Result<Expr> parse(const std::string& text);

  Result<int64_t> evaluate(const Bindings& bindings) const;

  // Every identifier the expression refers to (functions excluded).
  std::set<std::string> identifiers() const;

  // The expression as nested calls, for generated launchers (C++, Python) that must compute
  // exactly what evaluate() computes: leaves through `number` and `name`, every operation as
  // PREFIX + OP + "(" + operands + ")" with OP one of add, sub, mul, div, mod, neg, ceil_div,
  // min, max, each defined by the generator with evaluate()'s semantics (truncating division,
  // checked 64-bit overflow).
  std::string to_calls(const std::string& prefix, const std::function<std::string(int64_t)>& number,
                       const std::function<std::string(const std::string&)>& name) const;

  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// Parses and evaluates in one step (for one-off formulas).
Result<int64_t> evaluate_expression(const std::string& text, const Bindings& bindings);

}  // namespace kopt
