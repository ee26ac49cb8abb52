// The names the memory stores for its enums (evaluations.verdict, kernels.origin_agent,
// runs.status; llm_calls.status in tests/llm/wire_format_test.cc): a database and an export written
// by one kopt are read by the next, so each name is pinned here against its enumerator. The name
// tables list names by position (common/enum_names.h), and this is what catches two names swapped
// or one renamed.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/origin.h"
#include "common/run_status.h"
#include "common/verdict.h"

namespace kopt {
namespace {

template <typename Enum, typename Name, typename Parse>
void expect_names(const std::vector<std::pair<Enum, std::string>>& expected, Name name,
                  Parse parse) {
  for (const auto& [value, text] : expected) {
    EXPECT_EQ(name(value), text);
    auto parsed = parse(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(*parsed, value) << text;
  }
}

TEST(StoredNames, Verdicts) {
  expect_names<Verdict>({{Verdict::kOk, "ok"},
                         {Verdict::kCompileError, "compile_error"},
                         {Verdict::kInvalidPlan, "invalid_plan"},
                         {Verdict::kLaunchError, "launch_error"},
                         {Verdict::kIncorrect, "incorrect"},
                         {Verdict::kNondeterministic, "nondeterministic"},
                         {Verdict::kOutOfBounds, "out_of_bounds"},
                         {Verdict::kModifiedInput, "modified_input"},
                         {Verdict::kTimeout, "timeout"},
                         {Verdict::kCrash, "crash"},
                         {Verdict::kSuspicious, "suspicious"},
                         {Verdict::kGpuBusy, "gpu_busy"},
                         {Verdict::kSanitizer, "sanitizer"},
                         {Verdict::kSanitizing, "sanitizing"}},
                        verdict_name, parse_verdict);
  EXPECT_FALSE(parse_verdict("OK").has_value());
}

TEST(StoredNames, OriginsAndRunStatuses) {
  expect_names<Origin>({{Origin::kUnknown, ""},
                        {Origin::kBaseline, "baseline"},
                        {Origin::kCoder, "coder"},
                        {Origin::kTuner, "tuner"}},
                       origin_name, parse_origin);
  expect_names<RunStatus>({{RunStatus::kRunning, "running"},
                           {RunStatus::kFinished, "finished"},
                           {RunStatus::kBudget, "budget"},
                           {RunStatus::kInterrupted, "interrupted"},
                           {RunStatus::kFailed, "failed"}},
                          run_status_name, parse_run_status);
}
}  // namespace
}  // namespace kopt
