// The label audit (issue 36): the technique classifier (memory_store/techniques.h) over the real
// known-good kernels of the suite, for a person to judge each label:
//
//   technique_audit [--repo DIR]
//
// Per kernel (every task's baseline.cu, the `// expect: ok` twins under tests/sandbox/ that name
// their task, and the replayed answers under tests/orchestrator/replay that the fake evaluator
// scripts as ok): techniques_in_code (what retrieval's novelty term takes the current kernel to
// use) and, for a kernel that is not its task's baseline, pair_techniques_from_code with no
// lesson (what a pair baseline -> this kernel teaches, as retrieval reads it). Prints markdown.
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/memory_measures.h"
#include "common/files.h"
#include "common/strings.h"
#include "memory_store/techniques.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "technique_audit: %s\n", message.c_str());
  return 1;
}

// The ```cuda block of a replayed answer, "" when it has none.
std::string cuda_block(const std::string& answer) {
  size_t start = answer.find("```cuda\n");
  if (start == std::string::npos) return "";
  start += 8;
  size_t end = answer.find("```", start);
  return end == std::string::npos ? "" : answer.substr(start, end - start);
}

}  // namespace

int main(int argc, char** argv) {
  std::string repo = KOPT_SOURCE_DIR;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repo" && i + 1 < argc) {
      repo = argv[++i];
    } else {
      return fail("unknown option " + arg + " (--repo DIR)");
    }
  }
  auto corpus = kopt::bench::load_corpus(repo);
  if (!corpus) return fail(corpus.error());
  // The replayed answers that are correct kernels, as the orchestrator README lists them.
  const std::vector<std::pair<std::string, std::string>> replays = {
      {"axpy", "01_axpy_vec4.txt"},
      {"softmax", "02_softmax_online.txt"},
      {"axpy", "05_axpy_unrolled.txt"}};
  for (const auto& [task, file] : replays) {
    auto answer = kopt::read_file(std::filesystem::path(repo) / "tests/orchestrator/replay" / file);
    if (!answer) return fail(answer.error());
    for (auto& t : *corpus) {
      if (t.name == task)
        t.kernels.push_back({"tests/orchestrator/replay/" + file, cuda_block(*answer)});
    }
  }
  std::printf("| kernel | task | labels of its code | labels it adds over the baseline |\n");
  std::printf("| --- | --- | --- | --- |\n");
  for (const auto& task : *corpus) {
    for (size_t i = 0; i < task.kernels.size(); ++i) {
      const auto& k = task.kernels[i];
      std::string code = kopt::join(kopt::memory::techniques_in_code(k.source), ", ");
      std::string adds = i == 0 ? "(baseline)"
                                : kopt::join(kopt::memory::pair_techniques_from_code(
                                                 "", task.kernels.front().source, k.source),
                                             ", ");
      std::printf("| %s | %s | %s | %s |\n", k.path.c_str(), task.name.c_str(),
                  code.empty() ? "-" : code.c_str(), adds.empty() ? "-" : adds.c_str());
    }
  }
  return 0;
}
