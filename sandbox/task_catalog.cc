#include "sandbox/task_catalog.h"

#include <algorithm>

#include "common/strings.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt {

std::vector<std::filesystem::path> find_task_dirs(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> dirs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "task.json"))
      dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

Result<std::filesystem::path> resolve_task_dir(const std::string& arg,
                                               const std::filesystem::path& root) {
  std::filesystem::path direct(arg);
  if (std::filesystem::exists(direct / "task.json")) return direct;
  if (arg.find('/') == std::string::npos && std::filesystem::exists(root / arg / "task.json"))
    return root / arg;
  std::vector<std::string> names;
  for (const auto& d : find_task_dirs(root)) names.push_back(d.filename().string());
  return make_error("no task '" + arg + "' (not a directory with task.json, nor a task under " +
                    root.string() + ")" + did_you_mean(arg, names));
}

namespace {

void compile_variants(const KernelFile& file, const std::string& label, const std::string& arch,
                      const CompileCache* cache, std::vector<CheckItem>& out) {
  std::vector<std::map<std::string, int64_t>> variants = {{}};
  for (const auto& t : file.tunables)
    for (size_t i = 1; i < t.values.size(); ++i) variants.push_back({{t.name, t.values[i]}});
  for (const auto& chosen : variants) {
    std::string subject = label;
    for (const auto& [k, v] : file.tunable_values(chosen))
      subject += " " + k + "=" + std::to_string(v);
    auto compiled = compile_confined(make_compile_request(file, chosen, arch), cache);
    if (!compiled) {
      out.push_back({subject, false, compiled.error()});
    } else if (!compiled->ok) {
      out.push_back({subject, false, "compile error:\n" + compiled->log});
    } else {
      out.push_back({subject, true, compiled->cache_hit ? "compiled (cached)" : "compiled"});
    }
  }
}

}  // namespace

std::vector<CheckItem> compile_check_task(const std::filesystem::path& dir, const std::string& arch,
                                          const CompileCache* cache) {
  std::vector<CheckItem> items;
  // Every problem in one pass: a broken task.json does not hide the kernel files' problems
  // (they are still parsed and compiled, without the task's names to check their plans against).
  auto task = load_task(dir);
  if (!task) {
    items.push_back({"task.json", false, task.error()});
  } else {
    items.push_back({"task.json", true, "valid"});
  }
  for (const char* name : {"reference.cu", "baseline.cu"}) {
    if (!std::filesystem::exists(dir / name)) continue;  // load_task's message names it
    auto file = load_kernel_file(dir / name, task ? &*task : nullptr);
    if (!file) {
      items.push_back({name, false, file.error()});
      continue;
    }
    compile_variants(*file, name, arch, cache, items);
  }
  return items;
}

}  // namespace kopt
