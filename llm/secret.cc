#include "llm/secret.h"

#include <cstdlib>

#include "common/scrub_secrets.h"

namespace kopt {

Result<Secret> Secret::from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value || !*value) return make_error("environment variable " + name + " is not set");
  return of(value);
}

Secret Secret::of(std::string value) {
  // Every scrub in the process (store, logs, compile cache, prompts) removes it from now on.
  register_secret(value);
  Secret s;
  s.value_ = std::move(value);
  return s;
}

std::string Secret::scrub(std::string_view text) const { return scrub_secret_value(text, value_); }

}  // namespace kopt
