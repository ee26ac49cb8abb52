// common/text_escape.h with hostile strings, each escaped text pasted into its target language
// and run there: cmake -P, python3 and g++ must read back exactly the intended value, and no
// hostile string may run anything (a canary file must never appear).
#include "common/text_escape.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"
#include "common/subprocess.h"
#include "tests/memory_store/test_support.h"

namespace kopt {
namespace {

using memory::testing::TempDir;

// Each one tries to leave its string or comment and run something that touches CANARY.
std::vector<std::string> hostile_strings() {
  return {
      "plain H100",
      "line one\nexecute_process(COMMAND touch CANARY)\n",
      "quote \" and \\\" and ' and '''",
      "\"\"\"\nimport os; os.system('touch CANARY')\n\"\"\"",
      "${CMAKE_COMMAND} $ENV{HOME} @PROJECT_NAME@ a;b",
      "\")\nfile(WRITE CANARY x)\nset(y \"",
      "*/ int canary = system(\"touch CANARY\"); /*",
      "trailing backslash \\",
      "backslash then spaces \\   ",
      "control \x01\x1b[31mred\x1b[0m \r\t\x7f end",
      "unicode \xe2\x80\xa8 line separator, caf\xc3\xa9, invalid \xff\xfe bytes",
      "[[ bracket ]] #[[ comment",
      "?\?/ trigraph ?\?= ?\?'",
      "<script>alert(1)</script> | cell | **bold** [link](http://x) `code`",
  };
}

CommandOutput run(const std::vector<std::string>& args, const std::filesystem::path& cwd) {
  std::string command;
  for (const auto& a : args) command += (command.empty() ? "" : " ") + a;
  auto out = run_command({"sh", "-c", "cd '" + cwd.string() + "' && " + command}, "",
                         std::chrono::seconds(120));
  if (!out) throw std::runtime_error(out.error());
  return *out;
}

TEST(TextEscapeTest, OneLineAndCommentsNeverBreakALine) {
  for (const auto& h : hostile_strings()) {
    for (const std::string& text :
         {one_line_text(h), hash_comment_text(h), cpp_comment_text(h), markdown_text(h)}) {
      EXPECT_EQ(text.find_first_of("\n\r\x0b\x0c\x1b\x7f"), std::string::npos) << text;
      EXPECT_EQ(text.find("\xe2\x80\xa8"), std::string::npos) << text;
    }
    std::string comment = cpp_comment_text(h);
    EXPECT_EQ(comment.find("*/"), std::string::npos) << comment;
    EXPECT_TRUE(comment.empty() || comment.back() != '\\') << comment;
    std::string md = markdown_text(h);
    EXPECT_EQ(md.find('<'), std::string::npos) << md;
    for (size_t i = 0; i < md.size(); ++i) {
      if (md[i] == '|' || md[i] == '*' || md[i] == '[' || md[i] == '`') {
        ASSERT_GT(i, 0u);
        EXPECT_EQ(md[i - 1], '\\') << md;
      }
    }
  }
  EXPECT_EQ(markdown_text("a|b"), "a\\|b");
  EXPECT_EQ(cmake_quoted("${x};@y@"), "\"\\${x};\\@y\\@\"");
  EXPECT_EQ(python_string_literal("caf\xc3\xa9\n\"\"\""), "\"caf\\u00e9\\n\\\"\\\"\\\"\"");
  EXPECT_EQ(cpp_string_literal("a\"?\\\n\x01\xc3"), "\"a\\\"\\?\\\\\\n\\001\\303\"");
}

TEST(TextEscapeTest, CMakeReadsBackTheValueAndRunsNothing) {
  TempDir dir;
  std::string script;
  auto strings = hostile_strings();
  for (size_t i = 0; i < strings.size(); ++i) {
    script += "# " + hash_comment_text(strings[i]) + "\n";
    script += "set(value_" + std::to_string(i) + " " + cmake_quoted(strings[i]) + ")\n";
    script += "file(APPEND values.txt \"${value_" + std::to_string(i) + "}\\n--\\n\")\n";
  }
  ASSERT_TRUE(write_file_atomic(dir / "probe.cmake", script).ok());
  auto out = run({"cmake", "-P", "probe.cmake"}, dir.path());
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text << script;
  EXPECT_FALSE(std::filesystem::exists(dir / "CANARY")) << script;
  auto values = read_file(dir / "values.txt");
  ASSERT_TRUE(values.ok());
  // Invalid UTF-8 is replaced; compare the lines that hold only valid text.
  EXPECT_NE(values->find("${CMAKE_COMMAND} $ENV{HOME} @PROJECT_NAME@ a;b\n--\n"), std::string::npos)
      << *values;
  EXPECT_NE(values->find("\")\nfile(WRITE CANARY x)\nset(y \"\n--\n"), std::string::npos)
      << *values;
  EXPECT_NE(values->find("trailing backslash \\\n--\n"), std::string::npos) << *values;
}

TEST(TextEscapeTest, PythonReadsBackTheValueAndRunsNothing) {
  TempDir dir;
  std::string module = "values = []\n";
  for (const auto& h : hostile_strings()) {
    module += "# " + hash_comment_text(h) + "\n";
    module += "values.append(" + python_string_literal(h) + ")\n";
  }
  module +=
      "import sys\n"
      "sys.stdout.buffer.write('\\n--\\n'.join(values).encode('utf-8', 'replace'))\n";
  ASSERT_TRUE(write_file_atomic(dir / "probe.py", module).ok());
  auto out = run({"python3", "probe.py"}, dir.path());
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text << module;
  EXPECT_FALSE(std::filesystem::exists(dir / "CANARY"));
  auto strings = hostile_strings();
  for (size_t i = 0; i < strings.size(); ++i) {
    if (strings[i].find('\xff') != std::string::npos) continue;  // replaced, compared below
    EXPECT_NE(out.stdout_text.find(strings[i]), std::string::npos) << strings[i];
  }
  EXPECT_NE(out.stdout_text.find("invalid \xef\xbf\xbd\xef\xbf\xbd bytes"), std::string::npos);
}

TEST(TextEscapeTest, CppReadsBackTheValueAndCompilesNothingElse) {
  TempDir dir;
  std::string program = "#include <cstdio>\n#include <cstdlib>\nconst char* values[] = {\n";
  for (const auto& h : hostile_strings()) {
    program += "  // " + cpp_comment_text(h) + "\n";
    program += "  /* " + cpp_comment_text(h) + " */\n";
    program += "  " + cpp_string_literal(h) + ",\n";
  }
  program +=
      "};\nint main() {\n  for (const char* v : values) std::printf(\"%s\\n--\\n\", v);\n"
      "  return 0;\n}\n";
  ASSERT_TRUE(write_file_atomic(dir / "probe.cc", program).ok());
  auto built =
      run({"g++", "-std=c++17", "-Wall", "-Werror", "-o", "probe", "probe.cc"}, dir.path());
  ASSERT_EQ(built.exit_code, 0) << built.stderr_text << program;
  auto out = run({"./probe"}, dir.path());
  ASSERT_EQ(out.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "CANARY"));
  for (const auto& h : hostile_strings()) {
    if (h.find('\0') != std::string::npos) continue;
    EXPECT_NE(out.stdout_text.find(h + "\n--\n"), std::string::npos) << h;
  }
}

}  // namespace
}  // namespace kopt
