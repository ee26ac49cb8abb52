// The readers of the config file's sections, one file each; used by config.cc only.
#pragma once

#include <filesystem>

#include "config/config.h"
#include "config/object_reader.h"

namespace kopt {

// `section` is the "llm" object (already type-checked); `path` is "$.llm".
LlmConfig read_llm_section(JsonReader& reader, const nlohmann::json& section);

// `section` may be null (no "daemon" key): the defaults then stand.
DaemonConfig read_daemon_section(JsonReader& reader, const nlohmann::json* section);

}  // namespace kopt
