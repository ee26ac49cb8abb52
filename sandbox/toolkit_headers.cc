#include "sandbox/toolkit_headers.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>

#include "common/files.h"
#include "common/strings.h"
#include "sandbox/cuda_tokens.h"
#include "sandbox/include_policy.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using Kind = CudaToken::Kind;

// What one file says about includes and macros, read once.
struct HeaderScan {
  std::vector<std::string> literal_names;   // #include <x>, #include "x", __has_include(<x>)
  std::set<std::string> computed_operands;  // identifiers of `#include MACRO...` operands
  std::map<std::string, std::vector<std::set<std::string>>> defines;  // body identifiers
  std::set<std::string> probe_macros;  // macros whose body runs __has_include on a non-literal
  std::vector<std::set<std::string>> condition_identifiers;  // of each #if/#elif line
  bool unreadable = false;  // the tokenizer refused it: every identifier counts (see below)
  std::set<std::string> all_identifiers;
};

bool is_probe(const std::string& name) {
  return name == "__has_include" || name == "__has_include_next";
}

class Scanner {
 public:
  explicit Scanner(const std::vector<CudaToken>& t) : t_(t) {}

  HeaderScan run() {
    for (size_t i = 0; i < t_.size();) {
      if (t_[i].text == "#" && t_[i].starts_line) {
        size_t end = line_end(i);
        directive(i + 1, end);
        i = end;
      } else {
        ++i;
      }
    }
    return std::move(scan_);
  }

 private:
  size_t line_end(size_t i) const {
    size_t end = i + 1;
    while (end < t_.size() && !t_[end].starts_line) ++end;
    return end;
  }

  // <a/b.h> spelled as tokens from `open` (the '<'), or the string token's text; "" if neither.
  std::string literal_at(size_t open, size_t end, size_t* after) const {
    if (open >= end) return "";
    if (t_[open].kind == Kind::kString && t_[open].text.size() >= 2 && t_[open].text[0] == '"') {
      *after = open + 1;
      return t_[open].text.substr(1, t_[open].text.size() - 2);
    }
    if (t_[open].text != "<") return "";
    std::string name;
    for (size_t i = open + 1; i < end; ++i) {
      if (t_[i].text == ">") {
        *after = i + 1;
        return name;
      }
      name += t_[i].text;
    }
    return "";
  }

  std::set<std::string> identifiers(size_t begin, size_t end) const {
    std::set<std::string> ids;
    for (size_t i = begin; i < end; ++i)
      if (t_[i].kind == Kind::kIdentifier) ids.insert(t_[i].text);
    return ids;
  }

  // __has_include( at `i` within [i, end): a literal operand is one more header of the closure,
  // anything else is reported as non-literal.
  bool literal_probe(size_t i, size_t end) {
    size_t open = i + 1;
    if (open >= end || t_[open].text != "(") return false;
    size_t after = 0;
    std::string name = literal_at(open + 1, end, &after);
    if (name.empty()) return false;
    scan_.literal_names.push_back(name);
    return true;
  }

  void directive(size_t name_at, size_t end) {
    if (name_at >= end) return;
    const std::string& d = t_[name_at].text;
    if (d == "include" || d == "include_next") {
      size_t after = 0;
      std::string name = literal_at(name_at + 1, end, &after);
      if (!name.empty()) {
        scan_.literal_names.push_back(name);
      } else {
        auto ids = identifiers(name_at + 1, end);
        scan_.computed_operands.insert(ids.begin(), ids.end());
      }
      return;
    }
    if (d == "define" && name_at + 1 < end && t_[name_at + 1].kind == Kind::kIdentifier) {
      define(name_at + 1, end);
      return;
    }
    if (d == "if" || d == "elif") {
      for (size_t i = name_at + 1; i < end; ++i)
        if (is_probe(t_[i].text) && !literal_probe(i, end)) {
          auto ids = identifiers(i + 1, end);
          scan_.computed_operands.insert(ids.begin(), ids.end());
        }
      scan_.condition_identifiers.push_back(identifiers(name_at + 1, end));
    }
  }

  void define(size_t name, size_t end) {
    size_t body = name + 1;
    std::set<std::string> params;
    if (body < end && t_[body].text == "(" && !t_[body].space_before) {
      for (++body; body < end && t_[body].text != ")"; ++body)
        if (t_[body].kind == Kind::kIdentifier) params.insert(t_[body].text);
      ++body;
    }
    std::set<std::string> ids;
    for (size_t i = body; i < end; ++i) {
      if (t_[i].kind != Kind::kIdentifier) continue;
      if (is_probe(t_[i].text) && !literal_probe(i, end)) scan_.probe_macros.insert(t_[name].text);
      if (!params.count(t_[i].text)) ids.insert(t_[i].text);
    }
    scan_.defines[t_[name].text].push_back(std::move(ids));
  }

  const std::vector<CudaToken>& t_;
  HeaderScan scan_;
};

// The preprocessing directives of `text` alone, one logical line each (continuations joined):
// all the scan reads, at a tenth of the tokens. #error and #warning lines are left out (their
// free text, "don't", is no token sequence). A '#' line inside a block comment is kept: a
// directive too many only adds names, never hides one.
std::string directive_lines(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t first = text.find_first_not_of(" \t", pos);
    bool directive = first < end && text[first] == '#';
    size_t line_end = end;
    while (line_end < text.size() && line_end > pos && text[line_end - 1] == '\\') {
      size_t next = text.find('\n', line_end + 1);
      line_end = next == std::string::npos ? text.size() : next;
    }
    if (directive) {
      std::string line = text.substr(pos, line_end - pos);
      size_t word = line.find_first_not_of(" \t", line.find('#') + 1);
      bool free_text = word != std::string::npos && (line.compare(word, 5, "error") == 0 ||
                                                     line.compare(word, 7, "warning") == 0);
      if (!free_text) out += line + "\n";
    }
    pos = line_end + 1;
  }
  return out;
}

HeaderScan scan_text(const std::string& text, const std::string& origin) {
  auto tokens = tokenize_cuda(directive_lines(text), origin);
  if (tokens) return Scanner(*tokens).run();
  // A header the tokenizer refuses (a stray apostrophe in an #error) is still scanned for its
  // includes line by line, and every word in it counts as one that may steer an include: a
  // candidate loses a few names rather than the gate a path.
  HeaderScan scan;
  scan.unreadable = true;
  std::string word;
  for (char c : text + "\n") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      if (!std::isdigit(static_cast<unsigned char>(word[0]))) scan.all_identifiers.insert(word);
      word.clear();
    }
  }
  for (const auto& line : split(text, '\n')) {
    size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string::npos || line[hash] != '#') continue;
    size_t open = line.find_first_of("<\"", hash);
    if (line.find("include", hash) == std::string::npos || open == std::string::npos) continue;
    size_t close = line.find(line[open] == '<' ? '>' : '"', open + 1);
    if (close != std::string::npos)
      scan.literal_names.push_back(line.substr(open + 1, close - open - 1));
  }
  return scan;
}

struct HeaderFile {
  std::string name;
  std::shared_ptr<const std::string> text;
  HeaderScan scan;
};

// The process-wide cache of files and of closures by the source's include names.
class HeaderCache {
 public:
  std::shared_ptr<const ToolkitHeaderSet> closure(const std::vector<std::string>& top) {
    std::set<std::string> key_set(top.begin(), top.end());
    std::string key;
    for (const auto& name : key_set) key += name + '\n';
    std::lock_guard lock(mutex_);
    if (auto hit = closures_.find(key); hit != closures_.end()) return hit->second;
    std::vector<const HeaderFile*> files;
    std::set<std::string> seen;
    std::vector<std::string> todo(key_set.begin(), key_set.end());
    while (!todo.empty()) {
      std::string name = std::move(todo.back());
      todo.pop_back();
      if (!seen.insert(name).second) continue;
      const HeaderFile* file = load(name);
      if (!file) continue;
      files.push_back(file);
      for (const auto& next : file->scan.literal_names) todo.push_back(next);
    }
    auto set = std::make_shared<ToolkitHeaderSet>();
    for (const HeaderFile* file : files) {
      set->names.push_back(file->name);
      set->contents.push_back(file->text);
    }
    set->include_macro_names = include_macro_names(files);
    closures_[key] = set;
    return set;
  }

 private:
  // The file an include name resolves to, as NVRTC's search list did before (the roots, then
  // the header folders); nullptr for a name no toolkit file has, or that leaves the toolkit.
  const HeaderFile* load(const std::string& name) {
    if (auto hit = files_.find(name); hit != files_.end()) return hit->second.get();
    std::unique_ptr<HeaderFile> file;
    if (auto path = resolve(name)) {
      if (auto text = read_file(*path)) {
        file = std::make_unique<HeaderFile>();
        file->name = name;
        file->scan = scan_text(*text, name);
        file->text = std::make_shared<const std::string>(std::move(*text));
      }
    }
    const HeaderFile* out = file.get();
    files_[name] = std::move(file);
    return out;
  }

  // Where NVRTC's search list of before (the roots, then the header folders) found `name`: a
  // regular file whose real path is under a root; nullopt for an absolute or odd name.
  static std::optional<fs::path> resolve(const std::string& name) {
    if (name.empty() || name.front() == '/' || name.size() > 512) return std::nullopt;
    for (char c : name)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f ||
          c == '\\')
        return std::nullopt;
    static const std::vector<fs::path> roots = toolkit_include_roots();
    static const std::vector<fs::path> search = [] {
      std::vector<fs::path> all = toolkit_include_roots();
      for (const auto& folder : toolkit_header_folders()) all.push_back(folder);
      return all;
    }();
    for (const auto& folder : search) {
      std::error_code ec;
      if (!fs::exists(folder / name, ec)) continue;  // one stat before the realpath walk
      fs::path real = fs::canonical(folder / name, ec);
      if (ec || !fs::is_regular_file(real, ec)) continue;
      bool inside = std::any_of(roots.begin(), roots.end(), [&](const fs::path& root) {
        auto [r, p] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
        return r == root.end();
      });
      return inside ? std::optional(real) : std::nullopt;
    }
    return std::nullopt;
  }

  // Seeds (computed include operands, arguments of probe macros in conditions) and everything
  // the closure's definitions of them can expand to.
  static std::set<std::string> include_macro_names(const std::vector<const HeaderFile*>& files) {
    std::set<std::string> probes, names;
    std::map<std::string, std::vector<const std::set<std::string>*>> defines;
    for (const HeaderFile* f : files) {
      probes.insert(f->scan.probe_macros.begin(), f->scan.probe_macros.end());
      names.insert(f->scan.computed_operands.begin(), f->scan.computed_operands.end());
      names.insert(f->scan.all_identifiers.begin(), f->scan.all_identifiers.end());
      for (const auto& [name, bodies] : f->scan.defines)
        for (const auto& body : bodies) defines[name].push_back(&body);
    }
    for (const HeaderFile* f : files)
      for (const auto& ids : f->scan.condition_identifiers)
        if (std::any_of(ids.begin(), ids.end(), [&](const auto& id) { return probes.count(id); }))
          names.insert(ids.begin(), ids.end());
    std::vector<std::string> todo(names.begin(), names.end());
    while (!todo.empty()) {
      std::string name = std::move(todo.back());
      todo.pop_back();
      auto it = defines.find(name);
      if (it == defines.end()) continue;
      for (const auto* body : it->second)
        for (const auto& id : *body)
          if (names.insert(id).second) todo.push_back(id);
    }
    for (const char* keyword : {"defined", "__has_include", "__has_include_next"})
      names.erase(keyword);
    return names;
  }

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<HeaderFile>> files_;
  std::map<std::string, std::shared_ptr<const ToolkitHeaderSet>> closures_;
};

HeaderCache& cache() {
  static HeaderCache* instance = new HeaderCache();  // never destroyed: workers exit with it
  return *instance;
}

}  // namespace

std::shared_ptr<const ToolkitHeaderSet> toolkit_headers_for(const std::string& source) {
  return cache().closure(scan_text(source, "source").literal_names);
}

std::optional<std::string> check_include_macro_names(const std::string& source,
                                                     const std::string& origin,
                                                     const std::set<std::string>& defined_outside,
                                                     const ToolkitHeaderSet& headers) {
  const auto& names = headers.include_macro_names;
  std::string log;
  auto refuse = [&](const std::string& where, const std::string& what, const std::string& name) {
    log += where + ": error: " + what + " '" + name +
           "' is refused: a toolkit header this file includes builds an #include path from "
           "that name, so defining it would make the compiler open a file kopt did not choose; "
           "rename the macro\n";
  };
  for (const auto& name : defined_outside)
    if (names.count(name)) refuse(origin, "the plan's tunable (-D)", name);
  auto tokens = tokenize_cuda(source, origin);
  if (!tokens) return log.empty() ? std::nullopt : std::optional(log);
  const auto& t = *tokens;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].text != "#" || !t[i].starts_line || t[i + 1].starts_line || t[i + 2].starts_line)
      continue;
    if ((t[i + 1].text == "define" || t[i + 1].text == "undef") && names.count(t[i + 2].text))
      refuse(origin + "(" + std::to_string(t[i].line) + ")", "#" + t[i + 1].text, t[i + 2].text);
  }
  if (log.empty()) return std::nullopt;
  return log;
}

}  // namespace kopt
