// An export as a CMake and PyTorch project, on a machine without a GPU: the files and their
// provenance, the folder configured and compiled by the real cmake and the host compiler alone
// (alone, and through add_subdirectory from a plain C++ project), the Python files valid and
// importable without torch, a CMakeLists.txt of the user's own never overwritten. Running the
// self-tests needs a GPU: export_selftest_gpu_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/sha256.h"
#include "tests/memory_store/export_project.h"
#include "tests/memory_store/sample_memory.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

class ExportBundleTest : public ::testing::Test {
 protected:
  void SetUp() override { out_ = dir_ / "repo" / "kernels"; }
  std::string file(const std::string& name) {
    auto text = read_file(out_ / name);
    return text ? *text : "";
  }

  TempDir dir_;
  std::filesystem::path out_;
};

TEST_F(ExportBundleTest, ManifestAndCMakeNameTargetsArchitecturesAndSelfTests) {
  auto out = export_sample_memory(dir_.path(), out_);
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  auto manifest = nlohmann::json::parse(file("manifest.json"));
  const auto& axpy = manifest["kernels"][0];
  EXPECT_EQ(axpy["cmake_target"], "kopt::axpy");
  EXPECT_EQ(axpy["api_header"], "axpy_api.h");
  EXPECT_EQ(axpy["cuda_architecture"], "90");  // compute capability 9.0: the H100 it ran on
  EXPECT_EQ(axpy["reference_file"], "axpy.reference.cu");
  EXPECT_EQ(axpy["selftest"], "axpy_selftest.cc");
  EXPECT_EQ(axpy["image"]["cubin"], "axpy.cubin");
  EXPECT_EQ(axpy["reference_image"]["cubin"], "axpy.reference.cubin");
  EXPECT_EQ(axpy["image"]["cubin_sha256"], sha256_hex(file("axpy.cubin")));
  EXPECT_EQ(manifest["files"]["axpy.cu"], sha256_hex(file("axpy.cu")));
  EXPECT_EQ(axpy["torch"], "kopt_torch.axpy");

  std::string cmake = file("CMakeLists.txt");
  EXPECT_TRUE(contains(cmake, "kopt_kernel_library(kopt_axpy axpy_api.cc axpy_image.cc)")) << cmake;
  EXPECT_TRUE(contains(cmake, "project(kopt_kernels LANGUAGES CXX)")) << cmake;  // no CUDA
  EXPECT_FALSE(contains(cmake, "_api.cu")) << cmake;
  EXPECT_FALSE(contains(cmake, "CUDA_ARCHITECTURES")) << cmake;
  EXPECT_TRUE(contains(cmake, "add_library(kopt::softmax ALIAS kopt_softmax)")) << cmake;
  EXPECT_TRUE(contains(cmake, "add_test(NAME kopt_axpy_selftest COMMAND kopt_axpy_selftest)"));
  EXPECT_TRUE(contains(cmake, "SKIP_RETURN_CODE 77")) << cmake;

  // The reference is the task's own, compiled the same way into its own namespace.
  EXPECT_EQ(file("axpy.reference.cu"),
            *read_file(std::filesystem::path(KOPT_SOURCE_DIR) / "tasks/axpy/reference.cu"));
  EXPECT_TRUE(contains(file("axpy.reference.cuh"), "namespace kopt_axpy_reference {"));
  EXPECT_TRUE(contains(file("axpy_api.h"),
                       "cudaError_t kopt_axpy_launch(const float* x, "
                       "const float* y, float* out, int64_t n, double alpha, "
                       "void* workspace = nullptr, cudaStream_t stream = 0);"))
      << file("axpy_api.h");
  // One block for each of the two smallest sweep shapes (axpy has five), with its tolerance.
  std::string selftest = file("axpy_selftest.cc");
  for (const char* shape : {"\"n=1\"", "\"n=1023\""})
    EXPECT_TRUE(contains(selftest, std::string("kopt_test.shape(") + shape)) << shape;
  for (const char* shape : {"\"n=4097\"", "\"n=1048576\"", "\"default\""})
    EXPECT_FALSE(contains(selftest, std::string("kopt_test.shape(") + shape)) << shape;
  EXPECT_TRUE(contains(selftest,
                       "{9.9999999999999995e-07, 9.9999999999999995e-07, "
                       "0.0001, 1.0}"))
      << selftest;
  EXPECT_TRUE(contains(selftest, "kopt_test.fill(y, {kopt_selftest::Init::kUniform, -2.0, 2.0});"))
      << selftest;
  EXPECT_TRUE(contains(file("README.md"), "link `kopt::TASK`")) << file("README.md");
}

TEST_F(ExportBundleTest, WithoutTheTasksReferenceThereIsNoSelfTest) {
  std::string db = (dir_ / "memory.db").string();
  {
    auto store = open_store(db);
    fill_sample_memory(store);
  }
  auto out = run_checked({KOPT_BINARY, "export", "--db", db, "--out", out_.string(), "--tasks",
                          (dir_ / "no-tasks-here").string()});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "skipped axpy: exported without a self-test"))
      << out.stdout_text;
  EXPECT_FALSE(std::filesystem::exists(out_ / "axpy_selftest.cc"));
  EXPECT_TRUE(contains(file("CMakeLists.txt"), "(no self-test: the task's reference.cu was not"));
  EXPECT_TRUE(
      nlohmann::json::parse(file("manifest.json"))["kernels"][0]["reference_file"].is_null());
}

TEST_F(ExportBundleTest, RefusesToOverwriteACMakeListsItDidNotWrite) {
  std::filesystem::create_directories(out_);
  ASSERT_TRUE(write_file_atomic(out_ / "CMakeLists.txt", "add_library(ours ours.cc)\n").ok());
  auto out = export_sample_memory(dir_.path(), out_);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_TRUE(contains(out.stderr_text, (out_ / "CMakeLists.txt").string() +
                                            ": exists and was not written by kopt export"))
      << out.stderr_text;
  EXPECT_EQ(file("CMakeLists.txt"), "add_library(ours ours.cc)\n");
}

TEST_F(ExportBundleTest, TaskNamesWhoseFilesCollideAreRefused) {
  std::string db = (dir_ / "memory.db").string();
  {
    auto store = open_store(db);
    SampleMemory sample = fill_sample_memory(store);
    // A task named "axpy_reference" would write axpy_reference_image.cc, which is the device
    // code of axpy's reference.
    auto axpy = store.find_task("axpy");
    ASSERT_TRUE(axpy.ok() && *axpy);
    TaskRecord twin = **axpy;
    twin.id = 0;
    twin.name = "axpy_reference";
    size_t at = twin.spec_json.find("\"axpy\",");
    ASSERT_NE(at, std::string::npos);
    twin.spec_json.replace(at, 7, "\"axpy_reference\",");
    twin.spec_hash = sha256_hex(twin.spec_json);
    ASSERT_TRUE(store.upsert_task(twin).ok());
    auto kernel = store.kernel(sample.axpy_fast);
    ASSERT_TRUE(kernel.ok() && *kernel);
    int64_t copy = add_kernel(store, "axpy_reference", (*kernel)->source + "// the twin\n");
    EvaluationRecord e;
    e.kernel_id = copy;
    e.task = "axpy_reference";
    e.gpu = {"NVIDIA H100 80GB HBM3", "9.0", "580.159.04", "13.0"};
    e.verdict = Verdict::kOk;
    e.median_us = 100;
    e.baseline_us = 200;
    e.speedup = 2;
    ASSERT_TRUE(store.add_evaluation(e).ok());
  }
  // The hand-made evaluation records no judging spec: allowed here, the test is about names.
  auto out = run_checked(
      {KOPT_BINARY, "export", "--db", db, "--out", out_.string(), "--allow-stale-judgment"});
  EXPECT_EQ(out.exit_code, 1) << out.stdout_text;
  EXPECT_TRUE(contains(out.stderr_text, (out_ / "axpy_reference_image.cc").string() +
                                            " would be written for both task 'axpy' and task "
                                            "'axpy_reference'"))
      << out.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out_ / "manifest.json"));
}

TEST_F(ExportBundleTest, PythonFilesCompileAndImportWithoutTorch) {
  ASSERT_EQ(export_sample_memory(dir_.path(), out_).exit_code, 0);
  for (const char* py : {"kopt_torch.py", "test_kopt_kernels.py"}) {
    auto out = run_checked({"python3", "-m", "py_compile", (out_ / py).string()});
    EXPECT_EQ(out.exit_code, 0) << py << ": " << out.stderr_text;
  }
  // This machine has no torch: the module imports, its tables work, a kernel call says why not.
  std::string script =
      "import sys\n"
      "sys.path.insert(0, sys.argv[1])\n"
      "import kopt_torch\n"
      "assert kopt_torch.torch is None, 'this test expects a machine without torch'\n"
      "spec = kopt_torch.TASKS['softmax']\n"
      "print(sorted(kopt_torch.TASKS), spec['inferred'], spec['inputs'][0][2]({'rows': 3, "
      "'cols': 5}))\n"
      "try:\n"
      "    kopt_torch.axpy(1, 2)\n"
      "except ImportError as e:\n"
      "    print('ImportError:', e)\n";
  ASSERT_TRUE(write_file_atomic(dir_ / "probe.py", script).ok());
  auto out = run_checked({"python3", (dir_ / "probe.py").string(), out_.string()});
  ASSERT_EQ(out.exit_code, 0) << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text,
                       "['axpy', 'softmax'] {'cols': ('x', 1, 1), 'rows': ('x', 0, 1)} (3, 5)"))
      << out.stdout_text;
  EXPECT_TRUE(contains(out.stdout_text, "ImportError: kopt_torch: PyTorch is not installed"))
      << out.stdout_text;

  // Under pytest everything is skipped here (no GPU, no torch), and nothing fails.
  // The Debian python3-pytest that test.sh installs may sit beside another python3 on PATH.
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (python.empty() && run_checked({candidate, "-c", "import pytest"}).exit_code == 0)
      python = candidate;
  }
  if (python.empty()) GTEST_SKIP() << "pytest is not installed (test.sh installs it)";
  out = run_checked({python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                     (out_ / "test_kopt_kernels.py").string()},
                    std::chrono::seconds(120));
  EXPECT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  EXPECT_TRUE(contains(out.stdout_text, "6 skipped")) << out.stdout_text;
}

// The folder as a subdirectory of a plain C++ project: everything compiles with the host
// compiler only (no CUDA language, no nvcc), the app links kopt::axpy, and the self-tests are
// registered with its ctest.
TEST_F(ExportBundleTest, CMakeProjectBuildsWithTheHostCompilerThroughAddSubdirectory) {
  ASSERT_EQ(export_sample_memory(dir_.path(), out_).exit_code, 0);
  std::filesystem::path app = dir_ / "repo";
  ASSERT_TRUE(write_file_atomic(app / "CMakeLists.txt",
                                "cmake_minimum_required(VERSION 3.21)\n"
                                "project(app LANGUAGES CXX)\n"
                                "enable_testing()\n"
                                "set(KOPT_KERNELS_SELFTEST ON)\n"
                                "add_subdirectory(kernels)\n"
                                "add_executable(app main.cc)\n"
                                "target_link_libraries(app PRIVATE kopt::axpy kopt::softmax)\n")
                  .ok());
  ASSERT_TRUE(write_file_atomic(app / "main.cc",
                                "#include \"axpy_api.h\"\n#include \"softmax_api.h\"\n"
                                "int main() {\n"
                                "  size_t bytes = kopt_axpy_workspace_bytes(1024);\n"
                                "  return kopt_axpy_launch(nullptr, nullptr, nullptr, 0, 1.0) ==\n"
                                "         cudaSuccess && bytes == 0 ? 0 : 1;\n}\n")
                  .ok());
  auto out = cmake_configure_and_build(app, dir_ / "build");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  for (const char* program : {"app", "kernels/kopt_axpy_selftest", "kernels/kopt_softmax_selftest"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / "build" / program)) << program;
  auto tests = run_checked({"ctest", "--test-dir", (dir_ / "build").string(), "-N"});
  EXPECT_TRUE(contains(tests.stdout_text, "kopt_axpy_selftest")) << tests.stdout_text;
  EXPECT_TRUE(contains(tests.stdout_text, "Total Tests: 2")) << tests.stdout_text;
  // No CUDA compiler was involved: the kernel library holds the two generated C++ files.
  auto cache = read_file(dir_ / "build/CMakeCache.txt");
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE(contains(*cache, "CMAKE_CUDA_COMPILER:")) << "CUDA was enabled";

  // Alone, the folder configures with its self-tests on by default.
  auto alone = run_checked({"cmake", "-S", out_.string(), "-B", (dir_ / "alone").string(),
                            "-DCUDAToolkit_ROOT=" KOPT_CUDA_ROOT},
                           std::chrono::seconds(300));
  EXPECT_EQ(alone.exit_code, 0) << alone.stdout_text << alone.stderr_text;
  auto alone_tests = run_checked({"ctest", "--test-dir", (dir_ / "alone").string(), "-N"});
  EXPECT_TRUE(contains(alone_tests.stdout_text, "Total Tests: 2")) << alone_tests.stdout_text;
}

}  // namespace
}  // namespace kopt::memory
