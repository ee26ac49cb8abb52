#include "sandbox/kernel_file_check.h"

#include <cstdint>
#include <set>

#include "common/strings.h"

namespace kopt {

namespace {

std::string sizes_text(const ShapeBinding& sizes) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : sizes) parts.push_back(k + "=" + std::to_string(v));
  return join(parts, " ");
}

std::string shape_text(const NamedShape& shape) {
  return "at " + shape.name + " (" + sizes_text(shape.sizes) + ")";
}

// Collects one problem per JSON path: the first shape where an expression fails is enough to
// find it, and 40 shapes of the same message would hide the others.
class Problems {
 public:
  // One line per path; `line` names the path itself.
  void add(const std::string& path, const std::string& line) {
    if (!seen_.insert(path).second) return;
    paths_.push_back(path);
    lines_.push_back(line);
  }
  bool empty() const { return lines_.empty(); }
  const std::vector<std::string>& paths() const { return paths_; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::set<std::string> seen_;
  std::vector<std::string> paths_;
  std::vector<std::string> lines_;
};

// `text` evaluated under `bindings`, checked to lie in [low, high]; a problem otherwise.
void check_value(Problems& problems, const std::string& path, const std::string& text,
                 const Bindings& bindings, const NamedShape& shape, int64_t low, int64_t high,
                 const std::string& limit_note) {
  auto v = evaluate_expression(text, bindings);
  if (!v) {
    problems.add(path, path + ": \"" + text + "\" " + shape_text(shape) + ": " + v.error());
  } else if (*v < low || *v > high) {
    problems.add(path, path + ": \"" + text + "\" = " + std::to_string(*v) + " " +
                           shape_text(shape) + ": " + limit_note);
  }
}

void check_launch(Problems& problems, const Launch& launch, const std::string& path,
                  const Bindings& bindings, const NamedShape& shape) {
  for (size_t d = 0; d < launch.grid.size(); ++d) {
    int64_t limit = d == 0 ? kMaxGridX : kMaxGridYZ;
    check_value(problems, path + ".grid[" + std::to_string(d) + "]", launch.grid[d], bindings,
                shape, 1, limit,
                "outside 1.." + std::to_string(limit) + " (a grid dimension of 0 launches nothing)");
  }
  int64_t threads = 1;
  bool all_valid = true;  // the block's size is only meaningful when each dimension is
  for (size_t d = 0; d < launch.block.size(); ++d) {
    int64_t limit = d == 2 ? kMaxBlockZ : kMaxBlockThreads;
    std::string item = path + ".block[" + std::to_string(d) + "]";
    check_value(problems, item, launch.block[d], bindings, shape, 1, limit,
                "outside 1.." + std::to_string(limit));
    auto v = evaluate_expression(launch.block[d], bindings);
    if (v && *v >= 1 && *v <= limit) {
      threads *= *v;
    } else {
      all_valid = false;
    }
  }
  if (all_valid && threads > kMaxBlockThreads) {
    problems.add(path + ".block", path + ".block: a block of " + std::to_string(threads) +
                                      " threads " + shape_text(shape) + ": over CUDA's " +
                                      std::to_string(kMaxBlockThreads) + " threads per block");
  }
  check_value(problems, path + ".shared_bytes", launch.shared_bytes, bindings, shape, 0,
              INT32_MAX, "dynamic shared memory must be 0 or more bytes");
  for (size_t a = 0; a < launch.args.size(); ++a) {
    const ArgBinding& arg = launch.args[a];
    std::string item = path + ".args[" + std::to_string(a) + "]";
    if (arg.kind == ArgBinding::Kind::kInt32) {
      check_value(problems, item, arg.expression, bindings, shape, INT32_MIN, INT32_MAX,
                  "does not fit in 32 bits; bind it as i64:");
    } else if (arg.kind == ArgBinding::Kind::kInt64) {
      check_value(problems, item, arg.expression, bindings, shape, INT64_MIN, INT64_MAX, "");
    }
  }
}

}  // namespace

std::vector<NamedShape> task_shapes(const TaskSpec& task) {
  std::vector<NamedShape> out;
  out.push_back({"the default sizes", task.sizes});
  for (size_t i = 0; i < task.shapes.size(); ++i)
    out.push_back({"$.shapes[" + std::to_string(i) + "]", task.bind(task.shapes[i])});
  for (size_t i = 0; i < task.holdout.size(); ++i)
    out.push_back({"$.holdout[" + std::to_string(i) + "]", task.bind(task.holdout[i])});
  for (size_t r = 0; r < task.stress.size(); ++r) {
    for (size_t i = 0; i < task.stress[r].shapes.size(); ++i)
      out.push_back({"stress round '" + task.stress[r].name + "' shape " + std::to_string(i),
                     task.bind(task.stress[r].shapes[i])});
  }
  return out;
}

std::vector<std::map<std::string, int64_t>> tunable_variants(const KernelFile& file) {
  std::vector<std::map<std::string, int64_t>> variants = {{}};
  for (const auto& t : file.tunables)
    for (size_t i = 1; i < t.values.size(); ++i) variants.push_back({{t.name, t.values[i]}});
  return variants;
}

Status check_task_formulas(const TaskSpec& task) {
  Problems problems;
  for (const NamedShape& shape : task_shapes(task)) {
    for (const auto& [key, text] : {std::pair<std::string, std::string>{"flops", task.flops},
                                    {"bytes", task.bytes}}) {
      check_value(problems, "$." + key, text, shape.sizes, shape, 0, INT64_MAX,
                  "negative (a count of " + key + " is 0 or more)");
    }
  }
  if (problems.empty()) return ok_status();
  std::string origin = (task.dir / "task.json").string();
  std::vector<std::string> lines;
  for (const auto& line : problems.lines()) lines.push_back(origin + ": " + line);
  return make_error(join(lines, "\n"));
}

namespace {

// The plan's problems with the tunables at `chosen`, each line starting with the tunables that
// were set (a path that already failed under other tunables is not repeated).
void collect_plan_problems(const KernelFile& file, const TaskSpec& task,
                           const std::map<std::string, int64_t>& chosen, Problems& problems) {
  std::map<std::string, int64_t> tunables = file.tunable_values(chosen);
  std::string prefix = chosen.empty() ? "" : "(" + sizes_text(chosen) + ") ";
  Problems local;
  for (const NamedShape& shape : task_shapes(task)) {
    Bindings bindings = shape.sizes;
    for (const auto& [k, v] : tunables) bindings[k] = v;
    for (size_t i = 0; i < file.scratch.size(); ++i) {
      check_value(local, "$.scratch[" + std::to_string(i) + "].count", file.scratch[i].count,
                  bindings, shape, 0, kMaxScratchElements,
                  "outside 0.." + std::to_string(kMaxScratchElements) + " elements");
    }
    for (size_t i = 0; i < file.launches.size(); ++i) {
      check_launch(local, file.launches[i], "$.launches[" + std::to_string(i) + "]", bindings,
                   shape);
    }
  }
  for (size_t i = 0; i < local.lines().size(); ++i)
    problems.add(local.paths()[i], prefix + local.lines()[i]);
}

Status plan_status(const KernelFile& file, const Problems& problems) {
  if (problems.empty()) return ok_status();
  std::string where = file.origin + ":" + std::to_string(file.plan_line) + " (kopt:plan)";
  std::vector<std::string> lines;
  for (const auto& line : problems.lines()) lines.push_back(where + ": " + line);
  return make_error(join(lines, "\n"));
}

}  // namespace

Status check_plan_at_shapes(const KernelFile& file, const TaskSpec& task,
                            const std::map<std::string, int64_t>& chosen) {
  Problems problems;
  collect_plan_problems(file, task, chosen, problems);
  return plan_status(file, problems);
}

Status check_plan_variants(const KernelFile& file, const TaskSpec& task) {
  Problems problems;
  for (const auto& chosen : tunable_variants(file))
    collect_plan_problems(file, task, chosen, problems);
  return plan_status(file, problems);
}

}  // namespace kopt
