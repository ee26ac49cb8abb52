// The integer expression language of launch plans and task formulas.
#include "sandbox/expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace kopt {
namespace {

int64_t eval_ok(const std::string& text, const Bindings& bindings = {}) {
  auto v = evaluate_expression(text, bindings);
  EXPECT_TRUE(v.ok()) << text << ": " << (v.ok() ? "" : v.error());
  return v.ok() ? *v : INT64_MIN;
}

std::string eval_error(const std::string& text, const Bindings& bindings = {}) {
  auto v = evaluate_expression(text, bindings);
  EXPECT_FALSE(v.ok()) << text << " evaluated to " << (v.ok() ? *v : 0);
  return v.ok() ? "" : v.error();
}

std::string parse_error(const std::string& text) {
  auto e = Expr::parse(text);
  EXPECT_FALSE(e.ok()) << "'" << text << "' parsed";
  return e.ok() ? "" : e.error();
}

TEST(Expr, Precedence) {
  EXPECT_EQ(eval_ok("2+3*4"), 14);
  EXPECT_EQ(eval_ok("2*3+4"), 10);
  EXPECT_EQ(eval_ok("10-4-3"), 3);  // left-associative
  EXPECT_EQ(eval_ok("64/4/2"), 8);
  EXPECT_EQ(eval_ok("17%5*2"), 4);
  EXPECT_EQ(eval_ok("1+17%5"), 3);
  EXPECT_EQ(eval_ok("7/2"), 3);  // integer division
}

TEST(Expr, Parentheses) {
  EXPECT_EQ(eval_ok("(2+3)*4"), 20);
  EXPECT_EQ(eval_ok("((((1))))"), 1);
  EXPECT_EQ(eval_ok("2*(3+(4-1))*2"), 24);
  EXPECT_EQ(eval_ok("  ( 2 + 3 ) * 4  "), 20);
}

TEST(Expr, UnaryMinus) {
  EXPECT_EQ(eval_ok("-5"), -5);
  EXPECT_EQ(eval_ok("--5"), 5);
  EXPECT_EQ(eval_ok("2*-3"), -6);
  EXPECT_EQ(eval_ok("-(2+3)"), -5);
  EXPECT_EQ(eval_ok("4 - -4"), 8);
  EXPECT_EQ(eval_ok("-n*2", {{"n", 3}}), -6);
}

TEST(Expr, Functions) {
  EXPECT_EQ(eval_ok("ceil_div(10, 3)"), 4);
  EXPECT_EQ(eval_ok("ceil_div(9, 3)"), 3);
  EXPECT_EQ(eval_ok("ceil_div(0, 3)"), 0);
  EXPECT_EQ(eval_ok("ceil_div(1, 256)"), 1);
  EXPECT_EQ(eval_ok("min(4, 9)"), 4);
  EXPECT_EQ(eval_ok("max(4, 9)"), 9);
  EXPECT_EQ(eval_ok("min(-4, 2)"), -4);
  EXPECT_EQ(eval_ok("max(ceil_div(n, 256), min(n, 8)) * 2", {{"n", 1000}}), 16);
  EXPECT_EQ(eval_ok("ceil_div( n , BLOCK )", {{"n", 4097}, {"BLOCK", 256}}), 17);
}

TEST(Expr, Identifiers) {
  auto e = Expr::parse("ceil_div(rows * cols, BLOCK) + min(rows, 4) - _x1");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->identifiers(), (std::set<std::string>{"BLOCK", "_x1", "cols", "rows"}));
  EXPECT_EQ(e->text(), "ceil_div(rows * cols, BLOCK) + min(rows, 4) - _x1");
  auto constant = Expr::parse("3*4");
  ASSERT_TRUE(constant.ok());
  EXPECT_TRUE(constant->identifiers().empty());
}

TEST(Expr, ParsedExpressionEvaluatesUnderManyBindings) {
  auto e = Expr::parse("ceil_div(n, 32) * 32");
  ASSERT_TRUE(e.ok());
  for (int64_t n : {1, 31, 32, 33, 1023}) {
    auto v = e->evaluate({{"n", n}});
    ASSERT_TRUE(v.ok()) << v.error();
    EXPECT_EQ(*v, (n + 31) / 32 * 32) << n;
  }
}

TEST(Expr, MalformedExpressionsNameTheColumn) {
  struct Case {
    std::string text;
    std::string column;
    std::string what;
  };
  for (const Case& c : std::vector<Case>{
           {"", "column 1", "unexpected end"},
           {"2+", "column 3", "unexpected end"},
           {"(2+3", "column 5", "expected ')'"},
           {"2+3)", "column 4", "unexpected ')'"},
           {"2 $ 3", "column 3", "unexpected '$'"},
           {"n m", "column 3", "unexpected 'm'"},
           {"2**3", "column 3", "unexpected '*'"},
           {"foo(1, 2)", "column 1", "unknown function 'foo'"},
           {"min(1)", "column 6", "takes two arguments"},
           {"max(1, 2, 3)", "column 9", "expected ')'"},
           {"ceil_div(1,)", "column 12", "unexpected ')'"},
           {"99999999999999999999", "column", "number too large"},
       }) {
    std::string error = parse_error(c.text);
    EXPECT_NE(error.find(c.column), std::string::npos) << c.text << " -> " << error;
    EXPECT_NE(error.find(c.what), std::string::npos) << c.text << " -> " << error;
    EXPECT_NE(error.find("'" + c.text + "'"), std::string::npos)
        << "the message quotes the expression: " << error;
  }
}

TEST(Expr, UnknownSymbol) {
  std::string error = eval_error("ceil_div(n, BLOK)", {{"n", 10}, {"BLOCK", 2}});
  EXPECT_NE(error.find("unknown symbol 'BLOK'"), std::string::npos) << error;
}

TEST(Expr, DivisionAndModuloByZero) {
  EXPECT_NE(eval_error("1/0").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("n/(m-2)", {{"n", 4}, {"m", 2}}).find("division by zero"),
            std::string::npos);
  EXPECT_NE(eval_error("5%0").find("modulo by zero"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(5, 0)").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(n, BLOCK)", {{"n", 5}, {"BLOCK", 0}}).find("division by zero"),
            std::string::npos);
}

TEST(Expr, CeilDivNeedsNonNegativeArguments) {
  EXPECT_NE(eval_error("ceil_div(-5, 2)").find("non-negative"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(5, -2)").find("non-negative"), std::string::npos);
}

TEST(Expr, Int64OverflowIsAnError) {
  const Bindings big = {{"big", INT64_MAX}, {"small", INT64_MIN}};
  EXPECT_EQ(eval_ok("9223372036854775807"), INT64_MAX);
  EXPECT_NE(eval_error("big + 1", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("small - 1", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("big * 2", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("-small", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("small / -1", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("small % -1", big).find("overflow"), std::string::npos);
  EXPECT_NE(eval_error("4294967296 * 4294967296").find("overflow"), std::string::npos);
  // Overflow deep inside a function argument still surfaces.
  EXPECT_NE(eval_error("max(1, big + big)", big).find("overflow"), std::string::npos);
  // Large but representable products are fine (element counts over 2^31).
  EXPECT_EQ(eval_ok("65536 * 65536 * 4"), int64_t{1} << 34);
}

}  // namespace
}  // namespace kopt
