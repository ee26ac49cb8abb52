// Loading the config file: the top level and the database section; the llm and daemon sections
// have their own files.
#include "config/config.h"

#include <cstdlib>

#include "common/files.h"
#include "common/scrub_secrets.h"
#include "common/strings.h"
#include "config/config_sections.h"

namespace kopt {

using nlohmann::json;

namespace {

// "~/x" is the home directory's x; other relative paths are relative to the config file's
// folder, so a config means the same thing whatever the daemon's working directory.
std::filesystem::path resolve_path(const std::string& text, const std::filesystem::path& origin) {
  if (starts_with(text, "~/")) {
    if (const char* home = std::getenv("HOME"); home && *home)
      return std::filesystem::path(home) / text.substr(2);
  }
  std::filesystem::path p(text);
  if (p.is_absolute() || origin.empty()) return p;
  return origin.parent_path() / p;
}

}  // namespace

Config default_config() {
  Config config;
  config.database_path = data_directory() / "memory.db";
  return config;
}

Result<Config> parse_config(const std::string& text, const std::filesystem::path& origin) {
  JsonReader reader(origin.string());
  auto root = reader.parse(text);
  if (!root) return make_error(reader.message());
  if (!root->is_object()) {
    return make_error(origin.string() + ": $: expected an object, found " +
                      json_type_name(root->type()));
  }

  Config config = default_config();
  config.source = origin;
  ObjectReader r(reader, &*root, "$");
  int format = kConfigFormatVersion;
  r.integer("format", format, ObjectReader::Bound::kPositive);
  if (format > kConfigFormatVersion) {
    reader.error("$.format", "version " + std::to_string(format) +
                                 " is newer than this kopt understands (" +
                                 std::to_string(kConfigFormatVersion) + ")");
  }

  ObjectReader database(reader, r.object("database"), "$.database");
  std::string db_path;
  database.string("path", db_path);
  database.finish();
  if (!db_path.empty()) config.database_path = resolve_path(db_path, origin);

  // "llm": null says "no LLM" explicitly, as does leaving the section out.
  if (root->contains("llm") && (*root)["llm"].is_null()) {
    r.ignore("llm");
  } else if (const json* llm = r.object("llm")) {
    config.llm = read_llm_section(reader, *llm);
  }
  config.daemon = read_daemon_section(reader, r.object("daemon"));
  r.finish();

  if (!reader.ok()) return make_error(reader.message());
  // The configured keys' values are secrets for every scrub in this process (common/
  // scrub_secrets.h), whichever provider ends up used; so are secret-named environment values.
  register_environment_secrets();
  if (config.llm) {
    for (const auto& [_, provider] : config.llm->providers) {
      const char* key =
          provider.api_key_env.empty() ? nullptr : std::getenv(provider.api_key_env.c_str());
      if (key) register_secret(key);
    }
  }
  return config;
}

Result<Config> load_config(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return make_error("config: " + text.error());
  return parse_config(*text, path);
}

std::filesystem::path default_config_path() {
  if (const char* v = std::getenv("KOPT_CONFIG"); v && *v) return v;
  return data_directory() / "config.json";
}

Result<Config> load_config_or_defaults(const std::optional<std::filesystem::path>& explicit_path) {
  if (explicit_path) return load_config(*explicit_path);
  // A file named by $KOPT_CONFIG was asked for, so its absence is an error; the default file
  // is merely looked for.
  if (const char* v = std::getenv("KOPT_CONFIG"); v && *v) return load_config(v);
  std::filesystem::path path = default_config_path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return default_config();
  return load_config(path);
}

std::filesystem::path database_path_for(const std::optional<std::filesystem::path>& db_flag,
                                        const Config& config) {
  if (db_flag) return *db_flag;
  if (const char* env = std::getenv("KOPT_DB"); env && *env) return env;
  return config.database_path;
}

Result<std::filesystem::path> resolve_database_path(
    const std::optional<std::filesystem::path>& db_flag,
    const std::optional<std::filesystem::path>& config_flag) {
  if (db_flag) return *db_flag;
  if (const char* env = std::getenv("KOPT_DB"); env && *env) return std::filesystem::path(env);
  auto config = load_config_or_defaults(config_flag);
  if (!config) return make_error(config.error());
  return config->database_path;
}

}  // namespace kopt
