// From an op to its tile body type: the one place that picks a body for an op kind and tile
// shape. The conventional kernels launch the body it names; megakernel regions describe it.
//
//   visit_tile_body(graph, op, buffers, [&]<class Body>(const typename Body::Layout& layout) {
//     ...  // Body is e.g. tiles::LinearStreamTile<16, 1, bf16>
//   });
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "executor/op_support.h"
#include "executor/stage_buffers.h"
#include "executor/tile_layouts.cuh"
#include "model/error.h"
#include "model/graph.h"

namespace megacut::executor {
namespace dispatch_detail {

template <class Body, class Visit>
decltype(auto) call(Visit& visit, const typename Body::Layout& layout) {
  return visit.template operator()<Body>(layout);
}

// The fused kinds (kFusion other than plain, or a residual) run only on the weight-streaming
// body; can_implement turns away their tensor-core shapes before this is reached.
template <typename OutT, tiles::LinearFusion kFusion = tiles::LinearFusion::plain, class Visit>
decltype(auto) linear(const tiles::LinearLayout<OutT>& l, const LinearShape& s, Visit& visit,
                      bool fused = false) {
  using namespace tiles;
  auto stream = [&]<int kCols>() -> decltype(auto) {
    if (s.n8 == 1) return call<LinearStreamTile<kCols, 1, OutT, kFusion>>(visit, l);
    if (s.n8 == 2) return call<LinearStreamTile<kCols, 2, OutT, kFusion>>(visit, l);
    if (s.n8 == 4) return call<LinearStreamTile<kCols, 4, OutT, kFusion>>(visit, l);
    return call<LinearStreamTile<kCols, 8, OutT, kFusion>>(visit, l);
  };
  auto body = [&]<int kCols>() -> decltype(auto) {
    if constexpr (kFusion == LinearFusion::plain) {
      if (s.mma && !fused) return call<LinearMmaTile<kCols, OutT>>(visit, l);
    }
    return stream.template operator()<kCols>();
  };
  switch (s.cols) {
    case 16:
      return body.template operator()<16>();
    case 32:
      return body.template operator()<32>();
    case 64:
      return body.template operator()<64>();
    default:
      return body.template operator()<128>();
  }
}

// An attention body of the op's head_dim (16, 32, 64, 128).
template <template <int> class Body, class Visit>
decltype(auto) per_head_dim(const typename Body<16>::Layout& l, int head_dim, Visit& visit) {
  switch (head_dim) {
    case 16:
      return call<Body<16>>(visit, l);
    case 32:
      return call<Body<32>>(visit, l);
    case 64:
      return call<Body<64>>(visit, l);
    default:
      return call<Body<128>>(visit, l);
  }
}

template <class Visit>
decltype(auto) attention(const tiles::AttentionLayout& l, const AttentionShape& s, Visit& visit) {
  if (s.decode) return per_head_dim<tiles::AttentionDecodeTile>(l, s.head_dim, visit);
  return per_head_dim<tiles::AttentionPrefillTile>(l, s.head_dim, visit);
}

template <bool kTranspose, class Visit>
decltype(auto) conv(const tiles::ConvLayout& l, const ConvShape& s, Visit& visit) {
  using namespace tiles;
  using Direct = std::conditional_t<kTranspose, ConvTranspose1dTile, Conv1dTile>;
  if (!s.mma) return call<Direct>(visit, l);
  switch (s.cols) {
    case 16:
      return call<ConvMmaTile<16, kTranspose>>(visit, l);
    case 32:
      return call<ConvMmaTile<32, kTranspose>>(visit, l);
    case 64:
      return call<ConvMmaTile<64, kTranspose>>(visit, l);
    default:
      return call<ConvMmaTile<128, kTranspose>>(visit, l);
  }
}

}  // namespace dispatch_detail

// Calls visit.template operator()<Body>(layout) with op `op`'s tile body and its layout. The op
// must pass can_implement (op_support.h); an unknown kind throws.
template <class Visit>
decltype(auto) visit_tile_body(const model::Graph& g, int op, const StageBuffers& b,
                               Visit&& visit) {
  using namespace dispatch_detail;
  const model::Op& o = g.op(op);
  const std::string_view kind = o.kind->name();
  if (kind == "embedding") return call<tiles::EmbeddingTile>(visit, embedding_layout(g, o, b));
  if (kind == "rmsnorm") return call<tiles::RmsNormTile>(visit, rmsnorm_layout(g, o, b));
  if (kind == "linear") return linear(linear_layout(g, o, b), linear_shape(o), visit);
  if (kind == "lm-head") return linear(lm_head_layout(g, o, b), linear_shape(o), visit);
  if (kind == "norm-linear") {
    const tiles::LinearLayout<tiles::bf16> l = norm_linear_layout(g, o, b);
    if (model::norm_linear_glu(o)) {
      return linear<tiles::bf16, tiles::LinearFusion::normed_glu>(l, linear_shape(o), visit, true);
    }
    return linear<tiles::bf16, tiles::LinearFusion::normed>(l, linear_shape(o), visit, true);
  }
  if (kind == "linear-residual") {
    return linear(linear_residual_layout(g, o, b), linear_shape(o), visit, true);
  }
  if (kind == "step-embedding") {
    return call<tiles::EmbeddingTile>(visit, step_embedding_layout(g, o, b));
  }
  if (kind == "step-head") return linear(step_head_layout(g, o, b), linear_shape(o), visit);
  if (kind == "qk-norm") return call<tiles::QkNormTile>(visit, qk_norm_layout(g, o, b));
  if (kind == "rope") return call<tiles::RopeTile>(visit, rope_layout(g, o, b));
  if (kind == "kv-append") return call<tiles::KvAppendTile>(visit, kv_append_layout(g, o, b));
  if (kind == "attention") return attention(attention_layout(g, o, b), attention_shape(o), visit);
  if (kind == "qkv-attention") {
    return per_head_dim<tiles::QkvAttentionDecodeTile>(qkv_attention_layout(g, o, b),
                                                       attention_shape(o).head_dim, visit);
  }
  if (kind == "silu-mul") return call<tiles::SiluMulTile>(visit, silu_mul_layout(g, o, b));
  if (kind == "residual-add") {
    return call<tiles::ResidualAddTile>(visit, residual_add_layout(g, o, b));
  }
  if (kind == "argmax") return call<tiles::ArgmaxTile>(visit, argmax_layout(g, o, b));
  if (kind == "conv1d") return conv<false>(conv_layout(g, o, b), conv_shape(g, o), visit);
  if (kind == "conv-transpose1d") return conv<true>(conv_layout(g, o, b), conv_shape(g, o), visit);
  if (kind == "codebook-sum") {
    return call<tiles::CodebookSumTile>(visit, codebook_sum_layout(g, o, b));
  }
  if (kind == "snake-beta") return call<tiles::SnakeBetaTile>(visit, elementwise_layout(g, o, b));
  if (kind == "leaky-relu") return call<tiles::LeakyReluTile>(visit, elementwise_layout(g, o, b));
  if (kind == "tanh") return call<tiles::TanhTile>(visit, elementwise_layout(g, o, b));
  if (kind == "gelu") return call<tiles::GeluTile>(visit, elementwise_layout(g, o, b));
  if (kind == "add-scaled") return call<tiles::AddScaledTile>(visit, elementwise_layout(g, o, b));
  throw Error("op " + o.name + ": no tile body for op kind '" + std::string(kind) + "'");
}

}  // namespace megacut::executor
