// The float64 graph interpreter: on small graphs built by hand it must give exactly what the op
// references give when chained by hand (each bf16 output rounded); on the stage graphs of the
// tiny decoders it must give exactly the logits of the whole-model reference, which is written
// from the architecture rather than from the graph; and what it cannot evaluate it names.
#include "executor/reference/graph_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "executor/bf16.h"
#include "executor/reference/model_reference.h"
#include "executor/reference/op_reference.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/scenario.h"
#include "tests/support/error_of.h"

namespace megacut::reference {
namespace {

using megacut::testing::error_of;

using model::DType;
using model::Graph;
using model::TensorRole;
using Weights = std::map<std::string, std::vector<float>>;

std::vector<float> bf16_values(std::mt19937& rng, int64_t n, float scale = 1) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = executor::round_to_bf16(dist(rng));
  return v;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

int tensor(Graph& g, const std::string& name, TensorRole role, std::vector<int64_t> shape,
           DType dtype = DType::bf16) {
  return g.add_tensor({name, role, dtype, std::move(shape)});
}

model::Tiling whole(int64_t rows, int64_t cols) { return {rows, cols, rows, cols}; }

// Two sequences of two tokens: ids -> embedding -> rmsnorm -> linear over two fused weights ->
// silu-mul -> causal conv1d with a bias -> snake-beta -> add-scaled -> lm-head (f32) -> argmax.
struct TextGraph {
  static constexpr int64_t kRows = 4, kVocab = 5, kHidden = 8, kA = 6, kB = 4, kConv = 3;
  static constexpr int64_t kClasses = 7;
  Graph g{"test", 2};
  Weights w;

  TextGraph() {
    std::mt19937 rng(3);
    const auto weight = [&](const std::string& name, std::vector<int64_t> shape, float scale) {
      const int id = tensor(g, name, TensorRole::weight, shape);
      w[name] = bf16_values(rng, g.tensor(id).elements(), scale);
      return id;
    };
    const int ids = tensor(g, "ids", TensorRole::input, {kRows}, DType::i32);
    const int x = tensor(g, "x", TensorRole::activation, {kRows, kHidden});
    g.add_op("embed", "embedding", {ids}, {weight("table", {kVocab, kHidden}, 1)}, x,
             whole(kRows, kHidden));
    const int h = tensor(g, "h", TensorRole::activation, {kRows, kHidden});
    g.add_op("norm", "rmsnorm", {x}, {weight("norm.weight", {kHidden}, 1)}, h,
             whole(kRows, kHidden), {{"eps", 1e-5}});
    const int y = tensor(g, "y", TensorRole::activation, {kRows, kA + kB});
    g.add_op("fused", "linear", {h},
             {weight("a.weight", {kA, kHidden}, 0.5), weight("b.weight", {kB, kHidden}, 0.5)}, y,
             whole(kRows, kA + kB));
    const int m = tensor(g, "m", TensorRole::activation, {kRows, (kA + kB) / 2});
    g.add_op("act", "silu-mul", {y}, {}, m, whole(kRows, (kA + kB) / 2));
    const int c = tensor(g, "c", TensorRole::activation, {kRows, kConv});
    g.add_op(
        "conv", "conv1d", {m},
        {weight("conv.weight", {kConv, (kA + kB) / 2, 2}, 0.5), weight("conv.bias", {kConv}, 0.5)},
        c, whole(kRows, kConv),
        {{"kernel", 2}, {"dilation", 1}, {"groups", 1}, {"len", 2}, {"lookahead", 0}});
    const int s = tensor(g, "s", TensorRole::activation, {kRows, kConv});
    g.add_op("snake", "snake-beta", {c},
             {weight("snake.alpha", {kConv}, 0.5), weight("snake.beta", {kConv}, 0.5)}, s,
             whole(kRows, kConv));
    const int a = tensor(g, "a", TensorRole::activation, {kRows, kConv});
    g.add_op("mix", "add-scaled", {s, c}, {}, a, whole(kRows, kConv), {{"scale", 0.5}});
    const int logits = tensor(g, "logits", TensorRole::activation, {kRows, kClasses}, DType::f32);
    g.add_op("head", "lm-head", {a}, {weight("head.weight", {kClasses, kConv}, 1)}, logits,
             whole(kRows, kClasses));
    const int next = tensor(g, "next", TensorRole::activation, {kRows, 1}, DType::i32);
    g.add_op("argmax", "argmax", {logits}, {}, next, whole(kRows, 1));
    g.finalize();
  }
};

TEST(GraphReference, HandBuiltTextGraphEqualsChainedOpReferences) {
  const TextGraph t;
  const std::vector<int32_t> ids = {4, 0, 2, 4};
  const TensorValues got = evaluate_graph(t.g, t.w, {{"ids", {4, 0, 2, 4}}});

  const Weights& w = t.w;
  const std::vector<float> x = round_bf16(embedding(ids, w.at("table"), TextGraph::kHidden));
  const std::vector<float> h =
      round_bf16(rmsnorm(x, TextGraph::kHidden, w.at("norm.weight"), 1e-5));
  std::vector<float> fused = w.at("a.weight");
  fused.insert(fused.end(), w.at("b.weight").begin(), w.at("b.weight").end());
  const std::vector<float> y = round_bf16(linear(h, fused, TextGraph::kHidden));
  const std::vector<float> m = round_bf16(silu_mul(y, 5));
  const std::vector<float> c = round_bf16(conv1d(
      m, w.at("conv.weight"), w.at("conv.bias"),
      {.batch = 2, .len = 2, .in_channels = 5, .out_channels = 3, .kernel = 2, .dilation = 1}));
  const std::vector<float> s =
      round_bf16(snake_beta(c, w.at("snake.alpha"), w.at("snake.beta"), 3));
  const std::vector<float> a = round_bf16(add_scaled(s, c, 0.5));
  const std::vector<double> logits64 = linear(a, w.at("head.weight"), 3);
  const std::vector<float> logits(logits64.begin(), logits64.end());

  EXPECT_EQ(got.at("ids"), (std::vector<double>{4, 0, 2, 4}));
  EXPECT_EQ(got.at("x"), widen(x));
  EXPECT_EQ(got.at("h"), widen(h));
  EXPECT_EQ(got.at("y"), widen(y));
  EXPECT_EQ(got.at("m"), widen(m));
  EXPECT_EQ(got.at("c"), widen(c));
  EXPECT_EQ(got.at("s"), widen(s));
  EXPECT_EQ(got.at("a"), widen(a));
  EXPECT_EQ(got.at("logits"), widen(logits));  // float, not bf16
  const std::vector<int32_t> next = argmax(logits, TextGraph::kClasses);
  EXPECT_EQ(got.at("next"), std::vector<double>(next.begin(), next.end()));
  EXPECT_EQ(got.size(), 10u);  // every non-weight tensor, no weight
}

// Codes -> codebook-sum -> conv-transpose1d (x2, with bias) -> leaky-relu -> gelu, and a bf16
// input through a centred depthwise conv1d without bias -> tanh.
TEST(GraphReference, HandBuiltAudioGraphEqualsChainedOpReferences) {
  constexpr int64_t kBatch = 2, kLen = 3, kBooks = 2, kEntries = 4, kDim = 4, kOut = 3;
  Graph g("test", kBatch);
  std::mt19937 rng(5);
  Weights w;
  const auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    const int id = tensor(g, name, TensorRole::weight, shape);
    w[name] = bf16_values(rng, g.tensor(id).elements());
    return id;
  };
  const int64_t rows = kBatch * kLen;
  const int codes = tensor(g, "codes", TensorRole::input, {rows, kBooks}, DType::i32);
  const int e = tensor(g, "e", TensorRole::activation, {rows, kDim});
  g.add_op("books", "codebook-sum", {codes}, {weight("books", {kBooks * kEntries, kDim})}, e,
           whole(rows, kDim), {{"entries", kEntries}});
  const int u = tensor(g, "u", TensorRole::activation, {2 * rows, kOut});
  g.add_op("up", "conv-transpose1d", {e},
           {weight("up.weight", {kDim, kOut, 4}), weight("up.bias", {kOut})}, u,
           whole(2 * rows, kOut), {{"stride", 2}, {"kernel", 4}, {"len", kLen}});
  const int l = tensor(g, "l", TensorRole::activation, {2 * rows, kOut});
  g.add_op("leaky", "leaky-relu", {u}, {}, l, whole(2 * rows, kOut), {{"slope", 0.1}});
  const int ge = tensor(g, "g", TensorRole::activation, {2 * rows, kOut});
  g.add_op("gelu", "gelu", {l}, {}, ge, whole(2 * rows, kOut));
  const int frames = tensor(g, "frames", TensorRole::input, {rows, kDim});
  const int d = tensor(g, "d", TensorRole::activation, {rows, kDim});
  g.add_op("dw", "conv1d", {frames}, {weight("dw.weight", {kDim, 1, 3})}, d, whole(rows, kDim),
           {{"kernel", 3}, {"dilation", 2}, {"groups", kDim}, {"len", kLen}, {"lookahead", 2}});
  const int th = tensor(g, "t", TensorRole::activation, {rows, kDim});
  g.add_op("tanh", "tanh", {d}, {}, th, whole(rows, kDim));
  g.finalize();

  const std::vector<int32_t> code_ids = {0, 3, 1, 2, 3, 3, 2, 0, 1, 1, 0, 0};
  std::vector<double> frame_values(rows * kDim);
  for (size_t i = 0; i < frame_values.size(); ++i) frame_values[i] = 0.3 * double(i) - 2.1;
  const TensorValues got = evaluate_graph(
      g, w,
      {{"codes", std::vector<double>(code_ids.begin(), code_ids.end())}, {"frames", frame_values}});

  const std::vector<float> e_ref =
      round_bf16(codebook_sum(code_ids, w.at("books"), kBooks, kEntries, kDim));
  const std::vector<float> u_ref =
      round_bf16(conv_transpose1d(e_ref, w.at("up.weight"), w.at("up.bias"),
                                  {.batch = kBatch,
                                   .len = kLen,
                                   .in_channels = kDim,
                                   .out_channels = kOut,
                                   .kernel = 4,
                                   .stride = 2}));
  const std::vector<float> l_ref = round_bf16(leaky_relu(u_ref, 0.1));
  const std::vector<float> g_ref = round_bf16(gelu(l_ref));
  const std::vector<float> f_ref = round_bf16(frame_values);  // bf16 on the way in
  const std::vector<float> d_ref = round_bf16(conv1d(f_ref, w.at("dw.weight"), {},
                                                     {.batch = kBatch,
                                                      .len = kLen,
                                                      .in_channels = kDim,
                                                      .out_channels = kDim,
                                                      .kernel = 3,
                                                      .dilation = 2,
                                                      .groups = kDim,
                                                      .lookahead = 2}));
  const std::vector<float> t_ref = round_bf16(tanh_activation(d_ref));

  EXPECT_EQ(got.at("frames"), widen(f_ref));
  EXPECT_EQ(got.at("e"), widen(e_ref));
  EXPECT_EQ(got.at("u"), widen(u_ref));
  EXPECT_EQ(got.at("l"), widen(l_ref));
  EXPECT_EQ(got.at("g"), widen(g_ref));
  EXPECT_EQ(got.at("d"), widen(d_ref));
  EXPECT_EQ(got.at("t"), widen(t_ref));
}

// A code predictor's step: ids and the step -> step-embedding (three steps of four entries)
// -> step-head (f32) -> argmax. Step 1 reads rows 4..7 of both stacks.
TEST(GraphReference, StepOpsReadTheRowsOfTheirStep) {
  constexpr int64_t kRows = 3, kSteps = 3, kEntries = 4, kHidden = 6;
  Graph g("test", kRows);
  std::mt19937 rng(9);
  Weights w;
  const auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    const int id = tensor(g, name, TensorRole::weight, shape);
    w[name] = bf16_values(rng, g.tensor(id).elements());
    return id;
  };
  const int ids = tensor(g, "ids", TensorRole::input, {kRows}, DType::i32);
  const int step = tensor(g, "step", TensorRole::input, {1}, DType::i32);
  const int x = tensor(g, "x", TensorRole::activation, {kRows, kHidden});
  g.add_op("embed", "step-embedding", {ids, step}, {weight("tables", {kSteps * kEntries, kHidden})},
           x, whole(kRows, kHidden), {{"entries", kEntries}});
  const int logits = tensor(g, "logits", TensorRole::activation, {kRows, kEntries}, DType::f32);
  g.add_op("head", "step-head", {x, step}, {weight("heads", {kSteps * kEntries, kHidden})}, logits,
           whole(kRows, kEntries));
  const int next = tensor(g, "next", TensorRole::activation, {kRows, 1}, DType::i32);
  g.add_op("argmax", "argmax", {logits}, {}, next, whole(kRows, 1));
  g.finalize();

  const std::vector<int32_t> id_values = {3, 0, 2};
  const TensorValues got = evaluate_graph(g, w, {{"ids", {3, 0, 2}}, {"step", {1}}});
  const std::vector<float> x_ref =
      round_bf16(step_embedding(id_values, w.at("tables"), kEntries, kHidden, 1));
  for (int64_t c = 0; c < kHidden; ++c) {  // row 0 is id 3 of step 1: table row 7
    EXPECT_EQ(x_ref[c], w.at("tables")[7 * kHidden + c]);
  }
  const std::vector<double> logits64 = step_head(x_ref, w.at("heads"), kEntries, kHidden, 1);
  const std::vector<float> logits_ref(logits64.begin(), logits64.end());
  EXPECT_EQ(got.at("x"), widen(x_ref));
  EXPECT_EQ(got.at("logits"), widen(logits_ref));
  const std::vector<int32_t> next_ref = argmax(logits_ref, kEntries);
  EXPECT_EQ(got.at("next"), std::vector<double>(next_ref.begin(), next_ref.end()));
  EXPECT_NE(error_of([&] {
              evaluate_graph(g, w, {{"ids", {3, 0, 2}}, {"step", {3}}});
            }).find("op embed (step-embedding)"),
            std::string::npos);
}

// A kind registered by a test and evaluated by nothing.
class Unevaluated final : public model::OpKind {
 public:
  std::string_view name() const override { return "test.unevaluated"; }
  int input_count() const override { return 1; }
  model::Access access(int) const override { return model::Access::one_to_one; }
  std::vector<model::Box> input_boxes(const model::Op&, const Graph&, int,
                                      const model::Box& out) const override {
    return {out};
  }
  model::TileCost tile_cost(const model::Op&, const Graph&, const model::Box&) const override {
    return {};
  }
};

TEST(GraphReference, NamesWhatItCannotEvaluate) {
  if (model::find_op_kind("test.unevaluated") == nullptr) {
    model::register_op_kind(std::make_unique<Unevaluated>());
  }
  Graph g("test", 1);
  const int x = tensor(g, "x", TensorRole::input, {2, 2});
  g.add_op("mystery", "test.unevaluated", {x}, {}, tensor(g, "y", TensorRole::activation, {2, 2}),
           whole(2, 2));
  g.finalize();
  const std::string e = error_of([&] { evaluate_graph(g, {}, {{"x", {1, 2, 3, 4}}}); });
  EXPECT_NE(e.find("op mystery (test.unevaluated)"), std::string::npos) << e;

  const TextGraph t;
  const std::vector<double> ids = {4, 0, 2, 4};
  EXPECT_NE(error_of([&] { evaluate_graph(t.g, t.w, {}); }).find("input 'ids' is not given"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, t.w, {{"ids", {4, 0.5, 2, 4}}});
            }).find("'ids' is i32, value 1 (0.500000) is not an int32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, t.w, {{"ids", {4, 0, 2}}});
            }).find("'ids' is given 3 values, its shape holds 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, t.w, {{"ids", ids}, {"idz", ids}});
            }).find("'idz' is no input tensor of stage test"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, t.w, {{"ids", ids}}, {{"ids", ids}});
            }).find("'ids' is no state tensor"),
            std::string::npos);
  Weights missing = t.w;
  missing.erase("b.weight");
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, missing, {{"ids", ids}});
            }).find("op fused (linear): weight 'b.weight' is missing"),
            std::string::npos);
  Weights short_bias = t.w;
  short_bias["conv.bias"].pop_back();
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, short_bias, {{"ids", ids}});
            }).find("op conv (conv1d): weight 'conv.bias' has 2 values, its shape holds 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              evaluate_graph(t.g, t.w, {{"ids", {4, 0, 5, 4}}});
            }).find("op embed (embedding): reference: token id 5 outside [0, 5)"),
            std::string::npos);
}

// ---- Whole decoder stages against the whole-model reference -----------------------------------

Weights widened(const executor::HostWeights& weights) {
  Weights out;
  for (const auto& [name, tensor] : weights.tensors()) {
    std::vector<float>& values = out[name];
    for (uint16_t v : tensor.values()) values.push_back(executor::bf16_to_float(v));
  }
  return out;
}

// Prefill over a prompt, then one decode step fed prefill's tokens with prefill's KV caches
// moved into the decode stage's (one position longer): both stages' logits must equal the
// whole-model reference's bit for bit, as both round the same ops the same way.
void expect_stages_match_model_reference(const char* name, int64_t batch, int64_t prompt_len) {
  SCOPED_TRACE(std::string(name) + " batch " + std::to_string(batch));
  const model::ModelSpec spec = model::load_model(name);
  const model::Scenario scenario = model::make_scenario(spec, batch, prompt_len);
  const Graph prefill = model::build_graph(spec, scenario, "prefill");
  const Graph decode = model::build_graph(spec, scenario, "decode");
  const Weights w = widened(executor::HostWeights::random(spec, 17));
  const int64_t vocab = spec.decoder.vocab_size;

  std::vector<int32_t> prompt(batch * prompt_len);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 37 + 11) % vocab);
  const TensorValues pre = evaluate_graph(
      prefill, w, {{"token_ids", std::vector<double>(prompt.begin(), prompt.end())}});
  const std::vector<double>& next = pre.at("next_token");
  ASSERT_EQ(static_cast<int64_t>(next.size()), batch);

  TensorValues caches;
  for (const model::Tensor& t : decode.tensors()) {
    if (t.role != TensorRole::state) continue;
    const std::vector<double>& filled = pre.at(t.name);  // (batch, prompt_len, row)
    const int64_t row = t.shape.at(2), capacity = t.shape.at(1);
    ASSERT_EQ(capacity, prompt_len + 1);
    std::vector<double>& state = caches[t.name];
    state.assign(t.elements(), NAN);
    for (int64_t b = 0; b < batch; ++b) {
      std::copy_n(filled.begin() + b * prompt_len * row, prompt_len * row,
                  state.begin() + b * capacity * row);
    }
  }
  EXPECT_EQ(caches.size(), static_cast<size_t>(spec.decoder.num_layers));
  const TensorValues dec = evaluate_graph(decode, w, {{"token_ids", next}}, caches);

  const std::vector<int32_t> fed(next.begin(), next.end());
  const GenerationLogits ref = decoder_logits(spec.decoder, w, batch, prompt, fed);
  ASSERT_EQ(static_cast<int64_t>(ref.prefill.size()), batch * vocab);
  EXPECT_EQ(pre.at("logits"), widen(ref.prefill));
  EXPECT_EQ(dec.at("logits"), widen(ref.decode));
  const std::vector<int32_t> want = argmax(ref.decode, vocab);
  EXPECT_EQ(dec.at("next_token"), std::vector<double>(want.begin(), want.end()));
  // The decode step appended one position to each cache and kept the prompt's.
  for (const auto& [cache, before] : caches) {
    const std::vector<double>& after = dec.at(cache);
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_TRUE(std::isfinite(after[i])) << cache << " value " << i;
      if (std::isfinite(before[i])) {
        EXPECT_EQ(after[i], before[i]) << cache << " value " << i;
      }
    }
  }
}

TEST(GraphReference, TinyLlamaStagesMatchModelReference) {
  expect_stages_match_model_reference("tiny-llama", 1, 8);
  expect_stages_match_model_reference("tiny-llama", 3, 5);
}

TEST(GraphReference, TinyQwen3StagesMatchModelReference) {
  expect_stages_match_model_reference("tiny-qwen3", 2, 6);
}

// ---- Tensor parallel: one rank's graphs, every rank at once, against one GPU's ---------------

// A prefill stage's KV caches (batch, prompt_len, row) moved into a decode stage's (batch,
// prompt_len + 1, row), the last position empty (NaN), as a step after the prompt reads them.
TensorValues decode_caches(const Graph& decode, const TensorValues& prefilled, int64_t batch,
                           int64_t prompt_len) {
  TensorValues caches;
  for (const model::Tensor& t : decode.tensors()) {
    if (t.role != TensorRole::state) continue;
    const std::vector<double>& filled = prefilled.at(t.name);
    const int64_t row = t.shape.at(2), capacity = t.shape.at(1);
    std::vector<double>& state = caches[t.name];
    state.assign(t.elements(), NAN);
    for (int64_t b = 0; b < batch; ++b) {
      std::copy_n(filled.begin() + b * prompt_len * row, prompt_len * row,
                  state.begin() + b * capacity * row);
    }
  }
  return caches;
}

// The largest |a - b| over the largest |b|.
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(a.at(i) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// Columns [begin, begin + count) of every row of `values`, rows of `cols` columns.
std::vector<double> columns(const std::vector<double>& values, int64_t cols, int64_t begin,
                            int64_t count) {
  std::vector<double> out;
  for (size_t row = 0; row < values.size() / cols; ++row) {
    out.insert(out.end(), values.begin() + row * cols + begin,
               values.begin() + row * cols + begin + count);
  }
  return out;
}

// Prefill, then one decode step, of one GPU's graphs and of `tp` ranks' graphs (each rank its
// slices of the same weights, its KV heads' caches). Up to the first row-parallel linear a rank
// computes exactly one GPU's values for its heads: its first layer's KV cache and attention
// output are those columns of one GPU's, bit for bit (a head or a slice misplaced breaks that).
// Past it the ranks' sums round to bf16 in other places than one GPU's (partial products, then
// their sum and the residual), so the logits only come close: returned, the largest difference
// over the largest logit. A rank given another's slices, or a lookup blind to its rank, is off
// by the logits' own size.
double tensor_parallel_error(const model::ModelSpec& spec, int64_t batch, int64_t prompt_len,
                             int64_t tp) {
  const model::Scenario one = model::make_scenario(spec, batch, prompt_len);
  const model::Scenario sliced = model::make_scenario(spec, batch, prompt_len, 0, tp);
  const executor::HostWeights full = executor::HostWeights::random(spec, 29);
  const Weights w = widened(full);

  std::vector<double> prompt(batch * prompt_len);
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = static_cast<double>((i * 37 + 11) % spec.decoder.vocab_size);
  }
  double error = 0;
  TensorValues one_state;
  std::vector<TensorValues> rank_state;
  std::vector<double> fed;
  for (const std::string stage : {"prefill", "decode"}) {
    SCOPED_TRACE(stage);
    const Graph g1 = model::build_graph(spec, one, stage);
    const Graph gr = model::build_graph(spec, sliced, stage);
    const std::vector<double>& ids = stage == "prefill" ? prompt : fed;
    const TensorValues want = evaluate_graph(g1, w, {{"token_ids", ids}}, one_state);
    std::vector<Weights> weights;
    std::vector<TensorValues> inputs;
    for (int64_t r = 0; r < tp; ++r) {
      weights.push_back(widened(full.rank(gr, tp, r)));
      inputs.push_back({{"token_ids", ids}, {"tp_rank", {static_cast<double>(r)}}});
    }
    const std::vector<TensorValues> got = evaluate_ranks(gr, weights, inputs, rank_state);
    const model::DecoderConfig& c = spec.decoder;
    const int64_t hd = c.head_dim, kv = c.num_kv_heads * hd, kv_share = kv / tp;
    const int64_t q_share = c.num_heads * hd / tp;
    for (int64_t r = 0; r < tp; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      // The cache rows hold every KV head's k, then every KV head's v.
      const std::vector<double>& cache = want.at("layers.0.kv_cache");
      std::vector<double> k = columns(cache, 2 * kv, r * kv_share, kv_share);
      const std::vector<double> v = columns(cache, 2 * kv, kv + r * kv_share, kv_share);
      const std::vector<double>& mine = got[r].at("layers.0.kv_cache");
      EXPECT_EQ(columns(mine, 2 * kv_share, 0, kv_share), k);
      EXPECT_EQ(columns(mine, 2 * kv_share, kv_share, kv_share), v);
      EXPECT_EQ(got[r].at("layers.0.attn"),
                columns(want.at("layers.0.attn"), c.num_heads * hd, r * q_share, q_share));
    }
    error = std::max(error, relative_error(got[0].at("logits"), want.at("logits")));
    if (stage == "prefill") {
      // Each decodes what one GPU picked, so that both read the same tokens.
      fed = want.at("next_token");
      const Graph d1 = model::build_graph(spec, one, "decode");
      const Graph dr = model::build_graph(spec, sliced, "decode");
      one_state = decode_caches(d1, want, batch, prompt_len);
      for (int64_t r = 0; r < tp; ++r) {
        rank_state.push_back(decode_caches(dr, got[r], batch, prompt_len));
      }
    }
  }
  return error;
}

TEST(GraphReference, TensorParallelRanksMatchOneGpu) {
  // tiny-llama (tied embedding and head) over 2 GPUs; tiny-qwen3 (qk-norm, its own head) with a
  // vocabulary of 256 so that it slices, over 2 (its 2 KV heads allow no more).
  model::ModelSpec qwen = model::load_model("tiny-qwen3");
  nlohmann::json config = qwen.config;
  config["vocab_size"] = 256;
  qwen = model::parse_model(config, "tiny-qwen3, vocabulary 256", "test");
  // And a tiny-llama of 8 heads and 4 KV heads over 4 GPUs.
  model::ModelSpec wide = model::load_model("tiny-llama");
  config = wide.config;
  config["num_attention_heads"] = 8;
  config["num_key_value_heads"] = 4;
  wide = model::parse_model(config, "tiny-llama, 8 heads", "test");
  for (const auto& [spec, tp] : {std::pair{model::load_model("tiny-llama"), int64_t{2}},
                                 std::pair{qwen, int64_t{2}}, std::pair{wide, int64_t{4}}}) {
    SCOPED_TRACE(spec.name + " tp " + std::to_string(tp));
    const double error = tensor_parallel_error(spec, 2, 6, tp);
    std::printf("%s over %lld GPUs: logits within %.2e of one GPU's (relative)\n",
                spec.name.c_str(), static_cast<long long>(tp), error);
    EXPECT_LT(error, 2e-2);
  }
}

// One rank's graph alone cannot be evaluated past its first collective; the ranks together must
// be as many as its collectives' ranks.
TEST(GraphReference, CollectivesNeedEveryRank) {
  const model::ModelSpec spec = model::load_model("tiny-llama");
  const Graph g = model::build_graph(spec, model::make_scenario(spec, 1, 4, 0, 2), "prefill");
  const executor::HostWeights full = executor::HostWeights::random(spec, 3);
  const Weights w = widened(full.rank(g, 2, 0));
  const TensorValues inputs{{"token_ids", {1, 2, 3, 4}}, {"tp_rank", {0}}};
  EXPECT_EQ(error_of([&] { evaluate_graph(g, w, inputs); }),
            "reference: op embed_all_reduce (all-reduce): a collective reads every rank's "
            "values: evaluate the ranks together");
  const std::vector<Weights> one{w};
  const std::vector<TensorValues> one_input{inputs};
  EXPECT_EQ(error_of([&] { evaluate_ranks(g, one, one_input); }),
            "reference: op embed_all_reduce is a collective of 2 ranks, evaluated over 1");
  const std::vector<Weights> two{w, widened(full.rank(g, 2, 1))};
  const std::vector<TensorValues> swapped{{{"token_ids", {1, 2, 3, 4}}, {"tp_rank", {1}}}, inputs};
  EXPECT_EQ(error_of([&] { evaluate_ranks(g, two, swapped); }),
            "reference: the inputs given 0th are not rank 0's (tp_rank): give the ranks in order");
  const std::vector<TensorValues> far{inputs, {{"token_ids", {1, 2, 300, 4}}, {"tp_rank", {1}}}};
  EXPECT_EQ(error_of([&] { evaluate_ranks(g, two, far); }),
            "reference: rank 1, op embed (embedding-shard): reference: token id 300 outside [0, "
            "300)");
  const std::vector<TensorValues> two_inputs{inputs, inputs};
  EXPECT_EQ(error_of([&] { evaluate_ranks(g, one, two_inputs); }),
            "reference: the ranks' weights, inputs and state number 1, 2 and 0 (state may be left "
            "out: none)");
}

// Every stage of the tiny TTS pipelines evaluates, from inputs the ops accept, to finite
// values; a stage after the prompt reads a cache filled before it.
TEST(GraphReference, EveryTinyTtsStageEvaluatesToFiniteValues) {
  for (const char* name : {"tiny-qwen3-tts", "tiny-llama-hifigan-tts"}) {
    const model::ModelSpec spec = model::load_model(name);
    const model::Scenario scenario = model::make_scenario(spec, 2, 8, 2);
    const Weights w = widened(executor::HostWeights::random(spec, 3));
    for (const std::string& stage : scenario.stage_names()) {
      SCOPED_TRACE(std::string(name) + " " + stage);
      const Graph g = model::build_graph(spec, scenario, stage);
      TensorValues inputs, state;
      std::mt19937 rng(1);
      for (const model::Tensor& t : g.tensors()) {
        if (t.role == TensorRole::state) {
          state[t.name] = widen(bf16_values(rng, t.elements()));
        } else if (t.role == TensorRole::input && t.dtype == DType::bf16) {
          inputs[t.name] = widen(bf16_values(rng, t.elements()));
        } else if (t.role == TensorRole::input) {
          // Ids below every table the tiny pipelines read (32 codes and up); step 1.
          std::vector<double>& v = inputs[t.name];
          v.resize(t.elements());
          for (size_t i = 0; i < v.size(); ++i) v[i] = t.name == "step" ? 1 : double(i * 7 % 32);
        }
      }
      const TensorValues values = evaluate_graph(g, w, inputs, state);
      const std::vector<double>& out = values.at(g.tensor(g.ops().back().output).name);
      ASSERT_FALSE(out.empty());
      for (double v : out) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

}  // namespace
}  // namespace megacut::reference
