// A randomized test of the parsers that read model output: every task's baseline (its CUDA and
// its launch plan) is mutated with byte flips, deletions, duplications, deep nesting, huge
// tokens and random UTF-8, and fed to the kernel-file parser, the plan's expression parser and
// the include scan in this process. A crash, a hang or an exception fails the test; a parse
// error is the expected answer. 120,000 cases from a fixed seed (KOPT_FUZZ_SEED to vary it,
// KOPT_FUZZ_CASES to run more).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "common/files.h"
#include "sandbox/expr.h"
#include "sandbox/include_policy.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt {
namespace {

struct Corpus {
  std::vector<TaskSpec> tasks;
  std::vector<std::string> sources;  // baseline.cu and reference.cu of each task
  std::vector<size_t> task_of;       // sources[i] belongs to tasks[task_of[i]]
};

Corpus load_corpus() {
  Corpus corpus;
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks"))
    if (entry.is_directory()) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    auto task = load_task(dir);
    if (!task) continue;
    corpus.tasks.push_back(std::move(*task));
    for (const char* file : {"baseline.cu", "reference.cu"}) {
      auto text = read_file(dir / file);
      if (!text) continue;
      corpus.sources.push_back(std::move(*text));
      corpus.task_of.push_back(corpus.tasks.size() - 1);
    }
  }
  return corpus;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

  // One to three mutations, half of the time confined to the plan block.
  std::string mutate(const std::string& source, const std::string& other) {
    std::string text = source;
    size_t from = 0, to = text.size();
    size_t plan = text.find("/* kopt:plan");
    if (plan != std::string::npos && chance(50)) {
      from = plan + 12;
      to = std::min(text.find("*/", from), text.size());
    }
    for (size_t n = 1 + below(3); n > 0; --n) mutate_once(text, from, to, other);
    return text;
  }

  // A random expression, sometimes deep or long, for the expression parser alone: at most
  // `budget` nodes, so its size stays bounded however the choices fall.
  std::string expression() {
    int budget = chance(5) ? 3000 : 40;
    return expression(budget);
  }

 private:
  std::string expression(int& budget) {
    --budget;
    switch (below(budget <= 0 ? 3 : 9)) {
      case 0:
        return std::to_string(static_cast<int64_t>(rng_()));
      case 1:
        return kNames[below(std::size(kNames))];
      case 2:
        return std::string(1 + below(40), "()+-*/%,_ x9"[below(12)]);
      case 3:
        return "(" + expression(budget) + ")";
      case 4:
        return "-" + expression(budget);
      case 5: {
        std::string left = expression(budget);
        return std::string(kFunctions[below(3)]) + "(" + left + ", " + expression(budget) + ")";
      }
      default: {
        std::string left = expression(budget);
        return left + " " + "+-*/%"[below(5)] + " " + expression(budget);
      }
    }
  }

  static constexpr const char* kNames[] = {"n", "rows", "cols", "BLOCK", "TILE", "d", "heads"};
  static constexpr const char* kFunctions[] = {"ceil_div", "min", "max"};

  size_t position(size_t from, size_t to) { return from + below(to - from + 1); }

  std::string random_utf8(size_t count) {
    std::string out;
    for (size_t i = 0; i < count; ++i) {
      switch (below(5)) {
        case 0:
          out += static_cast<char>(below(256));
          break;  // any byte, NUL and invalid too
        case 1:
          out += "\xc3\xa9";
          break;  // é
        case 2:
          out += "\xe2\x80\xae";
          break;  // right-to-left override
        case 3:
          out += "\xf0\x9f\x98\x80";
          break;  // an emoji
        default:
          out += "\xed\xa0\x80\xc0\xaf";
          break;  // a surrogate, an overlong '/'
      }
    }
    return out;
  }

  void mutate_once(std::string& text, size_t from, size_t& to, const std::string& other) {
    size_t at = position(from, to);
    size_t before = text.size();
    switch (below(11)) {
      case 0:  // bit flips
        for (size_t k = 1 + below(8); k > 0 && to > from; --k)
          text[position(from, to - 1)] ^= static_cast<char>(1 << below(8));
        break;
      case 1:  // delete a range
        text.erase(at, below(std::min<size_t>(to - at, 64) + 1));
        break;
      case 2: {  // duplicate a range elsewhere
        size_t start = position(from, to), length = below(200);
        text.insert(position(from, to), text.substr(start, length));
        break;
      }
      case 3: {  // deep nesting of parentheses, brackets or braces
        size_t depth = 1 + below(chance(20) ? 20000 : 200);
        const char* pairs[] = {"()", "[]", "{}"};
        const char* pair = pairs[below(3)];
        text.insert(at, std::string(depth, pair[0]) + "x" +
                            std::string(chance(70) ? depth : below(depth + 1), pair[1]));
        break;
      }
      case 4: {  // a huge token
        size_t length = chance(3) ? 100000 + below(200000) : 1 + below(5000);
        const char* fills[] = {"a", "9", "_", "__global__ ", "\"", "\\", "/*", "-", "'"};
        std::string fill = fills[below(std::size(fills))];
        std::string token;
        while (token.size() < length) token += fill;
        text.insert(at, token);
        break;
      }
      case 5:  // random UTF-8, valid and not
        text.insert(at, random_utf8(1 + below(32)));
        break;
      case 6:  // a random expression where a plan string may be
        text.insert(at, expression());
        break;
      case 7: {  // a piece of another task's file
        size_t start = below(other.size()), length = below(400);
        text.insert(at, other.substr(start, length));
        break;
      }
      case 8: {  // preprocessor noise the include scan must take apart
        const char* pieces[] = {"#include ", "\\\n",           "R\"x(",    ")x\"",
                                "%:",        "__has_include(", "_Pragma(", "#define __X ",
                                "1'0'",      "?\?=",           "/*",       "*/",
                                "//"};
        text.insert(at, pieces[below(std::size(pieces))]);
        break;
      }
      case 9:  // truncate
        text.resize(at);
        break;
      default:  // replace a byte with a JSON or C delimiter
        if (to > from) text[position(from, to - 1)] = "{}[]():,\"';*/#\n"[below(15)];
        break;
    }
    to = std::min(text.size(), to + text.size() - std::min(before, text.size()));
    if (to < from) to = from;
  }

  std::mt19937_64 rng_;
};

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(ParserFuzz, MutatedTaskFilesNeverCrashTheParsers) {
  Corpus corpus = load_corpus();
  ASSERT_GE(corpus.tasks.size(), 10u);
  const uint64_t seed = env_number("KOPT_FUZZ_SEED", 20261125);
  const uint64_t cases = env_number("KOPT_FUZZ_CASES", 120000);
  auto roots = toolkit_include_roots();
  Mutator mutator(seed);
  size_t parsed = 0, refused = 0, expressions = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < cases; ++i) {
    size_t pick = mutator.below(corpus.sources.size());
    const std::string& other = corpus.sources[mutator.below(corpus.sources.size())];
    std::string text = mutator.mutate(corpus.sources[pick], other);
    const TaskSpec* task = mutator.chance(80) ? &corpus.tasks[corpus.task_of[pick]] : nullptr;
    auto file = parse_kernel_file(text, "fuzz.cu", task);
    if (file) {
      ++parsed;
      Bindings sizes = task ? task->sizes : Bindings{};
      for (const auto& launch : file->launches) {
        for (const auto& e : launch.grid) (void)evaluate_expression(e, sizes);
        (void)evaluate_expression(launch.shared_bytes, sizes);
      }
    } else {
      ++refused;
      EXPECT_FALSE(file.error().empty());
    }
    if (i % 4 == 0) (void)check_includes(text, "fuzz.cu", roots);
    if (i % 2 == 0) {
      (void)evaluate_expression(mutator.expression(), {{"n", 1024}, {"BLOCK", 256}});
      ++expressions;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu cases (seed %llu) in %.1f s: %zu parsed, %zu refused, %zu expressions\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(seed),
              seconds, parsed, refused, expressions);
  // Both outcomes occur, or the mutations are too weak (or too strong) to mean anything.
  EXPECT_GT(parsed, cases / 100);
  EXPECT_GT(refused, cases / 10);
}

// The two inputs that crashed the daemon, as fixed cases.
TEST(ParserFuzz, KnownCrashersAreErrors) {
  std::string deep = std::string(10000, '(') + "n" + std::string(10000, ')');
  auto expr = Expr::parse(deep);
  ASSERT_FALSE(expr.ok());
  EXPECT_NE(expr.error().find("limit"), std::string::npos) << expr.error().substr(0, 200);
  std::string nested = std::string(100, '(') + "n" + std::string(100, ')');
  auto depth = Expr::parse(nested);
  ASSERT_FALSE(depth.ok());
  EXPECT_NE(depth.error().find("nested deeper than 64"), std::string::npos) << depth.error();
  EXPECT_TRUE(Expr::parse(std::string(60, '(') + "n" + std::string(60, ')')).ok());
  EXPECT_FALSE(Expr::parse(std::string(5000, '-') + "1").ok());

  std::string source = "#define G __global__\nconst char* s = \"" + std::string(100000, 'x') +
                       "\";\nG void k(float* x) { x[0] = 1; }\n/* kopt:plan {\"launches\": "
                       "[{\"kernel\": \"k\", \"grid\": [\"1\"], \"block\": [\"1\"], \"args\": "
                       "[\"x\"]}]} */\n";
  auto file = parse_kernel_file(source, "big.cu", nullptr);
  ASSERT_FALSE(file.ok());  // G is no __global__ to the scan: the kernel is not defined
  EXPECT_NE(file.error().find("not defined"), std::string::npos) << file.error();
  std::string huge = source + std::string(kMaxKernelSourceBytes, ' ');
  auto too_big = parse_kernel_file(huge, "huge.cu", nullptr);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().find("over the limit of 262144 bytes"), std::string::npos);
}

}  // namespace
}  // namespace kopt
