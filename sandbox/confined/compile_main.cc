// kopt-compile: the confined compiler. Reads one compile request on stdin (see
// confined_compile.h), locks itself out of every file but the toolkit's and the system
// libraries' (Landlock, where the kernel has it), compiles with NVRTC and writes the output on
// stdout. Its parent sets its environment, descriptors and resource limits before it starts.
#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "sandbox/confined/confined_compile.h"
#include "sandbox/confined/landlock.h"
#include "sandbox/include_policy.h"

namespace {

// The folder of the loaded libnvrtc: NVRTC loads its builtins library from there lazily.
std::filesystem::path nvrtc_library_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  auto real = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : real.parent_path();
}

int reply(const std::string& bytes) {
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int fail(const std::string& error) {
  reply(nlohmann::json({{"error", error}}).dump() + "\n");
  return 3;
}

}  // namespace

int main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto request = kopt::decode_compile_request(input);
  if (!request) return fail(request.error());

  kopt::FileAccessRules rules;
  rules.readable = kopt::toolkit_include_roots();
  for (const char* folder : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"})
    rules.readable.emplace_back(folder);
  if (auto folder = nvrtc_library_folder(); !folder.empty()) rules.readable.push_back(folder);
  rules.writable = {"/dev/null"};
  std::string note = kopt::restrict_file_access(rules);

  auto out = kopt::compile_kernel(*request, nullptr);
  if (!out) return fail(out.error());
  return reply(kopt::encode_compile_output(*out, note));
}
