// `kopt report` end to end: the command writes the files, and headless Chromium renders the HTML
// to a PNG with every chart still in the DOM. Chromium is a test dependency (./test.sh installs
// Debian's chromium package); without it this test FAILS rather than skips, so a machine that
// cannot check the rendering never reports it as checked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/subprocess.h"
#include "src/cli/command.h"
#include "tests/report/report_fixture.h"

namespace kopt::report {
namespace {

using memory::testing::TempDir;
using testing::count_of;
using testing::slurp;

namespace fs = std::filesystem;

// $KOPT_CHROMIUM, else Debian's chromium; empty when neither exists.
std::string chromium_path() {
  if (const char* v = std::getenv("KOPT_CHROMIUM"); v && *v) return v;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

// Runs headless Chromium on `page` with `mode` ("--screenshot=..." or "--dump-dom"); returns
// stdout. Every run gets a new profile folder and no network features.
std::string run_chromium(const fs::path& profile, const fs::path& page, const std::string& mode) {
  std::vector<std::string> argv = {chromium_path(),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--host-resolver-rules=MAP * ~NOTFOUND",
                                   "--user-data-dir=" + profile.string(),
                                   mode,
                                   "--window-size=1280,2000",
                                   "file://" + fs::absolute(page).string()};
  auto out = run_command(argv, "", std::chrono::seconds(120));
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error());
  if (!out.ok()) return "";
  EXPECT_FALSE(out->timed_out) << mode;
  EXPECT_EQ(out->exit_code, 0) << mode << "\n" << out->stderr_text;
  return out->stdout_text;
}

// Width and height from a PNG's IHDR chunk; {0, 0} when `png` is not a PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
      png.compare(12, 4, "IHDR") != 0)
    return {0, 0};
  auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(png[at])) << 24 | uint32_t(uint8_t(png[at + 1])) << 16 |
           uint32_t(uint8_t(png[at + 2])) << 8 | uint32_t(uint8_t(png[at + 3]));
  };
  return {be32(16), be32(20)};
}

int report_command(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::run_report(int(argv.size()), argv.data());
}

class ReportRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = memory::testing::open_store(db_);
    night_ = testing::build_night_memory(store);
  }
  TempDir dir_;
  fs::path db_ = dir_ / "memory.db";
  testing::NightMemory night_;
};

TEST_F(ReportRenderTest, CommandWritesHtmlAndMarkdownOfTheLatestRun) {
  fs::path html = dir_ / "report.html", md = dir_ / "report.md";
  ASSERT_EQ(
      report_command({"--db", db_.string(), "--html", html.string(), "--markdown", md.string()}),
      0);
  std::string page = slurp(html);
  EXPECT_NE(page.find("run " + std::to_string(night_.night_run) + " (finished)"),
            std::string::npos);
  EXPECT_EQ(page.find("id=\"speedup-axpy\""), std::string::npos);  // run 1 is not the latest
  EXPECT_NE(slurp(md).find("## kopt report"), std::string::npos);

  ASSERT_EQ(report_command({"--db", db_.string(), "--run", "all", "--html", html.string()}), 0);
  EXPECT_NE(slurp(html).find("id=\"speedup-axpy\""), std::string::npos);
  ASSERT_EQ(report_command({"--db", db_.string(), "--run", std::to_string(night_.old_run), "--html",
                            html.string()}),
            0);
  EXPECT_NE(slurp(html).find("id=\"speedup-axpy\""), std::string::npos);
}

TEST_F(ReportRenderTest, CommandRefusesBadArguments) {
  EXPECT_EQ(report_command({"--db", db_.string()}), 2);  // no output named
  EXPECT_EQ(report_command({"--db", db_.string(), "--run", "last", "--html", "x.html"}), 2);
  EXPECT_EQ(
      report_command({"--db", db_.string(), "--run", "42", "--html", (dir_ / "x.html").string()}),
      1);
  EXPECT_EQ(report_command(
                {"--db", (dir_ / "missing.db").string(), "--html", (dir_ / "x.html").string()}),
            1);
  EXPECT_FALSE(fs::exists(dir_ / "x.html"));
  EXPECT_FALSE(fs::exists(dir_ / "missing.db"));  // a report never creates a memory
}

TEST_F(ReportRenderTest, HeadlessChromiumRendersEveryChart) {
  ASSERT_FALSE(chromium_path().empty())
      << "Chromium is needed to check the report's rendering: run ./test.sh (it installs "
         "Debian's chromium package) or apt-get install chromium";
  fs::path html = dir_ / "report.html";
  ASSERT_EQ(report_command({"--db", db_.string(), "--html", html.string()}), 0);
  std::string source = slurp(html);

  fs::path png = dir_ / "report.png";
  run_chromium(dir_ / "profile-1", html, "--screenshot=" + png.string());
  ASSERT_TRUE(fs::exists(png)) << "Chromium wrote no screenshot";
  std::string image = slurp(png);
  EXPECT_EQ(png_size(image), std::make_pair(1280u, 2000u));

  // A page of charts compresses far worse than an empty page of the same size.
  fs::path blank_html = dir_ / "blank.html", blank_png = dir_ / "blank.png";
  std::ofstream(blank_html) << "<!DOCTYPE html><html><body></body></html>";
  run_chromium(dir_ / "profile-2", blank_html, "--screenshot=" + blank_png.string());
  size_t blank_bytes = fs::exists(blank_png) ? fs::file_size(blank_png) : 0;
  EXPECT_GT(image.size(), 4 * blank_bytes + 20000) << "blank page: " << blank_bytes << " bytes";

  // The DOM after parsing and layout still holds every chart and series.
  std::string dom = run_chromium(dir_ / "profile-3", html, "--dump-dom");
  for (const char* id : {"speedup-softmax", "speedup-rmsnorm", "speedup-bf16_gemm", "sol",
                         "verdicts", "llm-tokens", "llm-cost"}) {
    EXPECT_NE(dom.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(count_of(dom, "<svg"), count_of(source, "<svg"));
  EXPECT_EQ(count_of(dom, "class=\"series\""), count_of(source, "class=\"series\""));
  EXPECT_NE(dom.find("id=\"diff-" + std::to_string(night_.softmax_llm_pair) + "\""),
            std::string::npos);
}

}  // namespace
}  // namespace kopt::report
