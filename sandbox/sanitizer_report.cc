#include "sandbox/sanitizer_report.h"

#include <cctype>
#include <cstdlib>

#include "common/strings.h"
#include "common/utf8.h"

namespace kopt {
namespace {

constexpr const char* kPrefix = "=========";

// A report line's text after the "=========" prefix, or nullopt for other lines (the program's
// own output, when it shares the stream).
std::optional<std::string> report_body(const std::string& line) {
  if (!starts_with(line, kPrefix)) return std::nullopt;
  std::string body = line.substr(std::string(kPrefix).size());
  if (!body.empty() && body[0] == ' ') body.erase(0, 1);
  return body;
}

// Header lines that are not findings: banners, summaries, API errors (kopt probes the driver
// on purpose, e.g. cuFuncGetParamInfo past the last parameter), the host backtrace, and
// racecheck's note that it stopped counting hazards (it can come before the first hazard).
bool is_bookkeeping(const std::string& header) {
  for (const char* word :
       {"COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY", "Program hit",
        "Target application", "Saved host backtrace", "Note:", "Host Frame", "Device Frame",
        "This tool", "Internal", "Warning: Maximum number of hazards"}) {
    if (starts_with(header, word)) return true;
  }
  return false;
}

// "void transpose<32>(float const*, float*, int, int)+0x3a0" -> "transpose<32>".
std::string kernel_from_site(std::string site) {
  if (size_t plus = site.rfind("+0x"); plus != std::string::npos) site.erase(plus);
  if (starts_with(site, "void ")) site.erase(0, 5);
  if (size_t paren = site.find('('); paren != std::string::npos) site.erase(paren);
  return trim(site);
}

// "/tmp/kopt/candidate.cu:14" -> "candidate.cu:14"; the old "file:14:kernel" form loses its tail.
std::string short_location(const std::string& where, std::string* trailing_kernel) {
  std::string text = where;
  size_t slash = text.rfind('/', text.find(':'));
  if (slash != std::string::npos) text.erase(0, slash + 1);
  size_t colon = text.find(':');
  if (colon == std::string::npos) return text;
  size_t end = colon + 1;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end < text.size() && text[end] == ':' && trailing_kernel)
    *trailing_kernel = kernel_from_site(text.substr(end + 1));
  return text.substr(0, end);
}

// Reads "... at SITE in WHERE [N hazards]" from `line` into the finding's kernel and location.
bool read_site(const std::string& line, SanitizerFinding& finding) {
  size_t at = starts_with(line, "at ") ? 0 : line.find(" at ");
  if (at == std::string::npos) return false;
  std::string rest = line.substr(at == 0 ? 3 : at + 4);
  size_t in = rest.rfind(" in ");
  std::string site = trim(in == std::string::npos ? rest : rest.substr(0, in));
  std::string where = in == std::string::npos ? "" : trim(rest.substr(in + 4));
  if (size_t space = where.find(' '); space != std::string::npos) where.erase(space);
  if (starts_with(site, "0x")) {
    // Old form: "at 0x90 in file.cu:14:axpy" or "at 0x90 in axpy" (no line information).
    std::string kernel;
    if (where.find(':') == std::string::npos) {
      finding.kernel = kernel_from_site(where);
    } else {
      finding.location = short_location(where, &kernel);
      finding.kernel = kernel;
    }
  } else {
    finding.kernel = kernel_from_site(site);
    if (!where.empty()) finding.location = short_location(where, nullptr);
  }
  return true;
}

bool names_candidate_kernel(const std::string& kernel, const std::vector<std::string>& kernels) {
  if (kernel.empty() || kernels.empty()) return true;
  for (const auto& name : kernels) {
    if (kernel == name || starts_with(kernel, name + "<") || starts_with(kernel, name + "("))
      return true;
  }
  return false;
}

// One finding: its header line and the indented lines after it.
SanitizerFinding read_finding(const std::string& tool, const std::vector<std::string>& lines) {
  SanitizerFinding finding;
  finding.tool = tool;
  std::string header = lines.front();
  if (starts_with(header, "Error: ")) header.erase(0, 7);
  size_t at = header.find(" at ");
  finding.kind = trim(at == std::string::npos ? header : header.substr(0, at));
  bool located = read_site(header, finding);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string detail = trim(lines[i]);
    // racecheck: "and Read access at transpose+0x2c0 in ..." completes the kind.
    if (i == 1 && starts_with(detail, "and ")) {
      size_t and_at = detail.find(" at ");
      finding.kind += " " + (and_at == std::string::npos ? detail : detail.substr(0, and_at));
    }
    if (!located) located = read_site(detail, finding);
  }
  finding.kind = clip_utf8(finding.kind, 200);
  return finding;
}

}  // namespace

std::string SanitizerFinding::describe() const {
  std::string text = tool + ": " + kind;
  if (!kernel.empty()) text += " in " + kernel;
  if (!location.empty()) text += " at " + location;
  return text;
}

std::optional<SanitizerFinding> first_sanitizer_finding(const std::string& tool,
                                                        const std::string& text,
                                                        const std::vector<std::string>& kernels) {
  std::vector<std::vector<std::string>> records;
  bool in_finding = false;
  for (const auto& line : split(text, '\n')) {
    auto body = report_body(line);
    if (!body) continue;
    if (trim(*body).empty()) {
      in_finding = false;
      continue;
    }
    bool indented = (*body)[0] == ' ' || (*body)[0] == '\t';
    if (!indented) {
      in_finding = !is_bookkeeping(*body);
      if (in_finding) records.push_back({*body});
    } else if (in_finding) {
      records.back().push_back(*body);
    }
  }
  for (const auto& record : records) {
    SanitizerFinding finding = read_finding(tool, record);
    if (names_candidate_kernel(finding.kernel, kernels)) return finding;
  }
  return std::nullopt;
}

std::optional<long> sanitizer_error_count(const std::string& text) {
  size_t at = text.rfind("ERROR SUMMARY: ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtol(text.c_str() + at + 15, nullptr, 10);
}

}  // namespace kopt
