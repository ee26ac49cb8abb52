// `kopt eval --shapes` (issue 37): each sweep shape of the task becomes a request whose default
// sizes are that shape, verified once and timed; the table has one row per shape. The GPU is a
// recording stand-in (a test double for the worker), the task the real softmax task.
#include "src/cli/eval_shapes.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "sandbox/task_spec.h"

namespace kopt::cli {
namespace {

// Answers ok with a time that grows with the shape, and keeps every request.
class RecordingEvaluator final : public Evaluator {
 public:
  Result<EvalResult> evaluate(const EvalRequest& request) override {
    requests.push_back(request);
    auto task = nlohmann::json::parse(request.task_json);
    double elements = 1;
    for (const auto& [name, value] : task["sizes"].items()) elements *= value.get<double>();
    EvalResult r;
    r.verdict = Verdict::kOk;
    r.candidate_time = TimingSummary{.median_us = elements / 1000, .noise = 0.001};
    r.baseline_time = TimingSummary{.median_us = elements / 500, .noise = 0.001};
    r.speedup = 2.0;
    return r;
  }
  std::string name() const override { return "recording"; }
  std::vector<EvalRequest> requests;
};

TEST(EvalShapes, EachSweepShapeIsTimedAsTheDefaultOfItsOwnRequest) {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/softmax/task.json");
  ASSERT_TRUE(text);
  auto task = nlohmann::json::parse(*text);
  EvalRequest request;
  request.task_json = *text;
  request.options.rounds = 5;
  RecordingEvaluator gpu;
  auto rows = time_each_shape(gpu, request);
  ASSERT_TRUE(rows) << rows.error();
  ASSERT_EQ(rows->size(), task["shapes"].size());
  ASSERT_EQ(gpu.requests.size(), task["shapes"].size());
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& overrides = task["shapes"][i];
    auto sent = nlohmann::json::parse(gpu.requests[i].task_json);
    for (const auto& [name, value] : overrides.items()) EXPECT_EQ(sent["sizes"][name], value);
    EXPECT_EQ(sent["shapes"], nlohmann::json::array({nlohmann::json::object()}));
    EXPECT_FALSE(sent.contains("holdout"));
    EXPECT_EQ(gpu.requests[i].options.rounds, 1);
    EXPECT_FALSE(gpu.requests[i].options.stress);
    EXPECT_TRUE(gpu.requests[i].options.time);
    // The request is still a task kopt accepts.
    EXPECT_TRUE(parse_task(gpu.requests[i].task_json, "task.json")) << sent.dump();
    EXPECT_EQ((*rows)[i].verdict, "ok");
    EXPECT_DOUBLE_EQ((*rows)[i].speedup, 2.0);
  }
  EXPECT_EQ(rows->back().shape,
            task["shapes"].back().empty() ? "(timed shape)" : rows->back().shape);
  auto json = shape_timings_json(*rows);
  EXPECT_EQ(json.size(), rows->size());
  EXPECT_TRUE(json[0]["sol_percent"].is_null());  // not measured: null
}

TEST(EvalShapes, AShapeNamingAnUnknownSizeIsAnError) {
  auto at = task_at_shape(R"({"sizes": {"n": 4}, "shapes": [{}]})", {{"m", 3}});
  ASSERT_FALSE(at);
  EXPECT_NE(at.error().find("unknown size m"), std::string::npos);
}

}  // namespace
}  // namespace kopt::cli
