// `kopt export` against hostile stored text, with the real kopt binary, cmake, g++ and python3:
//  - a kernel whose host-only branch (#ifndef __CUDACC_RTC__) holds a constructor that runs a
//    command: the export's build compiles no kernel source (only generated C++ and the device
//    code as data), so configuring, building and running it never runs that command;
//  - a stored source that no longer matches its sha256 is refused;
//  - a GPU name and a task description built to break out of CMake, C++, Python and markdown
//    are inert in every generated file;
//  - a file of the user's in the export folder is never overwritten.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/sha256.h"
#include "sandbox/judging_spec.h"
#include "sandbox/task_spec.h"
#include "tests/memory_store/export_project.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

std::string source_file(const std::string& relative) {
  auto text = read_file(std::filesystem::path(KOPT_SOURCE_DIR) / relative);
  if (!text) throw std::runtime_error(text.error());
  return *text;
}

class ExportHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = dir_ / "kernels";
    canary_ = dir_ / "CANARY";
    db_ = (dir_ / "memory.db").string();
  }

  // The host-only payload NVRTC never sees: a constructor that touches the canary.
  std::string hostile_kernel() const {
    return fast_axpy_source() +
           "#ifndef __CUDACC_RTC__\n#include <cstdlib>\n"
           "__attribute__((constructor)) static void kopt_payload() {\n"
           "  std::system(\"touch " +
           canary_.string() + "\");\n}\n#endif\n";
  }

  // A memory with the axpy task under a hostile description (and its tasks folder, so the
  // reference and the self-test are exported), the hostile kernel, and a hostile GPU name.
  void fill(const std::string& kernel_source, const std::string& description,
            const std::string& gpu_model) {
    auto store = open_store(db_);
    nlohmann::json spec = nlohmann::json::parse(source_file("tasks/axpy/task.json"));
    spec["description"] = description;
    TaskRecord task;
    task.name = "axpy";
    task.spec_json = spec.dump(2) + "\n";
    task.spec_hash = sha256_hex(task.spec_json);
    ASSERT_TRUE(store.upsert_task(task).ok());
    std::filesystem::create_directories(dir_ / "tasks" / "axpy");
    ASSERT_TRUE(write_file_atomic(dir_ / "tasks/axpy/task.json", task.spec_json).ok());
    ASSERT_TRUE(
        write_file_atomic(dir_ / "tasks/axpy/reference.cu", source_file("tasks/axpy/reference.cu"))
            .ok());
    ASSERT_TRUE(
        write_file_atomic(dir_ / "tasks/axpy/baseline.cu", source_file("tasks/axpy/baseline.cu"))
            .ok());
    kernel_id_ = add_kernel(store, "axpy", kernel_source);
    EvaluationRecord e;
    e.kernel_id = kernel_id_;
    e.task = "axpy";
    e.gpu = {gpu_model, "9.0", "580.159.04", "13.0"};
    e.verdict = Verdict::kOk;
    e.tunables_json = "{\"BLOCK\":256}";
    e.median_us = 100;
    e.baseline_us = 300;
    e.speedup = 3;
    e.created_at = "2026-11-25T04:05:06Z";
    // Judged under the task folder's spec and this verifier, so the export takes it as current.
    auto judged = load_task(dir_ / "tasks" / "axpy");
    ASSERT_TRUE(judged.ok()) << judged.error();
    e.judging_spec_sha256 = judging_spec_sha256(*judged);
    e.verifier_version = kVerifierVersion;
    ASSERT_TRUE(store.add_evaluation(e).ok());
  }

  CommandOutput do_export() {
    return run_checked({KOPT_BINARY, "export", "--db", db_, "--out", out_.string(), "--tasks",
                        (dir_ / "tasks").string()},
                       std::chrono::seconds(300));
  }

  std::string file(const std::string& name) {
    auto text = read_file(out_ / name);
    return text ? *text : "";
  }

  TempDir dir_;
  std::filesystem::path out_, canary_;
  std::string db_;
  int64_t kernel_id_ = 0;
};

const char* kHostileDescription =
    "axpy\"\"\"\nimport os; os.system('touch CANARY')\n\"\"\" */ system(\"x\"); /* "
    "\nexecute_process(COMMAND touch CANARY)\n${CMAKE_COMMAND} <b>html</b> | cell \\";
const char* kHostileGpu = "NVIDIA H100\nexecute_process(COMMAND touch CANARY)\n# \"\"\" */ \\";

// A kernel with host code can only be in a memory that was changed behind kopt's back (the gate and
// `memory import` refuse it): the export compiles it with the gate's rules and refuses it.
TEST_F(ExportHostileTest, HostCodeInAStoredKernelIsRefused) {
  fill(hostile_kernel(), "y = alpha * x + y", "NVIDIA H100 80GB HBM3");
  auto exported = do_export();
  EXPECT_NE(exported.exit_code, 0);
  EXPECT_TRUE(contains(exported.stderr_text, "does not compile")) << exported.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_ / "axpy.cu"));
  EXPECT_FALSE(std::filesystem::exists(canary_)) << "the kernel's host code ran";
}

// What an export builds is generated C++ and the device code as data, never a kernel source: the
// build of an export runs none of the text the model wrote.
TEST_F(ExportHostileTest, TheExportsBuildCompilesNoKernelSource) {
  fill(fast_axpy_source(), "y = alpha * x + y", "NVIDIA H100 80GB HBM3");
  auto exported = do_export();
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_text;
  // The source is there, byte for byte, for reading; the device code is NVRTC's.
  EXPECT_EQ(file("axpy.cu"), fast_axpy_source());
  auto manifest = nlohmann::json::parse(file("manifest.json"));
  EXPECT_EQ(manifest["format"], 3);
  const auto& image = manifest["kernels"][0]["image"];
  EXPECT_EQ(image["arch"], "sm_90a");
  EXPECT_EQ(image["cubin_sha256"], sha256_hex(file("axpy.cubin")));
  EXPECT_EQ(image["ptx_target"], "compute_90");
  EXPECT_EQ(image["ptx_sha256"], sha256_hex(file("axpy.ptx")));
  // No generated file includes a kernel source.
  for (const auto& entry : std::filesystem::directory_iterator(out_)) {
    std::string name = entry.path().filename().string();
    std::string text = file(name);
    EXPECT_FALSE(contains(text, "#include \"axpy.cu\"")) << name;
    EXPECT_FALSE(contains(text, "#include \"axpy.reference.cu\"")) << name;
    EXPECT_FALSE(contains(text, "kopt_payload") && name != "axpy.cu") << name;
  }

  // Configure and build with the host compiler only: every compiled file is generated C++.
  auto configured =
      run_checked({"cmake", "-S", out_.string(), "-B", (dir_ / "build").string(),
                   "-DCUDAToolkit_ROOT=" KOPT_CUDA_ROOT, "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"},
                  std::chrono::seconds(300));
  ASSERT_EQ(configured.exit_code, 0) << configured.stdout_text << configured.stderr_text;
  auto commands = nlohmann::json::parse(*read_file(dir_ / "build/compile_commands.json"));
  std::set<std::string> compiled;
  for (const auto& c : commands) {
    compiled.insert(std::filesystem::path(c["file"].get<std::string>()).filename().string());
  }
  EXPECT_EQ(compiled,
            (std::set<std::string>{"axpy_api.cc", "axpy_image.cc", "axpy_reference_api.cc",
                                   "axpy_reference_image.cc", "axpy_selftest.cc"}));
  auto built = run_checked({"cmake", "--build", (dir_ / "build").string(), "-j", "2"},
                           std::chrono::seconds(600));
  ASSERT_EQ(built.exit_code, 0) << built.stdout_text << built.stderr_text;
  // The self-test program links the kernel's library: run it (no GPU here: it skips with 77).
  auto selftest = run_checked({(dir_ / "build/kopt_axpy_selftest").string()});
  EXPECT_TRUE(selftest.exit_code == 77 || selftest.exit_code == 0) << selftest.stdout_text;
  EXPECT_FALSE(std::filesystem::exists(canary_)) << "the kernel's host code ran";
  // And the Python binding imports without compiling or running anything.
  auto imported = run_checked({"python3", "-c",
                               "import sys; sys.path.insert(0, sys.argv[1]); import kopt_torch",
                               out_.string()});
  EXPECT_EQ(imported.exit_code, 0) << imported.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(canary_));
}

TEST_F(ExportHostileTest, ATamperedStoredSourceIsRefused) {
  fill(fast_axpy_source(), "y = alpha * x + y", "NVIDIA H100 80GB HBM3");
  {
    auto store = open_store(db_);
    ASSERT_TRUE(store.database()
                    .execute("UPDATE kernels SET source = source || '// changed after verifying'")
                    .ok());
  }
  auto out = do_export();
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "does not match its sha256")) << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(ExportHostileTest, HostileNamesAndDescriptionsAreInertInEveryGeneratedFile) {
  fill(fast_axpy_source(), kHostileDescription, kHostileGpu);
  auto exported = do_export();
  ASSERT_EQ(exported.exit_code, 0) << exported.stderr_text;
  // CMake: configuring runs nothing of the text (with the canary relative to the build folder
  // and to the source folder).
  auto configured = run_checked({"cmake", "-S", out_.string(), "-B", (dir_ / "build").string(),
                                 "-DCUDAToolkit_ROOT=" KOPT_CUDA_ROOT},
                                std::chrono::seconds(300));
  ASSERT_EQ(configured.exit_code, 0) << configured.stdout_text << configured.stderr_text;
  // C++: every generated file compiles (the comments stayed comments).
  auto built = run_checked({"cmake", "--build", (dir_ / "build").string(), "-j", "2"},
                           std::chrono::seconds(600));
  ASSERT_EQ(built.exit_code, 0) << built.stdout_text << built.stderr_text;
  // Python: importing runs nothing, and the docstring is the description, exactly.
  std::string probe =
      "import sys\nsys.path.insert(0, sys.argv[1])\nimport kopt_torch\n"
      "sys.stdout.write(kopt_torch.axpy.__doc__)\n";
  ASSERT_TRUE(write_file_atomic(dir_ / "probe.py", probe).ok());
  auto imported = run_checked(
      {"sh", "-c",
       "cd '" + dir_.path().string() + "' && python3 probe.py '" + out_.string() + "'"});
  ASSERT_EQ(imported.exit_code, 0) << imported.stderr_text;
  EXPECT_TRUE(contains(imported.stdout_text, kHostileDescription)) << imported.stdout_text;
  for (const auto& where : {dir_.path(), out_, dir_ / "build"})
    EXPECT_FALSE(std::filesystem::exists(where / "CANARY")) << where;
  // Markdown: the table row stays one row, no raw HTML.
  std::string readme = file("README.md");
  EXPECT_FALSE(contains(readme, "<b>")) << readme;
  EXPECT_TRUE(contains(readme, "NVIDIA H100 execute\\_process\\(COMMAND touch CANARY\\)"))
      << readme;
  // C++ comments: the description is one line, its "*/" broken.
  EXPECT_FALSE(contains(file("axpy_api.h"), "*/ system")) << file("axpy_api.h");
}

TEST_F(ExportHostileTest, AUsersFileInTheFolderSurvivesAndTheExportFailsNamingIt) {
  fill(fast_axpy_source(), "y = alpha * x + y", "NVIDIA H100 80GB HBM3");
  std::filesystem::create_directories(out_);
  ASSERT_TRUE(write_file_atomic(out_ / "axpy.cu", "// my own axpy\n").ok());
  auto out = do_export();
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text,
                       (out_ / "axpy.cu").string() + ": exists and was not written by kopt export"))
      << out.stderr_text;
  EXPECT_EQ(file("axpy.cu"), "// my own axpy\n");
  // Nothing half-written: the folder holds only the user's file.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(out_),
                          std::filesystem::directory_iterator()),
            1);

  // A file kopt wrote and the user left alone is replaced; one the user changed is not.
  std::filesystem::remove(out_ / "axpy.cu");
  ASSERT_EQ(do_export().exit_code, 0);
  ASSERT_TRUE(write_file_atomic(out_ / "axpy_api.h", file("axpy_api.h") + "// my note\n").ok());
  {
    auto store = open_store(db_);
    ASSERT_TRUE(
        store.database().execute("UPDATE evaluations SET median_us = 50, speedup = 6").ok());
  }
  out = do_export();
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, "axpy_api.h: was written by kopt export and changed since"))
      << out.stderr_text;
  EXPECT_TRUE(contains(file("axpy_api.h"), "// my note\n"));
  EXPECT_TRUE(contains(file("README.md"), "3.00x")) << "nothing of the second export written";
}

}  // namespace
}  // namespace kopt::memory
