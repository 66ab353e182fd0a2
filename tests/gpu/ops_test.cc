// Every op kind's conventional kernel against its float64 reference, on graphs built by the
// model's own builder (so tilings are the ones the model produces): random inputs (bf16,
// never zeros), outputs poisoned with NaN before the run so an unwritten element fails, and
// |got - ref| <= atol + rtol * |ref| everywhere. Prefill (37 and 128 tokens, and 37 more
// after 19 cached) and decode (1 token after 50 or 300 cached) at batch 1, 3, 8 and 32;
// linear and lm-head through both providers; attention also with a sliding window. The fused
// decode linears (norm-linear with and without glu, linear-residual) also re-tiled to every width.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "executor/conventional.h"
#include "executor/reference/op_reference.h"
#include "model/error.h"
#include "tests/gpu/gpu_support.h"
#include "tests/gpu/op_cases.h"

namespace megacut::testing {
namespace {

using executor::LinearProvider;

struct GraphCase {
  const char* model;
  int64_t seq_len;
  int64_t past_len;
  int64_t batch;
};

struct KindCase {
  const char* kind;
  LinearProvider provider = LinearProvider::ours;
  int64_t window = 0;
};

std::vector<GraphCase> graph_cases() {
  std::vector<GraphCase> cases;
  for (int64_t batch : {1, 3, 8, 32}) {
    for (auto [seq, past] : {std::pair{37, 0}, {128, 0}, {37, 19}, {1, 50}, {1, 300}}) {
      cases.push_back({"odd", seq, past, batch});
    }
  }
  for (int64_t batch : {1, 3, 32}) {
    for (auto [seq, past] : {std::pair{37, 0}, {37, 19}, {1, 300}}) {
      cases.push_back({"oddqwen", seq, past, batch});
    }
  }
  cases.insert(cases.end(), {{"gqa16", 128, 0, 1},
                             {"gqa16", 1, 50, 8},
                             {"wide", 37, 0, 32},
                             {"wide", 1, 50, 1},
                             {"llama1b", 128, 0, 1},
                             {"llama1b", 37, 0, 3},
                             {"llama1b", 1, 50, 1},
                             {"llama1b", 1, 300, 32},
                             {"qwen06b", 128, 0, 1},
                             {"qwen06b", 37, 19, 3},
                             {"qwen06b", 1, 300, 1},
                             {"qwen06b", 1, 300, 8}});
  return cases;
}

std::vector<KindCase> kind_cases() {
  return {{"embedding"},
          {"rmsnorm"},
          {"linear", LinearProvider::ours},
          {"linear", LinearProvider::cublaslt},
          {"qk-norm"},
          {"rope"},
          {"kv-append"},
          {"attention"},
          {"attention", LinearProvider::ours, 16},
          {"silu-mul"},
          {"residual-add"},
          {"norm-linear"},
          {"linear-residual"},
          {"lm-head", LinearProvider::ours},
          {"lm-head", LinearProvider::cublaslt},
          {"argmax"}};
}

uint64_t hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

executor::KernelContext& kernel_context() {
  static executor::KernelContext context;
  return context;
}

// Weights by model and tensor names, kept while one model's tests run (Llama's embedding
// table is 262M values: made once, shared by embedding and the tied lm-head).
struct Weights {
  std::vector<float> host;
  DeviceBuffer device;
};

const Weights& weights_of(const std::string& model, const model::Graph& g, const model::Op& op) {
  static std::string cached_model;
  static std::map<std::string, Weights> cache;
  if (model != cached_model) {
    cache.clear();
    cached_model = model;
  }
  std::string key;
  int64_t count = 0, k = 1;
  for (int w : op.weights) {
    key += g.tensor(w).name + ";";
    count += g.tensor(w).elements();
    k = g.tensor(w).shape.back();
  }
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const std::string_view kind = op.kind->name();
  std::vector<float> host;
  if (kind == "rmsnorm" || kind == "qk-norm") {
    host = random_bf16(hash(key), count, 0.5f, 1.5f);
  } else if (kind == "linear" || kind == "lm-head" || kind == "linear-residual") {
    const float scale = 1.f / std::sqrt(static_cast<float>(k));
    host = random_bf16(hash(key), count, -scale, scale);
  } else if (kind == "norm-linear") {  // W's rows, then the norm's scale (k of them)
    const int64_t scale_k = g.tensor(op.weights.back()).elements();
    const float scale = 1.f / std::sqrt(static_cast<float>(scale_k));
    host = random_bf16(hash(key), count - scale_k, -scale, scale);
    const std::vector<float> norm = random_bf16(hash(key) + 1, scale_k, 0.5f, 1.5f);
    host.insert(host.end(), norm.begin(), norm.end());
  } else {
    host = random_bf16(hash(key), count);
  }
  Weights w{std::move(host), {}};
  w.device = upload_bf16(w.host);
  return cache.emplace(key, std::move(w)).first->second;
}

// One op's run: its inputs made and uploaded, its output poisoned, then launched.
class OpRun {
 public:
  OpRun(const model::Graph& g, int op, const GraphCase& gc, const KindCase& kc)
      : g_(g), op_(g.op(op)), gc_(gc), kc_(kc), seed_(hash(op_.name + gc.model) + gc.batch) {
    buffers_.tensors.assign(g.tensors().size(), nullptr);
    buffers_.op_weights.assign(g.op_count(), nullptr);
  }

  const model::Op& op() const { return op_; }
  int64_t attr(const char* key) const { return op_.attrs.i(key); }
  reference::HeadShape heads() const { return {attr("heads"), attr("kv_heads"), attr("head_dim")}; }
  reference::StageShape stage() const { return {gc_.batch, attr("seq_len"), attr("past_len")}; }
  int64_t cols(int tensor) const { return g_.tensor(tensor).shape.back(); }

  std::vector<float> input(int i, float lo = -1.f, float hi = 1.f) {
    const int id = op_.inputs.at(i);
    std::vector<float> v = random_bf16(seed_ + 17 * i, g_.tensor(id).elements(), lo, hi);
    place(id, upload_bf16(v));
    return v;
  }
  const std::vector<float>& weights() {
    const Weights& w = weights_of(gc_.model, g_, op_);
    buffers_.op_weights[op_.index] = w.device.get();
    return w.host;
  }
  // A poisoned buffer for tensor `id` (the output unless told otherwise).
  const DeviceBuffer& poisoned(int64_t elements, int id = -1) {
    const int tensor = id < 0 ? op_.output : id;
    return place(tensor, DeviceBuffer(elements * model::dtype_bytes(g_.tensor(tensor).dtype)));
  }
  const DeviceBuffer& place(int id, DeviceBuffer buffer) {
    owned_.push_back(std::move(buffer));
    buffers_.tensors[id] = owned_.back().get();
    return owned_.back();
  }
  void set_kv_capacity(int64_t capacity) { buffers_.kv_capacity = capacity; }

  void launch() {
    executor::launch_op(g_, op_.index, buffers_, nullptr, kc_.provider, &kernel_context());
    CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  const model::Graph& g_;
  const model::Op& op_;
  const GraphCase& gc_;
  const KindCase& kc_;
  uint64_t seed_;
  executor::StageBuffers buffers_;
  std::deque<DeviceBuffer> owned_;  // stable addresses
};

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kBf16Out{1e-2, 1e-2};
// Norms round twice (the normalized value, then the product): one more bf16 step.
constexpr Tolerance kNorm{1e-2, 2e-2};

void check_embedding(OpRun& run) {
  const std::vector<float>& table = run.weights();
  const int64_t hidden = run.op().tiling.cols, vocab = table.size() / hidden;
  const int64_t rows = run.op().tiling.rows;
  std::vector<int32_t> ids(rows);
  for (int64_t t = 0; t < rows; ++t) ids[t] = static_cast<int32_t>(hash(std::to_string(t)) % vocab);
  ids[0] = 0;
  ids[rows - 1] = static_cast<int32_t>(vocab - 1);
  run.place(run.op().inputs[0], upload<int32_t>(ids));
  const DeviceBuffer& out = run.poisoned(rows * hidden);
  run.launch();
  EXPECT_TRUE(close_to(download_bf16(out, rows * hidden), reference::embedding(ids, table, hidden),
                       kExact, hidden));
}

void check_rmsnorm(OpRun& run) {
  const std::vector<float> x = run.input(0, -2.f, 2.f);
  const std::vector<float>& w = run.weights();
  const model::Op& op = run.op();
  const int64_t stride = op.attrs.has("select_stride") ? run.attr("select_stride") : 1;
  const int64_t n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  EXPECT_TRUE(close_to(download_bf16(out, n),
                       reference::rmsnorm(x, op.tiling.cols, w, op.attrs.f("eps"), stride), kNorm,
                       op.tiling.cols));
}

// Checks every output element is written and, on all rows or (when the reference would take
// too long) a sample of them, the values.
void check_matmul(OpRun& run, bool f32_out) {
  const model::Op& op = run.op();
  const int64_t rows = op.tiling.rows, n = op.tiling.cols, k = run.cols(op.inputs[0]);
  const std::vector<float> x = run.input(0);
  const std::vector<float>& w = run.weights();
  const DeviceBuffer& out = run.poisoned(rows * n);
  run.launch();
  const std::vector<float> got =
      f32_out ? download<float>(out, rows * n) : download_bf16(out, rows * n);
  const auto nan = std::find_if(got.begin(), got.end(), [](float v) { return std::isnan(v); });
  EXPECT_EQ(nan, got.end()) << "unwritten output element " << (nan - got.begin());

  std::vector<int64_t> sample;
  if (rows * n * k <= int64_t{400} << 20) {
    for (int64_t r = 0; r < rows; ++r) sample.push_back(r);
  } else {
    sample = {0, rows - 1};
    for (int i = 0; i < 4 && rows > 2; ++i)
      sample.push_back(1 + hash(op.name + char(i)) % (rows - 2));
    std::sort(sample.begin(), sample.end());
    sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  }
  std::vector<float> x_rows, got_rows;
  for (int64_t r : sample) {
    x_rows.insert(x_rows.end(), x.begin() + r * k, x.begin() + (r + 1) * k);
    got_rows.insert(got_rows.end(), got.begin() + r * n, got.begin() + (r + 1) * n);
  }
  const Tolerance tol = f32_out ? Tolerance{1e-3, 1e-3} : kBf16Out;
  EXPECT_TRUE(close_to(got_rows, reference::linear(x_rows, w, k), tol, n))
      << sample.size() << " of " << rows << " rows checked";
}

// The unwritten-element check and the values of every row.
void expect_matmul_rows(const std::vector<float>& got, const std::vector<double>& want, int64_t n) {
  const auto nan = std::find_if(got.begin(), got.end(), [](float v) { return std::isnan(v); });
  EXPECT_EQ(nan, got.end()) << "unwritten output element " << (nan - got.begin());
  EXPECT_TRUE(close_to(got, want, kNorm, n));
}

// glu: W is gate rows then up rows, and the output silu(gate) * up of their bf16 products.
void check_norm_linear(OpRun& run) {
  const model::Op& op = run.op();
  const int64_t rows = op.tiling.rows, n = op.tiling.cols, k = run.cols(op.inputs[0]);
  const bool glu = model::norm_linear_glu(op);
  const int64_t weight_rows = glu ? 2 * n : n;
  const std::vector<float> x = run.input(0, -2.f, 2.f);
  const std::span<const float> w(run.weights());
  const DeviceBuffer& out = run.poisoned(rows * n);
  run.launch();
  std::vector<double> want = reference::norm_linear(
      x, w.first(weight_rows * k), w.subspan(weight_rows * k), k, op.attrs.f("eps"));
  if (glu) want = reference::silu_mul(reference::round_bf16(want), n);
  expect_matmul_rows(download_bf16(out, rows * n), want, n);
}

void check_linear_residual(OpRun& run) {
  const model::Op& op = run.op();
  const int64_t rows = op.tiling.rows, n = op.tiling.cols, k = run.cols(op.inputs[0]);
  const std::vector<float> x = run.input(0, -1.f, 1.f);
  const std::vector<float> residual = run.input(1);
  const std::vector<float>& w = run.weights();
  const DeviceBuffer& out = run.poisoned(rows * n);
  run.launch();
  std::vector<double> want = reference::linear(x, w, k);
  for (size_t i = 0; i < want.size(); ++i) want[i] = reference::round_bf16(want[i]) + residual[i];
  expect_matmul_rows(download_bf16(out, rows * n), want, n);
}

void check_qk_norm(OpRun& run) {
  const model::Op& op = run.op();
  const std::vector<float> qkv = run.input(0, -2.f, 2.f);
  const std::vector<float>& w = run.weights();
  const int64_t hd = run.attr("head_dim"), n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  const std::span<const float> ws(w);
  EXPECT_TRUE(close_to(download_bf16(out, n),
                       reference::qk_norm(qkv, run.cols(op.inputs[0]), run.heads(), ws.first(hd),
                                          ws.subspan(hd, hd), op.attrs.f("eps")),
                       kNorm, op.tiling.cols));
}

void check_rope(OpRun& run) {
  const model::Op& op = run.op();
  const std::vector<float> x = run.input(0);
  const int64_t n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  reference::RopeParams p;
  p.theta = op.attrs.f("rope_theta");
  p.llama3 = run.attr("rope_llama3") == 1;
  p.factor = op.attrs.f("rope_factor");
  p.low_freq_factor = op.attrs.f("rope_low_freq_factor");
  p.high_freq_factor = op.attrs.f("rope_high_freq_factor");
  p.original_max_position = op.attrs.f("rope_original_max_position");
  EXPECT_TRUE(close_to(download_bf16(out, n),
                       reference::rope(x, run.cols(op.inputs[0]), run.heads(), run.stage(), p),
                       kBf16Out, op.tiling.cols));
}

// The cache before the run: random where earlier steps wrote (positions < `filled`), NaN
// elsewhere; as bf16 bits.
std::vector<uint16_t> initial_cache(uint64_t seed, int64_t batch, int64_t capacity,
                                    int64_t row_cols, int64_t filled) {
  std::vector<uint16_t> bits(batch * capacity * row_cols, 0xffff);
  const std::vector<float> values = random_bf16(seed, bits.size());
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t p = 0; p < filled; ++p)
      for (int64_t c = 0; c < row_cols; ++c) {
        const int64_t i = (s * capacity + p) * row_cols + c;
        bits[i] = to_bf16(values[i]);
      }
  return bits;
}

void check_kv_append(OpRun& run) {
  const model::Op& op = run.op();
  const std::vector<float> keys = run.input(0), values = run.input(1);
  const reference::StageShape st = run.stage();
  const int64_t capacity = st.past_len + st.seq_len + 3, row_cols = op.tiling.cols;
  run.set_kv_capacity(capacity);
  std::vector<uint16_t> expected = initial_cache(7, st.batch, capacity, row_cols, st.past_len);
  const DeviceBuffer& cache = run.place(op.output, upload<uint16_t>(expected));
  run.launch();
  const std::vector<double> rows = reference::kv_append(keys, values, run.heads());
  for (int64_t t = 0; t < op.tiling.rows; ++t) {
    const int64_t at = (t / st.seq_len * capacity + st.past_len + t % st.seq_len) * row_cols;
    for (int64_t c = 0; c < row_cols; ++c) {
      expected[at + c] = to_bf16(static_cast<float>(rows[t * row_cols + c]));
    }
  }
  // Bit for bit: the new rows copied, every other row (cached or empty) untouched.
  const std::vector<uint16_t> got = download_bits(cache, expected.size());
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << "first at cache element " << first << " (position "
                      << first / row_cols % capacity << ", column " << first % row_cols << ")";
}

// Attention with attr "window" added: the builder makes none, so the op is re-made alone.
model::Graph with_window(const model::Graph& g, const model::Op& op, int64_t window) {
  model::Graph alone(g.stage(), g.batch());
  const int q = alone.add_tensor(g.tensor(op.inputs[0]));
  const int cache = alone.add_tensor(g.tensor(op.inputs[1]));
  const int out = alone.add_tensor(g.tensor(op.output));
  model::Attrs attrs = op.attrs;
  attrs.set("window", static_cast<double>(window));
  alone.add_op(op.name, op.kind->name(), {q, cache}, {}, out, op.tiling, attrs, op.layer);
  alone.finalize();
  return alone;
}

void check_attention(OpRun& run, int64_t window) {
  const model::Op& op = run.op();
  const std::vector<float> q = run.input(0);
  const reference::StageShape st = run.stage();
  const int64_t capacity = st.past_len + st.seq_len + 3, row_cols = run.cols(op.inputs[1]);
  run.set_kv_capacity(capacity);
  const std::vector<uint16_t> bits =
      initial_cache(11, st.batch, capacity, row_cols, st.past_len + st.seq_len);
  run.place(op.inputs[1], upload<uint16_t>(bits));
  std::vector<float> cache(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) cache[i] = from_bf16(bits[i]);
  const int64_t n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  EXPECT_TRUE(close_to(
      download_bf16(out, n),
      reference::attention(q, run.cols(op.inputs[0]), cache, capacity, run.heads(), st, window),
      kNorm, op.tiling.cols));
}

void check_silu_mul(OpRun& run) {
  const model::Op& op = run.op();
  const std::vector<float> gate_up = run.input(0, -4.f, 4.f);
  const int64_t n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  EXPECT_TRUE(close_to(download_bf16(out, n), reference::silu_mul(gate_up, op.tiling.cols),
                       kBf16Out, op.tiling.cols));
}

void check_residual_add(OpRun& run) {
  const model::Op& op = run.op();
  const std::vector<float> a = run.input(0), b = run.input(1);
  const int64_t n = op.tiling.rows * op.tiling.cols;
  const DeviceBuffer& out = run.poisoned(n);
  run.launch();
  EXPECT_TRUE(
      close_to(download_bf16(out, n), reference::residual_add(a, b), kBf16Out, op.tiling.cols));
}

void check_argmax(OpRun& run) {
  const model::Op& op = run.op();
  const int64_t rows = op.tiling.rows, vocab = run.cols(op.inputs[0]);
  std::vector<float> logits(rows * vocab);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = uniform(3, i, -10.f, 10.f);
  // Ties on even rows: the first index must win.
  for (int64_t r = 0; r < rows; r += 2) {
    const int64_t a = hash(std::to_string(r)) % vocab, b = hash(std::to_string(r + 7)) % vocab;
    logits[r * vocab + a] = logits[r * vocab + b] = 50.f;
  }
  run.place(op.inputs[0], upload<float>(logits));
  const DeviceBuffer& out = run.poisoned(rows);
  run.launch();
  EXPECT_EQ(download<int32_t>(out, rows), reference::argmax(logits, vocab));
}

std::string case_name(const GraphCase& gc, const KindCase& kc) {
  std::string name = std::string(gc.model) + (gc.seq_len == 1 ? "_decode" : "_prefill") +
                     std::to_string(gc.seq_len) + "_past" + std::to_string(gc.past_len) + "_b" +
                     std::to_string(gc.batch) + "_" + kc.kind;
  if (kc.provider == LinearProvider::cublaslt) name += "_cublaslt";
  if (kc.window > 0) name += "_window" + std::to_string(kc.window);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Names the cases where gtest prints a parameter (failures), not their bytes.
void PrintTo(const GraphCase& c, std::ostream* os) {
  *os << c.model << " seq_len " << c.seq_len << " past_len " << c.past_len << " batch " << c.batch;
}
void PrintTo(const KindCase& c, std::ostream* os) {
  *os << c.kind << " (" << executor::provider_name(c.provider) << ", window " << c.window << ")";
}

class OpTest : public ::testing::TestWithParam<std::tuple<GraphCase, KindCase>> {};

TEST_P(OpTest, MatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const auto& [gc, kc] = GetParam();
  const model::Graph graph = build_stage(gc.model, gc.seq_len, gc.past_len, gc.batch);
  int checked = 0;
  for (const model::Op& op : graph.ops()) {
    if (op.kind->name() != kc.kind || op.layer > 0) continue;
    SCOPED_TRACE("op " + op.name);
    const std::string_view kind = op.kind->name();
    if (kind == "attention" && kc.window > 0) {
      const model::Graph alone = with_window(graph, op, kc.window);
      OpRun run(alone, 0, gc, kc);
      check_attention(run, kc.window);
      ++checked;
      continue;
    }
    OpRun run(graph, op.index, gc, kc);
    if (kind == "embedding") check_embedding(run);
    if (kind == "rmsnorm") check_rmsnorm(run);
    if (kind == "linear") check_matmul(run, false);
    if (kind == "lm-head") check_matmul(run, true);
    if (kind == "qk-norm") check_qk_norm(run);
    if (kind == "rope") check_rope(run);
    if (kind == "kv-append") check_kv_append(run);
    if (kind == "attention") check_attention(run, 0);
    if (kind == "silu-mul") check_silu_mul(run);
    if (kind == "residual-add") check_residual_add(run);
    if (kind == "norm-linear") check_norm_linear(run);
    if (kind == "linear-residual") check_linear_residual(run);
    if (kind == "argmax") check_argmax(run);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no " << kc.kind << " op in this graph";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTest,
                         ::testing::Combine(::testing::ValuesIn(graph_cases()),
                                            ::testing::ValuesIn(kind_cases())),
                         [](const auto& info) {
                           return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

// linear and lm-head re-tiled to every width the bodies take, few rows (1 to 64) and many (a
// partial 128-row tile), with odd n and k (1001 outputs, k = 200): shapes beyond the ones the
// bundled models make today.
struct WidthCase {
  const char* kind;
  int64_t rows;
  int64_t tile_cols;
};

model::Graph retiled_matmul(const WidthCase& c) {
  constexpr int64_t kN = 1001, kK = 200;
  const std::string_view kind = c.kind;
  const bool logits = kind == "lm-head", glu = kind == "glu";
  model::Graph g("prefill", 1);
  const int x =
      g.add_tensor({"x", model::TensorRole::activation, model::DType::bf16, {c.rows, kK}});
  std::vector<int> weights{
      g.add_tensor({"w", model::TensorRole::weight, model::DType::bf16, {kN, kK}})};
  if (glu) {
    weights.push_back(
        g.add_tensor({"up", model::TensorRole::weight, model::DType::bf16, {kN, kK}}));
  }
  const int y = g.add_tensor({"y",
                              model::TensorRole::activation,
                              logits ? model::DType::f32 : model::DType::bf16,
                              {c.rows, kN}});
  // tile_cols counts the body's weight rows: glu's tile has half as many output features.
  const model::Tiling tiling{c.rows, kN, c.rows <= 64 ? c.rows : 128,
                             glu ? c.tile_cols / 2 : c.tile_cols};
  model::Attrs attrs{{"seq_len", static_cast<double>(c.rows)}, {"past_len", 0}};
  std::vector<int> inputs{x};
  std::string_view graph_kind = kind;
  if (kind == "norm-linear" || glu) {
    weights.push_back(g.add_tensor({"norm", model::TensorRole::weight, model::DType::bf16, {kK}}));
    attrs.set("eps", 1e-5);
    graph_kind = "norm-linear";
    if (glu) attrs.set("glu", 1);
  } else if (kind == "linear-residual") {
    inputs.push_back(
        g.add_tensor({"r", model::TensorRole::activation, model::DType::bf16, {c.rows, kN}}));
  }
  g.add_op("probe", graph_kind, inputs, weights, y, tiling, attrs);
  g.finalize();
  return g;
}

void PrintTo(const WidthCase& c, std::ostream* os) {
  *os << c.kind << " rows " << c.rows << " tile_cols " << c.tile_cols;
}

class LinearWidthTest : public ::testing::TestWithParam<WidthCase> {};

TEST_P(LinearWidthTest, MatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const WidthCase& c = GetParam();
  const model::Graph g = retiled_matmul(c);
  const GraphCase gc{"retiled", c.rows, 0, 1};
  const std::string_view kind = g.op(0).kind->name();  // "glu" is norm-linear
  const KindCase kc{kind.data()};
  OpRun run(g, 0, gc, kc);
  if (kind == "norm-linear") {
    check_norm_linear(run);
  } else if (kind == "linear-residual") {
    check_linear_residual(run);
  } else {
    check_matmul(run, kind == "lm-head");
  }
}

std::vector<WidthCase> width_cases() {
  std::vector<WidthCase> cases;
  for (const char* kind : {"linear", "lm-head"}) {
    for (int64_t rows : {1, 20, 40, 64, 100, 300}) {
      for (int64_t cols : {16, 32, 64, 128}) cases.push_back({kind, rows, cols});
    }
  }
  // The fused kinds run on the weight-streaming body only: few rows. "glu" is norm-linear with
  // attr glu.
  for (const char* kind : {"norm-linear", "linear-residual", "glu"}) {
    for (int64_t rows : {1, 5, 20, 64}) {
      for (int64_t cols : {16, 32, 64, 128}) cases.push_back({kind, rows, cols});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Widths, LinearWidthTest, ::testing::ValuesIn(width_cases()),
                         [](const auto& info) {
                           std::string name = std::string(info.param.kind) + "_rows" +
                                              std::to_string(info.param.rows) + "_cols" +
                                              std::to_string(info.param.tile_cols);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace megacut::testing
