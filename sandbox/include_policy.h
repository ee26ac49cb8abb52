// Which files a candidate may make the compiler open: only headers of the CUDA toolkit. NVRTC
// opens any path a source names (`#include "/proc/self/environ"` put a daemon's API keys in a
// compile log), so every source is scanned before NVRTC sees it and every header name is
// resolved with realpath against an allow-list of include roots; anything else refuses the
// source with a compile log naming the include, and the named file is never opened.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kopt {

// The toolkit's include folder and its CCCL folder, realpath'ed (missing ones left out).
std::vector<std::filesystem::path> toolkit_include_roots();

// Toolkit folders whose headers include their neighbours by quoted relative names (crt,
// cooperative_groups, nvtx3): NVRTC's extra search paths, never roots a source may name.
std::vector<std::filesystem::path> toolkit_header_folders();

// nullopt when every include-like construct of `source` names a regular file under one of
// `roots`; else the refusal, one line per problem: "ORIGIN:LINE: #include "/etc/passwd": ...".
// Refused: computed includes (`#include MACRO`), absolute names, names with '..', headers not
// found under a root (or resolving outside every root through a link), non-regular files
// (FIFOs, devices), #include_next/#import/#embed, __has_include of such names, pragmas that
// open files (GCC dependency, include_alias), a computed _Pragma, trigraphs, unterminated raw
// strings, and #define/#undef of names reserved to the toolkit (which its computed includes use).
std::optional<std::string> check_includes(const std::string& source, const std::string& origin,
                                          const std::vector<std::filesystem::path>& roots);

}  // namespace kopt
