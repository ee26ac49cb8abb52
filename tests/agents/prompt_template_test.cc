// Prompt templates: placeholders render, and every way a template can be wrong is an error at
// load time that names the file and line.
#include "agents/prompt_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agents/prompt_library.h"
#include "common/files.h"

namespace kopt::agents {
namespace {

const TemplateSpec kSpec{"coder.txt", {"plan", "current_kernel", "gpu"}, {"plan"}};

TEST(PromptTemplate, RendersEveryPlaceholderOnce) {
  auto tpl = PromptTemplate::parse_checked("Plan: {{plan}}\nGPU: {{ gpu }}, again {{plan}}.",
                                           "coder.txt", kSpec);
  ASSERT_TRUE(tpl) << tpl.error();
  EXPECT_EQ(tpl->render({{"plan", "vectorize"}, {"gpu", "H100"}}),
            "Plan: vectorize\nGPU: H100, again vectorize.");
  EXPECT_EQ(tpl->placeholders(), (std::vector<std::string>{"plan", "gpu"}));
}

TEST(PromptTemplate, TheStablePrefixEndsWhereItsMarkerStands) {
  TemplateSpec spec{"coder.txt", {"plan", "gpu", kStablePrefixEnd}, {}};
  auto tpl = PromptTemplate::parse_checked("GPU: {{gpu}}\n{{stable_prefix_end}}Plan: {{plan}}",
                                           "coder.txt", spec);
  ASSERT_TRUE(tpl) << tpl.error();
  auto rendered = tpl->render_marked({{"plan", "vectorize"}, {"gpu", "H100"}});
  EXPECT_EQ(rendered.text, "GPU: H100\nPlan: vectorize");
  EXPECT_EQ(rendered.stable_prefix_bytes, std::string("GPU: H100\n").size());
  auto unmarked = PromptTemplate::parse_checked("Plan: {{plan}}", "coder.txt", spec);
  ASSERT_TRUE(unmarked) << unmarked.error();
  EXPECT_EQ(unmarked->render_marked({{"plan", "x"}}).stable_prefix_bytes, 0u);
}

TEST(PromptTemplate, SubstitutedValuesAreNotScannedAgain) {
  auto tpl = PromptTemplate::parse_checked("{{plan}}", "coder.txt", kSpec);
  ASSERT_TRUE(tpl) << tpl.error();
  EXPECT_EQ(tpl->render({{"plan", "{{gpu}} stays {{ as it is"}}), "{{gpu}} stays {{ as it is");
}

TEST(PromptTemplate, UnknownPlaceholderNamesFileLineAndSuggestion) {
  auto tpl = PromptTemplate::parse_checked("{{plan}}\n\nKernel:\n{{curent_kernel}}\n",
                                           "p/coder.txt", kSpec);
  ASSERT_FALSE(tpl);
  EXPECT_NE(tpl.error().find("p/coder.txt:4: unknown placeholder {{curent_kernel}}"),
            std::string::npos)
      << tpl.error();
  EXPECT_NE(tpl.error().find("did you mean 'current_kernel'"), std::string::npos) << tpl.error();
}

TEST(PromptTemplate, MissingRequiredPlaceholderIsAnError) {
  auto tpl = PromptTemplate::parse_checked("Kernel: {{current_kernel}}", "p/coder.txt", kSpec);
  ASSERT_FALSE(tpl);
  EXPECT_NE(tpl.error().find("p/coder.txt: missing required placeholder {{plan}}"),
            std::string::npos)
      << tpl.error();
}

TEST(PromptTemplate, MalformedPlaceholderIsAnErrorWithItsLine) {
  for (const char* text : {"{{plan}}\n{{Task Name}}", "{{plan}}\n{{gpu", "{{plan}}\n{{}}"}) {
    auto tpl = PromptTemplate::parse_checked(text, "x.txt", kSpec);
    ASSERT_FALSE(tpl) << text;
    EXPECT_NE(tpl.error().find("x.txt:2: malformed placeholder"), std::string::npos) << tpl.error();
  }
}

TEST(PromptTemplate, RenderingWithoutAValueIsABug) {
  auto tpl = PromptTemplate::parse_checked("{{plan}} {{gpu}}", "coder.txt", kSpec);
  ASSERT_TRUE(tpl);
  EXPECT_THROW(tpl->render({{"plan", "x"}}), std::logic_error);
}

class PromptFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kopt-prompts-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(std::filesystem::path(KOPT_SOURCE_DIR) / "prompts", dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void append(const std::string& file, const std::string& text) {
    std::ofstream(dir_ / file, std::ios::app) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(PromptFolder, TheShippedPromptsLoad) {
  auto library = PromptLibrary::load(dir_);
  ASSERT_TRUE(library) << library.error();
  // The format the coder must follow is taught in every prompt that writes code, and only there:
  // the planner writes plans, not files. Each opens with the task's contract (and the format),
  // the stable prefix that a provider's prompt cache keeps.
  EXPECT_NE(library->kernel_format().find("kopt:plan"), std::string::npos);
  for (const char* file : {"planner.txt", "coder.txt", "repair.txt"}) {
    auto names = library->get(file).placeholders();
    bool writes_code = std::string(file) != "planner.txt";
    EXPECT_EQ(std::find(names.begin(), names.end(), "kernel_format") != names.end(), writes_code)
        << file;
    std::vector<std::string> prefix = {"task_contract"};
    if (writes_code) prefix.push_back("kernel_format");
    prefix.push_back(kStablePrefixEnd);
    ASSERT_GE(names.size(), prefix.size()) << file;
    EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + prefix.size()), prefix)
        << file;
  }
  for (const char* file : {"planner.txt", "coder.txt"}) {
    auto names = library->get(file).placeholders();
    for (const char* needed : {"memory_examples", "memory_warnings", "measurements", "bound"}) {
      EXPECT_NE(std::find(names.begin(), names.end(), needed), names.end()) << file << needed;
    }
  }
}

TEST_F(PromptFolder, ABadPlaceholderIsRefusedWithFileAndLine) {
  auto lines =
      std::count(std::istreambuf_iterator<char>(std::ifstream(dir_ / "planner.txt").rdbuf()),
                 std::istreambuf_iterator<char>(), '\n');
  append("planner.txt", "Also consider {{task_descripton}}.\n");
  auto library = PromptLibrary::load(dir_);
  ASSERT_FALSE(library);
  std::string expected = (dir_ / "planner.txt").string() + ":" + std::to_string(lines + 1) +
                         ": unknown placeholder {{task_descripton}}";
  EXPECT_NE(library.error().find(expected), std::string::npos) << library.error();
}

TEST_F(PromptFolder, AMissingFileOrRequiredPlaceholderIsRefused) {
  std::filesystem::remove(dir_ / "summarizer.txt");
  ASSERT_TRUE(write_file_atomic(dir_ / "coder.txt", "Write a kernel.\n{{kernel_format}}\n"));
  auto library = PromptLibrary::load(dir_);
  ASSERT_FALSE(library);
  EXPECT_NE(library.error().find("summarizer.txt: cannot read"), std::string::npos)
      << library.error();
  EXPECT_NE(library.error().find("coder.txt: missing required placeholder {{plan}}"),
            std::string::npos)
      << library.error();
}

}  // namespace
}  // namespace kopt::agents
