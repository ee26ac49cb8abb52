// One semantics for plan expressions (issue 34, cause 5): the sandbox evaluates a launch plan
// with C++ integer division (truncating toward zero) and checked 64-bit overflow; every
// generated launcher must compute the same grid, block, shared bytes, size arguments and scratch
// counts. For every kernel file of every task in tasks/ and tasks_realworld/ and every shape
// (the default, the sweep, the holdout), the sandbox's evaluator is compared with the generated
// Python plan (kopt_plan_TASK.py, run by python3: no torch needed) and the generated C++
// (the launcher's kopt_ helpers, compiled by the host compiler); then random expressions with
// negative intermediates, where Python's floor division once launched 200,000 elements past
// the tensors, are compared the same way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/files.h"
#include "common/subprocess.h"
#include "exchange/export_bundle.h"
#include "exchange/launcher_codegen.h"
#include "sandbox/expr.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "tests/support/temp_dir.h"

namespace kopt {
namespace {

using nlohmann::json;

// One expression at one binding, and what the sandbox made of it (nullopt: an error).
struct Probe {
  std::string what;  // "axpy reference.cu n=7: launch 0 grid[0]"
  std::string expression;
  Bindings bindings;
  std::optional<int64_t> sandbox;
};

struct PlanCase {
  std::string label;
  TaskSpec task;
  KernelFile kernel;
  std::vector<Bindings> bindings;  // sizes and tunables, as the worker binds them
};

std::vector<PlanCase> every_plan() {
  std::vector<PlanCase> cases;
  for (const char* root : {"tasks", "tasks_realworld"}) {
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(KOPT_SOURCE_DIR) / root, ec)) {
      if (!std::filesystem::exists(entry.path() / "task.json")) continue;
      auto task = load_task(entry.path());
      if (!task) continue;  // a task this build cannot load is the task tests' finding
      for (const char* file : {"reference.cu", "baseline.cu"}) {
        auto kernel = load_kernel_file(entry.path() / file, &*task);
        if (!kernel) continue;
        PlanCase c{entry.path().filename().string() + "/" + file, *task, *kernel, {}};
        std::vector<ShapeBinding> shapes = {{}};
        for (const auto* list : {&task->shapes, &task->holdout})
          shapes.insert(shapes.end(), list->begin(), list->end());
        for (const auto& shape : shapes) {
          Bindings b = task->bind(shape);
          for (const auto& [name, value] : kernel->tunable_values({})) b[name] = value;
          c.bindings.push_back(b);
        }
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

std::optional<int64_t> sandbox_value(const std::string& expression, const Bindings& b) {
  auto v = evaluate_expression(expression, b);
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

// Every integer the worker computes from the plan, in the order plan_values.py prints them.
std::vector<Probe> plan_probes(const PlanCase& c, size_t binding) {
  const Bindings& b = c.bindings[binding];
  std::vector<Probe> probes;
  auto add = [&](const std::string& what, const std::string& expression) {
    probes.push_back({c.label + " #" + std::to_string(binding) + ": " + what, expression, b,
                      sandbox_value(expression, b)});
  };
  for (size_t l = 0; l < c.kernel.launches.size(); ++l) {
    const Launch& launch = c.kernel.launches[l];
    std::string at = "launch " + std::to_string(l) + " ";
    for (size_t d = 0; d < 3; ++d)
      add(at + "grid[" + std::to_string(d) + "]", d < launch.grid.size() ? launch.grid[d] : "1");
    for (size_t d = 0; d < 3; ++d)
      add(at + "block[" + std::to_string(d) + "]", d < launch.block.size() ? launch.block[d] : "1");
    add(at + "shared", launch.shared_bytes);
    for (size_t a = 0; a < launch.args.size(); ++a) {
      auto kind = launch.args[a].kind;
      if (kind == ArgBinding::Kind::kInt32 || kind == ArgBinding::Kind::kInt64)
        add(at + "arg " + std::to_string(a), launch.args[a].expression);
    }
  }
  for (const auto& s : c.kernel.scratch) add("scratch " + s.name, s.count);
  return probes;
}

// The Python plan module's numbers for each binding, by the module's own lambdas.
const char* kPlanValues = R"py(
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
plan = importlib.import_module(sys.argv[2]).KERNEL
out = []
def value(f, s):
    try:
        v = f(s)
        return list(v) if isinstance(v, tuple) else v
    except (ArithmeticError, ValueError):
        return None
for sizes in json.load(sys.stdin):
    s = dict(sizes)
    s.update(plan["tunables"])
    row = []
    for index, grid, block, shared, arguments in plan["launches"]:
        for f in (grid, block):
            v = value(f, s)
            row += v if v is not None else [None] * 3
        row.append(value(shared, s))
        row += [value(f, s) for kind, f in arguments if kind in ("i32", "i64")]
    row += [value(count, s) for name, dtype, count, zero in plan["scratch"]]
    out.append(row)
print(json.dumps(out))
)py";

// An image with the plan's kernels and no code: the plan module needs only names.
exporter::DeviceImage image_for(const KernelFile& kernel) {
  exporter::DeviceImage image;
  image.cc_major = 9;
  for (const auto& launch : kernel.launches) {
    if (std::find(image.kernels.begin(), image.kernels.end(), launch.kernel) != image.kernels.end())
      continue;
    image.kernels.push_back(launch.kernel);
    image.symbols.push_back(launch.kernel);
  }
  return image;
}

std::string value_text(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : std::string("error");
}

// The C++ launcher's spelling of every probe, compiled and run: one line per probe.
std::vector<std::string> cpp_values(const std::vector<Probe>& probes,
                                    const std::filesystem::path& dir) {
  std::ostringstream program;
  program << "#include <cstdint>\n#include <cstdio>\n\n"
          << exporter::cpp_plan_arithmetic() << "\nstatic void show(int64_t v) {\n"
          << "  if (kopt_plan_invalid()) std::printf(\"error\\n\");\n"
          << "  else std::printf(\"%lld\\n\", static_cast<long long>(v));\n"
          << "  kopt_plan_invalid() = false;\n}\n\nint main() {\n";
  for (const auto& p : probes) {
    program << "  {\n";
    for (const auto& [name, value] : p.bindings)
      program << "    const int64_t " << name << " = " << value << "LL; (void)" << name << ";\n";
    program << "    show(" << *exporter::expression_to_cpp(p.expression) << ");\n  }\n";
  }
  program << "}\n";
  EXPECT_TRUE(write_file_atomic(dir / "plan_values.cc", program.str()));
  auto built = run_command({"c++", "-std=c++17", "-O0", "-w", "-o", (dir / "plan_values").string(),
                            (dir / "plan_values.cc").string()},
                           "", std::chrono::seconds(300));
  if (!built || built->exit_code != 0) {
    ADD_FAILURE() << "c++: " << (built ? built->stderr_text : built.error());
    return {};
  }
  auto ran = run_command({(dir / "plan_values").string()}, "", std::chrono::seconds(60));
  if (!ran || ran->exit_code != 0) return {};
  std::vector<std::string> lines;
  std::istringstream in(ran->stdout_text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(PlanSemantics, EveryTaskShapeAndLauncherAgree) {
  testing::TempDir dir;
  auto cases = every_plan();
  ASSERT_GE(cases.size(), 20u) << "the tasks folder was not found";
  std::vector<Probe> all;
  for (size_t i = 0; i < cases.size(); ++i) {
    const PlanCase& c = cases[i];
    SCOPED_TRACE(c.label);
    auto image = image_for(c.kernel);
    auto module = exporter::generate_python_plan(c.task, c.kernel, image, {}, nullptr, nullptr);
    ASSERT_TRUE(module.ok()) << module.error();
    std::string name = "kopt_plan_case" + std::to_string(i);
    ASSERT_TRUE(write_file_atomic(dir.path() / (name + ".py"), *module));
    json sizes = json::array();
    for (const auto& b : c.bindings) sizes.push_back(b);
    auto ran = run_command({"python3", "-c", kPlanValues, dir.path().string(), name}, sizes.dump(),
                           std::chrono::seconds(60));
    ASSERT_TRUE(ran.ok()) << ran.error();
    ASSERT_EQ(ran->exit_code, 0) << ran->stderr_text;
    json rows = json::parse(ran->stdout_text);
    ASSERT_EQ(rows.size(), c.bindings.size());
    for (size_t b = 0; b < c.bindings.size(); ++b) {
      auto probes = plan_probes(c, b);
      ASSERT_EQ(rows[b].size(), probes.size());
      for (size_t p = 0; p < probes.size(); ++p) {
        std::optional<int64_t> python;
        if (!rows[b][p].is_null()) python = rows[b][p].get<int64_t>();
        EXPECT_EQ(value_text(python), value_text(probes[p].sandbox))
            << probes[p].what << ": " << probes[p].expression;
      }
      all.insert(all.end(), probes.begin(), probes.end());
    }
  }
  auto cpp = cpp_values(all, dir.path());
  ASSERT_EQ(cpp.size(), all.size());
  for (size_t p = 0; p < all.size(); ++p)
    EXPECT_EQ(cpp[p], value_text(all[p].sandbox)) << all[p].what << ": " << all[p].expression;
}

// Random expressions over signed values: division and modulo of negatives, overflow, zero.
std::string random_expression(std::mt19937_64& rng, int depth) {
  static const char* kNames[] = {"n", "m", "k"};
  if (depth == 0 || rng() % 4 == 0) {
    if (rng() % 3 == 0) return std::to_string(rng() % 2 ? rng() % 9 : rng() % 5'000'000'000ULL);
    return kNames[rng() % 3];
  }
  std::string a = random_expression(rng, depth - 1), b = random_expression(rng, depth - 1);
  switch (rng() % 9) {
    case 0:
      return "(" + a + " + " + b + ")";
    case 1:
      return "(" + a + " - " + b + ")";
    case 2:
      return "(" + a + " * " + b + ")";
    case 3:
      return "(" + a + " / " + b + ")";
    case 4:
      return "(" + a + " % " + b + ")";
    case 5:
      return "-(" + a + ")";
    case 6:
      return "ceil_div(" + a + ", " + b + ")";
    case 7:
      return "min(" + a + ", " + b + ")";
    default:
      return "max(" + a + ", " + b + ")";
  }
}

TEST(PlanSemantics, RandomSignedExpressionsAgree) {
  testing::TempDir dir;
  std::mt19937_64 rng(34);
  std::vector<Probe> probes;
  // The issue's case first: a negative intermediate divided, where floor and truncation differ.
  probes.push_back({"issue", "(200000 - n) / 3", {{"n", 67'108'864}, {"m", 0}, {"k", 0}}});
  for (int i = 0; i < 400; ++i) {
    Bindings b = {{"n", static_cast<int64_t>(rng() % 2000) - 1000},
                  {"m", static_cast<int64_t>(rng() % 7) - 3},
                  {"k", static_cast<int64_t>(rng() % 4'000'000'000'000ULL)}};
    probes.push_back({"random " + std::to_string(i), random_expression(rng, 4), b});
  }
  std::ostringstream python;
  python << exporter::python_plan_arithmetic() << "\nimport json\nout = []\n";
  for (auto& p : probes) {
    p.sandbox = sandbox_value(p.expression, p.bindings);
    python << "try:\n    s = " << json(p.bindings).dump() << "\n    out.append("
           << *exporter::expression_to_python(p.expression)
           << ")\nexcept (ArithmeticError, ValueError):\n    out.append(None)\n";
  }
  python << "print(json.dumps(out))\n";
  ASSERT_TRUE(write_file_atomic(dir.path() / "random.py", python.str()));
  auto ran =
      run_command({"python3", (dir.path() / "random.py").string()}, "", std::chrono::seconds(60));
  ASSERT_TRUE(ran.ok()) << ran.error();
  ASSERT_EQ(ran->exit_code, 0) << ran->stderr_text;
  json values = json::parse(ran->stdout_text);
  ASSERT_EQ(values.size(), probes.size());
  int negative_divisions = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    std::optional<int64_t> py;
    if (!values[i].is_null()) py = values[i].get<int64_t>();
    EXPECT_EQ(value_text(py), value_text(probes[i].sandbox)) << probes[i].expression;
    negative_divisions += probes[i].sandbox && *probes[i].sandbox < 0;
  }
  EXPECT_GT(negative_divisions, 20);  // the sample reaches the cases floor division gets wrong
  // -66,908,864 / 3 truncates to -22,302,954 (Python's floor said -22,302,955).
  EXPECT_EQ(*probes[0].sandbox, -22'302'954) << "the issue's case, as C++ says";
  auto cpp = cpp_values(probes, dir.path());
  ASSERT_EQ(cpp.size(), probes.size());
  for (size_t i = 0; i < probes.size(); ++i)
    EXPECT_EQ(cpp[i], value_text(probes[i].sandbox)) << probes[i].expression;
}

}  // namespace
}  // namespace kopt
