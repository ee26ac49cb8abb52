// The toolkit headers a compile may read, handed to NVRTC in memory (nvrtcCreateProgram's
// headers and includeNames) so that NVRTC runs with no search path at all: it opens no file kopt
// did not read for it, and a name that is not in the set is "could not open source file" without
// a look at the disk (no probing of /usr/lib for what exists). The set is the closure of the
// source's includes through every include of every reached header, whatever its condition (a
// superset of what the compile reads), each name resolved as the include roots and header
// folders of include_policy.h resolve it.
//
// A toolkit header can still compute an include from macros (thrust's
// `#include __THRUST_DEVICE_SYSTEM_TAG_HEADER`, which expands to
// <thrust/system/cuda/detail/...h> built from the ordinary words thrust, system, cuda, detail,
// h): a candidate that defines one of those words steers the include to any path, absolute ones
// included. So the set also names every identifier that such an include (or a __has_include
// probe through a macro) is built from, through the headers' own macro definitions; the compile
// refuses a source that defines or undefines one of them, and a -D of one.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kopt {

struct ToolkitHeaderSet {
  std::vector<std::string> names;  // as an #include writes them: "cub/block/block_reduce.cuh"
  std::vector<std::shared_ptr<const std::string>> contents;  // the same order
  std::set<std::string> include_macro_names;
};

// The headers reachable from `source`'s literal includes and __has_include probes. Files are
// read once per process (the toolkit does not change under a running kopt); thread-safe.
std::shared_ptr<const ToolkitHeaderSet> toolkit_headers_for(const std::string& source);

// nullopt, or the refusal (one line per name, "ORIGIN(LINE): error: ...") when `source` defines
// or undefines a name of `headers.include_macro_names`, or `defined_outside` (the -D names)
// holds one.
std::optional<std::string> check_include_macro_names(const std::string& source,
                                                     const std::string& origin,
                                                     const std::set<std::string>& defined_outside,
                                                     const ToolkitHeaderSet& headers);

}  // namespace kopt
