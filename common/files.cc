#include "common/files.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kopt {

Result<std::string> read_file(const std::filesystem::path& path) {
  // An ifstream opens a directory without complaint and then reads nothing: say what it is.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return make_error(path.string() + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(path.string() + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return make_error(path.string() + ": read failed");
  return buffer.str();
}

Status write_file_atomic(const std::filesystem::path& path, const std::string& contents) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return make_error(path.parent_path().string() + ": cannot create: " + ec.message());
  // Unique per process and per call, so threads writing the same path never share a temp file.
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(tmp.string() + ": cannot write: " + std::strerror(errno));
    out << contents;
    out.flush();
    if (!out) {
      std::string why = std::strerror(errno);
      out.close();
      std::filesystem::remove(tmp, ec);  // a full disk must not also fill up with temp files
      return make_error(tmp.string() + ": write failed: " + why);
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return make_error(path.string() + ": cannot rename into place: " + why);
  }
  return ok_status();
}

int line_of_offset(const std::string& text, size_t offset) {
  int line = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
  }
  return line;
}

namespace {
std::filesystem::path xdg_directory(const char* override_var, const char* xdg_var,
                                    const char* home_suffix) {
  if (const char* v = std::getenv(override_var); v && *v) return v;
  if (const char* v = std::getenv(xdg_var); v && *v) return std::filesystem::path(v) / "kopt";
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / home_suffix / "kopt";
  }
  return std::filesystem::path(".kopt");
}
}  // namespace

std::filesystem::path data_directory() {
  return xdg_directory("KOPT_HOME", "XDG_DATA_HOME", ".local/share");
}

std::filesystem::path cache_directory() {
  return xdg_directory("KOPT_CACHE_DIR", "XDG_CACHE_HOME", ".cache");
}

}  // namespace kopt
