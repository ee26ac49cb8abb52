// Untrusted source is compiled only in a confined child (kopt-compile): NVRTC runs there with a
// scrubbed environment (no keys), no descriptor but its pipes, limits on address space, CPU
// time, wall time and output size, and (where the kernel has Landlock) no file outside the
// toolkit and the system's libraries. A compile bomb costs its candidate a compile error
// ("the compiler exceeded its limit of ...") and never the process that asked.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "sandbox/compiler.h"

namespace kopt {

struct CompileLimits {
  // A CUB block reduction (the heaviest headers a kernel includes) compiles within 0.5 GiB of
  // address space (246 MB resident); a macro bomb is stopped here.
  uint64_t address_space_bytes = 2ull << 30;
  int cpu_seconds = 60;
  double wall_seconds = 90;
  // The CUBIN and the log together, as the child writes them back.
  size_t output_bytes = 64u << 20;
};

// The kopt-compile binary: beside the running executable, else the one built with this tree,
// else "kopt-compile" in PATH.
std::string confined_compiler_binary();

// compile_kernel() in a confined child, with the same cache: a hit never starts a child; ok
// results and compile errors are stored, a limit hit (which may depend on the load) is not.
// Errors are infrastructure failures only (the child cannot start, or broke the protocol).
Result<CompileOutput> compile_confined(const CompileRequest& request, const CompileCache* cache,
                                       const CompileLimits& limits = {});

// The wire between the two: the request as one JSON line followed by the raw source; the output
// as one JSON line followed by the raw CUBIN. Raw bytes, because neither a candidate's source
// nor a CUBIN need be UTF-8.
std::string encode_compile_request(const CompileRequest& request);
Result<CompileRequest> decode_compile_request(const std::string& bytes);
std::string encode_compile_output(const CompileOutput& output, const std::string& note);
Result<CompileOutput> decode_compile_output(const std::string& bytes, std::string* note);

}  // namespace kopt
