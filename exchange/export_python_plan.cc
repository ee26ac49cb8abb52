// kopt_plan_TASK.py: the launch plans of an exported kernel file and of its reference, as Python
// data over their device code files, so that kopt_torch.py launches exactly the CUBIN (or PTX)
// kopt compiled through the driver API, with nothing to build. Plan expressions are rewritten
// token by token from their parsed form; names and symbols are Python string literals.
#include <sstream>

#include "common/sha256.h"
#include "common/text_escape.h"
#include "exchange/export_bundle.h"
#include "exchange/launcher_codegen.h"
#include "sandbox/expr.h"

namespace kopt::exporter {

namespace {

Result<std::string> lambda_of(const std::string& expression) {
  auto py = expression_to_python(expression);
  if (!py) return make_error(py.error());
  return "lambda s: " + *py;
}

Result<std::string> dims_lambda(const std::vector<std::string>& dims) {
  std::string out;
  for (size_t d = 0; d < 3; ++d) {
    std::string value = "1";
    if (d < dims.size()) {
      auto py = expression_to_python(dims[d]);
      if (!py) return make_error(py.error());
      value = *py;
    }
    out += (d ? ", " : "") + value;
  }
  return "lambda s: (" + out + ")";
}

Result<std::string> plan_dict(const KernelFile& kernel, const DeviceImage& image,
                              const std::map<std::string, int64_t>& tunables,
                              const std::string& stem) {
  std::ostringstream p;
  p << "{\n    \"cubin\": " << python_string_literal(stem + ".cubin") << ",\n"
    << "    \"cubin_sha256\": " << python_string_literal(sha256_hex(image.cubin)) << ",\n"
    << "    \"ptx\": " << (image.ptx.empty() ? "None" : python_string_literal(stem + ".ptx"))
    << ",\n"
    << "    \"ptx_sha256\": "
    << (image.ptx.empty() ? "None" : python_string_literal(sha256_hex(image.ptx))) << ",\n"
    << "    \"cc\": (" << image.cc_major << ", " << image.cc_minor << "),\n"
    << "    \"symbols\": [";
  for (const auto& symbol : image.symbols) p << python_string_literal(symbol) << ", ";
  p << "],\n    \"tunables\": {";
  for (const auto& [name, value] : kernel.tunable_values(tunables))
    p << python_string_literal(name) << ": " << value << ", ";
  p << "},\n    \"scratch\": [\n";
  for (const auto& s : kernel.scratch) {
    auto count = lambda_of(s.count);
    if (!count) return make_error("scratch " + s.name + ": " + count.error());
    p << "        (" << python_string_literal(s.name) << ", \"" << dtype_facts(s.dtype).torch_name
      << "\", " << *count << ", " << (s.zero ? "True" : "False") << "),\n";
  }
  p << "    ],\n    \"launches\": [\n";
  for (const auto& launch : kernel.launches) {
    size_t index = 0;
    while (index < image.kernels.size() && image.kernels[index] != launch.kernel) ++index;
    if (index >= image.kernels.size()) return make_error(launch.kernel + ": not in the image");
    auto grid = dims_lambda(launch.grid), block = dims_lambda(launch.block);
    auto shared = lambda_of(launch.shared_bytes);
    if (!grid || !block || !shared) {
      return make_error(launch.kernel + ": " +
                        (!grid    ? grid.error()
                         : !block ? block.error()
                                  : shared.error()));
    }
    p << "        (" << index << ", " << *grid << ", " << *block << ", " << *shared << ", [";
    for (const auto& arg : launch.args) {
      switch (arg.kind) {
        case ArgBinding::Kind::kBuffer:
          p << "(\"buffer\", " << python_string_literal(arg.buffer) << "), ";
          break;
        case ArgBinding::Kind::kInt32:
        case ArgBinding::Kind::kInt64: {
          auto value = lambda_of(arg.expression);
          if (!value) return make_error(launch.kernel + ": " + value.error());
          p << "(\"" << (arg.kind == ArgBinding::Kind::kInt32 ? "i32" : "i64") << "\", " << *value
            << "), ";
          break;
        }
        case ArgBinding::Kind::kFloat32:
        case ArgBinding::Kind::kFloat64:
          p << "(\"" << (arg.kind == ArgBinding::Kind::kFloat32 ? "f32" : "f64") << "\", "
            << python_string_literal(arg.expression) << "), ";
          break;
      }
    }
    p << "]),\n";
  }
  p << "    ],\n}";
  return p.str();
}

}  // namespace

Result<std::string> expression_to_python(const std::string& expression) {
  auto parsed = Expr::parse(expression);
  if (!parsed) return make_error("expression '" + expression + "': " + parsed.error());
  return "(" +
         parsed->to_calls(
             "_kopt_", [](int64_t n) { return std::to_string(n); },
             [](const std::string& n) { return "s[" + python_string_literal(n) + "]"; }) +
         ")";
}

const char* python_plan_arithmetic() {
  return R"py(# Plan arithmetic as kopt's sandbox computed it when it verified the kernel: 64-bit
# integers, division truncating toward zero (C++'s, not Python's floor //), and an overflow or
# a division by zero is an error instead of a launch with another size.
_KOPT_I64_MIN, _KOPT_I64_MAX = -(1 << 63), (1 << 63) - 1


def _kopt_i64(value):
    if not _KOPT_I64_MIN <= value <= _KOPT_I64_MAX:
        raise OverflowError("kopt plan expression: 64-bit overflow")
    return value


def _kopt_add(a, b):
    return _kopt_i64(a + b)


def _kopt_sub(a, b):
    return _kopt_i64(a - b)


def _kopt_mul(a, b):
    return _kopt_i64(a * b)


def _kopt_neg(a):
    return _kopt_i64(-a)


def _kopt_div(a, b):
    if b == 0:
        raise ZeroDivisionError("kopt plan expression: division by zero")
    quotient = abs(a) // abs(b)
    return _kopt_i64(quotient if (a < 0) == (b < 0) else -quotient)


def _kopt_mod(a, b):
    return _kopt_i64(a - b * _kopt_div(a, b))


def _kopt_ceil_div(a, b):
    if a < 0 or b <= 0:
        raise ValueError("kopt plan expression: ceil_div needs a >= 0 and b > 0")
    return a // b + (a % b != 0)


def _kopt_min(a, b):
    return min(a, b)


def _kopt_max(a, b):
    return max(a, b)
)py";
}

Result<std::string> generate_python_plan(const TaskSpec& task, const KernelFile& kernel,
                                         const DeviceImage& image,
                                         const std::map<std::string, int64_t>& tunables,
                                         const KernelFile* reference,
                                         const DeviceImage* reference_image) {
  auto kernel_plan = plan_dict(kernel, image, tunables, task.name);
  if (!kernel_plan) return make_error(kernel_plan.error());
  std::string reference_plan = "None";
  if (reference != nullptr && reference_image != nullptr) {
    auto plan = plan_dict(*reference, *reference_image, {}, task.name + ".reference");
    if (!plan) return make_error("the task's reference.cu: " + plan.error());
    reference_plan = *plan;
  }
  return std::string(
             "# Generated by `kopt export`. Do not edit: export again instead.\n"
             "# The launch plans of one exported task over the device code kopt compiled (for\n"
             "# kopt_torch.py): data and plan expressions only.\n\n\n") +
         python_plan_arithmetic() + "\n\n" + "TASK = " + python_string_literal(task.name) +
         "\nKERNEL = " + *kernel_plan + "\nREFERENCE = " + reference_plan + "\n";
}

}  // namespace kopt::exporter
