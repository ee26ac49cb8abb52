// The "daemon" section: what `kopt run` uses besides the LLM. Adding a key is one line here and
// a member in DaemonConfig; unknown keys are rejected automatically.
#include <algorithm>

#include "common/strings.h"
#include "src/config/config_sections.h"

namespace kopt {

using nlohmann::json;
using Bound = ObjectReader::Bound;

namespace {

// The placeholders a worker command template may use.
const std::vector<std::string> kWorkerPlaceholders = {"worker", "gpu"};

void check_worker_template(JsonReader& reader, const std::string& path,
                           const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
      size_t close = arg.find('}', open);
      std::string item_path = path + "[" + std::to_string(i) + "]";
      if (close == std::string::npos) {
        reader.error(item_path, "unclosed '{' in '" + arg + "'");
        break;
      }
      std::string name = arg.substr(open + 1, close - open - 1);
      if (std::find(kWorkerPlaceholders.begin(), kWorkerPlaceholders.end(), name) ==
          kWorkerPlaceholders.end()) {
        reader.error(item_path, "unknown placeholder {" + name + "}, expected one of {" +
                                    join(kWorkerPlaceholders, "}, {") + "}" +
                                    did_you_mean(name, kWorkerPlaceholders));
      }
    }
  }
}

}  // namespace

DaemonConfig read_daemon_section(JsonReader& reader, const json* section) {
  DaemonConfig d;
  ObjectReader r(reader, section, "$.daemon");

  ObjectReader budgets(reader, r.object("budgets"), "$.daemon.budgets");
  budgets.number("hours", d.budgets.hours, Bound::kPositive);
  budgets.number("max_usd", d.budgets.max_usd, Bound::kNonNegative);
  budgets.integer("candidates_per_task", d.budgets.candidates_per_task, Bound::kPositive);
  budgets.finish();

  r.integer_list("gpus", d.gpus);
  r.string_list("worker_command", d.worker_command);
  check_worker_template(reader, r.path_of("worker_command"), d.worker_command);
  r.finish();
  return d;
}

}  // namespace kopt
