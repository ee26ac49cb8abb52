// The one secret scrubber: registered key values (whole or a revealing run) and key-shaped
// strings go; ordinary text, code and logs stay as they are.
#include "common/scrub_secrets.h"

#include <gtest/gtest.h>

#include <string>

namespace kopt {
namespace {

TEST(ScrubSecrets, RegisteredValuesAndTheirRunsGo) {
  const std::string key = "zq7-Registered-Canary-Value-4711";
  EXPECT_NE(scrub_secrets("k=" + key).find(key), std::string::npos);  // not key-shaped
  register_secret(key);
  EXPECT_EQ(scrub_secrets("echo " + key + " end"), "echo [redacted] end");
  // A prefix of 12 characters shows the key (servers echo "sk-proj-abc..."); 11 do not.
  EXPECT_EQ(scrub_secrets("got " + key.substr(0, 12) + "..."), "got [redacted]...");
  EXPECT_EQ(scrub_secrets("got " + key.substr(0, 11)), "got " + key.substr(0, 11));
  EXPECT_EQ(scrub_secret_value("a secretvalue b", "secretvalue"), "a [redacted] b");
  register_secret("short");  // too short to scrub without eating words
  EXPECT_EQ(scrub_secrets("a short word"), "a short word");
}

TEST(ScrubSecrets, KeyShapedStringsGo) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"key sk-proj-ABCDEF1234567890xyz here", "key [redacted] here"},
      {"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "[redacted]"},
      {"token ghp_0123456789abcdefghijABCDEFGHIJ", "token [redacted]"},
      {"id AKIAIOSFODNN7EXAMPLE.", "id [redacted]."},
      {"api_key=0123456789abcdef&x=1", "api_key=[redacted]&x=1"},
      {"\"token\": \"c2VjcmV0LXRva2VuLXZhbHVl==\"", "\"token\": \"[redacted]\""},
      {"Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer [redacted]"},
      {"bearer abcdefghijklmnop", "bearer [redacted]"},
      {"PASSWORD = hunter2hunter2", "PASSWORD = [redacted]"},
  };
  for (const auto& c : cases) EXPECT_EQ(scrub_secrets(c.in), c.out) << c.in;
  // Twins that must stay: short values, words that merely contain a name, ordinary code.
  const std::string kept[] = {"task-softmax ok",
                              "timeout after 30 s",
                              "monkey=1234567890ab",
                              "key: 42",
                              "float* sk = x; int token = i + 1;",
                              "__global__ void k(float* x) { x[0] = 1; }",
                              "ask-for-more-items-in-this-list",
                              "error: identifier \"INFINITY\" is undefined"};
  for (const auto& text : kept) EXPECT_EQ(scrub_secrets(text), text);
}

TEST(ScrubSecrets, LinearOnHugeHostileText) {
  // 9 MB of near-misses: each would make a backtracking regex retry at every position.
  std::string text;
  while (text.size() < 9'000'000) text += "token=abc sk-12 key:'1234567 Bearer x ";
  register_secret("another-registered-value-0000");
  // No timing asserted here (bench/ measures speed): a backtracking scan would run into the
  // test's ctest timeout instead of finishing.
  EXPECT_EQ(scrub_secrets(text), text);
}

}  // namespace
}  // namespace kopt
