#include "bench/memory_measures.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/strings.h"
#include "memory_store/bm25.h"
#include "memory_store/source_identifiers.h"
#include "memory_store/techniques.h"
#include "src/orchestrator/beam.h"

namespace kopt::bench {

namespace fs = std::filesystem;
using memory::MemoryStore;

namespace {

// The value after "// task: " in a twin's header, "" when it has none.
std::string twin_task(const std::string& source) {
  if (source.rfind("// expect: ok", 0) != 0) return "";
  size_t at = source.find("\n// task: ");
  if (at == std::string::npos) return "";
  size_t start = at + 10, end = source.find('\n', start);
  return trim(source.substr(start, end - start));
}

// The twins under tests/sandbox/ that a test already judged correct, by task.
std::map<std::string, std::vector<CorpusKernel>> twins(const fs::path& repo) {
  std::map<std::string, std::vector<CorpusKernel>> by_task;
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(repo / "tests" / "sandbox", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".cu") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());  // directory order is not stable
  for (const auto& file : files) {
    auto source = read_file(file);
    if (!source) continue;
    std::string task = twin_task(*source);
    if (!task.empty())
      by_task[task].push_back({fs::relative(file, repo).string(), std::move(*source)});
  }
  return by_task;
}

}  // namespace

Result<std::vector<CorpusTask>> load_corpus(const fs::path& repo) {
  auto extra = twins(repo);
  std::vector<CorpusTask> tasks;
  for (const char* folder : {"tasks", "tasks_realworld"}) {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (auto it = fs::directory_iterator(repo / folder, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (fs::exists(it->path() / "task.json") && fs::exists(it->path() / "baseline.cu"))
        dirs.push_back(it->path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      auto spec = read_file(dir / "task.json");
      auto baseline = read_file(dir / "baseline.cu");
      if (!spec) return make_error(spec.error());
      if (!baseline) return make_error(baseline.error());
      CorpusTask task;
      task.name = dir.filename().string();
      task.spec_json = *spec;
      auto json = nlohmann::json::parse(*spec, nullptr, false);
      if (json.is_discarded() || !json.contains("tags") || !json["tags"].is_array())
        return make_error((dir / "task.json").string() + ": $.tags: missing or not an array");
      for (const auto& tag : json["tags"]) task.tags.push_back(tag.get<std::string>());
      task.kernels.push_back({fs::relative(dir / "baseline.cu", repo).string(), *baseline});
      for (auto& twin : extra[task.name]) task.kernels.push_back(twin);
      tasks.push_back(std::move(task));
    }
  }
  if (tasks.empty()) return make_error("no tasks under " + (repo / "tasks").string());
  return tasks;
}

std::string technique_snippet(const std::string& technique, int variant) {
  // Each fragment is what a fast kernel adds; two shapes per technique so that fast kernels
  // differ in their identifiers as real ones do.
  static const std::map<std::string, std::vector<std::string>> kSnippets = {
      {"vector_loads",
       {"__device__ __forceinline__ float4 load4(const float* p, long long i) {\n"
        "  return reinterpret_cast<const float4*>(p)[i];\n}\n",
        "__device__ __forceinline__ void store4(float* p, long long i, float4 v) {\n"
        "  reinterpret_cast<float4*>(p)[i] = v;\n}\n"}},
      {"warp_shuffle",
       {"__device__ float warp_sum(float v) {\n  for (int o = 16; o > 0; o /= 2) v += "
        "__shfl_xor_sync(0xffffffffu, v, o);\n  return v;\n}\n",
        "__device__ float warp_max(float v) {\n  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, "
        "__shfl_down_sync(0xffffffffu, v, o));\n  return __shfl_sync(0xffffffffu, v, 0);\n}\n"}},
      {"online_softmax",
       {"__device__ void online_update(float x, float& m, float& s) {\n  float n = fmaxf(m, x);\n"
        "  s = s * expf(m - n) + expf(x - n);\n  m = n;\n}\n",
        "__device__ void online_merge(float m2, float s2, float& m, float& s) {\n"
        "  float n = fmaxf(m, m2);\n  s = s * expf(m - n) + s2 * expf(m2 - n);\n  m = n;\n}\n"}},
      {"shared_tiling",
       {"__device__ void stage_tile(const float* src, int ld, float (*tile)[32]) {\n"
        "  for (int r = threadIdx.y; r < 32; r += blockDim.y) tile[r][threadIdx.x] = "
        "src[r * ld + threadIdx.x];\n  __syncthreads();\n}\n",
        "__device__ float tile_dot(const float (*a_tile)[32], const float (*b_tile)[32], int r, "
        "int c) {\n  float acc = 0.0f;\n  for (int i = 0; i < 32; ++i) acc += a_tile[r][i] * "
        "b_tile[i][c];\n  return acc;\n}\n"}},
      {"smem_padding",
       {"__device__ void stage_padded(const float* src, int ld, float (*padded)[33]) {\n"
        "  padded[threadIdx.y][threadIdx.x] = src[threadIdx.y * ld + threadIdx.x];\n}\n",
        "__device__ int swizzle_column(int row, int col) { return col ^ (row & 7); }\n"}},
      {"cp_async",
       {"__device__ void prefetch_stage(float* dst, const float* src) {\n"
        "  __pipeline_memcpy_async(dst, src, 16);\n  __pipeline_commit();\n}\n",
        "__device__ void wait_stage() { __pipeline_wait_prior(1); __syncthreads(); }\n"}},
      {"tensor_cores",
       {"#include <mma.h>\n__device__ void mma_tile(const __nv_bfloat16* a, const __nv_bfloat16* "
        "b, float* c, int ld) {\n  using namespace nvcuda;\n  wmma::fragment<wmma::matrix_a, 16, "
        "16, 16, __nv_bfloat16, wmma::row_major> fa;\n  wmma::load_matrix_sync(fa, a, ld);\n}\n",
        "__device__ void mma_m16n8k16(const unsigned* a, const unsigned* b, float* d) {\n"
        "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(d[0]), \"+f\"(d[1]), "
        "\"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), "
        "\"r\"(b[0]), \"r\"(b[1]));\n}\n"}},
      {"split_k",
       {"__device__ void split_k_accumulate(float* c, float partial) { atomicAdd(c, partial); "
        "}\n",
        "__device__ int split_k_range(int k, int splits, int s) { return (k + splits - 1) / "
        "splits * s; }\n"}},
      {"fusion",
       {"__device__ float fused_epilogue(float acc, float bias) { return fmaxf(acc + bias, 0.0f); "
        "}\n",
        "__device__ float fused_residual(float x, float residual) { return x + residual; }\n"}},
      {"register_resident",
       {"__device__ void keep_row(const float* row, float (&vals)[8], int lane) {\n"
        "  for (int i = 0; i < 8; ++i) vals[i] = row[lane + 32 * i];\n}\n",
        "__device__ float sum_kept(const float (&vals)[8]) {\n  float s = 0.0f;\n"
        "  for (int i = 0; i < 8; ++i) s += vals[i];\n  return s;\n}\n"}},
      {"unrolling",
       {"__device__ float dot8(const float* a, const float* b) {\n  float s = 0.0f;\n"
        "#pragma unroll\n  for (int i = 0; i < 8; ++i) s += a[i] * b[i];\n  return s;\n}\n",
        "__device__ void copy4(float* d, const float* s) {\n#pragma unroll 4\n"
        "  for (int i = 0; i < 4; ++i) d[i] = s[i];\n}\n"}},
      {"launch_config",
       {"__global__ void __launch_bounds__(256, 2) bounded_helper(float* p) { p[threadIdx.x] = "
        "0.0f; }\n",
        "__device__ int grid_stride() { return gridDim.x * blockDim.x; }  // grid-stride loop\n"
        "__global__ void __launch_bounds__(512) wide_helper(float* p) { p[threadIdx.x] = 1.0f; "
        "}\n"}},
      {"fast_math",
       {"__device__ float fast_exp(float x) { return __expf(x); }\n",
        "__device__ float fast_div(float a, float b) { return __fdividef(a, b) * rsqrtf(b); }\n"}},
      {"packed_half",
       {"#include <cuda_bf16.h>\n__device__ __nv_bfloat162 scale2(__nv_bfloat162 v, "
        "__nv_bfloat162 w) { return __hmul2(v, w); }\n",
        "#include <cuda_fp16.h>\n__device__ half2 fma2(half2 a, half2 b, half2 c) { return "
        "__hfma2(a, b, c); }\n"}},
  };
  auto it = kSnippets.find(technique);
  if (it == kSnippets.end()) return "";
  return it->second[static_cast<size_t>(variant) % it->second.size()];
}

std::string technique_lesson(const std::string& technique, const std::string& task, int variant) {
  // In the summarizer's words (two phrasings each); the {task} makes BM25 see the task.
  static const std::map<std::string, std::vector<std::string>> kLessons = {
      {"vector_loads",
       {"float4 loads quarter the memory instructions of the {task} kernel, which was bound by "
        "load issue",
        "Each thread of {task} now moves 16 bytes per access: 128-bit loads and stores"}},
      {"warp_shuffle",
       {"A warp shuffle reduction replaces the block-wide tree in {task}; the barriers are gone",
        "Warp-level reduction with __shfl_xor_sync: {task} needs one barrier instead of "
        "log2(BLOCK)"}},
      {"online_softmax",
       {"An online softmax keeps a running max and sum in {task}, so the row is read once less",
        "{task}: a single-pass softmax merges the max and the sum of exponentials"}},
      {"shared_tiling",
       {"Tiles staged in shared memory give {task} reuse that global memory did not",
        "{task}: each block loads a 32x32 tile into shared memory once and every thread reuses "
        "it"}},
      {"smem_padding",
       {"Padding the shared tile by one column removes the bank conflicts of {task}",
        "{task}: a swizzled shared-memory layout removes 32-way bank conflicts"}},
      {"cp_async",
       {"cp.async double buffering overlaps the next tile's load with this tile's math in {task}",
        "{task}: asynchronous copies (cp.async) hide the global load latency"}},
      {"tensor_cores",
       {"wmma 16x16x16 tensor-core fragments replace the FMA loop of {task}",
        "{task} now runs its inner product on tensor cores (mma.sync m16n8k16)"}},
      {"split_k",
       {"split-K over four blocks fills the SMs for the skinny {task} shape",
        "{task}: splitting k across blocks (split-k) raises parallelism"}},
      {"fusion",
       {"The epilogue is fused into {task}: one kernel instead of two launches",
        "{task}: fusing the two passes into a single kernel saves a round trip to memory"}},
      {"register_resident",
       {"The row of {task} is kept in registers between the passes",
        "{task}: values held in registers instead of being read again from global memory"}},
      {"unrolling",
       {"#pragma unroll on the inner loop of {task} removes the loop overhead",
        "{task}: the inner loop unrolled by four"}},
      {"launch_config",
       {"{task}: __launch_bounds__ and a smaller block size raise occupancy",
        "A grid-stride loop with fewer blocks per SM suits {task}"}},
      {"fast_math",
       {"__expf instead of expf in the exponent of {task}",
        "{task}: fast math intrinsics (__fdividef, rsqrtf) in the normalisation"}},
      {"packed_half",
       {"__nv_bfloat162 arithmetic does two elements per instruction in {task}",
        "{task}: packed half2 math (__hfma2) halves the instruction count"}},
  };
  auto it = kLessons.find(technique);
  if (it == kLessons.end()) return "";
  std::string lesson = it->second[static_cast<size_t>(variant) % it->second.size()];
  size_t at = lesson.find("{task}");
  return lesson.replace(at, 6, task);
}

PairWriter::PairWriter(MemoryStore& store, const std::vector<CorpusTask>& corpus, uint64_t seed)
    : store_(store), corpus_(corpus), rng_(seed) {}

Status PairWriter::store_tasks() {
  if (tasks_stored_) return ok_status();
  for (const auto& task : corpus_) {
    memory::TaskRecord record;
    record.name = task.name;
    record.spec_hash = "bench-" + task.name;
    record.tags = task.tags;
    record.spec_json = task.spec_json;
    if (auto id = store_.upsert_task(record); !id) return make_error(id.error());
  }
  tasks_stored_ = true;
  return ok_status();
}

Result<int64_t> PairWriter::real_kernel(const CorpusTask& task, size_t index) {
  if (auto s = store_tasks(); !s) return make_error(s.error());
  std::string key = task.name + "#" + std::to_string(index);
  if (auto it = real_ids_.find(key); it != real_ids_.end()) return it->second;
  memory::KernelRecord kernel;
  kernel.task = task.name;
  kernel.source = task.kernels[index].source;
  auto id = store_.add_kernel(kernel);
  if (!id) return id;
  real_ids_[key] = *id;
  kernel_source_[*id] = kernel.source;
  return *id;
}

Result<int64_t> PairWriter::add(const CorpusTask& task, const std::string& technique, bool extend,
                                double negative_share) {
  int64_t slow = 0;
  if (auto tip = lineage_tip_.find(task.name); extend && tip != lineage_tip_.end()) {
    slow = tip->second;
  } else {
    auto id = real_kernel(task, rng_() % task.kernels.size());
    if (!id) return id;
    slow = *id;
  }
  return add_from(task, technique, slow, negative_share);
}

Result<int64_t> PairWriter::add_from(const CorpusTask& task, const std::string& technique,
                                     int64_t slow, double negative_share) {
  int variant = static_cast<int>(rng_() % 2);
  memory::KernelRecord fast;
  fast.task = task.name;
  fast.parent_id = slow;
  fast.origin = {Origin::kCoder, "bench-model", "coder.md", false};
  // The counter keeps every fast kernel distinct, as two LLM answers are.
  fast.source = kernel_source_[slow] + "\n// step " + std::to_string(++counter_) + "\n" +
                technique_snippet(technique, variant);
  auto fast_id = store_.add_kernel(fast);
  if (!fast_id) return fast_id;
  kernel_source_[*fast_id] = fast.source;
  lineage_tip_[task.name] = *fast_id;
  std::uniform_real_distribution<double> gain(1.04, 2.5);
  bool negative = std::uniform_real_distribution<double>(0, 1)(rng_) < negative_share;
  memory::PairRecord pair;
  pair.task = task.name;
  pair.slow_kernel_id = slow;
  pair.fast_kernel_id = *fast_id;
  pair.speedup = negative ? 1.0 / gain(rng_) : gain(rng_);
  pair.gpu_model = "NVIDIA H100 80GB HBM3";
  pair.gpu_arch = rng_() % 5 ? "sm_90" : "sm_80";
  pair.summary = technique_lesson(technique, task.name, static_cast<int>(rng_() % 2));
  pair.tags = {task.tags.front(), technique};
  pair.retrieved_count = static_cast<int64_t>(rng_() % 6);
  pair.improved_count = static_cast<int64_t>(rng_() % (pair.retrieved_count + 1));
  auto id = store_.add_pair(pair);
  if (!id) return id;
  taught_[*id] = technique;
  return id;
}

Result<int64_t> PairWriter::add_tuner(const CorpusTask& task) {
  auto slow = real_kernel(task, rng_() % task.kernels.size());
  if (!slow) return slow;
  static const std::vector<std::string> kConfigs = {"BLOCK=128", "BLOCK=512", "BLOCK=1024",
                                                    "WARPS=4", "BLOCK_X=16, BLOCK_Y=16"};
  std::string config = kConfigs[rng_() % kConfigs.size()];
  memory::KernelRecord fast;
  fast.task = task.name;
  fast.parent_id = *slow;
  fast.origin = {Origin::kTuner, "", "", true};
  fast.source = kernel_source_[*slow] + "\n// tuned " + std::to_string(++counter_) + "\n";
  auto fast_id = store_.add_kernel(fast);
  if (!fast_id) return fast_id;
  std::uniform_real_distribution<double> gain(1.01, 1.3);
  memory::PairRecord pair;
  pair.task = task.name;
  pair.slow_kernel_id = *slow;
  pair.fast_kernel_id = *fast_id;
  pair.speedup = gain(rng_);
  pair.gpu_model = "NVIDIA H100 80GB HBM3";
  pair.gpu_arch = "sm_90";
  pair.summary = "Tuning the " + task.name + " kernel on NVIDIA H100 80GB HBM3: " + config +
                 " instead of the declared defaults made it faster.";
  pair.tags = {task.tags.front(), "tuning"};
  return store_.add_pair(pair);
}

Result<int64_t> PairWriter::add_random() {
  const CorpusTask& task = corpus_[rng_() % corpus_.size()];
  if (rng_() % 5 == 0) return add_tuner(task);
  const auto& names = memory::technique_names();
  return add(task, names[rng_() % names.size()], rng_() % 2 == 0);
}

double recall_at(const std::vector<int64_t>& ranked, const Relevance& relevance, size_t k) {
  size_t relevant = 0, found = 0;
  for (const auto& [id, grade] : relevance) relevant += grade > 0;
  if (relevant == 0) return 0;
  for (size_t i = 0; i < std::min(k, ranked.size()); ++i) {
    auto it = relevance.find(ranked[i]);
    found += it != relevance.end() && it->second > 0;
  }
  return static_cast<double>(found) / static_cast<double>(std::min(k, relevant));
}

double ndcg_at(const std::vector<int64_t>& ranked, const Relevance& relevance, size_t k) {
  auto gain = [](double grade) { return std::pow(2.0, grade) - 1.0; };
  double dcg = 0;
  for (size_t i = 0; i < std::min(k, ranked.size()); ++i) {
    auto it = relevance.find(ranked[i]);
    if (it != relevance.end()) dcg += gain(it->second) / std::log2(static_cast<double>(i) + 2.0);
  }
  std::vector<double> grades;
  for (const auto& [id, grade] : relevance) grades.push_back(grade);
  std::sort(grades.rbegin(), grades.rend());
  double ideal = 0;
  for (size_t i = 0; i < std::min(k, grades.size()); ++i)
    ideal += gain(grades[i]) / std::log2(static_cast<double>(i) + 2.0);
  return ideal > 0 ? dcg / ideal : 0;
}

size_t rank_of(const std::vector<int64_t>& ranked, int64_t id) {
  auto it = std::find(ranked.begin(), ranked.end(), id);
  return it == ranked.end() ? 0 : static_cast<size_t>(it - ranked.begin()) + 1;
}

Result<std::vector<PairRow>> load_pair_rows(MemoryStore& store) {
  auto statement = store.database().prepare(
      "SELECT p.id, t.name, t.tags, p.is_negative, p.slow_kernel_id, p.fast_kernel_id,"
      " f.summary || ' ' || f.tags || ' ' || f.task || ' ' || f.slow_terms || ' ' || f.fast_terms"
      " FROM pairs p JOIN tasks t ON t.id = p.task_id LEFT JOIN pair_fts f ON f.rowid = p.id"
      " ORDER BY p.id");
  if (!statement) return make_error(statement.error());
  std::vector<PairRow> rows;
  while (true) {
    auto row = statement->step();
    if (!row) return make_error(row.error());
    if (!*row) break;
    PairRow r;
    r.id = statement->column_int64(0);
    r.task = statement->column_text(1);
    auto tags = nlohmann::json::parse(statement->column_text(2), nullptr, false);
    if (tags.is_array()) {
      for (const auto& tag : tags) {
        if (tag.is_string()) r.tags.push_back(tag.get<std::string>());
      }
    }
    r.negative = statement->column_int64(3) != 0;
    r.slow_kernel_id = statement->column_int64(4);
    r.fast_kernel_id = statement->column_int64(5);
    r.document = statement->column_text(6);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> query_words(const memory::RetrievalQuery& query) {
  // As retrieval.cc's query_words: topic words, then at most 48 identifiers of the kernel.
  std::vector<std::string> words = memory::text_words(query.task);
  for (const auto& tag : query.family_tags) {
    for (auto& word : memory::text_words(tag)) words.push_back(std::move(word));
  }
  auto terms = memory::index_terms(query.kernel_source);
  if (terms.size() > 48) terms.resize(48);
  words.insert(words.end(), terms.begin(), terms.end());
  for (auto& word : words) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

namespace {

bool in_family(const PairRow& row, const std::string& family) {
  return !row.tags.empty() && row.tags.front() == family;
}

}  // namespace

std::vector<int64_t> random_same_family(const std::vector<const PairRow*>& rows,
                                        const std::string& family, std::mt19937_64& rng, size_t k) {
  std::vector<int64_t> pool;
  for (const PairRow* row : rows) {
    if (in_family(*row, family)) pool.push_back(row->id);
  }
  std::shuffle(pool.begin(), pool.end(), rng);
  if (pool.size() > k) pool.resize(k);
  return pool;
}

std::vector<int64_t> bm25_only(const std::vector<const PairRow*>& rows,
                               const std::vector<std::string>& words, size_t k) {
  std::vector<std::string> documents;
  documents.reserve(rows.size());
  for (const PairRow* row : rows) documents.push_back(row->document);
  std::vector<double> scores = memory::bm25_scores(words, documents);
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::vector<int64_t> ids;
  for (size_t i = 0; i < std::min(k, order.size()); ++i) ids.push_back(rows[order[i]]->id);
  return ids;
}

std::vector<int64_t> newest_of_family(const std::vector<const PairRow*>& rows,
                                      const std::string& family, size_t k) {
  std::vector<int64_t> ids;
  for (auto it = rows.rbegin(); it != rows.rend() && ids.size() < k; ++it) {
    if (in_family(**it, family)) ids.push_back((*it)->id);
  }
  return ids;
}

Result<std::vector<int64_t>> kopt_ranking(MemoryStore& store, const std::string& task,
                                          const std::vector<std::string>& tags,
                                          const std::string& kernel_source, int64_t kernel_id,
                                          int k, const std::set<int64_t>& exclude_kernels) {
  memory::RetrievalQuery query;
  query.task = task;
  query.family_tags = tags;
  query.gpu_arch = "sm_90";
  query.kernel_source = kernel_source;
  query.current_kernel_id = kernel_id;
  query.exclude_kernels = exclude_kernels;
  query.near_copy = [kernel_source](const std::string& fast) {
    return orchestrator::code_similarity(kernel_source, fast) >= 0.92;  // RunOptions' default
  };
  query.current_techniques = memory::techniques_in_code(kernel_source);
  query.k = k;
  auto pairs = store.retrieve(query);
  if (!pairs) return make_error(pairs.error());
  std::vector<int64_t> ids;
  for (const auto& p : *pairs) ids.push_back(p.pair.id);
  return ids;
}

}  // namespace kopt::bench
