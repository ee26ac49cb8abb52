// The one secret scrubber. Every text kopt stores (evaluation details, logs, compile cache
// entries, JSONL exports) or sends to a model (prompts) passes through scrub_secrets(), a second
// line of defence behind the rules that keep keys out of reach (scrubbed child environments,
// toolkit-only includes). It removes
//  - the values of the keys this process has read (register_secret(): src/llm's Secret and the
//    config loader call it for every configured provider key and every secret-named
//    environment variable), also when only a run of 12 or more of their characters shows, and
//    also when their letters and digits show split by whitespace or punctuation;
//  - key-shaped strings: sk-... (OpenAI, Anthropic's sk-ant-...), GitHub tokens (ghp_, gho_,
//    ghu_, ghs_, ghr_, github_pat_), AWS access key ids (AKIA..., ASIA...), Google API keys
//    (AIza...), Slack tokens (xox?-...), the value after "Bearer " and after key=, token=,
//    secret=, password=, api_key: and Authorization: (quotes and spaces allowed around the sign).
// One linear pass per text (no backtracking regex: the text may be hostile and megabytes long).
#pragma once

#include <string>
#include <string_view>

namespace kopt {

// What a scrubbed secret becomes.
inline constexpr std::string_view kRedacted = "[redacted]";

// Remembers `value` (a key read from the environment) for every later scrub_secrets() in this
// process. Values shorter than 8 characters are ignored: they would redact ordinary words.
void register_secret(std::string_view value);

// `text` with registered secrets and key-shaped strings replaced by "[redacted]".
std::string scrub_secrets(std::string_view text);

// `text` with the registered secrets (plain and split) replaced, key shapes left alone: for a
// model's answer, whose code may say `key = threadIdx.x` but must never hold the user's key
// (an endpoint that echoes the Authorization header into the answer).
std::string scrub_registered_secrets(std::string_view text);

// `text` with runs of `value` (12 characters or the whole value, if shorter) replaced: the
// matching half of scrub_secrets(), for a caller that holds one key.
std::string scrub_secret_value(std::string_view text, std::string_view value);

// `text` with runs of `value`'s letters and digits (12 or all of them) replaced where they show
// with anything between them (whitespace, punctuation, quotes: a key split to dodge the plain
// match, or echoed one character per line); the separators inside a run go with it.
std::string scrub_split_secret_value(std::string_view text, std::string_view value);

// Whether an environment variable with this name holds a secret by kopt's rule (its name
// contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL): such variables never reach a
// child, and their values are scrubbed like keys.
bool is_secret_variable_name(std::string_view name);

// register_secret() for the value of every environment variable is_secret_variable_name()
// marks: the daemon calls it at start, so a token the user exported for another tool is
// scrubbed from answers, logs and exports as the provider key is.
void register_environment_secrets();

}  // namespace kopt
