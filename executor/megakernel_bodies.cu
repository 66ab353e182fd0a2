// Host-side dispatch from an op to its tile body type, mirroring launch_op's (conventional.cu):
// the body's kThreads, shared memory and layout bytes, checked against tile_body_name.
#include <concepts>
#include <cstring>

#include "executor/cuda_check.h"
#include "executor/megakernel_bodies.h"
#include "executor/op_support.h"
#include "executor/tile_layouts.cuh"
#include "model/error.h"

namespace megacut::executor {
namespace {

// What the runtime needs of a tile body (see executor/tiles/common.cuh for what it promises).
template <class Body>
concept TileBody = requires(const typename Body::Layout& layout, long long tile, char* smem) {
  { Body::kThreads } -> std::convertible_to<int>;
  { Body::smem_bytes(layout) } -> std::convertible_to<int>;
  Body::run(layout, tile, smem);
};

template <class Body>
RegionBody describe(const typename Body::Layout& layout) {
  static_assert(TileBody<Body>, "not a tile body: Layout, kThreads, smem_bytes, run");
  static_assert(Body::kThreads % 32 == 0 && Body::kThreads <= 1024, "whole warps, at most 1024");
  static_assert(alignof(typename Body::Layout) <= 16, "layouts are stored 16-byte aligned");
  RegionBody b;
  b.threads = Body::kThreads;
  b.smem_bytes = Body::smem_bytes(layout);
  b.layout.resize(sizeof layout);
  std::memcpy(b.layout.data(), &layout, sizeof layout);
  return b;
}

template <typename OutT>
RegionBody linear_body(const tiles::LinearLayout<OutT>& l, const LinearShape& s) {
  using namespace tiles;
  auto gemv = [&]<int kCols>() {
    if (s.m_tiles == 1) return describe<LinearGemvTile<kCols, 1, OutT>>(l);
    if (s.m_tiles == 2) return describe<LinearGemvTile<kCols, 2, OutT>>(l);
    return describe<LinearGemvTile<kCols, 4, OutT>>(l);
  };
  auto body = [&]<int kCols>() {
    if (s.mma) return describe<LinearMmaTile<kCols, OutT>>(l);
    return gemv.template operator()<kCols>();
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

template <int kHeadDim>
RegionBody attention_body_hd(const tiles::AttentionLayout& l, const AttentionShape& s) {
  using namespace tiles;
  if (!s.decode) return describe<AttentionPrefillTile<kHeadDim>>(l);
  switch (s.max_group) {
    case 1:
      return describe<AttentionDecodeTile<kHeadDim, 1>>(l);
    case 2:
      return describe<AttentionDecodeTile<kHeadDim, 2>>(l);
    case 4:
      return describe<AttentionDecodeTile<kHeadDim, 4>>(l);
    default:
      return describe<AttentionDecodeTile<kHeadDim, 8>>(l);
  }
}

RegionBody attention_body(const tiles::AttentionLayout& l, const AttentionShape& s) {
  switch (s.head_dim) {
    case 16:
      return attention_body_hd<16>(l, s);
    case 32:
      return attention_body_hd<32>(l, s);
    case 64:
      return attention_body_hd<64>(l, s);
    default:
      return attention_body_hd<128>(l, s);
  }
}

RegionBody dispatch(const model::Graph& g, const model::Op& op, const StageBuffers& b) {
  const std::string_view kind = op.kind->name();
  if (kind == "embedding") return describe<tiles::EmbeddingTile>(embedding_layout(g, op, b));
  if (kind == "rmsnorm") return describe<tiles::RmsNormTile>(rmsnorm_layout(g, op, b));
  if (kind == "linear") return linear_body(linear_layout(g, op, b), linear_shape(op));
  if (kind == "lm-head") return linear_body(lm_head_layout(g, op, b), linear_shape(op));
  if (kind == "qk-norm") return describe<tiles::QkNormTile>(qk_norm_layout(g, op, b));
  if (kind == "rope") return describe<tiles::RopeTile>(rope_layout(g, op, b));
  if (kind == "kv-append") return describe<tiles::KvAppendTile>(kv_append_layout(g, op, b));
  if (kind == "attention") return attention_body(attention_layout(g, op, b), attention_shape(op));
  if (kind == "silu-mul") return describe<tiles::SiluMulTile>(silu_mul_layout(g, op, b));
  if (kind == "residual-add") {
    return describe<tiles::ResidualAddTile>(residual_add_layout(g, op, b));
  }
  if (kind == "argmax") return describe<tiles::ArgmaxTile>(argmax_layout(g, op, b));
  throw Error("op " + op.name + ": no tile body for op kind '" + std::string(kind) + "'");
}

__global__ void epoch_bump_kernel(unsigned long long* epoch) { *epoch += 1; }

}  // namespace

RegionBody region_body(const model::Graph& graph, int op, const StageBuffers& buffers) {
  if (Support s = can_implement(graph, op); !s) throw Error(s.reason);
  RegionBody b = dispatch(graph, graph.op(op), buffers);
  b.name = tile_body_name(graph, op);
  return b;
}

void launch_epoch_bump(unsigned long long* epoch, cudaStream_t stream) {
  epoch_bump_kernel<<<1, 1, 0, stream>>>(epoch);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace megacut::executor
