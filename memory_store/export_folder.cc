#include "memory_store/export_folder.h"

#include <cstdio>
#include <set>

namespace kopt::exporter {

using nlohmann::json;

namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::vector<std::string> strings(const json& entry, const char* key) {
  std::vector<std::string> out;
  if (!entry.contains(key) || !entry[key].is_array()) return out;
  for (const auto& v : entry[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<BundleTask> folder_tasks(memory::MemoryStore& store, const json& kernels,
                                     const std::map<std::string, BundleTask>& exported,
                                     std::vector<std::string>& skipped) {
  std::vector<BundleTask> tasks;
  for (const auto& entry : kernels) {
    std::string name = entry.value("task", "");
    if (auto it = exported.find(name); it != exported.end()) {
      tasks.push_back(it->second);
      continue;
    }
    auto record = store.find_task(name);
    std::optional<TaskSpec> spec;
    if (record && *record) {
      auto parsed = parse_task((*record)->spec_json, "memory: task " + name);
      if (parsed) spec = std::move(*parsed);
    }
    if (!entry.contains("api_header") || !spec) {
      skipped.push_back(name + ": exported earlier " +
                        std::string(spec ? "by an older kopt" : "from another memory") +
                        "; left out of CMakeLists.txt and kopt_torch.py until exported again");
      continue;
    }
    BundleTask t;
    t.spec = std::move(*spec);
    t.cuda_architecture = entry.value("cuda_architecture", "");
    t.compile_options = strings(entry, "compile_options");
    t.has_reference = entry.contains("reference_file") && entry["reference_file"].is_string();
    t.reference_compile_options = strings(entry, "reference_compile_options");
    t.provenance = fixed(entry.value("speedup", 0.0), 2) + "x over the baseline on " +
                   (entry.contains("gpu") ? entry["gpu"].value("model", "") : std::string());
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::string commit_message(const std::vector<ExportedKernel>& kernels) {
  std::set<std::string> gpus;
  std::string summary;
  for (const auto& k : kernels) {
    summary += (summary.empty() ? "" : ", ") + k.task + " " + fixed(k.speedup, 2) + "x";
    gpus.insert(k.gpu_model);
  }
  std::string gpu_list;
  for (const auto& g : gpus) gpu_list += (gpu_list.empty() ? "" : ", ") + g;
  std::string message = "kopt export: " + summary + " on " + gpu_list + "\n\n" +
                        std::to_string(kernels.size()) + " kernel" +
                        (kernels.size() == 1 ? "" : "s") + ":\n";
  for (const auto& k : kernels) {
    message += "- " + k.task + ": " + fixed(k.speedup, 2) + "x over baseline, " +
               fixed(k.sol_percent, 1) + "% of speed of light on " + k.gpu_model + " (source " +
               k.sha256.substr(0, 12) + ")\n";
  }
  return message + "\nExported by kopt " + KOPT_VERSION +
         "; provenance in manifest.json, self-tests in CMakeLists.txt and test_kopt_kernels.py.\n";
}

}  // namespace kopt::exporter
