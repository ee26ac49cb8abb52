#include "agents/prompt_library.h"

#include <cstdlib>
#include <stdexcept>

#include "common/files.h"
#include "common/strings.h"

namespace kopt::agents {

namespace {

// Placeholders every agent that works on a task can fill in.
std::vector<std::string> with_task(std::vector<std::string> names) {
  for (const char* name : {"task_name", "task_description", "task_tags", "task_sizes", "gpu",
                           "bound", "task_contract", kStablePrefixEnd}) {
    names.push_back(name);
  }
  return names;
}

}  // namespace

const std::vector<TemplateSpec>& template_specs() {
  static const std::vector<TemplateSpec> specs = {
      {"system.txt", {"gpu"}, {}},
      {"kernel_format.txt", {}, {}},
      {"planner.txt",
       with_task({"current_kernel", "measurements", "where_time_goes", "memory_examples",
                  "memory_warnings", "num_plans", "kernel_format", "tried_plans", "beam_summary",
                  "tuner_facts", "technique_cards"}),
       {"task_description", "current_kernel", "num_plans"}},
      {"coder.txt",
       with_task({"plan", "current_kernel", "measurements", "where_time_goes", "memory_examples",
                  "memory_warnings", "kernel_format", "earlier_answers"}),
       {"plan", "current_kernel", "kernel_format"}},
      {"repair.txt",
       with_task({"plan", "candidate_kernel", "failure_kind", "failure", "attempt", "max_attempts",
                  "kernel_format", "current_kernel", "earlier_attempts"}),
       {"candidate_kernel", "failure"}},
      {"summarizer.txt",
       with_task({"slow_kernel", "fast_kernel", "slow_measurements", "fast_measurements",
                  "slow_profile", "fast_profile", "speedup", "direction", "diff"}),
       {"slow_kernel", "fast_kernel", "speedup"}},
  };
  return specs;
}

Result<PromptLibrary> PromptLibrary::load(const std::filesystem::path& dir) {
  PromptLibrary library;
  library.dir_ = dir;
  std::vector<std::string> errors;
  for (const TemplateSpec& spec : template_specs()) {
    std::filesystem::path path = dir / spec.file;
    auto text = read_file(path);
    if (!text) {
      errors.push_back(path.string() + ": cannot read the prompt template (" + text.error() + ")");
      continue;
    }
    auto tpl = PromptTemplate::parse_checked(*text, path.string(), spec);
    if (!tpl) {
      errors.push_back(tpl.error());
      continue;
    }
    if (spec.file == "kernel_format.txt") library.kernel_format_ = *text;
    library.templates_.emplace(spec.file, std::move(*tpl));
  }
  if (!errors.empty())
    return make_error("prompt templates in " + dir.string() + ":\n" + join(errors, "\n"));
  return library;
}

const PromptTemplate& PromptLibrary::get(const std::string& file) const {
  auto it = templates_.find(file);
  if (it == templates_.end()) throw std::logic_error("no prompt template " + file);
  return it->second;
}

std::filesystem::path default_prompts_dir(const std::filesystem::path& configured) {
  if (!configured.empty()) return configured;
  if (const char* v = std::getenv("KOPT_PROMPTS"); v && *v) return v;
  if (std::filesystem::exists("prompts/coder.txt")) return "prompts";
  return std::filesystem::path(KOPT_SOURCE_DIR) / "prompts";
}

}  // namespace kopt::agents
