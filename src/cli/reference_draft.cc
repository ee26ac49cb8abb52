#include "src/cli/reference_draft.h"

#include "agents/prompt_library.h"
#include "common/files.h"
#include "llm/extract.h"
#include "llm/llm_service.h"

namespace kopt::cli {
namespace {

constexpr const char* kSystem =
    "You write the trusted reference kernel of a kopt task: the oracle every optimized kernel is "
    "checked against. Correctness is everything, speed does not matter.";

constexpr const char* kRules =
    "Write reference.cu for this task: one complete CUDA file with its kopt:plan comment that "
    "computes exactly what the PyTorch module's forward computes, for every size in the task's "
    "sweep and holdouts (sizes of 1, sizes that are not multiples of anything). Accumulate in "
    "double, read inputs by the shapes in task.json (row-major, contiguous), convert to the output "
    "dtype once at the end, write every output element, never write an input. Integer index math "
    "in long long. Keep it simple: one thread per output element or per row is fine. Answer with "
    "the file in one ```cuda block.";

}  // namespace

Result<std::string> draft_reference(const LlmConfig& llm, const std::filesystem::path& staging,
                                    const std::string& previous, const std::string& failure) {
  auto task_json = read_file(staging / "task.json");
  if (!task_json) return make_error(task_json.error());
  auto module = read_file(staging / "module.py");
  if (!module) return make_error(module.error());
  auto prompts = agents::PromptLibrary::load(agents::default_prompts_dir());
  if (!prompts) return make_error("prompts: " + prompts.error());
  std::string prompt = std::string(kRules) + "\n\n## How a kernel file looks\n\n" +
                       prompts->kernel_format() + "\n\n## task.json\n\n```json\n" + *task_json +
                       "\n```\n\n## The PyTorch module (module.py)\n\n```python\n" + *module +
                       "\n```\n";
  if (!failure.empty())
    prompt += "\n## Your previous draft was refused\n\n```cuda\n" + previous + "\n```\n\n" +
              failure + "\n\nFix it and answer with the whole corrected file.\n";
  auto service = LlmService::create(llm);
  if (!service) return make_error(service.error());
  LlmResponse response =
      (*service)->complete(LlmRequest::user("coder", kSystem, std::move(prompt)));
  if (response.status != LlmStatus::kOk)
    return make_error(std::string("the coder model: ") + llm_status_name(response.status) + ": " +
                      response.error);
  return extract_code_block(response.text, "cuda");
}

}  // namespace kopt::cli
