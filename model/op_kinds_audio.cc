// The op kinds of audio decoders: codec decoders of streaming TTS pipelines (codebook lookup,
// causal convolutions, SnakeBeta, transposed convolutions) and HiFi-GAN vocoders (leaky ReLU,
// tanh, averaged multi-receptive-field branches).
//
// Conventions, as for the built-in kinds: activations are (time steps, channels) with time
// sequence-major (row = sequence * len + t), bf16. Attr "len" is the rows per sequence of the
// op's input; a convolution never reads across a sequence boundary. Costs count each byte a
// tile must move through device memory once; a transcendental function counts as one FLOP.
// conv1d takes a look-ahead: 0 is causal (a streaming codec decoder), (kernel - 1) * dilation / 2
// is the centred "same" padding of HiFi-GAN V1's own convolutions.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/graph.h"
#include "model/op.h"
#include "model/op_kind_base.h"

namespace megacut::model {
namespace {

using kinds::kBf16;
using kinds::Kind;

int64_t box_bytes(const std::vector<Box>& boxes, int64_t element_bytes) {
  int64_t bytes = 0;
  for (const Box& box : boxes) bytes += box.rows() * box.cols() * element_bytes;
  return bytes;
}

// Calls visit(sequence, first, last) for each sequence of `len` rows that rows [begin, end)
// touch, with [first, last) the touched positions within that sequence.
template <typename Visit>
void for_each_sequence(int64_t begin, int64_t end, int64_t len, Visit visit) {
  for (int64_t s = begin / len; s * len < end; ++s) {
    visit(s, std::max(begin, s * len) - s * len, std::min(end, (s + 1) * len) - s * len);
  }
}

// codebook-sum: out[t, :] = sum over codebooks c of tables[c * entries + codes[t, c], :], the
// residual-vector-quantizer lookup that starts a codec decoder. Input 0: codes (rows,
// codebooks), i32, a stage input; weight: the tables stacked (codebooks * entries, dim).
class CodebookSum final : public Kind {
 public:
  CodebookSum() : Kind("codebook-sum", {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    return {Box{out.row_begin, out.row_end, 0, cols_of(graph, op.inputs[0])}};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const Tensor& codes = graph.tensor(op.inputs[0]);
    const int64_t codebooks = codes.shape.back();
    const int64_t elements = out.rows() * out.cols();
    return {out.rows() * codebooks * dtype_bytes(codes.dtype) + codebooks * elements * kBf16,
            elements * kBf16, (codebooks - 1) * elements};
  }
};

// conv1d: out[t, o] = bias[o] + sum over taps j and the input channels i of o's group of
// w[o, i, j] * x[t - (kernel - 1 - j) * dilation + lookahead, i], with zeros outside the
// sequence, so an output row sees `lookahead` rows of its future and (kernel - 1) * dilation -
// lookahead rows of its past. Weight (out, in / groups, kernel), optional bias (out); attrs
// kernel, dilation, groups (1: dense; in = out channels: depthwise), len, and lookahead (0 when
// absent: causal; at most (kernel - 1) * dilation).
class Conv1d final : public Kind {
 public:
  Conv1d() : Kind("conv1d", {Access::windowed}) {}

  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    const int64_t len = op.attrs.i("len");
    const int64_t reach = (op.attrs.i("kernel") - 1) * op.attrs.i("dilation");
    const int64_t lookahead = lookahead_of(op, reach);
    // Output channel o reads the input channels of group o / out_per_group.
    const int64_t groups = op.attrs.i("groups");
    const int64_t in_per_group = cols_of(graph, op.inputs[0]) / groups;
    const int64_t out_per_group = cols_of(graph, op.output) / groups;
    const int64_t col_begin = out.col_begin / out_per_group * in_per_group;
    const int64_t col_end = ((out.col_end - 1) / out_per_group + 1) * in_per_group;
    std::vector<Box> boxes;
    for_each_sequence(out.row_begin, out.row_end, len, [&](int64_t s, int64_t first, int64_t last) {
      boxes.push_back(Box{s * len + std::max<int64_t>(first - reach + lookahead, 0),
                          s * len + std::min(last + lookahead, len), col_begin, col_end});
    });
    return boxes;
  }

  // Taps that fall outside the sequence multiply padding zeros; they are counted, as a body that
  // does not branch on position computes them.
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t kernel = op.attrs.i("kernel");
    const int64_t in_per_group = cols_of(graph, op.inputs[0]) / op.attrs.i("groups");
    const int64_t bias = op.weights.size() > 1 ? out.cols() * kBf16 : 0;
    const int64_t elements = out.rows() * out.cols();
    return {box_bytes(input_boxes(op, graph, 0, out), kBf16) +
                out.cols() * in_per_group * kernel * kBf16 + bias,
            elements * kBf16, 2 * elements * kernel * in_per_group};
  }

 private:
  static int64_t lookahead_of(const Op& op, int64_t reach) {
    const int64_t lookahead = op.attrs.has("lookahead") ? op.attrs.i("lookahead") : 0;
    if (lookahead < 0 || lookahead > reach) {
      throw Error("op " + op.name + ": conv1d lookahead " + std::to_string(lookahead) +
                  " is outside [0, (kernel - 1) * dilation = " + std::to_string(reach) + "]");
    }
    return lookahead;
  }
};

// conv-transpose1d: upsampling by `stride`. Input row i adds w[:, :, j] x[i, :] to output row
// i * stride + j for each tap j < kernel; the output keeps the first len * stride rows of each
// sequence (causal trimming), so output row t reads input rows i with
// i * stride <= t < i * stride + kernel. Weight (in, out, kernel), optional bias (out); attrs
// stride, kernel (>= stride), len (input rows per sequence).
class ConvTranspose1d final : public Kind {
 public:
  ConvTranspose1d() : Kind("conv-transpose1d", {Access::windowed}) {}

  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    const int64_t len = op.attrs.i("len");
    const int64_t stride = op.attrs.i("stride");
    const int64_t kernel = op.attrs.i("kernel");
    const int64_t in_cols = cols_of(graph, op.inputs[0]);
    std::vector<Box> boxes;
    for_each_sequence(out.row_begin, out.row_end, len * stride,
                      [&](int64_t s, int64_t first, int64_t last) {
                        // ceil((first - kernel + 1) / stride), never before the sequence start.
                        const int64_t reach = first - kernel + 1;
                        const int64_t lowest = reach <= 0 ? 0 : (reach + stride - 1) / stride;
                        const int64_t highest = (last - 1) / stride;
                        boxes.push_back(Box{s * len + lowest, s * len + highest + 1, 0, in_cols});
                      });
    return boxes;
  }

  // kernel / stride taps reach an output row on average (fewer at a sequence start).
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t kernel = op.attrs.i("kernel");
    const int64_t in_cols = cols_of(graph, op.inputs[0]);
    const int64_t bias = op.weights.size() > 1 ? out.cols() * kBf16 : 0;
    const int64_t elements = out.rows() * out.cols();
    return {box_bytes(input_boxes(op, graph, 0, out), kBf16) +
                in_cols * out.cols() * kernel * kBf16 + bias,
            elements * kBf16, 2 * elements * in_cols * kernel / op.attrs.i("stride")};
  }
};

// Elementwise kinds of one input: y = f(x) with per-channel parameters (op.weights, one value
// per channel each) and `flops` per element.
class Elementwise final : public Kind {
 public:
  Elementwise(std::string_view name, int64_t flops)
      : Kind(name, {Access::one_to_one}), flops_(flops) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op& op, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    const int64_t params = static_cast<int64_t>(op.weights.size()) * out.cols() * kBf16;
    return {elements * kBf16 + params, elements * kBf16, flops_ * elements};
  }

 private:
  int64_t flops_;
};

// add-scaled: y = (a + b) * scale, attr "scale". HiFi-GAN averages the branches of a
// multi-receptive-field block; three branches chain two ops, the first with scale 1.
class AddScaled final : public Kind {
 public:
  AddScaled() : Kind("add-scaled", {Access::one_to_one, Access::one_to_one}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {2 * elements * kBf16, elements * kBf16, 2 * elements};
  }
};

}  // namespace

void register_audio_op_kinds(std::vector<std::unique_ptr<OpKind>>& kinds) {
  kinds.push_back(std::make_unique<CodebookSum>());
  kinds.push_back(std::make_unique<Conv1d>());
  kinds.push_back(std::make_unique<ConvTranspose1d>());
  // snake-beta: y = x + sin^2(alpha x) / beta with weights alpha, beta (channels, stored as
  // logarithms): multiply, sine, square, multiply by 1 / beta, add; exp and 1 / beta are taken
  // once per channel and not counted.
  kinds.push_back(std::make_unique<Elementwise>("snake-beta", 5));
  // leaky-relu: y = max(x, slope x), attr "slope": multiply, select.
  kinds.push_back(std::make_unique<Elementwise>("leaky-relu", 2));
  kinds.push_back(std::make_unique<Elementwise>("tanh", 1));
  // gelu: y = x Phi(x) (exact, with erf), between a ConvNeXt block's pointwise layers: an
  // erf counts as one FLOP, with the multiply, add and scale around it.
  kinds.push_back(std::make_unique<Elementwise>("gelu", 5));
  kinds.push_back(std::make_unique<AddScaled>());
}

}  // namespace megacut::model
