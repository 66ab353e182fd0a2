// The audio op kinds' tile bodies (codebook-sum, conv1d, conv-transpose1d, snake-beta,
// leaky-relu, tanh, gelu, add-scaled) against their float64 references, on one-op graphs built by
// hand: batch 1 and 3, odd sequence lengths, channel counts from 1 to 768, kernels 3 to 16,
// dilations 1 to 5, causal and centred convolutions, strides 2 to 8, depthwise and grouped
// convolutions, both conv bodies (tensor-core and direct). Inputs are random bf16 (never zeros),
// outputs poisoned with NaN before each run, and |got - ref| <= atol + rtol * |ref| everywhere.
// Then a chain of seven kinds (all but gelu, whose body is the element-wise one the chain's others
// share) runs as one megakernel region and must match its conventional run.
//
// Host only (run everywhere): which body each shape gets, the shapes can_implement refuses and
// why, and the region kernel of every audio body compiling with NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "executor/conventional.h"
#include "executor/megakernel.h"
#include "executor/megakernel_codegen.h"
#include "executor/op_support.h"
#include "executor/reference/op_reference.h"
#include "model/error.h"
#include "model/graph.h"
#include "tests/gpu/gpu_support.h"
#include "tests/gpu/op_harness.h"

namespace megacut::testing {
namespace {

using model::DType;
using model::Graph;
using model::TensorRole;

constexpr Tolerance kBf16Out{1e-2, 1e-2};

uint64_t hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

int tensor(Graph& g, const std::string& name, TensorRole role, std::vector<int64_t> shape,
           DType dtype = DType::bf16) {
  return g.add_tensor({name, role, dtype, std::move(shape)});
}

// ---- One-op graphs -------------------------------------------------------------------------

struct ConvCase {
  bool transpose;
  int64_t batch, len, in, out, kernel;
  int64_t dilation_or_stride;  // conv1d: dilation; conv-transpose1d: stride
  int64_t groups, lookahead;   // conv1d only
  bool bias;
  int64_t tile_rows, tile_cols;
  bool mma;  // the body expected: tensor-core or direct
};

std::string case_name(const ConvCase& c) {
  std::string s = std::string(c.transpose ? "convT" : "conv") + "_b" + std::to_string(c.batch) +
                  "_len" + std::to_string(c.len) + "_" + std::to_string(c.in) + "to" +
                  std::to_string(c.out) + "_k" + std::to_string(c.kernel) +
                  (c.transpose ? "_s" : "_d") + std::to_string(c.dilation_or_stride);
  if (!c.transpose) {
    s += "_g" + std::to_string(c.groups) + "_la" + std::to_string(c.lookahead);
  }
  return s + (c.bias ? "_bias" : "") + "_tile" + std::to_string(c.tile_rows) + "x" +
         std::to_string(c.tile_cols) + (c.mma ? "_mma" : "_direct");
}

void PrintTo(const ConvCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<int64_t> conv_weight_shape(const ConvCase& c) {
  if (c.transpose) return {c.in, c.out, c.kernel};
  return {c.out, c.in / c.groups, c.kernel};
}

Graph conv_graph(const ConvCase& c) {
  Graph g("decode", c.batch);
  const int64_t in_rows = c.batch * c.len;
  const int64_t out_rows = c.transpose ? in_rows * c.dilation_or_stride : in_rows;
  const int x = tensor(g, "x", TensorRole::input, {in_rows, c.in});
  std::vector<int> weights = {tensor(g, "conv.weight", TensorRole::weight, conv_weight_shape(c))};
  if (c.bias) weights.push_back(tensor(g, "conv.bias", TensorRole::weight, {c.out}));
  const int y = tensor(g, "y", TensorRole::activation, {out_rows, c.out});
  model::Attrs attrs{{"kernel", double(c.kernel)}, {"len", double(c.len)}};
  if (c.transpose) {
    attrs.set("stride", double(c.dilation_or_stride));
  } else {
    attrs.set("dilation", double(c.dilation_or_stride));
    attrs.set("groups", double(c.groups));
    attrs.set("lookahead", double(c.lookahead));
  }
  g.add_op("conv", c.transpose ? "conv-transpose1d" : "conv1d", {x}, weights, y,
           {out_rows, c.out, c.tile_rows, c.tile_cols}, attrs);
  g.finalize();
  return g;
}

std::vector<ConvCase> conv_cases() {
  // transpose, batch, len, in, out, kernel, dilation/stride, groups, lookahead, bias, tile, mma
  return {
      // conv1d, tensor cores: causal and centred ("same"), dilated, odd lengths, partial tiles,
      // in_channels not a multiple of the staged chunk (80, 8), kernel 16, every tile width.
      {false, 1, 4, 16, 16, 3, 1, 1, 0, true, 16, 16, true},
      {false, 3, 37, 64, 64, 7, 1, 1, 3, true, 32, 32, true},
      {false, 3, 37, 64, 64, 7, 1, 1, 0, false, 128, 64, true},
      {false, 3, 37, 128, 128, 3, 3, 1, 3, true, 128, 64, true},
      {false, 1, 37, 128, 128, 11, 5, 1, 25, true, 64, 128, true},
      {false, 3, 29, 64, 64, 3, 5, 1, 10, true, 16, 32, true},
      {false, 1, 33, 80, 128, 7, 1, 1, 3, true, 128, 64, true},
      {false, 3, 17, 8, 16, 3, 1, 1, 1, false, 128, 16, true},
      {false, 3, 29, 96, 96, 16, 1, 1, 0, true, 128, 32, true},
      {false, 1, 21, 32, 48, 4, 2, 1, 6, true, 8, 16, true},  // lookahead = the whole reach
      {false, 1, 128, 768, 768, 7, 1, 1, 3, true, 128, 128, true},
      // conv1d, direct: the vocoder's last conv to one channel, depthwise, grouped across tile
      // edges, odd channel counts, tile widths the tensor cores do not take.
      {false, 3, 17, 32, 1, 7, 1, 1, 3, true, 64, 1, false},
      {false, 1, 37, 32, 1, 7, 1, 1, 0, false, 128, 1, false},
      {false, 3, 37, 64, 64, 7, 1, 64, 3, true, 32, 16, false},
      {false, 1, 23, 64, 64, 3, 5, 64, 0, false, 16, 64, false},
      {false, 3, 19, 32, 48, 3, 3, 4, 3, true, 16, 16, false},
      {false, 3, 11, 12, 20, 5, 1, 1, 2, true, 8, 20, false},
      {false, 1, 9, 24, 24, 3, 1, 1, 1, false, 4, 24, false},
      // conv-transpose1d, tensor cores: tile_rows a multiple of 16 * stride ...
      {true, 3, 37, 64, 32, 4, 2, 1, 0, true, 32, 32, true},
      {true, 1, 4, 16, 16, 4, 2, 1, 0, false, 128, 16, true},
      {true, 3, 11, 64, 64, 16, 8, 1, 0, true, 128, 64, true},
      {true, 1, 13, 32, 16, 10, 5, 1, 0, true, 80, 16, true},
      {true, 3, 9, 128, 64, 8, 4, 1, 0, false, 64, 64, true},
      {true, 1, 7, 96, 128, 16, 8, 1, 0, true, 128, 128, true},
      {true, 1, 17, 80, 48, 6, 2, 1, 0, true, 96, 16, true},
      // ... and tiles whose rows are no multiple of 16 * stride (phases padded, partial phases).
      {true, 3, 11, 64, 32, 16, 8, 1, 0, true, 64, 32, true},
      {true, 1, 13, 32, 16, 10, 5, 1, 0, true, 64, 16, true},
      {true, 3, 7, 24, 16, 6, 3, 1, 0, false, 32, 16, true},
      {true, 1, 37, 32, 32, 4, 2, 1, 0, true, 100, 32, true},
      {true, 3, 5, 16, 16, 16, 8, 1, 0, true, 24, 16, true},
      // conv-transpose1d, direct: 128-row tiles at stride 5 (160 padded GEMM rows), channels
      // not whole 8-channel chunks, tile widths the tensor cores do not take.
      {true, 1, 13, 32, 16, 10, 5, 1, 0, true, 128, 16, false},
      {true, 3, 6, 12, 6, 6, 3, 1, 0, true, 9, 6, false},
      {true, 3, 5, 16, 8, 16, 8, 1, 0, false, 16, 8, false},
      {true, 1, 9, 8, 1, 4, 2, 1, 0, true, 32, 1, false},
  };
}

// Weights scaled so that outputs stay near 1 whatever the fan-in; a bias in [-0.5, 0.5).
struct ConvWeights {
  std::vector<float> weight, bias, packed;
};

ConvWeights conv_weights(const ConvCase& c, uint64_t seed) {
  const int64_t fan_in = (c.transpose ? c.in / c.dilation_or_stride : c.in / c.groups) * c.kernel;
  const float scale = 1.f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)));
  ConvWeights w;
  w.weight =
      random_bf16(seed, c.in * c.out * c.kernel / (c.transpose ? 1 : c.groups), -scale, scale);
  if (c.bias) w.bias = random_bf16(seed + 1, c.out, -0.5f, 0.5f);
  w.packed = w.weight;
  w.packed.insert(w.packed.end(), w.bias.begin(), w.bias.end());
  return w;
}

std::vector<double> conv_reference(const ConvCase& c, const std::vector<float>& x,
                                   const ConvWeights& w) {
  if (c.transpose) {
    return reference::conv_transpose1d(x, w.weight, w.bias,
                                       {.batch = c.batch,
                                        .len = c.len,
                                        .in_channels = c.in,
                                        .out_channels = c.out,
                                        .kernel = c.kernel,
                                        .stride = c.dilation_or_stride});
  }
  return reference::conv1d(x, w.weight, w.bias,
                           {.batch = c.batch,
                            .len = c.len,
                            .in_channels = c.in,
                            .out_channels = c.out,
                            .kernel = c.kernel,
                            .dilation = c.dilation_or_stride,
                            .groups = c.groups,
                            .lookahead = c.lookahead});
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

// Host only: the shape picks the body the case expects.
TEST_P(ConvTest, PicksTheExpectedBody) {
  const ConvCase& c = GetParam();
  const Graph g = conv_graph(c);
  ASSERT_TRUE(executor::can_implement(g, 0)) << executor::can_implement(g, 0).reason;
  const std::string name = executor::tile_body_name(g, 0);
  EXPECT_EQ(name.find("Mma") != std::string::npos, c.mma) << name;
  EXPECT_EQ(executor::conv_shape(g, g.op(0)).mma, c.mma);
}

TEST_P(ConvTest, MatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const ConvCase& c = GetParam();
  const Graph g = conv_graph(c);
  const uint64_t seed = hash(case_name(c));
  const std::vector<float> x = random_bf16(seed, g.tensor(0).elements());
  const ConvWeights w = conv_weights(c, seed + 7);
  OpBuffers b(g);
  b.place(g.op(0).inputs[0], upload_bf16(x));
  b.set_weights(0, w.packed);
  const int y = g.op(0).output;
  const DeviceBuffer& out = b.poisoned(y);
  b.launch(0);
  EXPECT_TRUE(close_to(download_bf16(out, g.tensor(y).elements()), conv_reference(c, x, w),
                       kBf16Out, c.out));
}

INSTANTIATE_TEST_SUITE_P(AudioOps, ConvTest, ::testing::ValuesIn(conv_cases()),
                         [](const auto& info) { return case_name(info.param); });

struct ElementwiseCase {
  const char* kind;
  int64_t batch, len, channels, tile_rows, tile_cols;
};

std::string case_name(const ElementwiseCase& c) {
  std::string s = std::string(c.kind) + "_b" + std::to_string(c.batch) + "_len" +
                  std::to_string(c.len) + "_c" + std::to_string(c.channels) + "_tile" +
                  std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

void PrintTo(const ElementwiseCase& c, std::ostream* os) { *os << case_name(c); }

constexpr double kSlope = 0.1, kScale = 1.0 / 3;

Graph elementwise_graph(const ElementwiseCase& c) {
  Graph g("decode", c.batch);
  const int64_t rows = c.batch * c.len;
  const std::string_view kind = c.kind;
  std::vector<int> inputs = {tensor(g, "a", TensorRole::input, {rows, c.channels})};
  if (kind == "add-scaled") inputs.push_back(tensor(g, "b", TensorRole::input, {rows, c.channels}));
  std::vector<int> weights;
  if (kind == "snake-beta") {
    weights = {tensor(g, "snake.alpha", TensorRole::weight, {c.channels}),
               tensor(g, "snake.beta", TensorRole::weight, {c.channels})};
  }
  model::Attrs attrs;
  if (kind == "leaky-relu") attrs.set("slope", kSlope);
  if (kind == "add-scaled") attrs.set("scale", kScale);
  const int y = tensor(g, "y", TensorRole::activation, {rows, c.channels});
  g.add_op("act", kind, inputs, weights, y, {rows, c.channels, c.tile_rows, c.tile_cols}, attrs);
  g.finalize();
  return g;
}

class ElementwiseTest : public ::testing::TestWithParam<ElementwiseCase> {};

TEST_P(ElementwiseTest, MatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const ElementwiseCase& c = GetParam();
  const Graph g = elementwise_graph(c);
  ASSERT_TRUE(executor::can_implement(g, 0)) << executor::can_implement(g, 0).reason;
  const uint64_t seed = hash(case_name(c));
  const std::string_view kind = c.kind;
  OpBuffers b(g);
  std::vector<std::vector<float>> in;
  for (int i : g.op(0).inputs) {
    in.push_back(random_bf16(seed + i, g.tensor(i).elements(), -3.f, 3.f));
    b.place(i, upload_bf16(in.back()));
  }
  std::vector<float> params;
  if (kind == "snake-beta") {
    params = random_bf16(seed + 11, 2 * c.channels);
    b.set_weights(0, params);
  }
  const int y = g.op(0).output;
  const DeviceBuffer& out = b.poisoned(y);
  b.launch(0);
  std::vector<double> want;
  if (kind == "snake-beta") {
    const std::span<const float> p(params);
    want = reference::snake_beta(in[0], p.first(c.channels), p.subspan(c.channels), c.channels);
  } else if (kind == "leaky-relu") {
    want = reference::leaky_relu(in[0], kSlope);
  } else if (kind == "tanh") {
    want = reference::tanh_activation(in[0]);
  } else if (kind == "gelu") {
    want = reference::gelu(in[0]);
  } else {
    want = reference::add_scaled(in[0], in[1], kScale);
  }
  EXPECT_TRUE(close_to(download_bf16(out, g.tensor(y).elements()), want, kBf16Out, c.channels));
}

std::vector<ElementwiseCase> elementwise_cases() {
  std::vector<ElementwiseCase> cases;
  for (const char* kind : {"snake-beta", "leaky-relu", "tanh", "gelu", "add-scaled"}) {
    cases.push_back({kind, 1, 4, 8, 4, 8});
    cases.push_back({kind, 3, 37, 96, 16, 32});  // 16 bytes per access
    cases.push_back({kind, 3, 37, 128, 128, 128});
    cases.push_back({kind, 1, 37, 1, 64, 1});    // the one-channel waveform
    cases.push_back({kind, 3, 17, 20, 8, 20});   // not whole 8-channel chunks
    cases.push_back({kind, 1, 33, 64, 32, 12});  // tiles not whole chunks
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AudioOps, ElementwiseTest, ::testing::ValuesIn(elementwise_cases()),
                         [](const auto& info) { return case_name(info.param); });

struct CodebookCase {
  int64_t batch, len, codebooks, entries, dim, tile_rows, tile_cols;
};

std::string case_name(const CodebookCase& c) {
  return "codebook_b" + std::to_string(c.batch) + "_len" + std::to_string(c.len) + "_q" +
         std::to_string(c.codebooks) + "x" + std::to_string(c.entries) + "_dim" +
         std::to_string(c.dim) + "_tile" + std::to_string(c.tile_rows) + "x" +
         std::to_string(c.tile_cols);
}

void PrintTo(const CodebookCase& c, std::ostream* os) { *os << case_name(c); }

Graph codebook_graph(const CodebookCase& c) {
  Graph g("decode", c.batch);
  const int64_t rows = c.batch * c.len;
  const int codes = tensor(g, "codes", TensorRole::input, {rows, c.codebooks}, DType::i32);
  const int tables =
      tensor(g, "quantizer.codebooks", TensorRole::weight, {c.codebooks * c.entries, c.dim});
  const int y = tensor(g, "y", TensorRole::activation, {rows, c.dim});
  g.add_op("codes", "codebook-sum", {codes}, {tables}, y, {rows, c.dim, c.tile_rows, c.tile_cols});
  g.finalize();
  return g;
}

class CodebookSumTest : public ::testing::TestWithParam<CodebookCase> {};

TEST_P(CodebookSumTest, MatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const CodebookCase& c = GetParam();
  const Graph g = codebook_graph(c);
  ASSERT_TRUE(executor::can_implement(g, 0)) << executor::can_implement(g, 0).reason;
  const uint64_t seed = hash(case_name(c));
  std::vector<int32_t> codes(c.batch * c.len * c.codebooks);
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] = static_cast<int32_t>(hash(std::to_string(seed + i)) % c.entries);
  }
  codes.front() = 0;
  codes.back() = static_cast<int32_t>(c.entries - 1);
  const std::vector<float> tables = random_bf16(seed, c.codebooks * c.entries * c.dim);
  OpBuffers b(g);
  b.place(0, upload<int32_t>(codes));
  b.set_weights(0, tables);
  const int y = g.op(0).output;
  const DeviceBuffer& out = b.poisoned(y);
  b.launch(0);
  EXPECT_TRUE(close_to(download_bf16(out, g.tensor(y).elements()),
                       reference::codebook_sum(codes, tables, c.codebooks, c.entries, c.dim),
                       kBf16Out, c.dim));
}

INSTANTIATE_TEST_SUITE_P(AudioOps, CodebookSumTest,
                         ::testing::Values(CodebookCase{1, 4, 1, 16, 8, 4, 8},
                                           CodebookCase{3, 37, 8, 64, 64, 16, 32},
                                           CodebookCase{3, 29, 16, 128, 128, 128, 128},
                                           CodebookCase{1, 37, 4, 32, 12, 8, 12}),
                         [](const auto& info) { return case_name(info.param); });

// ---- What can_implement refuses --------------------------------------------------------------

TEST(AudioOpSupport, RefusesBadShapesNamingTheOpAndTheValue) {
  {  // A checkpoint weight in the wrong layout: (in, out, K) handed to conv1d.
    Graph g("decode", 1);
    const int x = tensor(g, "x", TensorRole::input, {8, 16});
    const int w = tensor(g, "w", TensorRole::weight, {16, 8, 3});
    g.add_op("conv", "conv1d", {x}, {w}, tensor(g, "y", TensorRole::activation, {8, 8}),
             {8, 8, 8, 8}, {{"kernel", 3}, {"dilation", 1}, {"groups", 1}, {"len", 8}});
    g.finalize();
    EXPECT_EQ(refusal(g), "op conv (conv1d): 'w' has shape [16, 8, 3], expected [8, 16, 3]");
  }
  {  // Groups that do not divide the channels.
    Graph g("decode", 1);
    const int x = tensor(g, "x", TensorRole::input, {8, 16});
    const int w = tensor(g, "w", TensorRole::weight, {12, 5, 3});
    g.add_op("conv", "conv1d", {x}, {w}, tensor(g, "y", TensorRole::activation, {8, 12}),
             {8, 12, 8, 12}, {{"kernel", 3}, {"dilation", 1}, {"groups", 3}, {"len", 8}});
    g.finalize();
    EXPECT_NE(refusal(g).find("groups = 3 does not divide in_channels = 16"), std::string::npos);
  }
  {  // Rows that are not whole sequences: 8 rows of sequences of 5.
    Graph g("decode", 1);
    const int x = tensor(g, "x", TensorRole::input, {8, 16});
    const int w = tensor(g, "w", TensorRole::weight, {16, 16, 3});
    g.add_op("conv", "conv1d", {x}, {w}, tensor(g, "y", TensorRole::activation, {8, 16}),
             {8, 16, 8, 16}, {{"kernel", 3}, {"dilation", 1}, {"groups", 1}, {"len", 5}});
    g.finalize();
    EXPECT_EQ(refusal(g), "op conv (conv1d): input rows = 8 is not a multiple of 5");
  }
  {  // A transposed conv whose kernel is shorter than its stride.
    const ConvCase t{true, 1, 4, 8, 8, 2, 4, 1, 0, false, 16, 8, false};
    EXPECT_EQ(refusal(conv_graph(t)),
              "op conv (conv-transpose1d): kernel = 2 is less than stride = 4");
  }
  {  // snake-beta with one parameter vector.
    Graph g("decode", 1);
    const int x = tensor(g, "x", TensorRole::input, {8, 16});
    const int alpha = tensor(g, "alpha", TensorRole::weight, {16});
    g.add_op("snake", "snake-beta", {x}, {alpha}, tensor(g, "y", TensorRole::activation, {8, 16}),
             {8, 16, 8, 16});
    g.finalize();
    EXPECT_EQ(refusal(g), "op snake (snake-beta): has 1 weights, expected alpha_log and beta_log");
  }
  {  // leaky-relu with no slope.
    Graph g("decode", 1);
    const int x = tensor(g, "x", TensorRole::input, {8, 16});
    g.add_op("leaky", "leaky-relu", {x}, {}, tensor(g, "y", TensorRole::activation, {8, 16}),
             {8, 16, 8, 16});
    g.finalize();
    EXPECT_EQ(refusal(g), "op leaky (leaky-relu): attr slope is missing");
  }
  {  // Codes as bf16.
    Graph g("decode", 1);
    const int codes = tensor(g, "codes", TensorRole::input, {8, 2});
    const int tables = tensor(g, "tables", TensorRole::weight, {2 * 16, 8});
    g.add_op("codes", "codebook-sum", {codes}, {tables},
             tensor(g, "y", TensorRole::activation, {8, 8}), {8, 8, 8, 8});
    g.finalize();
    EXPECT_NE(refusal(g).find("input 'codes' is bf16, the tile body reads i32"), std::string::npos);
  }
}

// ---- A chain as one megakernel region ---------------------------------------------------------

// codebook-sum -> causal conv1d (tensor cores) -> snake-beta -> conv-transpose1d x2 (tensor
// cores) -> leaky-relu -> centred depthwise conv1d (direct) -> add-scaled (the leaky-relu output
// and the conv's) -> centred conv1d to one channel (direct) -> tanh: every audio body but gelu's
// function, tiles of several widths, dependencies across sequence boundaries and look-ahead.
struct Chain {
  static constexpr int64_t kBatch = 2, kLen = 24, kCodebooks = 4, kEntries = 32, kDim = 64;
  Graph g{"decode", kBatch};
  std::vector<std::vector<float>> weights;  // by op, packed in op.weights order

  Chain() {
    const int64_t rows = kBatch * kLen, up = 2 * rows;
    const int codes = tensor(g, "codes", TensorRole::input, {rows, kCodebooks}, DType::i32);
    const int e =
        add("embed", "codebook-sum", {codes},
            {{"quantizer.codebooks", {kCodebooks * kEntries, kDim}}}, {rows, kDim}, {16, 32}, {});
    const int c =
        add("conv_in", "conv1d", {e}, {{"conv_in.w", {kDim, kDim, 3}}, {"conv_in.b", {kDim}}},
            {rows, kDim}, {16, 32},
            {{"kernel", 3}, {"dilation", 2}, {"groups", 1}, {"len", kLen}, {"lookahead", 0}});
    const int s = add("snake", "snake-beta", {c}, {{"snake.alpha", {kDim}}, {"snake.beta", {kDim}}},
                      {rows, kDim}, {8, 64}, {});
    const int u = add("up", "conv-transpose1d", {s}, {{"up.w", {kDim, 32, 4}}, {"up.b", {32}}},
                      {up, 32}, {32, 32}, {{"kernel", 4}, {"stride", 2}, {"len", kLen}});
    const int l = add("leaky", "leaky-relu", {u}, {}, {up, 32}, {16, 32}, {{"slope", 0.1}});
    const int d =
        add("dw", "conv1d", {l}, {{"dw.w", {32, 1, 7}}, {"dw.b", {32}}}, {up, 32}, {16, 16},
            {{"kernel", 7}, {"dilation", 1}, {"groups", 32}, {"len", 2 * kLen}, {"lookahead", 3}});
    const int a = add("mrf", "add-scaled", {l, d}, {}, {up, 32}, {32, 32}, {{"scale", 0.5}});
    const int p =
        add("post", "conv1d", {a}, {{"post.w", {1, 32, 7}}}, {up, 1}, {32, 1},
            {{"kernel", 7}, {"dilation", 1}, {"groups", 1}, {"len", 2 * kLen}, {"lookahead", 3}});
    add("wave", "tanh", {p}, {}, {up, 1}, {32, 1}, {});
    g.finalize();
  }

  struct Weight {
    std::string name;
    std::vector<int64_t> shape;
  };

  // Adds an op writing a new (rows, cols) activation; returns the activation's tensor id.
  int add(const std::string& name, std::string_view kind, std::vector<int> inputs,
          const std::vector<Weight>& ws, std::vector<int64_t> shape,
          std::pair<int64_t, int64_t> tile, model::Attrs attrs) {
    std::vector<int> ids;
    std::vector<float> packed;
    for (const Weight& w : ws) {
      ids.push_back(tensor(g, w.name, TensorRole::weight, w.shape));
      const int64_t n = g.tensor(ids.back()).elements();
      const float scale = w.shape.size() == 3 ? 1.f / std::sqrt(float(n / w.shape[0])) : 1.f;
      const std::vector<float> v = random_bf16(hash(w.name), n, -scale, scale);
      packed.insert(packed.end(), v.begin(), v.end());
    }
    weights.push_back(std::move(packed));
    const int out = tensor(g, name + ".out", TensorRole::activation, shape);
    g.add_op(name, kind, std::move(inputs), ids, out, {shape[0], shape[1], tile.first, tile.second},
             std::move(attrs));
    return out;
  }
};

TEST(AudioMegakernel, ChainRegionMatchesConventional) {
  MEGACUT_REQUIRE_GPU();
  const Chain chain;
  const Graph& g = chain.g;
  OpBuffers b(g);
  std::vector<int32_t> codes(g.tensor(0).elements());
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] = static_cast<int32_t>(hash(std::to_string(i)) % Chain::kEntries);
  }
  b.place(0, upload<int32_t>(codes));
  std::vector<DeviceBuffer*> outs;
  for (const model::Op& op : g.ops()) {
    ASSERT_TRUE(executor::can_implement(g, op.index))
        << executor::can_implement(g, op.index).reason;
    if (!chain.weights[op.index].empty()) b.set_weights(op.index, chain.weights[op.index]);
    outs.push_back(&b.poisoned(op.output));
  }
  auto read_all = [&] {
    std::vector<std::vector<float>> v;
    for (const model::Op& op : g.ops()) {
      v.push_back(download_bf16(*outs[op.index], g.tensor(op.output).elements()));
    }
    return v;
  };
  for (int op = 0; op < g.op_count(); ++op) b.launch(op);
  const std::vector<std::vector<float>> want = read_all();
  for (const std::vector<float>& v : want) {
    for (float f : v) ASSERT_TRUE(std::isfinite(f));
  }

  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // One CTA per SM (few tasks each), then three CTAs (long queues, waits across them).
  for (int max_ctas : {0, 3}) {
    for (DeviceBuffer* d : outs) d->poison();  // landed when it returns
    executor::RegionOptions options;
    options.max_ctas = max_ctas;
    executor::MegakernelRegion region(g, 0, g.op_count(), b.buffers, options);
    region.launch(stream);
    region.check(stream);
    const std::vector<std::vector<float>> got = read_all();
    int bitwise = 0;
    for (int op = 0; op < g.op_count(); ++op) {
      double diff = 0, norm = 0;
      for (size_t i = 0; i < got[op].size(); ++i) {
        diff += (double(got[op][i]) - want[op][i]) * (double(got[op][i]) - want[op][i]);
        norm += double(want[op][i]) * want[op][i];
      }
      const double rel = std::isfinite(diff) ? std::sqrt(diff / std::max(norm, 1e-30)) : INFINITY;
      EXPECT_LE(rel, 5e-3) << "op " << g.op(op).name << " with max_ctas " << max_ctas;
      bitwise += std::memcmp(got[op].data(), want[op].data(), got[op].size() * 4) == 0;
    }
    std::printf("max_ctas %d: %d of %d ops bitwise equal to conventional (grid %d, %d tasks)\n",
                max_ctas, bitwise, g.op_count(), region.config().grid, region.config().tasks);
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// Host only: the region kernel holding every audio body compiles with NVRTC.
TEST(AudioMegakernel, RegionKernelOfEveryAudioBodyCompilesWithNvrtc) {
  const std::string cache = ::testing::TempDir() + "megacut_audio_mk_cache";
  std::filesystem::remove_all(cache);
  setenv("MEGACUT_CACHE_DIR", cache.c_str(), 1);
  const Chain chain;
  std::vector<std::string> bodies = executor::region_body_names(chain.g, 0, chain.g.op_count());
  for (const ConvCase& c : conv_cases())
    bodies.push_back(executor::tile_body_name(conv_graph(c), 0));
  std::sort(bodies.begin(), bodies.end());
  bodies.erase(std::unique(bodies.begin(), bodies.end()), bodies.end());
  EXPECT_GE(bodies.size(), 15u);
  const executor::CompiledKernel k =
      executor::compile_region_kernel(executor::region_kernel_source(bodies, false), 90, "audio");
  EXPECT_GT(k.cubin.size(), 1000u);
  unsetenv("MEGACUT_CACHE_DIR");
}

// ---- Throughput of the convolutions at codec-decoder shapes ------------------------------------

// Prints achieved TFLOP/s (2 * MACs, padding taps included) of the conv bodies at a codec
// decoder's shapes; the GEMM ceiling is about 790 TFLOP/s dense bf16 on an H200.
TEST(AudioOpsThroughput, ConvShapes) {
  MEGACUT_REQUIRE_GPU();
  const std::vector<ConvCase> shapes = {
      {false, 8, 128, 768, 768, 7, 1, 1, 3, true, 128, 128, true},
      {false, 8, 128, 768, 768, 7, 1, 1, 3, true, 64, 64, true},
      {false, 1, 7680, 96, 96, 7, 1, 1, 3, true, 128, 64, true},
      {false, 1, 7680, 96, 96, 7, 1, 96, 3, true, 128, 32, false},
      {true, 8, 128, 768, 384, 16, 8, 1, 0, true, 128, 128, true},
      {true, 8, 128, 768, 384, 16, 8, 1, 0, true, 64, 64, true},
      {false, 1, 7680, 32, 1, 7, 1, 1, 3, true, 128, 1, false},
  };
  for (const ConvCase& c : shapes) {
    const Graph g = conv_graph(c);
    OpBuffers b(g);
    b.place(0, upload_bf16(random_bf16(1, g.tensor(0).elements())));
    b.set_weights(0, conv_weights(c, 2).packed);
    b.poisoned(g.op(0).output);
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    constexpr int kRuns = 20;
    b.launch(0);
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < kRuns; ++i) executor::launch_op(g, 0, b.buffers, nullptr);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double flops = static_cast<double>(g.op_cost(0).flops);
    std::printf("%-60s %s: %8.2f us, %7.2f TFLOP/s\n", case_name(c).c_str(),
                executor::tile_body_name(g, 0).c_str(), 1e3 * ms / kRuns,
                flops * kRuns / (ms * 1e-3) / 1e12);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
  }
}

}  // namespace
}  // namespace megacut::testing
