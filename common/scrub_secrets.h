// The one secret scrubber. Every text kopt stores (evaluation details, logs, compile cache
// entries, JSONL exports) or sends to a model (prompts) passes through scrub_secrets(), a second
// line of defence behind the rules that keep keys out of reach (scrubbed child environments,
// toolkit-only includes). It removes
//  - the values of the keys this process has read (register_secret(): src/llm's Secret and the
//    config loader call it for every configured provider key), also when only a run of 12 or
//    more of their characters shows;
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

// `text` with runs of `value` (12 characters or the whole value, if shorter) replaced: the
// matching half of scrub_secrets(), for a caller that holds one key.
std::string scrub_secret_value(std::string_view text, std::string_view value);

}  // namespace kopt
