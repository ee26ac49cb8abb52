#include "src/report/markup.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "common/utf8.h"

namespace kopt::report {

std::string fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

std::string format_micros(double us) {
  if (!(us > 0)) return "-";
  if (us < 1000) return fmt::format("{:.1f} us", us);
  if (us < 1e6) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.2f} s", us / 1e6);
}

std::string format_speedup(double speedup) {
  if (!(speedup > 0)) return "-";
  return fmt::format("{:.2f}x", speedup);
}

std::string first_line(std::string_view text, size_t max_chars) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text = text.substr(start);
  std::string_view line = text.substr(0, text.find('\n'));
  if (line.size() <= max_chars) return std::string(line);
  return clip_utf8(line, max_chars);
}

double parse_utc_seconds(std::string_view iso) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  std::string text(iso);
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf", &year, &month, &day, &hour, &minute,
                  &second) != 6 ||
      month < 1 || month > 12 || day < 1 || day > 31) {
    return -1;
  }
  // Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm), so
  // no time zone or locale of the machine can shift the charts.
  int y = year - (month <= 2 ? 1 : 0);
  int era = (y >= 0 ? y : y - 399) / 400;
  int year_of_era = y - era * 400;
  int day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  int day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  double days = double(era) * 146097 + day_of_era - 719468;
  return days * 86400 + hour * 3600 + minute * 60 + second;
}

}  // namespace kopt::report
