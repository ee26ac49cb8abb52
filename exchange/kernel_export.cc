#include "exchange/kernel_export.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json_limits.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/text_escape.h"
#include "exchange/export_bundle.h"
#include "exchange/export_folder.h"
#include "exchange/launcher_codegen.h"
#include "memory_store/judging_staleness.h"
#include "memory_store/production_baselines.h"
#include "memory_store/record_json.h"
#include "sandbox/judging_spec.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"

namespace kopt::exporter {

using nlohmann::json;

namespace {

constexpr const char* kGenerator = "kopt export";
constexpr const char* kReadmeBegin = "<!-- kopt:export:begin -->";
constexpr const char* kReadmeEnd = "<!-- kopt:export:end -->";
constexpr const char* kVerificationMethod =
    "kopt sandbox: every shape of the task's sweep and its holdout shapes, several rounds of fresh "
    "signed random inputs, outputs poisoned before each run and compared to the reference within "
    "the task's tolerance, guard zones and inputs checked unchanged, run twice for determinism; "
    "timed with CUPTI kernel records, L2 flushed before each sample, interleaved with the baseline";

struct PlannedFile {
  std::filesystem::path path;
  std::string contents;
  std::string task;  // the task the file belongs to; "" for the folder's shared files
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// The GPU model to export for: --gpu matched exactly, else as a case-insensitive part; without
// --gpu the one with the most verified evaluations of the task.
std::string choose_gpu(const std::vector<std::string>& gpus, const std::string& wanted) {
  if (wanted.empty()) return gpus.empty() ? "" : gpus.front();
  for (const auto& gpu : gpus) {
    if (gpu == wanted) return gpu;
  }
  for (const auto& gpu : gpus) {
    if (lower(gpu).find(lower(wanted)) != std::string::npos) return gpu;
  }
  return "";
}

std::map<std::string, int64_t> tunable_map(const std::string& text) {
  std::map<std::string, int64_t> values;
  auto parsed = parse_json_bounded(text);
  if (!parsed.is_object()) return values;
  for (const auto& [name, value] : parsed.items()) {
    if (value.is_number_integer()) values[name] = value.get<int64_t>();
  }
  return values;
}

// The manifest already in DIR, or an empty one; refuses a file kopt did not write.
Result<json> existing_manifest(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return json{{"format", kManifestFormat}, {"generator", kGenerator}, {"kernels", json::array()}};
  }
  auto text = read_file(path);
  if (!text) return make_error(text.error());
  auto manifest = parse_json_bounded(*text);
  if (!manifest.is_object() || manifest.value("generator", "") != kGenerator ||
      !manifest.contains("kernels") || !manifest["kernels"].is_array()) {
    return make_error(path.string() +
                      ": exists and was not written by kopt export; refusing to overwrite it");
  }
  if (manifest.value("format", 0) > kManifestFormat) {
    return make_error(path.string() + ": manifest format " +
                      std::to_string(manifest.value("format", 0)) +
                      " is newer than this kopt writes; upgrade kopt");
  }
  return manifest;
}

// The README's production and S cells from a manifest entry's "standing" (standing_json), names
// escaped; "-" for an entry exported by a kopt that wrote none.
std::string production_cell(const json& k) {
  const json s = k.value("standing", json::object());
  if (!s.is_object() || !s.contains("speedup_vs_baseline")) return "-";
  // The standing as written; format_production_speedup says it as status and the report do.
  Standing standing;
  if (s.contains("production_baseline") && s["production_baseline"].is_string()) {
    standing.production_name = s["production_baseline"].get<std::string>();
    standing.speedup_vs_production = s.value("speedup_vs_production", 0.0);
  }
  const json missing = s.value("libraries_not_installed", json::array());
  for (const auto& name : missing.is_array() ? missing : json::array())
    if (name.is_string()) standing.not_installed.push_back(name.get<std::string>());
  // The leading number stays as written (markdown_text is for names and words).
  std::string text = format_production_speedup(standing);
  std::string number =
      standing.production_name.empty() ? "" : fixed(standing.speedup_vs_production, 2) + "x ";
  return number + markdown_text(text.substr(number.size()));
}

std::string score_cell(const json& k) {
  const json s = k.value("standing", json::object());
  if (!s.is_object() || !s.contains("sol_score") || !s["sol_score"].is_number()) return "-";
  return fixed(s["sol_score"].get<double>(), 2) + " vs " +
         markdown_text(s.value("sol_score_reference", ""));
}

std::string readme_table(const json& kernels) {
  std::string table = std::string(kReadmeBegin) + "\n" +
                      "| task | speedup over baseline | speedup over production | % of speed of "
                      "light | S | GPU | median (us) | kernel source | launcher | verified on |\n"
                      "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | --- |\n";
  for (const auto& k : kernels) {
    std::string file = k.value("kernel_file", ""), header = k.value("header", "");
    // Every field read back from a manifest is free text to markdown; a link target is a file
    // name kopt made from a task name, and is written only when it is plain.
    auto link = [](const std::string& name) {
      return is_safe_file_stem(name) && name.find_first_of("()<> []") == std::string::npos
                 ? "[" + markdown_text(name) + "](" + name + ")"
                 : markdown_text(name);
    };
    table += "| " + markdown_text(k.value("task", "")) + " | " + fixed(k.value("speedup", 0.0), 2) +
             "x | " + production_cell(k) + " | " + fixed(k.value("sol_percent", 0.0), 1) + "% | " +
             score_cell(k) + " | " + markdown_text(k["gpu"].value("model", "")) + " | " +
             fixed(k.value("median_us", 0.0), 1) + " | " + link(file) + " | " + link(header) +
             " | " + markdown_text(k.value("date", "").substr(0, 10)) + " |\n";
  }
  return table + R"md(
What runs is the device code kopt compiled with NVRTC and verified (TASK.cubin, and TASK.ptx for
other GPUs; TASK_image.cc holds the same bytes for C++): the TASK.cu sources are for reading only
and nothing here compiles them. From CMake (plain C++, no CUDA compiler): `add_subdirectory()`
this folder and link `kopt::TASK` (then `#include "TASK_api.h"`); alone,
`cmake -S . -B build && cmake --build build && ctest --test-dir build` builds every kernel and
runs its self-test against the task's reference (skipped without a GPU). From PyTorch:
`import kopt_torch; kopt_torch.TASK(...)` or `torch.ops.kopt.TASK(...)` (nothing to build);
`pytest test_kopt_kernels.py` runs the same checks.
)md" + kReadmeEnd +
         "\n";
}

// README.md with kopt's table between its markers; text outside the markers is the user's.
Result<std::string> updated_readme(const std::filesystem::path& path, const json& kernels) {
  std::string table = readme_table(kernels);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return "# Kernels exported by kopt\n\nEach kernel's provenance (speedup, GPU, driver, CUDA, "
           "source hash, how it was verified) is in manifest.json.\n\n" +
           table;
  }
  auto text = read_file(path);
  if (!text) return make_error(text.error());
  size_t begin = text->find(kReadmeBegin), end = text->find(kReadmeEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return *text + (text->empty() || text->back() == '\n' ? "\n" : "\n\n") + table;
  }
  size_t after = end + std::string(kReadmeEnd).size();
  if (after < text->size() && (*text)[after] == '\n') ++after;
  return text->substr(0, begin) + table + text->substr(after);
}

Result<CommandOutput> git(const std::filesystem::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", dir.string()});
  return run_command(args, "", std::chrono::seconds(60));
}

Result<std::string> git_commit(const std::filesystem::path& dir,
                               const std::vector<std::string>& files, const std::string& message) {
  std::vector<std::string> status_args = {"status", "--porcelain", "--"};
  status_args.insert(status_args.end(), files.begin(), files.end());
  auto status = git(dir, status_args);
  if (!status || status->exit_code != 0) {
    return make_error(dir.string() +
                      ": git status failed: " + (status ? status->stderr_text : status.error()));
  }
  if (trim(status->stdout_text).empty()) return std::string();  // nothing to commit
  std::vector<std::string> add = {"add", "--"};
  add.insert(add.end(), files.begin(), files.end());
  auto added = git(dir, add);
  if (!added || added->exit_code != 0) {
    return make_error(dir.string() +
                      ": git add failed: " + (added ? added->stderr_text : added.error()));
  }
  std::vector<std::string> commit = {"commit", "-q", "-m", message, "--"};
  commit.insert(commit.end(), files.begin(), files.end());
  auto committed = git(dir, commit);
  if (!committed || committed->exit_code != 0) {
    return make_error(
        dir.string() + ": git commit failed (the files are written): " +
        (committed ? committed->stderr_text + committed->stdout_text : committed.error()));
  }
  auto head = git(dir, {"rev-parse", "HEAD"});
  return head && head->exit_code == 0 ? trim(head->stdout_text) : std::string("HEAD");
}

// Why the verdict `e` stands on is not current ("" when it is, or when the user allowed it): the
// current spec is the task's folder under tasks_root where it has one, else the memory's newest.
std::string stale_export(const ExportOptions& options, const memory::TaskRecord& task,
                         const memory::EvaluationRecord& e) {
  if (options.allow_stale_judgment) return "";
  std::string current = task.judging_spec_sha256;
  if (!options.tasks_root.empty() && is_safe_file_stem(task.name)) {
    if (auto on_disk = load_task(options.tasks_root / task.name)) {
      current = judging_spec_sha256(*on_disk);
    }
  }
  return memory::stale_judgment(e, current, options.verifier_version);
}

// The sha256 of the CUBIN the worker judged, as the evaluation recorded it ("" when the row
// predates the record or the JSON is not an object: then the export ships a deterministic
// recompile, as before).
std::string verified_image_sha256(const std::string& resources_json) {
  auto resources = parse_json_bounded(resources_json);
  if (!resources.is_object() || !resources.contains("image_sha256") ||
      !resources["image_sha256"].is_string())
    return "";
  return resources["image_sha256"].get<std::string>();
}

}  // namespace

bool is_safe_file_stem(const std::string& name) {
  if (name.empty() || name.size() > 200 || name == "." || name == ".." || name[0] == '.') {
    return false;
  }
  for (unsigned char c : name) {
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

namespace {

// What one export will write, built task by task before anything is written.
struct ExportPlan {
  ExportReport report;
  std::vector<PlannedFile> planned;
  std::vector<json> entries;                  // this export's manifest entries
  std::map<std::string, BundleTask> bundles;  // the folder-wide files' view of each task
};

// The best verified kernel of one task, with what the export needs of it.
struct ChosenKernel {
  std::string gpu;
  memory::EvaluationRecord evaluation;
  memory::KernelRecord kernel;
  TaskSpec spec;
};

// The memory's tasks (or --task's), refused whole when a name would write outside `dir`.
Result<std::vector<memory::TaskRecord>> chosen_tasks(memory::MemoryStore& store,
                                                     const ExportOptions& options) {
  const std::filesystem::path& dir = options.out_dir;
  std::vector<memory::TaskRecord> tasks;
  if (!options.task.empty()) {
    if (!is_safe_file_stem(options.task)) {
      return make_error("task name '" + options.task + "' would write outside " + dir.string() +
                        "; refused");
    }
    auto task = store.find_task(options.task);
    if (!task) return make_error(task.error());
    if (!*task) {
      auto all = store.list_tasks();
      std::vector<std::string> names;
      if (all) {
        for (const auto& t : *all) names.push_back(t.name);
      }
      return make_error("unknown task '" + options.task + "' (not in the memory)" +
                        did_you_mean(options.task, names));
    }
    tasks.push_back(std::move(**task));
  } else {
    auto all = store.list_tasks();
    if (!all) return make_error(all.error());
    tasks = std::move(*all);
  }
  for (const auto& task : tasks) {
    if (!is_safe_file_stem(task.name)) {
      return make_error("task name '" + task.name + "' would write outside " + dir.string() +
                        "; refused, nothing exported");
    }
  }
  return tasks;
}

// --git-commit needs `dir` inside a repository; the folder may not exist yet, so git is asked
// about its nearest existing ancestor.
Status check_git_folder(const std::filesystem::path& dir) {
  std::filesystem::path probe = std::filesystem::absolute(dir);
  while (!std::filesystem::exists(probe) && probe.has_parent_path() &&
         probe.parent_path() != probe) {
    probe = probe.parent_path();
  }
  auto top = git(probe, {"rev-parse", "--show-toplevel"});
  if (!top || top->exit_code != 0) {
    return make_error(dir.string() + " is not inside a git repository (--git-commit)");
  }
  return ok_status();
}

// The task's best verified kernel, or nullopt with the reason in `skipped` (none on the GPU,
// not fast enough, judged under an older spec). An error for a memory that contradicts itself:
// a spec naming another task, or a source that no longer hashes to what was verified.
Result<std::optional<ChosenKernel>> choose_kernel(memory::MemoryStore& store,
                                                  const ExportOptions& options,
                                                  const memory::TaskRecord& task,
                                                  ExportReport& report) {
  auto gpus = store.verified_gpus(task.name);
  if (!gpus) return make_error(gpus.error());
  std::string gpu = choose_gpu(*gpus, options.gpu);
  if (gpu.empty()) {
    report.skipped.push_back(task.name + ": no verified kernel" +
                             (options.gpu.empty() ? "" : " on " + options.gpu));
    return std::optional<ChosenKernel>();
  }
  auto best = store.best_kernel(task.name, gpu);
  if (!best) return make_error(best.error());
  if ((*best)->speedup <= options.min_speedup) {
    report.skipped.push_back(task.name + ": the best kernel on " + gpu + " is " +
                             fixed((*best)->speedup, 3) + "x the baseline, not above " +
                             fixed(options.min_speedup, 3) + "x (--min-speedup)");
    return std::optional<ChosenKernel>();
  }
  auto kernel = store.kernel((*best)->kernel_id);
  if (!kernel) return make_error(kernel.error());
  if (!*kernel)
    return make_error(task.name + ": kernel " + std::to_string((*best)->kernel_id) +
                      " is missing from the memory");
  auto spec = parse_task(task.spec_json, "memory: task " + task.name);
  if (!spec)
    return make_error(task.name + ": the stored task spec does not parse: " + spec.error());
  // Names reach generated CMake, C++ and Python: they must be what task.json allows, and the
  // spec must be the task's own.
  if (spec->name != task.name) {
    return make_error("task '" + task.name + "': its stored spec names task '" + spec->name +
                      "'; refused, nothing exported");
  }
  // What was verified is what is exported: the stored source must still hash to the sha256
  // it was stored (and judged) under.
  if (sha256_hex((*kernel)->source) != (*kernel)->sha256) {
    return make_error(task.name + ": the stored source of kernel " + std::to_string((*kernel)->id) +
                      " does not match its sha256 " + (*kernel)->sha256 +
                      " (the memory was changed after the kernel was verified); refused, "
                      "nothing exported");
  }
  if (std::string stale = stale_export(options, task, **best); !stale.empty()) {
    report.refused_stale.push_back(task.name + ": the best kernel (" +
                                   (*kernel)->sha256.substr(0, 12) + ") was " + stale + "; " +
                                   memory::kRejudgeAdvice + ", or pass --allow-stale-judgment");
    return std::optional<ChosenKernel>();
  }
  return std::optional<ChosenKernel>(ChosenKernel{gpu, **best, **kernel, std::move(*spec)});
}

// The manifest's entry for one exported kernel.
json manifest_entry(memory::MemoryStore& store, const memory::TaskRecord& task,
                    const ChosenKernel& chosen, const KernelFile& file,
                    const std::map<std::string, int64_t>& tunables, const BundleTask& bundle) {
  const memory::EvaluationRecord& e = chosen.evaluation;
  const memory::KernelRecord& k = chosen.kernel;
  json values = json::object();
  for (const auto& [name, value] : file.tunable_values(tunables)) values[name] = value;
  return json{{"task", task.name},
              {"kernel_file", task.name + ".cu"},
              {"header", task.name + ".cuh"},
              {"launcher", "kopt_" + cpp_identifier(task.name) + "::launch"},
              {"source_sha256", k.sha256},
              {"task_spec_sha256", task.spec_hash},
              {"gpu",
               {{"model", e.gpu.model},
                {"compute_capability", e.gpu.compute_capability},
                {"driver_version", e.gpu.driver_version},
                {"cuda_version", e.gpu.cuda_version}}},
              {"median_us", e.median_us},
              {"noise", e.noise},
              {"baseline_us", e.baseline_us},
              {"speedup", e.speedup},
              {"sol_percent", e.sol_percent},
              {"standing", standing_json(memory::evaluation_standing(store.database(), e))},
              {"tunables", values},
              {"compile_options", file.compile_options},
              {"cmake_target", "kopt::" + task.name},
              {"api_header", task.name + "_api.h"},
              {"cuda_architecture", bundle.cuda_architecture},
              {"image", bundle.image},
              {"reference_file", bundle.has_reference ? json(task.name + ".reference.cu") : json()},
              {"reference_image", bundle.reference_image},
              {"selftest", bundle.has_reference ? json(task.name + "_selftest.cc") : json()},
              {"python_plan", "kopt_plan_" + task.name + ".py"},
              {"torch", "kopt_torch." + cpp_identifier(task.name)},
              {"date", e.created_at},
              {"verification",
               {{"verdict", verdict_name(e.verdict)},
                {"detail", e.detail},
                {"method", kVerificationMethod}}},
              {"origin", memory::origin_json(k.origin)}};
}

// One task's files, manifest entry and report line, added to `plan` (or its skip reason).
Status plan_task(memory::MemoryStore& store, const ExportOptions& options,
                 const memory::TaskRecord& task, ExportPlan& plan) {
  auto chosen = choose_kernel(store, options, task, plan.report);
  if (!chosen) return make_error(chosen.error());
  if (!*chosen) return ok_status();
  const ChosenKernel& c = **chosen;
  const memory::EvaluationRecord& e = c.evaluation;
  auto file = parse_kernel_file(c.kernel.source, task.name + ".cu", &c.spec);
  if (!file) return make_error(task.name + ": " + file.error());
  auto tunables = tunable_map(e.tunables_json);
  if (tunables.empty()) tunables = tunable_map(c.kernel.tunables_json);
  TaskFilesInput input;
  input.task = &c.spec;
  input.kernel = &*file;
  input.kernel_source = c.kernel.source;
  input.tunables = tunables;
  input.provenance = fixed(e.speedup, 2) + "x over the baseline on " + c.gpu + ", source sha256 " +
                     c.kernel.sha256 + ", see manifest.json";
  input.reference_source = find_reference_source(options.tasks_root, task.name, task.spec_hash);
  input.compute_capability = e.gpu.compute_capability;
  input.verified_cubin_sha256 = verified_image_sha256(e.resources_json);
  if (options.vet) {
    std::string why =
        options.vet(task.spec_json, input.reference_source.value_or(""), c.kernel.source);
    if (!why.empty()) {
      plan.report.skipped.push_back(task.name + ": not exported: " + why);
      return ok_status();
    }
  }
  BundleTask& bundle = plan.bundles[task.name];
  auto task_files = generate_task_files(input, bundle);
  if (!task_files) return make_error(task.name + ": " + task_files.error());
  bundle.cuda_architecture = cuda_architecture_of(e.gpu.compute_capability);
  bundle.provenance = fixed(e.speedup, 2) + "x over the baseline on " + c.gpu;
  for (auto& f : *task_files)
    plan.planned.push_back({options.out_dir / f.name, std::move(f.contents), task.name});
  if (!bundle.has_reference) {
    plan.report.skipped.push_back(
        task.name +
        ": exported without a self-test: no reference.cu for this version of the task under " +
        (options.tasks_root.empty() ? std::string("(no --tasks)") : options.tasks_root.string()));
  }
  plan.entries.push_back(manifest_entry(store, task, c, *file, tunables, bundle));
  plan.report.kernels.push_back(
      {task.name, c.gpu, e.speedup, e.sol_percent, c.kernel.sha256, false});
  return ok_status();
}

// The folder-wide files (the merged manifest, the shared sources, README.md) added to `plan`,
// after checking that no planned file overwrites one of the user's or is planned twice.
Status plan_folder_files(memory::MemoryStore& store, const std::filesystem::path& dir,
                         ExportPlan& plan) {
  auto manifest = existing_manifest(dir / "manifest.json");
  if (!manifest) return make_error(manifest.error());
  // Merge: this export's kernels replace their tasks' entries, others stay; sorted by task.
  std::map<std::string, json> by_task;
  for (const auto& entry : (*manifest)["kernels"]) by_task[entry.value("task", "")] = entry;
  for (const auto& entry : plan.entries) by_task[entry["task"].get<std::string>()] = entry;
  json kernels = json::array();
  for (const auto& [name, entry] : by_task) kernels.push_back(entry);
  auto shared =
      generate_shared_files(folder_tasks(store, kernels, plan.bundles, plan.report.skipped));
  if (!shared) return make_error(shared.error());
  for (auto& f : *shared) plan.planned.push_back({dir / f.name, std::move(f.contents), ""});
  // Task names are free: "x_api" would write the "x_api.cc" of a task "x". Nothing is written then.
  std::map<std::filesystem::path, std::string> owners;
  for (const auto& file : plan.planned) {
    auto [it, fresh] = owners.emplace(file.path, file.task);
    if (!fresh) {
      return make_error(file.path.string() + " would be written for both task '" + it->second +
                        "' and task '" + file.task + "'; export them into different folders");
    }
  }
  // Every file is checked before any is written: a file of the user's in the way stops the
  // export with nothing half-written.
  std::vector<PlannedWrite> writes;
  for (const auto& file : plan.planned)
    writes.push_back({file.path.filename().string(), &file.contents});
  if (auto checked = check_overwrites(dir, writes, *manifest); !checked)
    return make_error(checked.error());
  json out{{"format", kManifestFormat},
           {"generator", kGenerator},
           {"kernels", kernels},
           {"files", written_files(*manifest, writes)}};
  plan.planned.push_back({dir / "manifest.json", dump_json(out, 2) + "\n", ""});
  auto readme = updated_readme(dir / "README.md", kernels);
  if (!readme) return make_error(readme.error());
  plan.planned.push_back({dir / "README.md", *readme, ""});
  return ok_status();
}

// Writes every planned file that differs from what is on disk; their names (relative to `dir`)
// are returned for --git-commit.
Result<std::vector<std::string>> write_planned(const std::filesystem::path& dir, ExportPlan& plan) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(dir.string() + ": cannot create the export folder: " + ec.message());
  if (::access(dir.c_str(), W_OK) != 0) {
    return make_error(dir.string() + ": the export folder is not writable");
  }
  std::vector<std::string> relative;
  for (const auto& file : plan.planned) {
    relative.push_back(file.path.filename().string());
    auto current = read_file(file.path);
    if (current && *current == file.contents) continue;  // unchanged: keep the file as it is
    if (auto s = write_file_atomic(file.path, file.contents); !s) return make_error(s.error());
    plan.report.written.push_back(file.path);
    for (auto& k : plan.report.kernels) k.changed = k.changed || file.task == k.task;
  }
  return relative;
}

}  // namespace

Result<ExportReport> export_kernels(memory::MemoryStore& store, const ExportOptions& options) {
  const std::filesystem::path& dir = options.out_dir;
  if (dir.empty()) return make_error("export: no output folder (--out DIR)");
  auto tasks = chosen_tasks(store, options);
  if (!tasks) return make_error(tasks.error());
  if (options.git_commit) {
    if (auto s = check_git_folder(dir); !s) return make_error(s.error());
  }
  ExportPlan plan;
  for (const auto& task : *tasks) {
    if (auto s = plan_task(store, options, task, plan); !s) return make_error(s.error());
  }
  if (plan.report.kernels.empty()) return plan.report;
  if (auto s = plan_folder_files(store, dir, plan); !s) return make_error(s.error());
  auto relative = write_planned(dir, plan);
  if (!relative) return make_error(relative.error());
  if (options.git_commit) {
    auto commit = git_commit(dir, *relative, commit_message(plan.report.kernels));
    if (!commit) return make_error(commit.error());
    plan.report.commit = *commit;
  }
  return plan.report;
}

}  // namespace kopt::exporter
