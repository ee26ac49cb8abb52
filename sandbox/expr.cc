#include "sandbox/expr.h"

#include <cctype>
#include <vector>

namespace kopt {

struct Expr::Node {
  enum class Kind { kNumber, kName, kUnaryMinus, kBinary, kCall } kind;
  int64_t number = 0;
  std::string name;  // identifier, function name, or operator
  std::vector<std::shared_ptr<const Node>> children;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Node = Expr::Node;

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Result<NodePtr> parse_all() {
    auto node = parse_sum();
    if (!node) return node;
    skip_space();
    if (pos_ != text_.size()) return fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return node;
  }

 private:
  Error fail(const std::string& what) const {
    return make_error("expression '" + text_ + "': " + what + " at column " +
                      std::to_string(pos_ + 1));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Counts one level of nesting for as long as it lives.
  class Nesting {
   public:
    explicit Nesting(int& depth) : depth_(depth) { ++depth_; }
    ~Nesting() { --depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    int& depth_;
  };

  Error too_deep() const {
    return make_error("expression: nested deeper than " + std::to_string(kMaxExpressionDepth) +
                      " levels at column " + std::to_string(pos_ + 1));
  }

  Result<NodePtr> parse_sum() {
    Nesting level(depth_);
    if (depth_ > kMaxExpressionDepth) return too_deep();
    auto left = parse_product();
    if (!left) return left;
    NodePtr node = *left;
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return node;
      char op = text_[pos_++];
      auto right = parse_product();
      if (!right) return right;
      node = binary(op, node, *right);
    }
  }

  Result<NodePtr> parse_product() {
    auto left = parse_unary();
    if (!left) return left;
    NodePtr node = *left;
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/' && text_[pos_] != '%'))
        return node;
      char op = text_[pos_++];
      auto right = parse_unary();
      if (!right) return right;
      node = binary(op, node, *right);
    }
  }

  Result<NodePtr> parse_unary() {
    if (consume('-')) {
      Nesting level(depth_);
      if (depth_ > kMaxExpressionDepth) return too_deep();
      auto operand = parse_unary();
      if (!operand) return operand;
      auto node = std::make_shared<Node>();
      node->kind = Node::Kind::kUnaryMinus;
      node->children.push_back(*operand);
      return NodePtr(node);
    }
    return parse_primary();
  }

  Result<NodePtr> parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      auto inner = parse_sum();
      if (!inner) return inner;
      if (!consume(')')) return fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name_or_call();
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  Result<NodePtr> parse_number() {
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, digit, &value))
        return fail("number too large");
      ++pos_;
    }
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kNumber;
    node->number = value;
    return NodePtr(node);
  }

  Result<NodePtr> parse_name_or_call() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string name = text_.substr(start, pos_ - start);
    auto node = std::make_shared<Node>();
    node->name = name;
    if (!consume('(')) {
      node->kind = Node::Kind::kName;
      return NodePtr(node);
    }
    if (name != "ceil_div" && name != "min" && name != "max") {
      pos_ = start;
      return fail("unknown function '" + name + "' (known: ceil_div, min, max)");
    }
    node->kind = Node::Kind::kCall;
    for (int i = 0; i < 2; ++i) {
      auto arg = parse_sum();
      if (!arg) return arg;
      node->children.push_back(*arg);
      if (i == 0 && !consume(',')) return fail(name + " takes two arguments: expected ','");
    }
    if (!consume(')')) return fail("expected ')' after the arguments of " + name);
    return NodePtr(node);
  }

  static NodePtr binary(char op, NodePtr left, NodePtr right) {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kBinary;
    node->name = std::string(1, op);
    node->children = {std::move(left), std::move(right)};
    return node;
  }

  const std::string& text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

Result<int64_t> eval_node(const Node& node, const Bindings& bindings, const std::string& text) {
  auto fail = [&](const std::string& what) {
    return make_error("expression '" + text + "': " + what);
  };
  switch (node.kind) {
    case Node::Kind::kNumber:
      return node.number;
    case Node::Kind::kName: {
      auto it = bindings.find(node.name);
      if (it == bindings.end()) return fail("unknown symbol '" + node.name + "'");
      return it->second;
    }
    case Node::Kind::kUnaryMinus: {
      auto v = eval_node(*node.children[0], bindings, text);
      if (!v) return v;
      if (*v == INT64_MIN) return fail("overflow");
      return -*v;
    }
    case Node::Kind::kBinary:
    case Node::Kind::kCall: {
      auto a = eval_node(*node.children[0], bindings, text);
      if (!a) return a;
      auto b = eval_node(*node.children[1], bindings, text);
      if (!b) return b;
      int64_t x = *a, y = *b, r = 0;
      const std::string& op = node.name;
      if (op == "+") {
        if (__builtin_add_overflow(x, y, &r)) return fail("overflow in +");
      } else if (op == "-") {
        if (__builtin_sub_overflow(x, y, &r)) return fail("overflow in -");
      } else if (op == "*") {
        if (__builtin_mul_overflow(x, y, &r)) return fail("overflow in *");
      } else if (op == "/" || op == "%" || op == "ceil_div") {
        if (y == 0) return fail(op == "%" ? "modulo by zero" : "division by zero");
        if (x == INT64_MIN && y == -1) return fail("overflow in division");
        if (op == "/") r = x / y;
        if (op == "%") r = x % y;
        if (op == "ceil_div") {
          if (x < 0 || y < 0) return fail("ceil_div needs non-negative arguments");
          r = x / y + (x % y != 0);
        }
      } else if (op == "min") {
        r = std::min(x, y);
      } else if (op == "max") {
        r = std::max(x, y);
      }
      return r;
    }
  }
  return fail("corrupt expression tree");
}

void collect_identifiers(const Node& node, std::set<std::string>& out) {
  if (node.kind == Node::Kind::kName) out.insert(node.name);
  for (const auto& child : node.children) collect_identifiers(*child, out);
}

std::string calls_of(const Node& node, const std::string& prefix,
                     const std::function<std::string(int64_t)>& number,
                     const std::function<std::string(const std::string&)>& name) {
  switch (node.kind) {
    case Node::Kind::kNumber:
      return number(node.number);
    case Node::Kind::kName:
      return name(node.name);
    case Node::Kind::kUnaryMinus:
      return prefix + "neg(" + calls_of(*node.children[0], prefix, number, name) + ")";
    case Node::Kind::kBinary:
    case Node::Kind::kCall:
      break;
  }
  static const std::map<std::string, std::string> kOps = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}, {"%", "mod"}};
  auto op = kOps.find(node.name);
  return prefix + (op != kOps.end() ? op->second : node.name) + "(" +
         calls_of(*node.children[0], prefix, number, name) + ", " +
         calls_of(*node.children[1], prefix, number, name) + ")";
}

}  // namespace

std::string Expr::to_calls(const std::string& prefix,
                           const std::function<std::string(int64_t)>& number,
                           const std::function<std::string(const std::string&)>& name) const {
  return calls_of(*root_, prefix, number, name);
}

Result<Expr> Expr::parse(const std::string& text) {
  if (text.size() > kMaxExpressionLength)
    return make_error("expression of " + std::to_string(text.size()) +
                      " characters: longer than the limit of " +
                      std::to_string(kMaxExpressionLength));
  Parser parser(text);
  auto root = parser.parse_all();
  if (!root) return make_error(root.error());
  Expr expr;
  expr.text_ = text;
  expr.root_ = *root;
  return expr;
}

Result<int64_t> Expr::evaluate(const Bindings& bindings) const {
  return eval_node(*root_, bindings, text_);
}

std::set<std::string> Expr::identifiers() const {
  std::set<std::string> out;
  collect_identifiers(*root_, out);
  return out;
}

Result<int64_t> evaluate_expression(const std::string& text, const Bindings& bindings) {
  auto expr = Expr::parse(text);
  if (!expr) return make_error(expr.error());
  return expr->evaluate(bindings);
}

}  // namespace kopt
