// Every file `kopt export` writes, and what `kopt memory export` prints, pinned byte for byte: a
// fixed memory (golden/memory.jsonl, imported through `kopt memory import`) exported against a
// fixed copy of its tasks (golden/tasks), so that splitting the generators' templates or moving
// them (issue 38) cannot change a character of what reaches a user's repository. A deliberate
// change to an exported file updates its digest here in the same commit; the failure prints the
// whole table as it now is. The device code (.cubin, .ptx, _image.cc) and the files that name
// its digests (manifest.json, kopt_plan_*.py) are NVRTC's output: a new toolkit changes them too.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "common/files.h"
#include "common/sha256.h"
#include "exchange/launcher_codegen.h"
#include "sandbox/kernel_file.h"
#include "sandbox/task_spec.h"
#include "tests/memory_store/test_support.h"

namespace kopt::memory {
namespace {

using namespace testing;

const std::filesystem::path kGolden =
    std::filesystem::path(KOPT_SOURCE_DIR) / "tests" / "exchange" / "golden";

// Each file under `dir` (relative name) with its sha256.
std::map<std::string, std::string> digests(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto text = read_file(entry.path());
    if (!text) throw std::runtime_error(text.error());
    files[std::filesystem::relative(entry.path(), dir).string()] = sha256_hex(*text);
  }
  return files;
}

// The table as C++ source, to paste here after a deliberate change.
std::string as_table(const std::map<std::string, std::string>& files) {
  std::ostringstream out;
  for (const auto& [name, digest] : files)
    out << "      {\"" << name << "\", \"" << digest << "\"},\n";
  return out.str();
}

class ExportGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    auto out = run_kopt(KOPT_BINARY, {"memory", "import", "--db", db_.string(), "--jsonl",
                                      (kGolden / "memory.jsonl").string()});
    ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  }

  TempDir dir_;
  std::filesystem::path db_ = dir_ / "memory.db";
};

TEST_F(ExportGolden, EveryExportedFileIsUnchanged) {
  const std::filesystem::path folder = dir_ / "kernels";
  // An imported verdict carries no judging spec, so the export must be told to take it; no
  // compute-sanitizer either (on a GPU machine it would run, and it changes no file it passes).
  auto out = run_kopt(KOPT_BINARY,
                      {"export", "--db", db_.string(), "--out", folder.string(), "--tasks",
                       (kGolden / "tasks").string(), "--allow-stale-judgment", "--no-sanitize"},
                      std::chrono::seconds(300));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  const std::map<std::string, std::string> expected = {
      {"CMakeLists.txt", "78f57be7ef3bed250f863ca512e5169b8514b84c8e4af4671914d0c2ee9909b2"},
      {"README.md", "a5385798dd3db397e790987030966ab54a45c05f70e9b7ac19652f2746169213"},
      {"axpy.cu", "27d6e561354cfd996771cddba3e95ee87eabce76779a8d89b5217a1f79f82b5a"},
      {"axpy.cubin", "ab6196fc0d1ce160c52b912f123d1152f990e42262d7e1afac3d086c9f2973c8"},
      {"axpy.cuh", "ac72bc8a13c18a33d42c74c2d66df29adc1e166764f3dbb9991f1e435a24207e"},
      {"axpy.ptx", "a3bc1faafa16d4d201f14bddf1e8a7d02025d52fe702284bf9ef3fafb8d8f8b7"},
      {"axpy.reference.cu", "355e4b93b8a8f745f7088256df9f1e6262e0b3ff2297a7793df67e2f38185b2f"},
      {"axpy.reference.cubin", "d051f53a6ca216ac5bb56b22bce4b38986c13027451aace76e58b5b6e0699565"},
      {"axpy.reference.cuh", "07964301bb216fc6dbe895e9b5c957d0d66df0466f4cb9f2bfeb3e7ecfc1fcf6"},
      {"axpy.reference.ptx", "c0a1bda279611f0ecf405dbc6e8d15ca05ff26011348ef23e9d367f3f6bbcfe8"},
      {"axpy_api.cc", "e42295c0b6525fa74cba936e11d89ef1687c3dc37db7b16119bcf851b1edc927"},
      {"axpy_api.h", "f406aaae264a3ad4a80fcd757abb9619103f3c20cd15b4d8eef63c2d1ed4a728"},
      {"axpy_image.cc", "84e74cf7d0d3c5759a77d8fca4c4b86fd672747a7cbf72874fc943f2878e0287"},
      {"axpy_reference_api.cc", "fe3798c7110508c52fadf1b699fc0487be6399c9d68ffda96b476724af36700f"},
      {"axpy_reference_image.cc",
       "44a0aa56423547ab0c6a2a9012b523339a05a9fee2584e36cd286dad66980b7f"},
      {"axpy_selftest.cc", "a87bfa0abf59426d0ff058995d7b0a12d6580f5cb38f3fe0ff2f76dba3199147"},
      {"kopt_cuda_image.h", "0152fad2feb3daeb358706b9ffba38de4146f4cc37b3738af66f194de9641d58"},
      {"kopt_plan_axpy.py", "3162f17719f9b13315356d85dd43d702a137336e51161154ace4f42dcef00419"},
      {"kopt_plan_softmax.py", "d4cf9b46ada3511b86d95e51acf20ff392076460756951bdab5c2e8180a64a41"},
      {"kopt_selftest.h", "484658ee4169f7ee8db5fdba04f89229f99bcb4bc9f7b5c060587869283a7d41"},
      {"kopt_torch.py", "ab626de842c484307379c2f27598aa181217af6557e921d961e22fda0d844118"},
      {"manifest.json", "f11952e7dc3fb3a9638d307bfd2ec5205f1dcef3b9d09c1314655c6bc89ff2e6"},
      {"softmax.cu", "7635f3d83813706429b49924802085e284d45bfeee9191b0dc9ce838993df4f3"},
      {"softmax.cubin", "296d0f9d5dd7b4189b429b71b75cb8dd67ff91e2545eb168ad01cb51f2edc121"},
      {"softmax.cuh", "f30a76fc50370c9ddb1c920a4f9f5616ac6a004d5760735c060a8e2f319fc872"},
      {"softmax.ptx", "0a578ba30cb634d36f34442847cfd91a6c50c7f4db33cbb11fb245d8b2317946"},
      {"softmax.reference.cu", "605be70e2cd6d41075b556a127325376b851a570cb899ddbd15871d330352f99"},
      {"softmax.reference.cubin",
       "dbd801364cfbd8f49c72d075fd97489f6805336c6b50428ce1c9729a596a84c6"},
      {"softmax.reference.cuh", "c9e8fbb27d63f1d7aae53b52192ffa15d6ade35d822489d57a32449d2c76d92a"},
      {"softmax.reference.ptx", "5692647d428c4d9f728f052a10eb4d1dd4e9973c2cf437942b2323210736822c"},
      {"softmax_api.cc", "e4470a59d0ab5ccd68cdc98d9e18be7051608705e6d735942c424d0ef1be2849"},
      {"softmax_api.h", "c30351328378e04bdd1c16173ec489f34dadd27f6f4e16c373dbe1eb5314b307"},
      {"softmax_image.cc", "fa18196b3fff1e891fce382c553c8fff74b6518d921083efc6ab0ae6c785f241"},
      {"softmax_reference_api.cc",
       "d7ebe7bc54121874728ca9fa66e0d9661980bc1cc2189c2412a27e41256ef775"},
      {"softmax_reference_image.cc",
       "5d38d66356ddaf786ebfda1ceb9dfc66e2aff5866350d05d69397e92333bdf7d"},
      {"softmax_selftest.cc", "75b2365ec500149a356363cba8a2535fdd77823e045feb8a3b8a5cb4eaa4d831"},
      {"test_kopt_kernels.py", "ac039c8a9e64efb546772e2dd72a2d0a36c466205b1969f1251ce92d623fcf01"},
  };
  auto files = digests(folder);
  EXPECT_EQ(files.size(), expected.size());
  for (const auto& [name, digest] : files) {
    auto want = expected.find(name);
    if (want == expected.end())
      ADD_FAILURE() << name << ": not in the golden table";
    else
      EXPECT_EQ(digest, want->second) << name << " changed";
  }
  for (const auto& [name, digest] : expected)
    EXPECT_TRUE(files.count(name)) << name << ": no longer exported";
  EXPECT_EQ(files, expected) << "the table as it is now:\n" << as_table(files);
}

TEST_F(ExportGolden, MemoryExportIsUnchanged) {
  const std::filesystem::path jsonl = dir_ / "again.jsonl";
  auto out =
      run_kopt(KOPT_BINARY, {"memory", "export", "--db", db_.string(), "--jsonl", jsonl.string()});
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text << out.stderr_text;
  auto text = read_file(jsonl);
  ASSERT_TRUE(text.ok()) << text.error();
  // The import kept every field, so the memory exports as the fixture it came from.
  auto fixture = read_file(kGolden / "memory.jsonl");
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  EXPECT_EQ(*text, *fixture);
}

// The launchers of the plan kinds the two exported tasks lack (scratch buffers zeroed or not,
// several launches, bf16 and fp8 tensors, 32- and 64-bit and float arguments), from fixed copies
// of five tasks (golden/launchers). The device image is a stand-in with the plan's kernel names
// as symbols: this pins the generator's text, not NVRTC's.
TEST(LauncherGolden, HeadersOfEveryPlanKindAreUnchanged) {
  const std::map<std::string, std::string> expected = {
      {"bf16_gemm.baseline", "85f8f40d75fe9c90de883049267e671059beb181f60f29ce3d4c99532b83b306"},
      {"bf16_gemm.reference", "b351daa128d1a8249f0ea1020a6b82767f32545624bad4608ec4322943856c6f"},
      {"fp8_block_gemm.baseline",
       "8dff0ceb3d400bbeb042747d78e6ad330fd00317865e6530b8a0fca1668a36ff"},
      {"fp8_block_gemm.reference",
       "768403930a872719c10305e9885e3d2476f325aa68a2dc94416fec64ccbded4b"},
      {"fused_moe.baseline", "84c41e2b68fc6d50e40934d2d851dbe22f953bc1e6c231d65164c85ad268e072"},
      {"fused_moe.reference", "9c7ffe5033f00b7e8bcbdac38f621f9436249a6d8a31b7bea3e4bced608b7a4c"},
      {"layernorm.baseline", "d5c09eaa65f90305c70a7e20708294c8428908f5e232ccd4b92d262b19bbd73d"},
      {"layernorm.reference", "53de2ff92ced4f00c8204c3f4567755fb806465792c381ded1bd448df3a99d90"},
      {"mse_loss.baseline", "3da1dc898a461bd9379d0f0f3b17c621b4b5bf6bfce7e468000e7522ab63f83a"},
      {"mse_loss.reference", "5735ba869f221ed205cdc4eb2080ce9e563ea91341e461d15e55f2be48a6c42f"},
  };
  std::map<std::string, std::string> headers;
  for (const auto& dir : std::filesystem::directory_iterator(kGolden / "launchers")) {
    auto task = load_task(dir.path());
    ASSERT_TRUE(task.ok()) << task.error();
    for (const char* name : {"reference.cu", "baseline.cu"}) {
      auto kernel = load_kernel_file(dir.path() / name, &*task);
      ASSERT_TRUE(kernel.ok()) << kernel.error();
      std::string stem = task->name + "." + std::filesystem::path(name).stem().string();
      exporter::DeviceImage image;
      image.cc_major = 9;
      for (const auto& launch : kernel->launches) {
        if (std::find(image.kernels.begin(), image.kernels.end(), launch.kernel) !=
            image.kernels.end())
          continue;
        image.kernels.push_back(launch.kernel);
        image.symbols.push_back("_Z" + launch.kernel);
      }
      exporter::HeaderInput input;
      input.task = &*task;
      input.kernel = &*kernel;
      input.kernel_file_name = stem + ".cu";
      input.provenance = "1.50x on NVIDIA H100 80GB HBM3, source sha256 0123";
      input.image = &image;
      input.image_prefix = "kopt_" + exporter::cpp_identifier(stem);
      auto header = exporter::generate_launcher_header(input);
      ASSERT_TRUE(header.ok()) << stem << ": " << header.error();
      headers[stem] = sha256_hex(*header);
    }
  }
  EXPECT_EQ(headers, expected) << "the table as it is now:\n" << as_table(headers);
}

}  // namespace
}  // namespace kopt::memory
