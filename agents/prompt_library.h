// The prompt templates of every agent, loaded from one folder (prompts/) when the daemon starts
// and checked there: a bad template stops `kopt run` before any work begins.
//
//   system.txt         the system prompt of every agent
//   kernel_format.txt  how a kernel file looks (the kopt:plan block); filled into {{kernel_format}}
//   planner.txt        the planner's request: several distinct optimization plans as JSON
//   coder.txt          the coder's request: one complete kernel file for one plan
//   repair.txt         the coder's follow-up when its kernel failed to compile or was wrong
//   summarizer.txt     the lesson of a slow-to-fast (or fast-to-slow) pair
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agents/prompt_template.h"
#include "common/result.h"

namespace kopt::agents {

// What each template file may and must use.
const std::vector<TemplateSpec>& template_specs();

class PromptLibrary {
 public:
  // Loads and checks every template in `dir`; the error lists every problem in every file.
  static Result<PromptLibrary> load(const std::filesystem::path& dir);

  // The template loaded from `file` ("coder.txt"); a name not in template_specs() is a bug.
  const PromptTemplate& get(const std::string& file) const;
  // kernel_format.txt as text (it has no placeholders).
  const std::string& kernel_format() const { return kernel_format_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::map<std::string, PromptTemplate> templates_;
  std::string kernel_format_;
};

// The prompts folder: `configured` when not empty, else $KOPT_PROMPTS, else ./prompts when it
// exists, else the source tree's prompts/.
std::filesystem::path default_prompts_dir(const std::filesystem::path& configured = {});

}  // namespace kopt::agents
