#include "src/orchestrator/kernel_fingerprint.h"

#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "common/sha256.h"

namespace kopt::orchestrator {

namespace {

// Names whose meaning does not depend on the file: renaming them would merge kernels that
// differ (float and double, threadIdx.x and threadIdx.y, expf and logf).
const std::set<std::string, std::less<>>& reserved_names() {
  static const std::set<std::string, std::less<>> names = {
      // C++ keywords and types
      "auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default", "do",
      "double", "else", "enum", "extern", "false", "float", "for", "goto", "if", "inline", "int",
      "long", "namespace", "nullptr", "return", "short", "signed", "sizeof", "static",
      "static_cast", "reinterpret_cast", "const_cast", "struct", "switch", "template", "this",
      "true", "typedef", "typename", "union", "unsigned", "using", "void", "volatile", "while",
      "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
      "uint64_t", "half", "half2", "nv_bfloat16", "nv_bfloat162", "C",
      // preprocessor
      "include", "define", "pragma", "unroll", "ifdef", "ifndef", "endif", "undef",
      // CUDA built-ins and vector types
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "x", "y", "z", "w", "float2",
      "float3", "float4", "double2", "int2", "int4", "uint2", "uint4", "char4",
      // math
      "expf", "exp", "exp2f", "logf", "log", "log2f", "sqrtf", "sqrt", "rsqrtf", "fmaxf", "fminf",
      "fmax", "fmin", "max", "min", "fabsf", "fabs", "abs", "powf", "tanhf", "tanh", "erff", "erf",
      "fmaf", "floorf", "ceilf", "roundf", "sinf", "cosf", "INFINITY", "NAN"};
  return names;
}

bool is_reserved(std::string_view name) {
  // Double-underscore names are CUDA's (__global__, __shfl_xor_sync, __expf, __ldg).
  return reserved_names().count(name) > 0 || name.rfind("__", 0) == 0 ||
         name.rfind("atomic", 0) == 0 || name.rfind("make_", 0) == 0 || name.rfind("cuda", 0) == 0;
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(std::string_view s) {
  if (s.empty() || !ident_start(s[0])) return false;
  for (char c : s) {
    if (!ident_char(c)) return false;
  }
  return true;
}

class Normalizer {
 public:
  void run(std::string_view text, bool in_plan) {
    size_t i = 0;
    while (i < text.size()) {
      char c = text[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (text.compare(i, 2, "//") == 0) {
        size_t end = text.find('\n', i);
        i = end == std::string_view::npos ? text.size() : end;
      } else if (text.compare(i, 2, "/*") == 0) {
        size_t end = text.find("*/", i + 2);
        std::string_view body =
            text.substr(i + 2, (end == std::string_view::npos ? text.size() : end) - i - 2);
        size_t start = body.find_first_not_of(" \t\r\n");
        if (start != std::string_view::npos && body.compare(start, 9, "kopt:plan") == 0) {
          tokens_.push_back("/*kopt:plan");
          run(body.substr(start + 9), /*in_plan=*/true);
          tokens_.push_back("*/");
        }
        i = end == std::string_view::npos ? text.size() : end + 2;
      } else if (c == '"' || c == '\'') {
        size_t j = i + 1;
        while (j < text.size() && text[j] != c) j += text[j] == '\\' ? 2 : 1;
        std::string_view content = text.substr(i + 1, std::min(j, text.size()) - i - 1);
        // The plan's kernel name is the code's kernel name: renamed together. Every other
        // string of the plan (tensor names, tunables) means the same in every file.
        bool kernel_name = in_plan && c == '"' && tokens_.size() >= 2 &&
                           tokens_[tokens_.size() - 1] == ":" &&
                           tokens_[tokens_.size() - 2] == "\"kernel\"" && is_identifier(content);
        tokens_.push_back(kernel_name ? rename(content)
                                      : std::string(1, c) + std::string(content) + c);
        i = j + 1;
      } else if (ident_start(c)) {
        size_t j = i;
        while (j < text.size() && ident_char(text[j])) ++j;
        std::string_view name = text.substr(i, j - i);
        tokens_.push_back(is_reserved(name) ? std::string(name) : rename(name));
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && i + 1 < text.size() &&
                  std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
        size_t j = i;
        while (j < text.size() && (ident_char(text[j]) || text[j] == '.' ||
                                   ((text[j] == '+' || text[j] == '-') &&
                                    (text[j - 1] == 'e' || text[j - 1] == 'E')))) {
          ++j;
        }
        tokens_.emplace_back(text.substr(i, j - i));
        i = j;
      } else {
        tokens_.emplace_back(1, c);
        ++i;
      }
    }
  }

  std::string joined() const {
    std::string out;
    for (const std::string& t : tokens_) out += t + "\n";
    return out;
  }

 private:
  std::string rename(std::string_view name) {
    auto [it, added] = names_.emplace(std::string(name), names_.size());
    return "$" + std::to_string(it->second);
  }

  std::vector<std::string> tokens_;
  std::map<std::string, size_t, std::less<>> names_;
};

}  // namespace

std::string normalized_kernel(std::string_view source) {
  Normalizer n;
  n.run(source, /*in_plan=*/false);
  return n.joined();
}

std::string kernel_fingerprint(std::string_view source) {
  return sha256_hex(normalized_kernel(source));
}

}  // namespace kopt::orchestrator
