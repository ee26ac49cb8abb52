// retry_while_locked (run_recorder.h): the template's body.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "memory_store/sqlite_database.h"

namespace kopt::orchestrator {

template <typename Write>
auto retry_while_locked(const std::string& what, Write&& write, std::chrono::seconds patience)
    -> decltype(write()) {
  auto give_up = std::chrono::steady_clock::now() + patience;
  auto delay = std::chrono::milliseconds(50);
  for (int attempt = 1;; ++attempt) {
    auto result = write();
    if (result || !sql::is_busy_error(result.error()) ||
        std::chrono::steady_clock::now() >= give_up) {
      if (result && attempt > 1) spdlog::info("{}: stored after {} attempts", what, attempt);
      return result;
    }
    spdlog::warn("{}: the database is locked by another process ({}); waiting {} ms, attempt {}",
                 what, result.error(), delay.count(), attempt);
    std::this_thread::sleep_for(delay);
    delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(5));
  }
}

}  // namespace kopt::orchestrator
