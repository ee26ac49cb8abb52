// The export's PyTorch binding: kopt_torch.py (argument checks in Python, each task's device
// code launched through the CUDA driver API by ctypes from its plan, kopt_plan_TASK.py, so
// nothing is compiled at import or first call; torch.library ops kopt::TASK) and
// test_kopt_kernels.py (pytest). Only the task tables are generated; the rest is the fixed text
// in export_torch_support.cc. Free text (descriptions, GPU names) reaches Python only as string
// literals (common/text_escape.h).
#include <regex>
#include <sstream>

#include "common/text_escape.h"
#include "exchange/export_api_codegen.h"
#include "exchange/export_bundle.h"
#include "exchange/export_selftest_codegen.h"
#include "exchange/export_torch_support.h"
#include "exchange/launcher_codegen.h"

namespace kopt::exporter {

namespace {

std::string python_number(double value) {
  std::string text = float_literal(value);
  return text == "inf" || text == "-inf" || text == "nan" ? "float('" + text + "')" : text;
}

std::string python_string(const std::string& text) { return python_string_literal(text); }

Result<std::string> shape_lambda(const TensorSpec& tensor) {
  std::string dims;
  for (const auto& d : tensor.shape) {
    auto py = expression_to_python(d);
    if (!py) return make_error(tensor.name + ": " + py.error());
    dims += *py + ", ";
  }
  return "lambda s: (" + dims + ")";
}

// Where a size can be read from the inputs: (input, dimension, factor) for a dimension that is
// the size itself or a constant multiple of it ("2*ffn").
std::string inferred_sizes(const TaskSpec& task) {
  std::string out;
  for (const auto& [size, value] : task.sizes) {
    const std::regex alone("^\\s*" + size + "\\s*$");
    const std::regex times("^\\s*(?:(\\d+)\\s*\\*\\s*" + size + "|" + size +
                           "\\s*\\*\\s*(\\d+))\\s*$");
    bool found = false;
    for (const auto& t : task.inputs) {
      for (size_t d = 0; d < t.shape.size() && !found; ++d) {
        std::smatch m;
        std::string factor;
        if (std::regex_match(t.shape[d], alone)) {
          factor = "1";
        } else if (std::regex_match(t.shape[d], m, times)) {
          factor = m[1].matched ? m[1].str() : m[2].str();
        } else {
          continue;
        }
        out += python_string(size) + ": (" + python_string(t.name) + ", " + std::to_string(d) +
               ", " + factor + "), ";
        found = true;
      }
      if (found) break;
    }
  }
  return "{" + out + "}";
}

std::vector<std::string> free_sizes(const TaskSpec& task) {
  std::string inferred = inferred_sizes(task);
  std::vector<std::string> free;
  for (const auto& [size, value] : task.sizes) {
    if (inferred.find(python_string(size) + ": (") == std::string::npos) free.push_back(size);
  }
  return free;
}

Result<std::string> init_entry(const TensorSpec& tensor) {
  const InitSpec& init = tensor.init;
  if (init.dist == "uniform") {
    return "(\"uniform\", lambda s: " + python_number(init.low) +
           ", lambda s: " + python_number(init.high) + ")";
  }
  if (init.dist == "randint") {
    auto low = expression_to_python(init.int_low);
    auto high = expression_to_python(init.int_high);
    if (!low || !high) return make_error(tensor.name + ": " + (!low ? low.error() : high.error()));
    return "(\"randint\", lambda s: " + *low + ", lambda s: " + *high + ")";
  }
  return "(\"normal\", lambda s: " + python_number(init.mean) +
         ", lambda s: " + python_number(init.stddev) + ")";
}

Result<std::string> task_table_entry(const BundleTask& bt) {
  const TaskSpec& task = bt.spec;
  std::ostringstream e;
  e << "    " << python_string(task.name) << ": {\n"
    << "        \"ident\": " << python_string(cpp_identifier(task.name)) << ",\n"
    << "        \"inputs\": [\n";
  for (const auto& t : task.inputs) {
    auto shape = shape_lambda(t);
    auto init = init_entry(t);
    if (!shape || !init) return make_error(!shape ? shape.error() : init.error());
    e << "            (" << python_string(t.name) << ", \"" << dtype_facts(t.dtype).torch_name
      << "\", " << *shape << ", " << *init << "),\n";
  }
  e << "        ],\n        \"outputs\": [\n";
  for (const auto& t : task.outputs) {
    auto shape = shape_lambda(t);
    if (!shape) return make_error(shape.error());
    e << "            (" << python_string(t.name) << ", \"" << dtype_facts(t.dtype).torch_name
      << "\", " << *shape << "),\n";
  }
  e << "        ],\n        \"sizes\": {";
  for (const auto& [name, value] : task.sizes) e << python_string(name) << ": " << value << ", ";
  e << "},\n        \"inferred\": " << inferred_sizes(task) << ",\n        \"constants\": {";
  for (const auto& [name, value] : task.constants)
    e << python_string(name) << ": " << python_number(value) << ", ";
  e << "},\n        \"reference\": " << (bt.has_reference ? "True" : "False") << ",\n"
    << "        \"tolerance\": (" << python_number(task.tolerance.atol) << ", "
    << python_number(task.tolerance.rtol) << ", " << python_number(task.tolerance.max_error) << ", "
    << python_number(task.tolerance.min_pass_fraction) << "),\n"
    << "        \"check_shapes\": [";
  for (const auto& shape : selftest_shapes(task)) {
    e << "{";
    for (const auto& [name, value] : shape) e << python_string(name) << ": " << value << ", ";
    e << "}, ";
  }
  e << "],\n        \"plan\": " << python_string("kopt_plan_" + task.name) << ",\n"
    << "    },\n";
  return e.str();
}

// def axpy(x, y, *, alpha=1.75): ... and its torch.library schema.
void wrapper_functions(const BundleTask& bt, bool reference, std::ostringstream& py,
                       std::ostringstream& schemas) {
  const TaskSpec& task = bt.spec;
  const std::string fn = cpp_identifier(task.name) + (reference ? "_reference" : "");
  std::string params, tensors, schema, keywords, constants, sizes;
  for (const auto& t : task.inputs) {
    params += t.name + ", ";
    tensors += t.name + ", ";
    schema += (schema.empty() ? "" : ", ") + std::string("Tensor ") + t.name;
  }
  std::string kw_params, kw_schema;
  for (const auto& size : free_sizes(task)) {
    kw_params += ", " + size + "=" + std::to_string(task.sizes.at(size));
    kw_schema += ", int " + size + "=" + std::to_string(task.sizes.at(size));
    sizes += python_string(size) + ": " + size + ", ";
  }
  for (const auto& [name, value] : task.constants) {
    kw_params += ", " + name + "=" + python_number(value);
    kw_schema += ", float " + name + "=" + python_number(value);
    constants += python_string(name) + ": " + name + ", ";
  }
  std::string outputs;
  for (const auto& t : task.outputs) outputs += (outputs.empty() ? "" : ", ") + t.name;
  // The docstring is set from string literals: free text never sits inside a docstring.
  py << "\ndef " << fn << "(" << params.substr(0, params.size() - 2)
     << (kw_params.empty() ? "" : ", *" + kw_params) << "):\n"
     << "    return _call(" << python_string(task.name) << ", " << (reference ? "True" : "False")
     << ", (" << tensors << "), {" << constants << "}, {" << sizes << "})\n\n\n"
     << fn << ".__doc__ = "
     << python_string(
            (reference ? "The task's reference (slow, the oracle): " : "") + task.description +
            "\n\n" + (reference ? "Exported for checking the kernel." : bt.provenance + ".") +
            " Returns " + outputs +
            ".\nRaises TypeError or ValueError for a wrong dtype, device, shape or layout.\n")
     << "\n";
  std::string returns = task.outputs.size() == 1 ? "Tensor" : "(";
  if (task.outputs.size() != 1) {
    for (size_t i = 0; i < task.outputs.size(); ++i) returns += (i ? ", Tensor" : "Tensor");
    returns += ")";
  }
  schemas << "    (" << python_string(fn) << ", "
          << python_string(fn + "(" + schema + (kw_schema.empty() ? "" : ", *" + kw_schema) +
                           ") -> " + returns)
          << ", " << fn << "),\n";
}

}  // namespace

Result<std::vector<BundleFile>> generate_torch_files(const std::vector<BundleTask>& tasks) {
  std::ostringstream table, wrappers, schemas, task_names;
  for (const auto& bt : tasks) {
    auto entry = task_table_entry(bt);
    if (!entry) return make_error(bt.spec.name + ": " + entry.error());
    table << *entry;
    for (bool reference : {false, true}) {
      if (reference && !bt.has_reference) continue;
      wrapper_functions(bt, reference, wrappers, schemas);
    }
    task_names << python_string(bt.spec.name) << ", ";
  }
  std::vector<BundleFile> files;
  files.push_back({"kopt_torch.py", std::string(torch_module_head()) + python_plan_arithmetic() +
                                        "\n\n" + "TASKS = {\n" + table.str() + "}\n" +
                                        torch_module_body() + wrappers.str() + "\n\n_OPS = [\n" +
                                        schemas.str() + "]\n" + torch_module_tail()});
  files.push_back({"test_kopt_kernels.py", std::string(pytest_head()) + "TASKS = [" +
                                               task_names.str() + "]\n" + pytest_body()});
  return files;
}

}  // namespace kopt::exporter
