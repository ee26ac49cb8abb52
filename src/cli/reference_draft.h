// A reference kernel drafted by the configured coder model for `kopt tasks import` without
// --reference. The draft is model text: kopt's compile gate checks it before anything runs it,
// and it is accepted only when it matches the PyTorch module at every shape, like a given one.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"
#include "config/config.h"

namespace kopt::cli {

// The coder's kernel file for the task staged in `staging` (task.json, module.py). `failure`,
// when not empty, is why the previous draft was refused (a compile error or the mismatch), sent
// back for one repair.
Result<std::string> draft_reference(const LlmConfig& llm, const std::filesystem::path& staging,
                                    const std::string& previous, const std::string& failure);

}  // namespace kopt::cli
