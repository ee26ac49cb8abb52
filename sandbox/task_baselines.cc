#include "sandbox/task_baselines.h"

#include <algorithm>

#include "common/strings.h"

namespace kopt {

namespace {

const std::vector<std::string> kCublasLtKeys = {"a", "b",        "out",      "m",   "n",
                                                "k", "b_layout", "epilogue", "bias"};
const std::vector<std::string> kLayouts = {"kn", "nk"};
const std::vector<std::string> kEpilogues = {"none", "bias_relu"};

bool is_count(const std::string& text) {
  return !text.empty() && text.size() < 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoll(text) > 0;
}

std::string pick(JsonReader& reader, const nlohmann::json& node, const std::string& key,
                 const std::vector<std::string>& choices, const std::string& fallback) {
  auto value = reader.string_field(node, "$.cublaslt", key, false).value_or(fallback);
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    reader.error("$.cublaslt." + key, "unknown " + key + " '" + value + "'" +
                                          did_you_mean(value, choices) + " (one of " +
                                          join(choices, ", ") + ")");
  }
  return value;
}

CublasLtMapping read_mapping(JsonReader& reader, const nlohmann::json& node,
                             const std::set<std::string>& tensors,
                             const std::set<std::string>& sizes) {
  reader.check_keys(node, "$.cublaslt", kCublasLtKeys);
  CublasLtMapping m;
  std::vector<std::string> tensor_list(tensors.begin(), tensors.end());
  for (auto [key, field] : {std::pair{"a", &m.a}, {"b", &m.b}, {"out", &m.out}}) {
    *field = reader.string_field(node, "$.cublaslt", key, true).value_or("");
    if (!field->empty() && !tensors.count(*field)) {
      reader.error(std::string("$.cublaslt.") + key,
                   "no tensor named '" + *field + "'" + did_you_mean(*field, tensor_list));
    }
  }
  std::vector<std::string> size_list(sizes.begin(), sizes.end());
  for (auto [key, field] : {std::pair{"m", &m.m}, {"n", &m.n}, {"k", &m.k}}) {
    // A number is written as a JSON integer; a size by its name.
    const nlohmann::json* value = node.contains(key) ? &node.at(key) : nullptr;
    std::string path = std::string("$.cublaslt.") + key;
    if (!value) {
      reader.error(path, "missing (a size name or a positive integer)");
    } else if (value->is_number_integer() && value->get<int64_t>() > 0) {
      *field = std::to_string(value->get<int64_t>());
    } else if (value->is_string() && sizes.count(value->get<std::string>())) {
      *field = value->get<std::string>();
    } else if (value->is_string()) {
      std::string name = value->get<std::string>();
      reader.error(path, "no size named '" + name + "'" + did_you_mean(name, size_list));
    } else {
      reader.error(path, "expected a size name or a positive integer");
    }
    if (!field->empty() && !is_count(*field) && !sizes.count(*field)) field->clear();
  }
  m.b_layout = pick(reader, node, "b_layout", kLayouts, "kn");
  m.epilogue = pick(reader, node, "epilogue", kEpilogues, "none");
  m.bias = reader.string_field(node, "$.cublaslt", "bias", false).value_or("");
  if (m.epilogue == "bias_relu" && m.bias.empty()) {
    reader.error("$.cublaslt.bias", "epilogue bias_relu needs the bias tensor's name");
  } else if (!m.bias.empty() && !tensors.count(m.bias)) {
    reader.error("$.cublaslt.bias",
                 "no tensor named '" + m.bias + "'" + did_you_mean(m.bias, tensor_list));
  } else if (!m.bias.empty() && m.epilogue == "none") {
    reader.error("$.cublaslt.bias", "a bias needs \"epilogue\": \"bias_relu\"");
  }
  return m;
}

}  // namespace

const std::vector<std::string>& production_baseline_names() {
  // The libraries (issue 33) are timed by scripts/library_baselines.py when importable there.
  static const std::vector<std::string> names = {"cublaslt",   "torch_eager", "torch_compile",
                                                 "flashinfer", "vllm",        "deepgemm",
                                                 "marlin",     "sdpa"};
  return names;
}

nlohmann::json CublasLtMapping::to_json() const {
  nlohmann::json j = {{"a", a}, {"b", b}, {"out", out},           {"m", m},
                      {"n", n}, {"k", k}, {"b_layout", b_layout}, {"epilogue", epilogue}};
  if (!bias.empty()) j["bias"] = bias;
  return j;
}

bool TaskBaselines::wants(const std::string& name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TaskBaselines task_baselines(const std::string& task_json) {
  JsonReader reader("task.json");
  auto root = nlohmann::json::parse(task_json, nullptr, false);
  if (!root.is_object()) return {};
  std::set<std::string> tensors, sizes;
  for (const char* key : {"inputs", "outputs"}) {
    if (!root.contains(key) || !root[key].is_array()) continue;
    for (const auto& t : root[key]) {
      if (t.is_object() && t.contains("name") && t["name"].is_string()) {
        tensors.insert(t["name"].get<std::string>());
      }
    }
  }
  if (root.contains("sizes") && root["sizes"].is_object()) {
    for (const auto& item : root["sizes"].items()) sizes.insert(item.key());
  }
  return read_task_baselines(reader, root, tensors, sizes);
}

Result<CublasLtCall> cublaslt_call(const TaskSpec& task, const CublasLtMapping& mapping,
                                   const ShapeBinding& sizes) {
  auto size = [&](const std::string& text) -> Result<int64_t> {
    if (is_count(text)) return std::stoll(text);
    auto it = sizes.find(text);
    if (it == sizes.end()) return make_error("cublaslt: no size '" + text + "' at this shape");
    return it->second;
  };
  auto m = size(mapping.m), n = size(mapping.n), k = size(mapping.k);
  if (!m || !n || !k) return make_error(!m ? m.error() : (!n ? n.error() : k.error()));
  CublasLtCall call;
  call.m = *m;
  call.n = *n;
  call.k = *k;
  auto expect = [&](const std::string& name, int64_t elements, DType* dtype) -> Status {
    const TensorSpec* t = task.find_tensor(name);
    if (!t) return make_error("cublaslt: no tensor named '" + name + "'");
    auto count = task.element_count(*t, sizes);
    if (!count) return make_error(count.error());
    if (*count != elements)
      return make_error("cublaslt: tensor '" + name + "' has " + std::to_string(*count) +
                        " elements at this shape, the mapping's m, n, k give " +
                        std::to_string(elements));
    *dtype = t->dtype;
    return ok_status();
  };
  if (auto s = expect(mapping.a, call.m * call.k, &call.b_dtype); !s) return make_error(s.error());
  if (auto s = expect(mapping.b, call.k * call.n, &call.a_dtype); !s) return make_error(s.error());
  if (auto s = expect(mapping.out, call.m * call.n, &call.d_dtype); !s)
    return make_error(s.error());
  if (!mapping.bias.empty()) {
    DType bias_dtype;
    if (auto s = expect(mapping.bias, call.n, &bias_dtype); !s) return make_error(s.error());
  }
  call.transpose_a = mapping.b_layout == "nk";
  call.a_rows = call.transpose_a ? call.k : call.n;
  call.a_cols = call.transpose_a ? call.n : call.k;
  call.b_rows = call.k;
  call.b_cols = call.m;
  call.d_rows = call.n;
  call.d_cols = call.m;
  return call;
}

TaskBaselines read_task_baselines(JsonReader& reader, const nlohmann::json& root,
                                  const std::set<std::string>& tensors,
                                  const std::set<std::string>& sizes) {
  TaskBaselines out;
  const auto& known = production_baseline_names();
  std::vector<std::string> listed = reader.string_list(root, "$", "production_baselines", false);
  for (size_t i = 0; i < listed.size(); ++i) {
    const std::string& name = listed[i];
    std::string path = "$.production_baselines[" + std::to_string(i) + "]";
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      reader.error(path, "unknown production baseline '" + name + "'" + did_you_mean(name, known) +
                             " (one of " + join(known, ", ") + ")");
    } else if (out.wants(name)) {
      reader.error(path, "'" + name + "' is listed twice");
    } else {
      out.names.push_back(name);
    }
  }
  const nlohmann::json* mapping =
      reader.typed_field(root, "$", "cublaslt", nlohmann::json::value_t::object, false);
  if (mapping) out.cublaslt = read_mapping(reader, *mapping, tensors, sizes);
  if (out.wants("cublaslt") && !mapping && !root.contains("cublaslt")) {
    reader.error("$.cublaslt",
                 "\"production_baselines\" lists cublaslt: say how the task maps "
                 "onto a matmul (tasks/README.md, \"cublaslt\")");
  }
  if (mapping && !out.wants("cublaslt")) {
    reader.error("$.cublaslt",
                 "a cuBLASLt mapping without \"cublaslt\" in "
                 "\"production_baselines\"");
  }
  return out;
}

}  // namespace kopt
