#include "src/orchestrator/run_logging.h"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/log_scrubbing.h"

namespace kopt::orchestrator {

Result<std::filesystem::path> run_directory(const std::filesystem::path& database, int64_t run_id) {
  std::filesystem::path base = database.has_parent_path() ? database.parent_path() : ".";
  // A folder per database (named after its file, without the extension): two databases side by
  // side never share a run's log.
  std::filesystem::path dir = base / "runs" / database.stem() / std::to_string(run_id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error("cannot create the run folder " + dir.string() + ": " + ec.message());
  return dir;
}

Status setup_run_logging(const std::filesystem::path& run_dir, std::shared_ptr<LiveDisplay> display,
                         const std::string& level) {
  std::vector<spdlog::sink_ptr> sinks;
  spdlog::sink_ptr console;
  if (display) {
    console = make_display_sink(std::move(display));
  } else {
    console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  }
  console->set_formatter(scrubbing_formatter("%H:%M:%S %^%l%$ %v"));
  console->set_level(spdlog::level::from_str(level));
  sinks.push_back(console);
  if (!run_dir.empty()) {
    try {
      auto file = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          (run_dir / "kopt.log").string(), 10u << 20, 5);
      file->set_formatter(scrubbing_formatter("%Y-%m-%dT%H:%M:%S.%e %l [%t] %v"));
      file->set_level(spdlog::level::debug);
      sinks.push_back(file);
    } catch (const spdlog::spdlog_ex& e) {
      return make_error("cannot open the run log in " + run_dir.string() + ": " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("kopt", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return ok_status();
}

}  // namespace kopt::orchestrator
