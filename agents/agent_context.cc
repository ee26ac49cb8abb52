#include "agents/agent_context.h"

#include <fmt/format.h>

#include "common/sol_score.h"
#include "common/strings.h"
#include "common/utf8.h"

namespace kopt::agents {

std::string describe_where_time_goes(const std::optional<Measurements>& m) {
  if (!m || m->where_time_goes.empty())
    return "not profiled (hardware counters are taken for each new best kernel of a task)";
  return m->where_time_goes;
}

std::string describe_measurements(const std::optional<Measurements>& m) {
  if (!m || m->median_us <= 0) return "not measured yet";
  std::string text =
      fmt::format("- time: median {:.2f} us (noise {:.1f}%)", m->median_us, m->noise * 100);
  if (m->baseline_us > 0) {
    text += fmt::format("\n- speedup over the task's baseline ({:.2f} us): {:.3f}x", m->baseline_us,
                        m->speedup);
  }
  if (m->sol_us > 0) {
    text += fmt::format(
        "\n- speed of light: {:.2f} us; this kernel reaches {:.1f}% of it (headroom {:.2f}x)",
        m->sol_us, m->sol_percent, m->median_us / m->sol_us);
  }
  if (!m->production_name.empty() && m->production_us > 0) {
    // What users run today is the bar the kernel is judged by (SOL-ExecBench's S).
    Standing st = standing(m->median_us, m->baseline_us, m->sol_us,
                           ProductionReference{m->production_name, m->production_us});
    text += fmt::format(
        "\n- production baseline to beat: {} at {:.2f} us on this GPU (what users run today); "
        "this kernel is {:.3f}x its speed ({})",
        m->production_name, m->production_us, st.speedup_vs_production,
        st.speedup_vs_production >= 1 ? "as fast or faster" : "slower");
    if (st.score) {
      text += fmt::format(
          "\n- SOL score S = {:.2f} against {} (0.5 = as fast as it, 1.0 = speed of light)",
          *st.score, m->production_name);
    }
  }
  if (m->registers > 0) {
    text += fmt::format(
        "\n- resources: {} registers/thread, {} bytes local memory/thread{}, {} B static + {} B "
        "dynamic shared memory/block, theoretical occupancy {:.0f}%",
        m->registers, m->local_bytes, m->local_bytes > 0 ? " (spills!)" : "",
        m->static_shared_bytes, m->dynamic_shared_bytes, m->occupancy * 100);
  }
  if (!m->tunables.empty()) text += "\n- tunables as measured: " + m->tunables;
  return text;
}

std::string describe_examples(const std::vector<MemoryExample>& examples,
                              const std::string& empty_text) {
  if (examples.empty()) return empty_text;
  std::string text;
  int number = 1;
  for (const MemoryExample& e : examples) {
    text += fmt::format("### {} {}: {:.2f}x on task {}\n", e.speedup >= 1 ? "Example" : "Warning",
                        number++, e.speedup, e.task);
    text +=
        "Lesson: " + (e.summary.empty() ? std::string("(no lesson recorded)") : e.summary) + "\n";
    if (!e.tags.empty()) text += "Tags: " + join(e.tags, ", ") + "\n";
    if (!e.reached_production.empty())
      text += "Reached production speed: " + e.reached_production + "\n";
    if (!e.diff.empty())
      text += "```diff\n" + e.diff + (e.diff.back() == '\n' ? "" : "\n") + "```\n";
    text += "\n";
  }
  return text;
}

std::map<std::string, std::string> task_values(const TaskBrief& task) {
  return {{"task_name", task.name},
          {"task_description", task.description},
          {"task_tags", join(task.tags, ", ")},
          {"task_sizes", task.sizes},
          {"gpu", task.gpu.empty() ? std::string("an NVIDIA GPU") : task.gpu},
          {"bound", task.bound},
          {"task_contract", task.contract}};
}

std::map<std::string, std::string> work_values(const WorkContext& context) {
  auto values = task_values(context.task);
  values["current_kernel"] = context.current.source;
  values["measurements"] = describe_measurements(context.current.measurements);
  values["where_time_goes"] = describe_where_time_goes(context.current.measurements);
  values["memory_examples"] =
      describe_examples(context.examples, "(memory holds no similar improvement yet)");
  values["memory_warnings"] =
      describe_examples(context.warnings, "(memory holds no similar regression yet)");
  return values;
}

std::string shorten(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return valid_utf8(text);
  return clip_utf8_middle(
      text, max_chars,
      fmt::format("\n[... about {} characters left out ...]\n", text.size() - max_chars));
}

}  // namespace kopt::agents
