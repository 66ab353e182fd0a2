// lm-head: logits = x W^T with f32 output, the linear bodies with a float store. The weight
// is lm_head.weight, or model.embed_tokens.weight when the embeddings are tied.
#pragma once

#include "executor/tiles/linear_gemv.cuh"
#include "executor/tiles/linear_mma.cuh"

namespace megacut::tiles {

template <int kCols, int kMTiles>
using LmHeadGemv = LinearGemvTile<kCols, kMTiles, float>;
template <int kCols>
using LmHeadMma = LinearMmaTile<kCols, float>;

}  // namespace megacut::tiles
