// The export is what was verified (issue 34, cause 5): the device image `kopt export` ships has
// the bytes of the image the sandbox compiled and judged, though the export names the source
// TASK.cu (the sandbox: candidate.cu) and runs in another folder; a kernel that reads __FILE__
// gets the same bytes too; __DATE__ and __TIME__ are refused at the gate; and no file of an
// export holds a path of the exporting machine (the working folder once sat in the PTX's line
// information, the toolkit's folder in the manifest's NVRTC options). Real NVRTC, no GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/files.h"
#include "common/sha256.h"
#include "exchange/export_bundle.h"
#include "exchange/export_device_image.h"
#include "sandbox/compiler.h"
#include "sandbox/confined/confined_compile.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "tests/support/temp_dir.h"

namespace kopt {
namespace {

const std::filesystem::path kTasks = std::filesystem::path(KOPT_SOURCE_DIR) / "tasks";

// Runs in `dir` for as long as it lives (the test process has one thread).
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::filesystem::path& dir)
      : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~WorkingDirectory() { std::filesystem::current_path(previous_); }

 private:
  std::filesystem::path previous_;
};

std::string axpy_kernel_with_file_name() {
  auto source = read_file(kTasks / "axpy" / "reference.cu");
  if (!source) throw std::runtime_error(source.error());
  // A store past the output only where the file is called TASK.cu: the attack of the issue,
  // made harmless by compiling every program under one name.
  return *source + "\n__device__ const char kopt_file_name[] = __FILE__;\n";
}

class ExportImage : public ::testing::Test {
 protected:
  void SetUp() override {
    auto task = load_task(kTasks / "axpy");
    ASSERT_TRUE(task.ok()) << task.error();
    task_ = *task;
    for (const char* sub : {"sandbox-folder", "export-folder"})
      std::filesystem::create_directories(dir_.path() / sub);
  }

  // As the daemon compiles a candidate (then the worker loads it from the cache).
  CompileOutput verified(const std::string& source) {
    WorkingDirectory here(dir_.path() / "sandbox-folder");
    auto file = parse_kernel_file(source, "candidate.cu", &task_);
    EXPECT_TRUE(file.ok()) << file.error();
    auto out = compile_confined(make_compile_request(*file, {}, "sm_90a"), nullptr);
    EXPECT_TRUE(out.ok() && out->ok) << (out.ok() ? out->log : out.error());
    return *out;
  }

  testing::TempDir dir_;
  TaskSpec task_;
};

TEST_F(ExportImage, ExportedBytesAreTheVerifiedBytes) {
  std::string source = axpy_kernel_with_file_name();
  CompileOutput judged = verified(source);
  WorkingDirectory here(dir_.path() / "export-folder");
  auto file = parse_kernel_file(source, "axpy.cu", &task_);
  ASSERT_TRUE(file.ok()) << file.error();
  auto image = exporter::compile_device_image(*file, {}, "9.0");
  ASSERT_TRUE(image.ok()) << image.error();
  EXPECT_EQ(image->arch, "sm_90a");
  EXPECT_TRUE(image->cubin == judged.cubin) << "the export's CUBIN differs from the verified one";
  // The PTX kopt judged (sm_90a) carries no folder of either machine either.
  for (const std::string* bytes : {&judged.cubin, &judged.ptx, &image->cubin, &image->ptx}) {
    EXPECT_EQ(bytes->find(dir_.path().string()), std::string::npos);
    EXPECT_EQ(bytes->find("sandbox-folder"), std::string::npos);
    EXPECT_EQ(bytes->find("export-folder"), std::string::npos);
  }
}

TEST_F(ExportImage, ClockMacrosAreRefusedAtTheGate) {
  for (const char* macro : {"__DATE__", "__TIME__", "__TIMESTAMP__"}) {
    SCOPED_TRACE(macro);
    auto source = read_file(kTasks / "axpy" / "reference.cu");
    ASSERT_TRUE(source.ok());
    std::string hostile = *source + "\n__device__ const char kopt_when[] = " + macro + ";\n";
    auto file = parse_kernel_file(hostile, "candidate.cu", &task_);
    ASSERT_TRUE(file.ok()) << file.error();
    auto out = compile_kernel(make_compile_request(*file, {}, "sm_90a"), nullptr);
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_FALSE(out->ok);
    EXPECT_NE(out->log.find(std::string(macro) + " is refused"), std::string::npos) << out->log;
    EXPECT_NE(out->log.find("not be the kernel that was verified"), std::string::npos);
  }
}

// Every file of a task's export, searched for the folders of the machine that made it.
TEST_F(ExportImage, NoPathOfTheExportingMachineInTheFiles) {
  WorkingDirectory here(dir_.path() / "export-folder");
  std::string source = axpy_kernel_with_file_name();
  auto file = parse_kernel_file(source, "axpy.cu", &task_);
  ASSERT_TRUE(file.ok()) << file.error();
  auto reference = read_file(kTasks / "axpy" / "reference.cu");
  ASSERT_TRUE(reference.ok());
  exporter::TaskFilesInput input;
  input.task = &task_;
  input.kernel = &*file;
  input.kernel_source = source;
  input.reference_source = *reference;
  input.compute_capability = "9.0";
  exporter::BundleTask bundle;
  auto files = exporter::generate_task_files(input, bundle);
  ASSERT_TRUE(files.ok()) << files.error();
  ASSERT_GE(files->size(), 6u);
  std::vector<std::string> machine_paths = {dir_.path().string(), "export-folder",
                                            std::filesystem::path(KOPT_SOURCE_DIR).string(),
                                            cuda_home().string()};
  for (const auto& f : *files) {
    for (const auto& path : machine_paths)
      EXPECT_EQ(f.contents.find(path), std::string::npos) << f.name << " holds " << path;
  }
  std::string manifest = bundle.image.dump();
  for (const auto& path : machine_paths)
    EXPECT_EQ(manifest.find(path), std::string::npos) << "the manifest holds " << path;
}

// An evaluation records the sha256 of the CUBIN it judged; the export ships those bytes or none.
TEST_F(ExportImage, ADifferingImageIsRefused) {
  std::string source = axpy_kernel_with_file_name();
  CompileOutput judged = verified(source);
  WorkingDirectory here(dir_.path() / "export-folder");
  auto file = parse_kernel_file(source, "axpy.cu", &task_);
  ASSERT_TRUE(file.ok()) << file.error();
  exporter::TaskFilesInput input;
  input.task = &task_;
  input.kernel = &*file;
  input.kernel_source = source;
  input.compute_capability = "9.0";
  exporter::BundleTask bundle;
  input.verified_cubin_sha256 = sha256_hex(judged.cubin);
  auto same = exporter::generate_task_files(input, bundle);
  ASSERT_TRUE(same.ok()) << same.error();
  EXPECT_EQ(bundle.image["cubin_sha256"], sha256_hex(judged.cubin));
  input.verified_cubin_sha256 = std::string(64, '0');  // judged under another NVRTC, say
  auto other = exporter::generate_task_files(input, bundle);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("is not the one that was verified"), std::string::npos)
      << other.error();
}

}  // namespace
}  // namespace kopt
