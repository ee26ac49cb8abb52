#include "exchange/launcher_codegen.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "common/text_escape.h"
#include "sandbox/expr.h"

namespace kopt::exporter {

namespace {

// Launch arguments go through cudaLaunchKernel's void* array with exactly the types the sandbox
// passed (pointer, int, long long, float, double), as the kernel was verified with them; the
// kernel's own parameter spelling (const or not, int64_t or long long) then does not matter.
std::string pointer_type(DType dtype, bool is_const) {
  return std::string(is_const ? "const " : "") + dtype_facts(dtype).host_type + "*";
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::vector<LauncherParameter> launcher_parameters(const TaskSpec& task) {
  std::vector<LauncherParameter> params;
  using Kind = LauncherParameter::Kind;
  for (const auto& t : task.inputs)
    params.push_back({Kind::kInput, pointer_type(t.dtype, true), t.name, &t});
  for (const auto& t : task.outputs)
    params.push_back({Kind::kOutput, pointer_type(t.dtype, false), t.name, &t});
  for (const auto& [name, value] : task.sizes) params.push_back({Kind::kSize, "int64_t", name});
  for (const auto& [name, value] : task.constants)
    params.push_back({Kind::kConstant, "double", name});
  return params;
}

bool task_uses_dtype(const TaskSpec& task, DType dtype) {
  for (const auto* list : {&task.inputs, &task.outputs}) {
    for (const auto& t : *list) {
      if (t.dtype == dtype) return true;
    }
  }
  return false;
}

std::string cpp_identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += is_identifier_char(c) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

Result<std::string> expression_to_cpp(const std::string& expression) {
  auto parsed = Expr::parse(expression);
  if (!parsed) return make_error("expression '" + expression + "': " + parsed.error());
  // In parentheses: callers write static_cast<size_t>EXPR.
  return "(" +
         parsed->to_calls(
             "kopt_", [](int64_t n) { return std::to_string(n) + "LL"; },
             [](const std::string& n) { return "static_cast<int64_t>(" + n + ")"; }) +
         ")";
}

const char* cpp_plan_arithmetic() {
  return R"cpp(// Plan arithmetic as kopt's sandbox computed it when it verified the kernel
               // (sandbox/expr.h): 64-bit, division truncating toward zero, and an overflow or a
               // division by zero marks the plan invalid (launch() returns cudaErrorInvalidValue)
               // instead of launching with a wrapped size.
               inline bool& kopt_plan_invalid() {
                 thread_local bool invalid = false;
                 return invalid;
               }
               inline int64_t kopt_fail() {
                 kopt_plan_invalid() = true;
                 return 0;
               }
               inline int64_t kopt_add(int64_t a, int64_t b) {
                 int64_t r = 0;
                 return __builtin_add_overflow(a, b, &r) ? kopt_fail() : r;
               }
               inline int64_t kopt_sub(int64_t a, int64_t b) {
                 int64_t r = 0;
                 return __builtin_sub_overflow(a, b, &r) ? kopt_fail() : r;
               }
               inline int64_t kopt_mul(int64_t a, int64_t b) {
                 int64_t r = 0;
                 return __builtin_mul_overflow(a, b, &r) ? kopt_fail() : r;
               }
               inline int64_t kopt_neg(int64_t a) { return a == INT64_MIN ? kopt_fail() : -a; }
               inline int64_t kopt_div(int64_t a, int64_t b) {
                 return b == 0 || (a == INT64_MIN && b == -1) ? kopt_fail() : a / b;
               }
               inline int64_t kopt_mod(int64_t a, int64_t b) {
                 return b == 0 || (a == INT64_MIN && b == -1) ? kopt_fail() : a % b;
               }
               inline int64_t kopt_ceil_div(int64_t a, int64_t b) {
                 return a < 0 || b <= 0 ? kopt_fail() : a / b + (a % b != 0);
               }
               inline int64_t kopt_min(int64_t a, int64_t b) { return a < b ? a : b; }
               inline int64_t kopt_max(int64_t a, int64_t b) { return a > b ? a : b; }
  )cpp";
}

namespace {

// The launcher's parameters and the lines that reference every one of them, so no warning names
// an unused one: workspace_layout() takes only the sizes, launch() the constants too.
struct LauncherSignature {
  std::vector<std::string> params;      // "const float* x", ... in the task's order
  std::vector<std::string> size_names;  // "n", ...
  std::string size_params;              // "int64_t n, int64_t m"
  std::string unused_sizes, unused;     // "  (void)n;\n" ...
};

LauncherSignature launcher_signature(const TaskSpec& task) {
  LauncherSignature s;
  for (const auto& p : launcher_parameters(task)) {
    s.params.push_back(p.type + " " + p.name);
    if (p.kind != LauncherParameter::Kind::kSize) continue;
    s.size_params += (s.size_params.empty() ? "" : ", ") + std::string("int64_t ") + p.name;
    s.size_names.push_back(p.name);
  }
  for (const auto& name : s.size_names) s.unused_sizes += "  (void)" + name + ";\n";
  s.unused = s.unused_sizes;
  for (const auto& [name, value] : task.constants) s.unused += "  (void)" + name + ";\n";
  return s;
}

// "n, m": the sizes passed on to workspace_layout().
std::string size_arguments(const LauncherSignature& s) {
  std::string text;
  for (size_t i = 0; i < s.size_names.size(); ++i) text += (i ? ", " : "") + s.size_names[i];
  return text;
}

// The comment lines, the includes (the toolkit's fp16, bf16 and fp8 headers where a tensor or a
// scratch buffer uses them) and the device image's arrays.
void write_preamble(std::ostringstream& h, const HeaderInput& input) {
  const TaskSpec& task = *input.task;
  bool half = task_uses_dtype(task, DType::kF16), bfloat = task_uses_dtype(task, DType::kBF16);
  bool fp8 = task_uses_dtype(task, DType::kE4M3);
  for (const auto& s : input.kernel->scratch) {
    half = half || s.dtype == DType::kF16;
    bfloat = bfloat || s.dtype == DType::kBF16;
    fp8 = fp8 || s.dtype == DType::kE4M3;
  }
  h << "// Generated by `kopt export` from " << input.kernel_file_name
    << ". Do not edit: export again instead.\n";
  if (!input.provenance.empty()) h << "// " << cpp_comment_text(input.provenance) << "\n";
  h << "// Plain C++: the kernels are loaded from the device code kopt compiled and verified\n"
    << "// (" << input.image_prefix << "_cubin, " << input.image_prefix
    << "_ptx); the .cu file is for reading only.\n"
    << "#pragma once\n\n#include <cuda_runtime.h>\n";
  if (half) h << "#include <cuda_fp16.h>\n";
  if (bfloat) h << "#include <cuda_bf16.h>\n";
  if (fp8) h << "#include <cuda_fp8.h>\n";
  h << "\n#include <cstddef>\n#include <cstdint>\n\n#include \"kopt_cuda_image.h\"\n\n";
  for (const char* part : {"_cubin", "_ptx"}) {
    h << "extern const unsigned char " << input.image_prefix << part << "[];\n"
      << "extern const size_t " << input.image_prefix << part << "_size;\n";
  }
  h << "\n";
}

// The tunables as constants and image(), the compiled kernels loaded on first use.
void write_image_loader(std::ostringstream& h, const HeaderInput& input) {
  const DeviceImage& image = *input.image;
  auto tunables = input.kernel->tunable_values(input.tunables);
  if (!tunables.empty()) h << "// Tunable values the kernel was verified (and compiled) with.\n";
  for (const auto& [name, value] : tunables)
    h << "constexpr int64_t " << name << " = " << value << "LL;\n";
  h << "\n// The compiled kernels, loaded on first use.\n"
    << "inline const kopt_image::Image& image() {\n"
    << "  static const kopt_image::Image kopt_loaded(" << image.cc_major << ", " << image.cc_minor
    << ", " << input.image_prefix << "_cubin, " << input.image_prefix << "_cubin_size, "
    << input.image_prefix << "_ptx, " << input.image_prefix << "_ptx_size, {";
  for (size_t k = 0; k < image.symbols.size(); ++k)
    h << (k ? ", " : "") << cpp_string_literal(image.symbols[k]);
  h << "});\n  return kopt_loaded;\n}\n\n";
}

// workspace_layout() and workspace_bytes(): the scratch buffers live in one workspace, each
// aligned to 256 bytes.
Status write_workspace(std::ostringstream& h, const KernelFile& kernel,
                       const LauncherSignature& s) {
  h << "// Offsets of the scratch buffers in the workspace, and its size in bytes.\n"
    << "struct Workspace {\n  size_t offset[" << std::max<size_t>(kernel.scratch.size(), 1)
    << "] = {};\n  size_t bytes = 0;\n};\n\n"
    << "inline Workspace workspace_layout(" << s.size_params << ") {\n"
    << s.unused_sizes << "  kopt_plan_invalid() = false;\n  Workspace kopt_w;\n";
  for (size_t i = 0; i < kernel.scratch.size(); ++i) {
    auto count = expression_to_cpp(kernel.scratch[i].count);
    if (!count) return make_error("scratch " + kernel.scratch[i].name + ": " + count.error());
    h << "  kopt_w.offset[" << i << "] = kopt_w.bytes;  // " << kernel.scratch[i].name << "\n"
      << "  kopt_w.bytes += (static_cast<size_t>" << *count << " * "
      << dtype_size(kernel.scratch[i].dtype) << " + 255) / 256 * 256;\n";
  }
  h << "  if (kopt_plan_invalid()) kopt_w.bytes = SIZE_MAX;  // no allocation can serve it\n"
    << "  return kopt_w;\n}\n\n"
    << "// Bytes of device memory launch() needs as `kopt_workspace` (0: pass nullptr).\n"
    << "inline size_t workspace_bytes(" << s.size_params << ") {\n  return workspace_layout("
    << size_arguments(s) << ").bytes;\n}\n\n";
  return ok_status();
}

// launch()'s scratch pointers carved from the workspace, zeroed where the plan asks.
Status write_scratch_pointers(std::ostringstream& h, const KernelFile& kernel,
                              const LauncherSignature& s) {
  if (kernel.scratch.empty()) {
    h << "  (void)kopt_workspace;\n";
    return ok_status();
  }
  h << "  const Workspace kopt_layout = workspace_layout(" << size_arguments(s)
    << ");\n  if (kopt_plan_invalid() || kopt_workspace == nullptr) return "
       "cudaErrorInvalidValue;\n";
  for (size_t i = 0; i < kernel.scratch.size(); ++i) {
    const auto& scratch = kernel.scratch[i];
    h << "  " << pointer_type(scratch.dtype, false) << " " << scratch.name << " = reinterpret_cast<"
      << pointer_type(scratch.dtype, false)
      << ">(static_cast<char*>(kopt_workspace) + kopt_layout.offset[" << i << "]);\n";
    if (!scratch.zero) continue;
    auto count = expression_to_cpp(scratch.count);
    if (!count) return make_error(count.error());
    h << "  if (cudaError_t kopt_error = cudaMemsetAsync(" << scratch.name
      << ", 0, static_cast<size_t>" << *count << " * " << dtype_size(scratch.dtype)
      << ", kopt_stream); kopt_error != cudaSuccess) {\n    return kopt_error;\n  }\n";
  }
  return ok_status();
}

// One launch's grid, block and shared bytes, checked as the sandbox checks them, and the raise of
// the dynamic shared memory limit above 48 KiB.
Status write_launch_configuration(std::ostringstream& h, const Launch& launch, size_t index) {
  std::string dims[2];
  const std::vector<std::string>* lists[2] = {&launch.grid, &launch.block};
  for (int which = 0; which < 2; ++which) {
    for (size_t d = 0; d < 3; ++d) {
      std::string value = "1LL";
      if (d < lists[which]->size()) {
        auto cpp = expression_to_cpp((*lists[which])[d]);
        if (!cpp) return make_error(launch.kernel + ": " + cpp.error());
        value = *cpp;
      }
      dims[which] += std::string(d ? ", " : "") + value;
    }
  }
  auto shared = expression_to_cpp(launch.shared_bytes);
  if (!shared) return make_error(launch.kernel + ": " + shared.error());
  h << "    const int64_t kopt_grid[3] = {" << dims[0] << "};\n"
    << "    const int64_t kopt_block[3] = {" << dims[1] << "};\n"
    << "    const int64_t kopt_shared = " << *shared << ";\n"
    << "    for (int kopt_d = 0; kopt_d < 3; ++kopt_d) {\n"
    << "      if (kopt_grid[kopt_d] <= 0 || kopt_grid[kopt_d] > 0x7fffffffLL ||\n"
    << "          kopt_block[kopt_d] <= 0 || kopt_block[kopt_d] > 1024) {\n"
    << "        return cudaErrorInvalidConfiguration;\n      }\n    }\n"
    << "    if (kopt_plan_invalid()) return cudaErrorInvalidValue;\n"
    << "    if (kopt_shared < 0) return cudaErrorInvalidConfiguration;\n"
    << "    const void* kopt_kernel = image().kernel(" << index << ");\n"
    << "    if (kopt_shared > 48 * 1024) {  // above the default limit: ask for it\n"
    << "      if (cudaError_t kopt_error = cudaFuncSetAttribute(\n"
    << "              kopt_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,\n"
    << "              static_cast<int>(kopt_shared));\n"
    << "          kopt_error != cudaSuccess) {\n        return kopt_error;\n      }\n    }\n";
  return ok_status();
}

// One launch's arguments as variables of exactly the types the sandbox passed; returns the
// "&kopt_a0, &kopt_a1" list for cudaLaunchKernel.
Result<std::string> write_launch_arguments(std::ostringstream& h, const Launch& launch) {
  std::string arg_list;
  for (size_t a = 0; a < launch.args.size(); ++a) {
    const ArgBinding& arg = launch.args[a];
    std::string var = "kopt_a" + std::to_string(a);
    switch (arg.kind) {
      case ArgBinding::Kind::kBuffer:
        h << "    const void* " << var << " = " << arg.buffer << ";\n";
        break;
      case ArgBinding::Kind::kInt32:
      case ArgBinding::Kind::kInt64: {
        auto cpp = expression_to_cpp(arg.expression);
        if (!cpp) return make_error(launch.kernel + ": " + cpp.error());
        // An i32 that does not fit is the sandbox's invalid plan, never a wrapped value.
        bool i32 = arg.kind == ArgBinding::Kind::kInt32;
        h << "    const int64_t " << var << "_value = " << *cpp << ";\n"
          << "    if (kopt_plan_invalid()"
          << (i32 ? " || " + var + "_value < INT32_MIN || " + var + "_value > INT32_MAX"
                  : std::string())
          << ") return cudaErrorInvalidValue;\n"
          << "    " << (i32 ? "int" : "long long") << " " << var << " = static_cast<"
          << (i32 ? "int" : "long long") << ">(" << var << "_value);\n";
        break;
      }
      case ArgBinding::Kind::kFloat32:
        h << "    float " << var << " = static_cast<float>(" << arg.expression << ");\n";
        break;
      case ArgBinding::Kind::kFloat64:
        h << "    double " << var << " = static_cast<double>(" << arg.expression << ");\n";
        break;
    }
    arg_list += (a ? ", " : "") + std::string("&") + var;
  }
  return arg_list;
}

// Launch `l` of the plan as one block of launch(): configuration, arguments, cudaLaunchKernel.
Status write_launch(std::ostringstream& h, const Launch& launch, size_t l,
                    const DeviceImage& image) {
  size_t index =
      std::find(image.kernels.begin(), image.kernels.end(), launch.kernel) - image.kernels.begin();
  if (index >= image.symbols.size())
    return make_error(launch.kernel + ": not in the compiled image");
  h << "  {  // launch " << l + 1 << ": " << launch.kernel << "\n";
  if (auto s = write_launch_configuration(h, launch, index); !s) return s;
  auto arg_list = write_launch_arguments(h, launch);
  if (!arg_list) return make_error(arg_list.error());
  h << "    void* kopt_args[] = {" << (arg_list->empty() ? "nullptr" : *arg_list) << "};\n"
    << "    const cudaError_t kopt_error = cudaLaunchKernel(\n"
    << "        kopt_kernel,\n"
    << "        dim3(static_cast<unsigned>(kopt_grid[0]), static_cast<unsigned>(kopt_grid[1]),\n"
    << "             static_cast<unsigned>(kopt_grid[2])),\n"
    << "        dim3(static_cast<unsigned>(kopt_block[0]), "
       "static_cast<unsigned>(kopt_block[1]),\n"
    << "             static_cast<unsigned>(kopt_block[2])),\n"
    << "        kopt_args, static_cast<size_t>(kopt_shared), kopt_stream);\n"
    << "    if (kopt_error != cudaSuccess) return kopt_error;\n  }\n";
  return ok_status();
}

// launch(): the plan's launches on `kopt_stream`, in order.
Status write_launch_function(std::ostringstream& h, const HeaderInput& input,
                             const LauncherSignature& s) {
  h << "// Runs the kernel's launch plan on `stream`: " << cpp_comment_text(input.task->description)
    << "\n"
    << "inline cudaError_t launch(";
  for (const auto& p : s.params) h << p << ", ";
  h << "void* kopt_workspace = nullptr, cudaStream_t kopt_stream = 0) {\n"
    << s.unused << "  if (image().status() != cudaSuccess) return image().status();\n"
    << "  kopt_plan_invalid() = false;\n";
  if (auto status = write_scratch_pointers(h, *input.kernel, s); !status) return status;
  for (size_t l = 0; l < input.kernel->launches.size(); ++l) {
    if (auto status = write_launch(h, input.kernel->launches[l], l, *input.image); !status)
      return status;
  }
  h << "  return cudaSuccess;\n}\n\n";
  return ok_status();
}

}  // namespace

// The header as a script of its parts: preamble, plan arithmetic, image, workspace, launch().
Result<std::string> generate_launcher_header(const HeaderInput& input) {
  if (input.image == nullptr || input.image_prefix.empty())
    return make_error("no compiled device image for " + input.kernel_file_name);
  const std::string ns = input.namespace_name.empty() ? "kopt_" + cpp_identifier(input.task->name)
                                                      : input.namespace_name;
  const LauncherSignature signature = launcher_signature(*input.task);
  std::ostringstream h;
  write_preamble(h, input);
  h << "namespace " << ns << " {\n\n" << cpp_plan_arithmetic() << "\n";
  write_image_loader(h, input);
  if (auto s = write_workspace(h, *input.kernel, signature); !s) return make_error(s.error());
  if (auto s = write_launch_function(h, input, signature); !s) return make_error(s.error());
  h << "}  // namespace " << ns << "\n";
  return h.str();
}

}  // namespace kopt::exporter
