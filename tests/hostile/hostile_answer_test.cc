// The hostile-answer suite: each attack arrives as the model's answer from the fake LLM server
// and goes through the daemon's real path (kopt_test_daemon: `kopt run` with the fake evaluator
// in place of the GPU, real NVRTC, a real SQLite memory), with a canary key in the provider's key
// variable and a canary file on disk. After the run, and after `kopt memory export`, `kopt export`
// and `kopt report`, no canary may show in the database (every table, as text), the logs, the
// compile cache, the requests the server received, or any export; the marker file that host code
// would create never appears; the daemon finishes (exit 0); and its memory stays bounded.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "memory_store/sqlite_database.h"
#include "tests/foundation/test_support.h"
#include "tests/orchestrator/orchestrator_test_support.h"
#include "tests/support/fake_llm_server.h"

namespace kopt::hostile {
namespace {

using kopt::testing::TempDir;
using namespace std::chrono_literals;

constexpr const char* kKeyVariable = "KOPT_HOSTILE_TEST_KEY";

std::string random_hex(size_t n) {
  std::random_device device;
  std::mt19937_64 rng(device());
  std::string out;
  while (out.size() < n) out += "0123456789abcdef"[rng() % 16];
  return out;
}

// What an attack puts in the answer: the plan title and lesson, and the kernel file.
struct Attack {
  std::string name;
  std::string kernel;  // the whole .cu answer block
  std::string title = "vectorize the loads";
  std::string lesson = "Wider loads cut instructions.";
  std::string gpu_name;       // what the (fake) device reports; "" = the default
  size_t answer_padding = 0;  // bytes of prose around the blocks (the 9 MB answer)
};

// An axpy kernel with a plan; `prefix` goes before the kernel, `grid` is the grid expression.
std::string axpy_kernel(const std::string& prefix, const std::string& grid = "ceil_div(n, 256)",
                        const std::string& body_extra = "") {
  return "// test-evaluator: time_us=80\n/* kopt:plan\n{\"launches\": [{\"kernel\": \"axpy_h\", "
         "\"grid\": [" +
         nlohmann::json(grid).dump() +
         "], \"block\": [256], \"args\": [\"x\", \"y\", \"out\", \"n\", \"alpha\"]}]}\n*/\n" +
         prefix +
         "extern \"C\" __global__ void axpy_h(const float* x, const float* y, float* out, int n, "
         "float alpha) {\n  int i = blockIdx.x * 256 + threadIdx.x;\n  if (i < n) out[i] = alpha "
         "* x[i] + y[i]" +
         body_extra + ";\n}\n";
}

// gtest prints a parameter by its name, not its bytes.
void PrintTo(const Attack& attack, std::ostream* out) { *out << attack.name; }

std::string answer_text(const Attack& attack) {
  nlohmann::json plans = {{"plans", {{{"title", attack.title}, {"detail", attack.title}}}},
                          {"lesson", attack.lesson},
                          {"tags", {"hostile"}}};
  std::string padding(attack.answer_padding, 'p');
  return "Here are the plans.\n" + padding + "\n```json\n" + plans.dump() + "\n```\n\n```cuda\n" +
         attack.kernel + "\n```\n";
}

// Every file under `dir` whose bytes contain `needle`.
std::vector<std::string> files_containing(const std::filesystem::path& dir,
                                          const std::string& needle) {
  std::vector<std::string> hits;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return hits;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec || !it->is_regular_file(ec)) continue;
    auto text = read_file(it->path());
    if (text && text->find(needle) != std::string::npos) hits.push_back(it->path().string());
  }
  return hits;
}

// Every row of every table, as text.
std::string database_text(const std::filesystem::path& db) {
  auto database = sql::Database::open(db, sql::Database::Options{.create = false});
  if (!database) return "cannot open: " + database.error();
  std::string out;
  auto tables = database->query_text(
      "SELECT group_concat(name, char(10)) FROM sqlite_master WHERE type = 'table'");
  if (!tables) return "cannot list tables: " + tables.error();
  for (const auto& table : split(*tables, '\n')) {
    if (table.empty()) continue;
    auto columns = database->query_text(
        "SELECT group_concat(quote(name), ' || char(9) || ') "
        "FROM pragma_table_info('" +
        table + "')");
    if (!columns || columns->empty()) continue;
    auto rows = database->query_text("SELECT group_concat(" + *columns + ", char(10)) FROM \"" +
                                     table + "\"");
    if (rows) out += "== " + table + "\n" + *rows + "\n";
  }
  return out;
}

class HostileAnswerTest : public ::testing::TestWithParam<Attack> {
 protected:
  HostileAnswerTest() {
    kopt::testing::isolate_environment(dir_.path());
    tasks_ = dir_ / "tasks";
    kopt::testing::copy_task("axpy", tasks_);
    key_ = "sk-canary-" + random_hex(32);
    file_canary_ = "CANARYFILE" + random_hex(24);
    canary_path_ = dir_ / "canary.txt";
    marker_ = dir_ / "marker";
    kopt::testing::write_text(canary_path_, file_canary_ + "\n");
    ::setenv(kKeyVariable, key_.c_str(), 1);
  }
  ~HostileAnswerTest() override {
    ::unsetenv(kKeyVariable);
    ::unsetenv("KOPT_FAKE_GPU_NAME");
  }

  std::filesystem::path db() const { return dir_ / "memory.db"; }

  // The attack's placeholders (@CANARY@, @MARKER@) filled in.
  Attack resolve(Attack attack) const {
    for (std::string* text : {&attack.kernel, &attack.title, &attack.lesson}) {
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"@CANARY@", canary_path_.string()},
            {"@MARKER@", marker_.string()}}) {
        for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at))
          text->replace(at, from.size(), to);
      }
    }
    return attack;
  }

  std::filesystem::path write_config(const std::string& base_url) {
    nlohmann::json config = {
        {"format", 1},
        {"llm",
         {{"providers",
           {{"fake",
             {{"type", "openai"},
              {"base_url", base_url},
              {"api_key_env", kKeyVariable},
              {"timeout_s", 60},
              {"max_attempts", 1}}}}},
          {"agents",
           {{"planner", {{"provider", "fake"}, {"model", "hostile-planner"}}},
            {"coder", {{"provider", "fake"}, {"model", "hostile-coder"}}},
            {"summarizer", {{"provider", "fake"}, {"model", "hostile-summarizer"}}}}}}},
        {"daemon",
         {{"max_in_flight", 1}, {"stall", {{"backoff_initial_s", 0.2}, {"backoff_max_s", 1}}}}}};
    auto path = dir_ / "config.json";
    kopt::testing::write_text(path, config.dump(2));
    return path;
  }

  // Where a canary must never be: named places that hold `needle`.
  std::vector<std::string> leaks_of(const std::string& needle, const CommandOutput& daemon,
                                    const std::vector<testing::RecordedRequest>& requests) {
    std::vector<std::string> leaks;
    if (database_text(db()).find(needle) != std::string::npos) leaks.push_back("the database");
    if (daemon.stdout_text.find(needle) != std::string::npos) leaks.push_back("daemon stdout");
    if (daemon.stderr_text.find(needle) != std::string::npos) leaks.push_back("daemon stderr");
    for (const auto& where : {dir_ / "runs", dir_ / "cache", dir_ / "export", dir_ / "reports"})
      for (const auto& file : files_containing(where, needle)) leaks.push_back(file);
    for (const auto& request : requests)
      if (request.body.find(needle) != std::string::npos)
        leaks.push_back("a request to the model (" + request.path + ")");
    return leaks;
  }

  TempDir dir_;
  std::filesystem::path tasks_;
  std::string key_;
  std::string file_canary_;
  std::filesystem::path canary_path_;
  std::filesystem::path marker_;
};

TEST_P(HostileAnswerTest, NoCanaryLeaksNoHostCodeRunsAndTheDaemonFinishes) {
  Attack attack = resolve(GetParam());
  auto server = testing::FakeLlmServer::start();
  ASSERT_TRUE(server) << server.error();
  (*server)->set_default_reply(testing::FakeReply::completion(answer_text(attack)));
  if (!attack.gpu_name.empty()) ::setenv("KOPT_FAKE_GPU_NAME", attack.gpu_name.c_str(), 1);
  auto config = write_config((*server)->openai_base_url());

  auto start = std::chrono::steady_clock::now();
  auto daemon =
      run_command({KOPT_TEST_DAEMON, "--db", db().string(), "--no-display", "--tasks",
                   tasks_.string(), "--config", config.string(), "--candidates-per-task", "8"},
                  "", 300s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(daemon) << daemon.error();
  // 0, or 1 when every task failed (documented: the run's status is "failed"); never a signal.
  EXPECT_TRUE(daemon->exit_code == 0 || daemon->exit_code == 1)
      << daemon->stdout_text << "\n..."
      << daemon->stderr_text.substr(daemon->stderr_text.size() -
                                    std::min<size_t>(daemon->stderr_text.size(), 3000));
  EXPECT_LT(seconds, 300.0);
  EXPECT_EQ(kopt::testing::query_count(
                db(), "SELECT count(*) FROM runs WHERE status IN ('finished', 'failed')"),
            1);
  struct rusage usage {};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  EXPECT_LT(usage.ru_maxrss, 3L << 20) << "KiB: the daemon or a compile grew past 3 GiB";
  EXPECT_GT((*server)->request_count(), 0u) << daemon->stderr_text.substr(0, 4000);

  // Everything a user does with the results afterwards.
  auto cache = dir_ / "cache";
  auto jsonl =
      kopt::testing::run_kopt({"memory", "export", "--jsonl",
                               (dir_ / "export/memory.jsonl").string(), "--db", db().string()},
                              cache);
  EXPECT_EQ(jsonl.exit_code, 0) << jsonl.stderr_text;
  auto exported = kopt::testing::run_kopt({"export", "--out", (dir_ / "export/repo").string(),
                                           "--db", db().string(), "--tasks", tasks_.string()},
                                          cache);
  EXPECT_NE(exported.exit_code, 70)
      << exported.stderr_text;  // a crash; "nothing to export" is fine
  std::filesystem::create_directories(dir_ / "reports");
  auto report = kopt::testing::run_kopt(
      {"report", "--run", "all", "--db", db().string(), "--markdown",
       (dir_ / "reports/r.md").string(), "--html", (dir_ / "reports/r.html").string()},
      cache);
  EXPECT_EQ(report.exit_code, 0) << report.stderr_text;

  auto requests = (*server)->requests();
  for (const std::string& canary : {key_, file_canary_}) {
    auto leaks = leaks_of(canary, *daemon, requests);
    EXPECT_TRUE(leaks.empty()) << "canary " << canary.substr(0, 14)
                               << "... found in: " << join(leaks, ", ");
  }
  EXPECT_FALSE(std::filesystem::exists(marker_)) << "host code ran";
  // No model text drives a terminal or forges a log line: no raw escape byte in any log.
  for (const auto& file : files_containing(dir_ / "runs", "\x1b"))
    ADD_FAILURE() << "raw ESC in " << file;
  EXPECT_EQ(daemon->stderr_text.find('\x1b'), std::string::npos);
  // No raw HTML from model text in the reports.
  for (const auto& file : files_containing(dir_ / "reports", "<img src=x"))
    ADD_FAILURE() << "raw HTML from model text in " << file;
  // Host code never counts as a verified kernel.
  EXPECT_EQ(kopt::testing::query_count(db(),
                                       "SELECT count(*) FROM evaluations e JOIN kernels k ON k.id "
                                       "= e.kernel_id WHERE e.verdict = 'ok' AND (k.source LIKE "
                                       "'%__CUDACC_RTC__%' OR k.source LIKE '%constructor%')"),
            0);
}

// The text that each hostile field carries: every target's terminator and escape at once.
const std::string kHostileText =
    "hostile\n\"quoted\" \"\"\" ${CMAKE_COMMAND} $(touch x) `id` */ /* \\ \\\" \x1b]0;pwn\x07"
    "\x1b[31mred\r\x08\x7f <img src=x onerror=alert(1)> | ## [l](javascript:x) \xe2\x80\xae";

std::vector<Attack> attacks() {
  std::vector<Attack> out;
  out.push_back({"proc_self_environ", axpy_kernel("#include \"/proc/self/environ\"\n")});
  out.push_back({"absolute_include_of_canary", axpy_kernel("#include \"@CANARY@\"\n")});
  out.push_back(
      {"stringify_of_canary",
       axpy_kernel("#define KOPT_STR(...) #__VA_ARGS__\n__device__ const char* leak = KOPT_STR(\n"
                   "#include \"@CANARY@\"\n);\n")});
  out.push_back(
      {"host_constructor_behind_rtc_guard",
       axpy_kernel("#ifndef __CUDACC_RTC__\n#include <cstdlib>\n__attribute__((constructor)) "
                   "static void pwn() { std::system(\"touch @MARKER@\"); }\n#endif\n")});
  Attack text{"hostile_title_lesson_and_gpu_name", axpy_kernel("")};
  text.title = kHostileText;
  text.lesson = kHostileText;
  text.gpu_name = "NVIDIA H100\n\")\nexecute_process(COMMAND touch x)\n#";
  out.push_back(text);
  out.push_back({"plan_expression_10000_deep",
                 axpy_kernel("", std::string(10000, '(') + "n" + std::string(10000, ')'))});
  out.push_back({"define_global_then_100kb_string",
                 axpy_kernel("#define G __global__\n__device__ const char* pad = \"" +
                             std::string(100 * 1024, 'a') + "\";\n")});
  std::string bomb = "#define A0 1+1\n";
  for (int i = 1; i <= 30; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + "+A" +
            std::to_string(i - 1) + "\n";
  out.push_back({"macro_bomb_doubling", axpy_kernel(bomb, "ceil_div(n, 256)", " + A30")});
  Attack huge{"nine_megabyte_answer", axpy_kernel("")};
  huge.answer_padding = 9u << 20;
  out.push_back(huge);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Attacks, HostileAnswerTest, ::testing::ValuesIn(attacks()),
                         [](const ::testing::TestParamInfo<Attack>& attack_info) {
                           return attack_info.param.name;
                         });

}  // namespace
}  // namespace kopt::hostile
