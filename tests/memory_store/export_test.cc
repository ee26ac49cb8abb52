// `kopt export`: file contents, the generated launcher (compiled by the host compiler),
// idempotence, refusing path escapes and unwritable folders, and --git-commit. Runs the real
// kopt binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "exchange/export_api_codegen.h"
#include "exchange/export_bundle.h"
#include "exchange/export_device_image.h"
#include "exchange/kernel_export.h"
#include "exchange/launcher_codegen.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_catalog.h"
#include "sandbox/task_spec.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

CommandOutput run(std::vector<std::string> args,
                  std::chrono::seconds timeout = std::chrono::seconds(60)) {
  return run_program(args, timeout);
}

CommandOutput kopt(std::vector<std::string> args) { return run_kopt(KOPT_BINARY, std::move(args)); }

std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().filename()] = *read_file(entry.path());
  }
  return files;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "memory.db").string();
    auto store = open_store(db_);
    sample_ = fill_sample_memory(store);
    out_ = dir_ / "repo" / "kernels";
  }

  TempDir dir_;
  std::string db_;
  SampleMemory sample_;
  std::filesystem::path out_;
};

TEST_F(ExportTest, WritesKernelsHeadersManifestAndReadme) {
  auto out = kopt({"export", "--db", db_, "--out", out_.string()});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto files = snapshot(out_);
  // Per task 15 files (kernel source, launcher, image source, CUBIN, PTX, API header and source,
  // Python plan; the same of the reference but its API header and plan, and the self-test), then
  // the manifest, README, CMakeLists.txt, kopt_selftest.h, kopt_cuda_image.h and the two Python
  // files (export_bundle_test.cc looks at those).
  ASSERT_EQ(files.size(), 2 * 15 + 7u);
  // The best verified axpy kernel, not the baseline; for softmax the ok evaluation, not the
  // faster but incorrect one.
  EXPECT_EQ(files["axpy.cu"], fast_axpy_source());
  EXPECT_TRUE(contains(files["softmax.cu"], "__shfl_xor_sync variant"));
  const std::string& header = files["axpy.cuh"];
  EXPECT_TRUE(contains(header, "constexpr int64_t BLOCK = 512LL;\n")) << header;  // verified
  EXPECT_FALSE(contains(header, "#include \"axpy.cu\"")) << header;  // for reading only
  EXPECT_TRUE(contains(header, "namespace kopt_axpy {")) << header;
  EXPECT_TRUE(contains(header,
                       "inline cudaError_t launch(const float* x, const float* y, float* out, "
                       "int64_t n, double alpha, void* kopt_workspace = nullptr, "
                       "cudaStream_t kopt_stream = 0)"))
      << header;
  EXPECT_TRUE(contains(header,
                       "kopt_ceil_div(kopt_ceil_div(static_cast<int64_t>(n), 4LL), "
                       "static_cast<int64_t>(BLOCK))"))
      << header;
  EXPECT_TRUE(contains(header, "image().kernel(0)")) << header;
  EXPECT_TRUE(contains(header, "{\"axpy_vec4\"}")) << header;  // extern "C": its own symbol

  auto manifest = nlohmann::json::parse(files["manifest.json"]);
  EXPECT_EQ(manifest["format"], 3);
  ASSERT_EQ(manifest["kernels"].size(), 2u);
  const auto& axpy = manifest["kernels"][0];
  EXPECT_EQ(axpy["task"], "axpy");
  EXPECT_NEAR(axpy["speedup"].get<double>(), 310.0 / 280.0, 1e-9);
  EXPECT_NEAR(axpy["sol_percent"].get<double>(), 100.0 * 240.0 / 280.0, 1e-9);
  EXPECT_EQ(axpy["gpu"]["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(axpy["gpu"]["driver_version"], "580.159.04");
  EXPECT_EQ(axpy["gpu"]["cuda_version"], "13.0");
  EXPECT_EQ(axpy["date"], "2026-11-22T04:05:06Z");
  EXPECT_EQ(axpy["source_sha256"], (*open_store(db_).kernel(sample_.axpy_fast))->sha256);
  EXPECT_EQ(axpy["verification"]["verdict"], "ok");
  EXPECT_TRUE(contains(axpy["verification"]["method"].get<std::string>(), "holdout"));
  EXPECT_EQ(axpy["tunables"]["BLOCK"], 512);
  EXPECT_EQ(axpy["launcher"], "kopt_axpy::launch");
  EXPECT_EQ(manifest["kernels"][1]["task"], "softmax");
  // Where it stands: no production baseline in this memory, so S is against baseline.cu.
  EXPECT_TRUE(axpy["standing"]["production_baseline"].is_null());
  EXPECT_NEAR(axpy["standing"]["sol_score"].get<double>(), 1.0 / (1.0 + 40.0 / 70.0), 1e-9);
  EXPECT_EQ(axpy["standing"]["sol_score_reference"], "baseline.cu");

  const std::string& readme = files["README.md"];
  EXPECT_TRUE(contains(readme,
                       "| axpy | 1.11x | none measured | 85.7% | 0.64 vs baseline.cu | "
                       "NVIDIA H100 80GB HBM3 | 280.0 | "
                       "[axpy.cu](axpy.cu) | [axpy.cuh](axpy.cuh) | 2026-11-22 |"))
      << readme;
  EXPECT_TRUE(contains(readme, "| softmax | 2.00x |")) << readme;
}

TEST_F(ExportTest, RunningTwiceChangesNothing) {
  ASSERT_EQ(kopt({"export", "--db", db_, "--out", out_.string()}).exit_code, 0);
  auto first = snapshot(out_);
  auto mtime = std::filesystem::last_write_time(out_ / "axpy.cuh");
  auto out = kopt({"export", "--db", db_, "--out", out_.string()});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "0 files written")) << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "unchanged")) << out.stdout_text;
  EXPECT_EQ(snapshot(out_), first);
  EXPECT_EQ(std::filesystem::last_write_time(out_ / "axpy.cuh"), mtime);
}

TEST_F(ExportTest, OneTaskKeepsTheOthersAndTheUsersReadme) {
  std::filesystem::create_directories(out_);
  ASSERT_TRUE(write_file_atomic(out_ / "README.md", "# Our kernels\n\nHand-written notes.\n").ok());
  ASSERT_EQ(kopt({"export", "--db", db_, "--out", out_.string()}).exit_code, 0);
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--task", "axpy"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto files = snapshot(out_);
  auto manifest = nlohmann::json::parse(files["manifest.json"]);
  EXPECT_EQ(manifest["kernels"].size(), 2u);  // softmax's entry stays
  EXPECT_TRUE(files["README.md"].rfind("# Our kernels\n\nHand-written notes.\n", 0) == 0)
      << files["README.md"];
  EXPECT_TRUE(contains(files["README.md"], "| softmax |"));
  // Once: the table is replaced between its markers, not appended again.
  EXPECT_EQ(files["README.md"].find("kopt:export:begin"),
            files["README.md"].rfind("kopt:export:begin"));
}

TEST_F(ExportTest, RefusesPathEscapingTaskNames) {
  for (const char* bad : {"../x", "..", "a/b", ".hidden"}) {
    auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--task", bad});
    EXPECT_EQ(out.exit_code, 1) << bad;
    EXPECT_TRUE(
        contains(out.stderr_text, std::string("task name '") + bad + "' would write outside"))
        << out.stderr_text;
  }
  EXPECT_FALSE(std::filesystem::exists(out_));
  // A task that reached the memory with such a name (an import, say) stops the whole export.
  {
    auto store = open_store(db_);
    TaskRecord evil;
    evil.name = "../../evil";
    evil.spec_hash = "h";
    evil.spec_json = "{}";
    ASSERT_TRUE(store.upsert_task(evil).ok());
  }
  auto out = kopt({"export", "--db", db_, "--out", out_.string()});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "task name '../../evil' would write outside"))
      << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "evil.cu"));
  EXPECT_EQ(*open_store(db_).database().query_int64("SELECT count(*) FROM pairs"), 3);
}

TEST_F(ExportTest, UnknownTaskAndNoVerifiedKernel) {
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--task", "softmx"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "unknown task 'softmx'")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "did you mean 'softmax'")) << out.stderr_text;
  out = kopt({"export", "--db", db_, "--out", out_.string(), "--gpu", "B200"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "no verified kernel to export on B200")) << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_));
  out = kopt({"export", "--db", db_, "--out", out_.string(), "--gpu", "h100"});
  EXPECT_EQ(out.exit_code, 0) << out.stderr_text;
  out = kopt({"export", "--db", db_});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "missing --out DIR"));
}

TEST_F(ExportTest, OnlyKernelsAboveTheMinimumSpeedupAreExported) {
  // axpy's best is 1.11x, softmax's 2.00x.
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--min-speedup", "1.5"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text,
                       "skipped axpy: the best kernel on NVIDIA H100 80GB HBM3 is "
                       "1.107x the baseline, not above 1.500x"))
      << out.stdout_text;
  auto files = snapshot(out_);
  EXPECT_EQ(files.count("axpy.cu"), 0u);
  EXPECT_EQ(files.count("softmax.cu"), 1u);
  EXPECT_EQ(nlohmann::json::parse(files["manifest.json"])["kernels"].size(), 1u);

  out = kopt({"export", "--db", db_, "--out", (dir_ / "none").string(), "--min-speedup", "3"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "no verified kernel to export (see the skipped tasks"))
      << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "none"));
  out = kopt({"export", "--db", db_, "--out", out_.string(), "--min-speedup", "-1"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_TRUE(contains(out.stderr_text, "--min-speedup must be a number >= 0")) << out.stderr_text;
}

TEST_F(ExportTest, UnwritableExportFolder) {
  ASSERT_TRUE(write_file_atomic(dir_ / "plain-file", "x").ok());
  auto out = kopt({"export", "--db", db_, "--out", (dir_ / "plain-file" / "kernels").string()});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "cannot create the export folder")) << out.stderr_text;
  EXPECT_TRUE(contains(out.stderr_text, "plain-file")) << out.stderr_text;
  if (::geteuid() != 0) {  // root writes anywhere: permissions cannot be tested as root
    std::filesystem::create_directories(out_);
    ::chmod(out_.c_str(), 0500);
    out = kopt({"export", "--db", db_, "--out", out_.string()});
    ::chmod(out_.c_str(), 0700);
    EXPECT_EQ(out.exit_code, 1);
    EXPECT_TRUE(contains(out.stderr_text, "not writable")) << out.stderr_text;
  }
}

TEST_F(ExportTest, RefusesToOverwriteAManifestItDidNotWrite) {
  std::filesystem::create_directories(out_);
  ASSERT_TRUE(write_file_atomic(out_ / "manifest.json", "{\"name\": \"our package\"}\n").ok());
  auto out = kopt({"export", "--db", db_, "--out", out_.string()});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "was not written by kopt export")) << out.stderr_text;
  EXPECT_EQ(*read_file(out_ / "manifest.json"), "{\"name\": \"our package\"}\n");
}

TEST_F(ExportTest, GitCommitListsKernelsAndSpeedups) {
  std::filesystem::path repo = dir_ / "repo";
  std::filesystem::create_directories(repo);
  ASSERT_EQ(run({"git", "-C", repo.string(), "init", "-q"}).exit_code, 0);
  ASSERT_EQ(run({"git", "-C", repo.string(), "config", "user.email", "t@example.com"}).exit_code,
            0);
  ASSERT_EQ(run({"git", "-C", repo.string(), "config", "user.name", "Test"}).exit_code, 0);
  auto out = kopt({"export", "--db", db_, "--out", out_.string(), "--git-commit"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "committed ")) << out.stdout_text;
  auto log = run({"git", "-C", repo.string(), "log", "--format=%B", "-1"});
  EXPECT_TRUE(contains(log.stdout_text,
                       "kopt export: axpy 1.11x, softmax 2.00x on NVIDIA H100 80GB HBM3\n"))
      << log.stdout_text;
  EXPECT_TRUE(contains(log.stdout_text, "Exported by kopt " KOPT_VERSION)) << log.stdout_text;
  EXPECT_TRUE(contains(log.stdout_text,
                       "- axpy: 1.11x over baseline, 85.7% of speed of light on "
                       "NVIDIA H100 80GB HBM3"))
      << log.stdout_text;
  EXPECT_TRUE(contains(log.stdout_text, "- softmax: 2.00x")) << log.stdout_text;
  auto files = run({"git", "-C", repo.string(), "show", "--name-only", "--format=", "HEAD"});
  for (const char* file :
       {"kernels/axpy.cuh", "kernels/CMakeLists.txt", "kernels/kopt_torch.py",
        "kernels/axpy_selftest.cc", "kernels/axpy.cubin", "kernels/axpy.reference.cu"})
    EXPECT_TRUE(contains(files.stdout_text, file)) << file << "\n" << files.stdout_text;
  auto head = run({"git", "-C", repo.string(), "rev-parse", "HEAD"}).stdout_text;
  out = kopt({"export", "--db", db_, "--out", out_.string(), "--git-commit"});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "nothing to commit")) << out.stdout_text;
  EXPECT_EQ(run({"git", "-C", repo.string(), "rev-parse", "HEAD"}).stdout_text, head);
}

TEST_F(ExportTest, GitCommitOutsideARepositoryIsRefused) {
  auto out = kopt({"export", "--db", db_, "--out", (dir_ / "loose").string(), "--git-commit"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "is not inside a git repository")) << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "loose"));
}

TEST(LauncherCodegenTest, ExpressionsAndNames) {
  EXPECT_EQ(*exporter::expression_to_cpp("ceil_div(n, BLOCK)"),
            "(kopt_ceil_div(static_cast<int64_t>(n), static_cast<int64_t>(BLOCK)))");
  // Every operation a checked helper with the sandbox's semantics (plan_semantics_test.cc).
  EXPECT_EQ(*exporter::expression_to_cpp("rows * 64 + max(a,2)"),
            "(kopt_add(kopt_mul(static_cast<int64_t>(rows), 64LL), "
            "kopt_max(static_cast<int64_t>(a), 2LL)))");
  EXPECT_FALSE(exporter::expression_to_cpp("n +* 2").ok());
  EXPECT_EQ(exporter::cpp_identifier("layer-norm"), "layer_norm");
  EXPECT_EQ(exporter::cpp_identifier("3d"), "_3d");
  EXPECT_TRUE(exporter::is_safe_file_stem("residual_rmsnorm"));
  for (const char* bad : {"", ".", "..", "../x", "a/b", "a\\b", ".git", "x\n"}) {
    EXPECT_FALSE(exporter::is_safe_file_stem(bad)) << bad;
  }
}

// Every kernel file of the task suite gets a device image (NVRTC, no GPU needed) and a launcher
// header; the headers of a few kinds of plan (scratch, bf16, 64-bit and float arguments, several
// launches) compile as plain C++ with the host compiler and the toolkit's headers.
TEST(LauncherCodegenTest, HeadersForTheTaskSuiteCompile) {
  TempDir dir;
  std::vector<std::filesystem::path> sources;
  const std::vector<std::string> wanted = {"mse_loss_baseline",   "bf16_gemm_baseline",
                                           "axpy_reference",      "softmax_baseline",
                                           "layernorm_reference", "fp8_block_gemm_baseline"};
  std::vector<std::filesystem::path> task_dirs;
  for (const char* suite : {"tasks", "tasks_realworld"}) {
    for (auto& d : find_task_dirs(std::filesystem::path(KOPT_SOURCE_DIR) / suite))
      task_dirs.push_back(d);
  }
  for (const auto& task_dir : task_dirs) {
    auto task = load_task(task_dir);
    ASSERT_TRUE(task.ok()) << task.error();
    for (const char* name : {"reference.cu", "baseline.cu"}) {
      auto file = load_kernel_file(task_dir / name, &*task);
      ASSERT_TRUE(file.ok()) << file.error();
      std::string stem = task->name + "_" + std::filesystem::path(name).stem().string();
      if (std::find(wanted.begin(), wanted.end(), stem) == wanted.end()) continue;
      auto image = exporter::compile_device_image(*file, {}, "9.0");
      ASSERT_TRUE(image.ok()) << stem << ": " << image.error();
      EXPECT_FALSE(image->cubin.empty()) << stem;
      exporter::HeaderInput input;
      input.task = &*task;
      input.kernel = &*file;
      input.kernel_file_name = stem + ".cu";
      input.image = &*image;
      input.image_prefix = "kopt_" + stem;
      auto header = exporter::generate_launcher_header(input);
      ASSERT_TRUE(header.ok()) << stem << ": " << header.error();
      if (task->name == "fp8_block_gemm") {  // e4m3 tensors: the toolkit's fp8 type
        EXPECT_TRUE(contains(*header, "#include <cuda_fp8.h>")) << *header;
        EXPECT_TRUE(contains(*header, "const __nv_fp8_e4m3* x")) << *header;
        std::string api = exporter::generate_api_header(*task, true);
        EXPECT_TRUE(contains(api, "#include <cuda_fp8.h>")) << api;
        EXPECT_TRUE(contains(api, "const __nv_fp8_e4m3* w")) << api;
        EXPECT_STREQ(dtype_facts(task->inputs[0].dtype).torch_name, "float8_e4m3fn");
        EXPECT_STREQ(dtype_facts(task->outputs[0].dtype).torch_name, "bfloat16");
      }
      ASSERT_TRUE(write_file_atomic(dir / (stem + ".cuh"), *header).ok());
      // A user's translation unit: include the header, call the launcher.
      std::string call = "kopt_" + exporter::cpp_identifier(task->name) + "::launch(";
      bool first = true;
      for (const auto* list : {&task->inputs, &task->outputs}) {
        for (size_t i = 0; i < list->size(); ++i, first = false)
          call += first ? "nullptr" : ", nullptr";
      }
      for (size_t i = 0; i < task->sizes.size(); ++i) call += ", 1";
      for (size_t i = 0; i < task->constants.size(); ++i) call += ", 1.0";
      call += ");";
      std::string user =
          "#include \"" + stem + ".cuh\"\nvoid use_" + stem + "() { (void)" + call + " }\n";
      ASSERT_TRUE(write_file_atomic(dir / ("use_" + stem + ".cc"), user).ok());
      sources.push_back(dir / ("use_" + stem + ".cc"));
    }
  }
  ASSERT_EQ(sources.size(), wanted.size());
  ASSERT_TRUE(write_file_atomic(dir / "kopt_cuda_image.h", exporter::image_loader_header()).ok());
  for (const auto& source : sources) {
    auto out = run({"g++", "-std=c++17", "-Wall", "-Werror", "-c", source.string(), "-o",
                    (dir / (source.stem().string() + ".o")).string(), "-I",
                    (std::filesystem::path(KOPT_CUDA_ROOT) / "include").string()},
                   std::chrono::seconds(300));
    EXPECT_EQ(out.exit_code, 0) << source << ":\n" << out.stderr_text;
  }
}

}  // namespace
}  // namespace kopt::memory
