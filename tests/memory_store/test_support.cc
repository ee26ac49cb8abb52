#include "tests/memory_store/test_support.h"

#include <stdlib.h>

#include <stdexcept>

namespace kopt::memory::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kopt-memory-test-XXXXXX");
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

CommandOutput run_program(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  auto out = run_command(argv, "", limit);
  if (!out) throw std::runtime_error(out.error());
  return *out;
}

MemoryStore open_store(const std::filesystem::path& path) {
  auto store = MemoryStore::open(path);
  if (!store) throw std::runtime_error(store.error());
  return std::move(*store);
}

std::string kernel_source(const std::string& kernel_name, const std::string& body_words) {
  return "/* kopt:plan\n{\"launches\": [{\"kernel\": \"" + kernel_name +
         "\", \"grid\": [\"ceil_div(n, 256)\"], \"block\": [256], \"args\": [\"x\", \"out\", "
         "\"n\"]}]}\n*/\nextern \"C\" __global__ void " +
         kernel_name + "(const float* x, float* out, int n) {\n  // " + body_words +
         "\n  int i = blockIdx.x * 256 + threadIdx.x;\n  if (i < n) out[i] = x[i];\n}\n";
}

int64_t add_task(MemoryStore& store, const std::string& name, std::vector<std::string> tags) {
  TaskRecord task;
  task.name = name;
  task.spec_hash = "hash-" + name;
  task.tags = std::move(tags);
  task.spec_json = "{\"name\": \"" + name + "\"}";
  auto id = store.upsert_task(task);
  if (!id) throw std::runtime_error(id.error());
  return *id;
}

int64_t add_kernel(MemoryStore& store, const std::string& task, const std::string& source,
                   std::optional<int64_t> parent) {
  KernelRecord kernel;
  kernel.task = task;
  kernel.source = source;
  kernel.parent_id = parent;
  kernel.origin.agent = Origin::kCoder;
  kernel.origin.model = "test-model";
  auto id = store.add_kernel(kernel);
  if (!id) throw std::runtime_error(id.error());
  return *id;
}

int64_t add_pair(MemoryStore& store, const std::string& task, int64_t slow, int64_t fast,
                 double speedup, const std::string& summary, std::vector<std::string> tags,
                 const std::string& gpu_arch) {
  PairRecord pair;
  pair.task = task;
  pair.slow_kernel_id = slow;
  pair.fast_kernel_id = fast;
  pair.speedup = speedup;
  pair.gpu_model = "NVIDIA H100 80GB HBM3";
  pair.gpu_arch = gpu_arch;
  pair.summary = summary;
  pair.tags = std::move(tags);
  pair.created_at = "2026-11-22T03:00:00Z";
  auto id = store.add_pair(pair);
  if (!id) throw std::runtime_error(id.error());
  return *id;
}

}  // namespace kopt::memory::testing
