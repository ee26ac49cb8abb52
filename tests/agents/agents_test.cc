// The planner, the coder and the summarizer against a scripted LLM and the shipped prompts: what
// they put in the prompt, how they read the answer, and the coder's bounded repair loop.
#include <gtest/gtest.h>

#include "agents/coder.h"
#include "agents/planner.h"
#include "agents/prompt_library.h"
#include "agents/summarizer.h"
#include "tests/agents/scripted_llm.h"

namespace kopt::agents {
namespace {

using kopt::testing::ScriptedLlm;

const char* kKernel = R"~(// axpy
/* kopt:plan
{"launches": [{"kernel": "axpy", "grid": ["ceil_div(n, 256)"], "block": [256],
               "args": ["x", "y", "out", "n", "alpha"]}]}
*/
extern "C" __global__ void axpy(const float* x, const float* y, float* out, int n, float alpha) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
)~";

std::string fenced(const std::string& code) { return "Here you go:\n```cuda\n" + code + "```\n"; }

class AgentsTest : public ::testing::Test {
 protected:
  AgentsTest() {
    auto loaded = PromptLibrary::load(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts");
    if (!loaded) throw std::runtime_error(loaded.error());
    library_.emplace(std::move(*loaded));
    caller_.emplace(llm_, *library_);
    context_.task = {"axpy",
                     "out = alpha * x + y",
                     {"elementwise", "memory-bound", "fp32"},
                     "timed at n=67108864",
                     "NVIDIA H100 (sm_90a, 132 SMs)",
                     "memory-bound"};
    context_.current.source = kKernel;
    Measurements m;
    m.median_us = 301.5;
    m.baseline_us = 301.5;
    m.speedup = 1.0;
    m.sol_us = 268.4;
    m.sol_percent = 89.0;
    m.registers = 16;
    m.occupancy = 1.0;
    context_.current.measurements = m;
    context_.examples.push_back({7,
                                 "gelu",
                                 1.31,
                                 "float4 loads cut instructions 4x",
                                 {"elementwise", "float4"},
                                 "-a\n+b\n"});
    context_.warnings.push_back(
        {9, "axpy", 0.7, "shared-memory staging only added latency", {"elementwise"}, ""});
  }

  ScriptedLlm llm_;
  std::optional<PromptLibrary> library_;
  std::optional<AgentCaller> caller_;
  WorkContext context_;
  AgentUsage usage_;
};

TEST_F(AgentsTest, PlannerPromptCarriesTaskKernelMeasurementsAndMemory) {
  llm_.reply("planner", R"({"plans": [{"title": "float4", "detail": "vectorize"},
                                       {"title": "Float4!", "detail": "the same again"},
                                       {"title": "grid stride", "detail": "fewer blocks"},
                                       "unroll by four"]})");
  Planner planner(*caller_);
  auto plans = planner.propose(context_, 2, usage_);
  ASSERT_TRUE(plans) << plans.error();
  ASSERT_EQ(plans->size(), 2u);  // the near-duplicate "Float4!" is dropped, then the cap
  EXPECT_EQ((*plans)[0].title, "float4");
  EXPECT_EQ((*plans)[1].title, "grid stride");
  auto prompt = llm_.prompts("planner").at(0);
  for (const char* needed :
       {"out = alpha * x + y", "extern \"C\" __global__ void axpy", "301.50 us", "89.0% of it",
        "16 registers", "float4 loads cut", "shared-memory staging only added latency",
        "Propose 2 DISTINCT", "/* kopt:plan", "memory-bound"}) {
    EXPECT_NE(prompt.find(needed), std::string::npos) << needed;
  }
  EXPECT_NE(llm_.requests().at(0).system.find("NVIDIA H100"), std::string::npos);
  EXPECT_EQ(usage_.calls, 1);
  EXPECT_EQ(usage_.input_tokens, 1000);
}

TEST_F(AgentsTest, PromptsCarryWhereTheTimeGoes) {
  llm_.reply("planner", R"({"plans": [{"title": "float4", "detail": "vectorize"}]})");
  context_.current.measurements->where_time_goes =
      "DRAM 61% of peak (805 MB), L2 hit 12%, top stalls: long scoreboard 48%";
  Planner planner(*caller_);
  ASSERT_TRUE(planner.propose(context_, 1, usage_));
  auto prompt = llm_.prompts("planner").at(0);
  EXPECT_NE(prompt.find("## Where the time goes (hardware counters at the timed shape)\n\n"
                        "DRAM 61% of peak (805 MB), L2 hit 12%, top stalls: long scoreboard 48%"),
            std::string::npos)
      << prompt;
  // The coder, implementing a plan for the same kernel, sees the same counters.
  llm_.reply("coder", fenced(kKernel));
  Coder coder(*caller_);
  Judge accept = [](const std::string&, int) { return Judgement{true, false, "ok", ""}; };
  ASSERT_TRUE(coder.develop(context_, {"float4", "vectorize"}, accept, 1, usage_).accepted);
  auto coder_prompt = llm_.prompts("coder").at(0);
  EXPECT_NE(coder_prompt.find("## Where the time goes (hardware counters at the timed shape)\n\n"
                              "DRAM 61% of peak (805 MB), L2 hit 12%"),
            std::string::npos)
      << coder_prompt;
  // Not profiled: the section says so instead of staying empty.
  auto values = work_values(WorkContext{});
  EXPECT_NE(values.at("where_time_goes").find("not profiled"), std::string::npos);

  llm_.reply("summarizer", R"({"lesson": "padding removed the conflicts.", "tags": ["padding"]})");
  Summarizer summarizer(*caller_);
  PairFacts facts;
  facts.task = context_.task;
  facts.before_source = kKernel;
  facts.after_source = std::string(kKernel) + "// padded\n";
  facts.speedup = 1.3;
  facts.before = Measurements{};
  facts.before->where_time_goes = "shared-memory bank conflicts 31% of wavefronts";
  facts.after = Measurements{};
  facts.after->where_time_goes = "shared-memory bank conflicts 0% of wavefronts";
  ASSERT_TRUE(summarizer.summarize(facts, usage_));
  auto lesson_prompt = llm_.prompts("summarizer").at(0);
  EXPECT_NE(lesson_prompt.find("Hardware counters: shared-memory bank conflicts 31%"),
            std::string::npos);
  EXPECT_NE(lesson_prompt.find("Hardware counters: shared-memory bank conflicts 0%"),
            std::string::npos);
}

TEST_F(AgentsTest, PlanParsingAcceptsCommonShapesAndRefusesNone) {
  auto bare = parse_plans("Sure!\n```json\n[{\"name\": \"tile\", \"description\": \"d\"}]\n```");
  ASSERT_TRUE(bare) << bare.error();
  EXPECT_EQ(bare->at(0).title, "tile");
  EXPECT_EQ(bare->at(0).detail, "d");
  EXPECT_FALSE(parse_plans("I would vectorize it."));
  EXPECT_FALSE(parse_plans(R"({"ideas": []})"));
  EXPECT_FALSE(parse_plans(R"({"plans": [{"title": ""}]})"));
}

TEST_F(AgentsTest, CoderRepairsACompileErrorWithTheLogInThePrompt) {
  llm_.reply("coder", fenced(std::string(kKernel) + "broken;\n"));
  llm_.reply("coder", fenced(kKernel));
  Coder coder(*caller_);
  std::vector<std::string> judged;
  Judge judge = [&](const std::string& source, int attempt) {
    judged.push_back(source);
    if (attempt == 1) return Judgement{false, true, "compile_error", "line 9: error: broken"};
    return Judgement{true, false, "ok", ""};
  };
  auto outcome = coder.develop(context_, {"vectorize", "use float4"}, judge, 2, usage_);
  EXPECT_TRUE(outcome.accepted);
  EXPECT_EQ(outcome.attempts, 2);
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_EQ(outcome.source, kKernel);
  auto prompts = llm_.prompts("coder");
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_NE(prompts[0].find("use float4"), std::string::npos);
  EXPECT_NE(prompts[1].find("line 9: error: broken"), std::string::npos);
  EXPECT_NE(prompts[1].find("compile_error"), std::string::npos);
  EXPECT_NE(prompts[1].find("broken;"), std::string::npos);  // the failed file is shown
  EXPECT_EQ(usage_.calls, 2);
}

// Every prompt of a task opens with what stays the same (the contract; the kernel format for the
// agents that write files), so a provider's prompt cache serves it after the first call; what
// changes from call to call comes after the marked prefix.
TEST_F(AgentsTest, PromptsOpenWithTheirStablePrefix) {
  context_.task.contract = "# Contract of task axpy (the same in every prompt of this task)\n";
  llm_.reply("planner", R"({"plans": [{"title": "float4", "detail": "vectorize"}]})");
  llm_.reply("coder", fenced(std::string(kKernel) + "broken;\n"));
  llm_.reply("coder", fenced(kKernel));
  Planner planner(*caller_);
  ASSERT_TRUE(planner.propose(context_, 1, usage_));
  Coder coder(*caller_);
  Judge judge = [&](const std::string&, int attempt) {
    if (attempt == 1) return Judgement{false, true, "compile_error", "line 9: error: broken"};
    return Judgement{true, false, "ok", ""};
  };
  ASSERT_TRUE(coder.develop(context_, {"vectorize", "use float4"}, judge, 2, usage_).accepted);
  std::vector<LlmRequest> requests = llm_.requests();
  ASSERT_EQ(requests.size(), 3u);
  const std::string& format = library_->kernel_format();
  for (size_t i = 0; i < 3; ++i) {
    const LlmMessage& m = requests[i].messages.back();
    std::string prefix = m.content.substr(0, m.stable_prefix_bytes);
    EXPECT_EQ(prefix.rfind(context_.task.contract, 0), 0u) << i;
    // The planner writes plans, not files: it pays nothing for the format.
    bool writes_code = i > 0;
    EXPECT_EQ(prefix.find(format) != std::string::npos, writes_code) << i;
    EXPECT_EQ(m.content.find("## The kernel file format") != std::string::npos, writes_code) << i;
    // Nothing of the current kernel or the plan is in the prefix.
    EXPECT_EQ(prefix.find("axpy(const float* x"), std::string::npos) << i;
    EXPECT_NE(m.content.find("axpy(const float* x", m.stable_prefix_bytes), std::string::npos);
  }
}

// A prompt that does not fit the model's context is trimmed in the stated order: memory's
// examples first, the kernel last and only cut in its middle; the call is made, not refused.
TEST_F(AgentsTest, APromptTooLongForTheContextIsTrimmedExamplesFirst) {
  llm_.set_limits("planner", {1024, 1024, std::nullopt, std::nullopt, 4000});
  llm_.set_default("planner", R"({"plans": [{"title": "float4", "detail": "vectorize"}]})");
  std::string long_diff;
  for (int i = 0; i < 1000; ++i) long_diff += "+  float4 v" + std::to_string(i) + " = x4[i];\n";
  context_.examples[0].diff = long_diff;  // about 10k tokens
  Planner planner(*caller_);
  ASSERT_TRUE(planner.propose(context_, 1, usage_));
  std::string prompt = llm_.prompts("planner").back();
  EXPECT_EQ(prompt.find("float4 v999"), std::string::npos);
  EXPECT_NE(prompt.find(AgentCaller::kLeftOut), std::string::npos);
  EXPECT_NE(prompt.find("extern \"C\" __global__ void axpy"), std::string::npos);
  EXPECT_NE(prompt.find("Plans already tried"), std::string::npos);
  EXPECT_LE(prompt.size() / 3, 4000u - 512);

  // A kernel too long for the context on its own is cut in the middle, its start and end kept.
  context_.examples.clear();
  std::string body;
  for (int i = 0; i < 1500; ++i) body += "  acc += x[" + std::to_string(i) + "];\n";
  context_.current.source = std::string(kKernel) + "// start\n" + body + "// the end\n";
  ASSERT_TRUE(planner.propose(context_, 1, usage_));
  prompt = llm_.prompts("planner").back();
  EXPECT_NE(prompt.find("characters left out"), std::string::npos);
  EXPECT_NE(prompt.find("// the end"), std::string::npos);
  EXPECT_NE(prompt.find("kopt:plan"), std::string::npos);
  EXPECT_LE(prompt.size() / 3, 4000u - 512);
}

TEST_F(AgentsTest, CoderRepairsAreBounded) {
  llm_.set_default("coder", fenced(kKernel));
  Coder coder(*caller_);
  int calls = 0;
  Judge judge = [&](const std::string&, int) {
    ++calls;
    return Judgement{false, true, "incorrect", "out[1020] at n=1023: expected 1.5, got 0"};
  };
  auto outcome = coder.develop(context_, {"vectorize", ""}, judge, 2, usage_);
  EXPECT_FALSE(outcome.accepted);
  EXPECT_EQ(outcome.attempts, 3);  // the first kernel and two repairs
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(outcome.failures.size(), 3u);
  EXPECT_EQ(llm_.prompts("coder").size(), 3u);
  EXPECT_NE(llm_.prompts("coder")[2].find("expected 1.5, got 0"), std::string::npos);
  // A repair shows the known-good parent and the plan's earlier attempts (issue 36).
  const std::string& second_repair = llm_.prompts("coder")[2];
  EXPECT_NE(second_repair.find("The known-good kernel the plan starts from"), std::string::npos);
  EXPECT_NE(second_repair.find(context_.current.source.substr(0, 40)), std::string::npos);
  EXPECT_NE(second_repair.find("- incorrect: out[1020]"), std::string::npos) << second_repair;
  EXPECT_NE(llm_.prompts("coder")[1].find("(none: this is the plan's first repair)"),
            std::string::npos);
}

TEST_F(AgentsTest, CoderStopsWhenTheJudgeSaysRepairIsPointless) {
  llm_.set_default("coder", fenced(kKernel));
  Coder coder(*caller_);
  Judge judge = [&](const std::string&, int) {
    return Judgement{false, false, "stopped", "the daemon is stopping"};
  };
  auto outcome = coder.develop(context_, {"vectorize", ""}, judge, 5, usage_);
  EXPECT_EQ(outcome.attempts, 1);
  EXPECT_EQ(llm_.prompts("coder").size(), 1u);
}

TEST_F(AgentsTest, CoderAnswersWithoutAKernelFileAreErrors) {
  EXPECT_FALSE(extract_kernel_file("I cannot help with that."));
  auto no_plan = extract_kernel_file(fenced("__global__ void k() {}\n"));
  ASSERT_FALSE(no_plan);
  EXPECT_NE(no_plan.error().find("kopt:plan"), std::string::npos);
  llm_.fail("coder", LlmStatus::kRateLimited, "HTTP 429: slow down");
  Coder coder(*caller_);
  auto outcome = coder.develop(
      context_, {"x", ""},
      [](const std::string&, int) {
        return Judgement{true, false, "ok", ""};
      },
      2, usage_);
  EXPECT_FALSE(outcome.accepted);
  EXPECT_EQ(outcome.attempts, 0);
  EXPECT_NE(outcome.error.find("rate_limited"), std::string::npos) << outcome.error;
  EXPECT_EQ(usage_.failed_calls, 1);
}

TEST_F(AgentsTest, CoderTruncatedAnswerIsAnError) {
  // Cut twice: once as asked, once when asked again without commentary.
  llm_.fail("coder", LlmStatus::kTruncated, "length");
  llm_.fail("coder", LlmStatus::kTruncated, "length");
  Coder coder(*caller_);
  auto written = coder.write(context_, {"x", ""}, usage_);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().find("cut off"), std::string::npos) << written.error();
}

TEST_F(AgentsTest, SummarizerPromptAndLesson) {
  llm_.reply("summarizer",
             "```json\n{\"lesson\": \"float4 quarters the memory instructions.\", "
             "\"tags\": [\"Vectorized Loads\", \"float4\", \"float4\"]}\n```");
  Summarizer summarizer(*caller_);
  PairFacts facts;
  facts.task = context_.task;
  facts.before_source = kKernel;
  facts.after_source = std::string(kKernel) + "// faster\n";
  facts.speedup = 1.42;
  facts.diff = "+// faster\n";
  auto lesson = summarizer.summarize(facts, usage_);
  ASSERT_TRUE(lesson) << lesson.error();
  EXPECT_EQ(lesson->summary, "float4 quarters the memory instructions.");
  EXPECT_EQ(lesson->tags, (std::vector<std::string>{"vectorized-loads", "float4"}));
  auto prompt = llm_.prompts("summarizer").at(0);
  EXPECT_NE(prompt.find("1.420x"), std::string::npos);
  EXPECT_NE(prompt.find("is faster"), std::string::npos);
  EXPECT_NE(prompt.find("+// faster"), std::string::npos);
}

TEST_F(AgentsTest, LessonParsing) {
  auto plain = parse_lesson("Use float4: fewer instructions.");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->summary, "Use float4: fewer instructions.");
  EXPECT_FALSE(parse_lesson("   "));
  EXPECT_FALSE(parse_lesson(R"({"lesson": ""})"));
}

TEST(AgentContext, MeasurementsDescribeTimeSolResourcesAndSpills) {
  EXPECT_EQ(describe_measurements(std::nullopt), "not measured yet");
  Measurements m;
  m.median_us = 10;
  m.sol_us = 5;
  m.sol_percent = 50;
  m.registers = 255;
  m.local_bytes = 64;
  std::string text = describe_measurements(m);
  EXPECT_NE(text.find("50.0% of it (headroom 2.00x)"), std::string::npos) << text;
  EXPECT_NE(text.find("(spills!)"), std::string::npos) << text;
  EXPECT_EQ(text.find("production"), std::string::npos) << "none measured: nothing said";
}

// The target the model must beat: the production baseline's name and time, the kernel's speed
// against it and S (0.5 at parity).
TEST(AgentContext, MeasurementsNameTheProductionBaselineAndS) {
  Measurements m;
  m.median_us = 20;
  m.baseline_us = 100;
  m.sol_us = 10;
  m.sol_percent = 50;
  m.production_name = "cublaslt_autotuned";
  m.production_us = 15;
  std::string text = describe_measurements(m);
  EXPECT_NE(text.find("production baseline to beat: cublaslt_autotuned at 15.00 us"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0.750x its speed (slower)"), std::string::npos) << text;
  // S = 1 / (1 + (20 - 10) / (15 - 10)) = 1/3.
  EXPECT_NE(text.find("SOL score S = 0.33 against cublaslt_autotuned"), std::string::npos) << text;
  m.sol_us = 0;  // no bound: the target is still named, S is not
  text = describe_measurements(m);
  EXPECT_NE(text.find("cublaslt_autotuned at 15.00 us"), std::string::npos) << text;
  EXPECT_EQ(text.find("SOL score"), std::string::npos) << text;

  MemoryExample example;
  example.speedup = 1.8;
  example.task = "transpose";
  example.reached_production = "its result (40.00 us) is as fast as torch_compile (45.00 us)";
  EXPECT_NE(describe_examples({example}, "").find("Reached production speed: its result (40.00"),
            std::string::npos);
}

}  // namespace
}  // namespace kopt::agents
