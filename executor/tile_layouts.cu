#include <cmath>
#include <string>
#include <string_view>

#include "executor/tile_layouts.cuh"
#include "model/error.h"
#include "model/text.h"

namespace megacut::executor {
namespace {

using model::attr_int;
using model::cols_of;
using model::Graph;
using model::Op;
using model::str;
using model::Tensor;

template <typename T>
T* tensor_ptr(const Graph& g, const Op& op, int tensor, const StageBuffers& b) {
  if (tensor < 0 || tensor >= static_cast<int>(b.tensors.size()) || b.tensors[tensor] == nullptr) {
    throw Error("op " + op.name + ": no device buffer for tensor '" + g.tensor(tensor).name + "'");
  }
  return static_cast<T*>(b.tensors[tensor]);
}

const tiles::bf16* weight_ptr(const Op& op, const StageBuffers& b) {
  if (op.index >= static_cast<int>(b.op_weights.size()) || b.op_weights[op.index] == nullptr) {
    throw Error("op " + op.name + ": no device buffer for its weights");
  }
  return static_cast<const tiles::bf16*>(b.op_weights[op.index]);
}

// step-embedding's and step-head's step: input 1, read by the body on the device.
const int* step_ptr(const Graph& g, const Op& op, const StageBuffers& b) {
  return tensor_ptr<const int>(g, op, op.inputs.at(1), b);
}

// rope's frequencies, from the op's rope_* attrs (model/decoder.cc).
tiles::RopeFrequencies rope_frequencies(const Op& op) {
  const bool llama3 = op.attrs.i("rope_llama3") == 1;
  return {attr_int(op, "head_dim"),
          static_cast<float>(op.attrs.f("rope_theta")),
          llama3 ? 1 : 0,
          llama3 ? static_cast<float>(op.attrs.f("rope_factor")) : 1.f,
          llama3 ? static_cast<float>(op.attrs.f("rope_low_freq_factor")) : 1.f,
          llama3 ? static_cast<float>(op.attrs.f("rope_high_freq_factor")) : 4.f,
          llama3 ? static_cast<float>(op.attrs.f("rope_original_max_position")) : 8192.f};
}

}  // namespace

tiles::TileGrid tile_grid(const model::Tiling& t) {
  // TileGrid::box works in 32 bits.
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (t.rows >= kLimit || t.cols >= kLimit || t.count() >= kLimit) {
    throw Error("a tiling of " + str(t.rows) + " x " + str(t.cols) + " in tiles of " +
                str(t.tile_rows) + " x " + str(t.tile_cols) +
                " is beyond the tile bodies (rows, columns and tiles each below 2^31)");
  }
  return {t.rows, t.cols, static_cast<int>(t.tile_rows), static_cast<int>(t.tile_cols)};
}

int64_t kv_capacity(const Graph& graph, const Op& op, const StageBuffers& buffers) {
  const int cache = op.kind->name() == "kv-append" ? op.output : op.inputs.at(1);
  const int64_t needed = op.attrs.i("past_len") + op.attrs.i("seq_len");
  const int64_t capacity =
      buffers.kv_capacity > 0 ? buffers.kv_capacity : graph.tensor(cache).shape.at(1);
  if (capacity < needed) {
    throw Error("op " + op.name + ": KV cache holds " + str(capacity) + " positions, the stage " +
                "needs " + str(needed));
  }
  return capacity;
}

tiles::EmbeddingTile::Layout embedding_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  const Tensor& table = g.tensor(op.weights.at(0));
  return {tensor_ptr<const int>(g, op, op.inputs[0], b), weight_ptr(op, b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),  table.shape.at(0),
          static_cast<int>(table.shape.at(1)),           tile_grid(op.tiling)};
}

tiles::EmbeddingTile::Layout step_embedding_layout(const Graph& g, const Op& op,
                                                   const StageBuffers& b) {
  tiles::EmbeddingTile::Layout l = embedding_layout(g, op, b);
  l.step = step_ptr(g, op, b);
  l.entries = model::step_entries(g, op);
  return l;
}

tiles::RmsNormTile::Layout rmsnorm_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          weight_ptr(op, b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(op.tiling.cols),
          op.attrs.has("select_stride") ? attr_int(op, "select_stride") : 1,
          static_cast<float>(op.attrs.f("eps")),
          tile_grid(op.tiling)};
}

template <typename OutT>
tiles::LinearLayout<OutT> make_linear_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          weight_ptr(op, b),
          tensor_ptr<OutT>(g, op, op.output, b),
          static_cast<int>(op.tiling.cols),
          static_cast<int>(cols_of(g, op.inputs[0])),
          tile_grid(op.tiling)};
}

tiles::LinearLayout<tiles::bf16> linear_layout(const Graph& g, const Op& op,
                                               const StageBuffers& b) {
  return make_linear_layout<tiles::bf16>(g, op, b);
}

tiles::LinearLayout<float> lm_head_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return make_linear_layout<float>(g, op, b);
}

tiles::LinearLayout<tiles::bf16> norm_linear_layout(const Graph& g, const Op& op,
                                                    const StageBuffers& b) {
  tiles::LinearLayout<tiles::bf16> l = make_linear_layout<tiles::bf16>(g, op, b);
  const int64_t weight_rows = model::norm_linear_glu(op) ? 2 * l.n : l.n;  // glu: gate, up
  l.norm = l.w + weight_rows * l.k;                                        // then the scale
  l.eps = static_cast<float>(op.attrs.f("eps"));
  return l;
}

tiles::LinearLayout<tiles::bf16> linear_residual_layout(const Graph& g, const Op& op,
                                                        const StageBuffers& b) {
  tiles::LinearLayout<tiles::bf16> l = make_linear_layout<tiles::bf16>(g, op, b);
  l.residual = tensor_ptr<const tiles::bf16>(g, op, op.inputs.at(1), b);
  return l;
}

tiles::LinearLayout<float> step_head_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  tiles::LinearLayout<float> l = make_linear_layout<float>(g, op, b);
  l.step = step_ptr(g, op, b);
  l.steps = static_cast<int>(g.tensor(op.weights.at(0)).shape.at(0) / model::step_entries(g, op));
  return l;
}

tiles::QkNormTile::Layout qk_norm_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          weight_ptr(op, b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])),
          attr_int(op, "heads"),
          attr_int(op, "kv_heads"),
          attr_int(op, "head_dim"),
          static_cast<float>(op.attrs.f("eps")),
          tile_grid(op.tiling)};
}

tiles::RopeTile::Layout rope_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])),
          static_cast<int>(op.tiling.cols),
          attr_int(op, "seq_len"),
          attr_int(op, "past_len"),
          rope_frequencies(op),
          tile_grid(op.tiling)};
}

tiles::KvAppendTile::Layout kv_append_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  const int hd = attr_int(op, "head_dim");
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          tensor_ptr<const tiles::bf16>(g, op, op.inputs[1], b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])),
          static_cast<int>(cols_of(g, op.inputs[1])),
          attr_int(op, "heads") * hd,
          attr_int(op, "kv_heads") * hd,
          attr_int(op, "seq_len"),
          attr_int(op, "past_len"),
          kv_capacity(g, op, b),
          tile_grid(op.tiling)};
}

tiles::AttentionLayout attention_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  const int hd = attr_int(op, "head_dim");
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          tensor_ptr<const tiles::bf16>(g, op, op.inputs[1], b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])),
          attr_int(op, "heads"),
          attr_int(op, "kv_heads"),
          hd,
          attr_int(op, "seq_len"),
          attr_int(op, "past_len"),
          op.attrs.has("window") ? attr_int(op, "window") : 0,
          kv_capacity(g, op, b),
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))),
          tile_grid(op.tiling)};
}

tiles::QkvAttentionLayout qkv_attention_layout(const Graph& g, const Op& op,
                                               const StageBuffers& b) {
  return {attention_layout(g, op, b), tensor_ptr<tiles::bf16>(g, op, op.inputs[1], b),
          op.weights.empty() ? nullptr : weight_ptr(op, b),
          op.attrs.has("eps") ? static_cast<float>(op.attrs.f("eps")) : 0.f, rope_frequencies(op)};
}

tiles::SiluMulTile::Layout silu_mul_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b), static_cast<int>(op.tiling.cols),
          tile_grid(op.tiling)};
}

tiles::ResidualAddTile::Layout residual_add_layout(const Graph& g, const Op& op,
                                                   const StageBuffers& b) {
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          tensor_ptr<const tiles::bf16>(g, op, op.inputs[1], b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b), static_cast<int>(op.tiling.cols),
          tile_grid(op.tiling)};
}

tiles::ArgmaxTile::Layout argmax_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  return {tensor_ptr<const float>(g, op, op.inputs[0], b), tensor_ptr<int>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])), tile_grid(op.tiling)};
}

tiles::CodebookSumTile::Layout codebook_sum_layout(const Graph& g, const Op& op,
                                                   const StageBuffers& b) {
  const int codebooks = static_cast<int>(cols_of(g, op.inputs[0]));
  const Tensor& tables = g.tensor(op.weights.at(0));
  return {tensor_ptr<const int>(g, op, op.inputs[0], b),
          weight_ptr(op, b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          tables.shape.at(0) / codebooks,
          codebooks,
          static_cast<int>(tables.shape.at(1)),
          tile_grid(op.tiling)};
}

tiles::ConvLayout conv_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  const bool transpose = op.kind->name() == "conv-transpose1d";
  const tiles::bf16* w = weight_ptr(op, b);
  const tiles::bf16* bias =
      op.weights.size() > 1 ? w + g.tensor(op.weights[0]).elements() : nullptr;
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          w,
          bias,
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.inputs[0])),
          static_cast<int>(cols_of(g, op.output)),
          attr_int(op, "kernel"),
          transpose ? 1 : attr_int(op, "dilation"),
          transpose ? 1 : attr_int(op, "groups"),
          !transpose && op.attrs.has("lookahead") ? attr_int(op, "lookahead") : 0,
          transpose ? attr_int(op, "stride") : 1,
          attr_int(op, "len"),
          conv_shape(g, op).chunk,
          tile_grid(op.tiling)};
}

tiles::ElementwiseLayout elementwise_layout(const Graph& g, const Op& op, const StageBuffers& b) {
  const std::string_view kind = op.kind->name();
  const float scalar = kind == "leaky-relu"   ? static_cast<float>(op.attrs.f("slope"))
                       : kind == "add-scaled" ? static_cast<float>(op.attrs.f("scale"))
                                              : 0.f;
  return {tensor_ptr<const tiles::bf16>(g, op, op.inputs[0], b),
          op.inputs.size() > 1 ? tensor_ptr<const tiles::bf16>(g, op, op.inputs[1], b) : nullptr,
          op.weights.empty() ? nullptr : weight_ptr(op, b),
          tensor_ptr<tiles::bf16>(g, op, op.output, b),
          static_cast<int>(cols_of(g, op.output)),
          scalar,
          tile_grid(op.tiling)};
}

}  // namespace megacut::executor
