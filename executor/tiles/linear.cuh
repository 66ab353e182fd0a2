// linear: y = x W^T, bf16 out. Two bodies share LinearLayout, chosen by the tile's shape:
// tile_rows <= 64 (decode, matrix-vector-like): LinearGemvTile, bound by the weight stream;
// tile_rows == 128 (prefill): LinearMmaTile, a tensor-core GEMM with shared-memory staging.
// Both are templates on the tile width (16, 32, 64, 128); the host picks the instantiation
// (executor/tile_layouts.cuh) and rejects other shapes.
#pragma once

#include "executor/tiles/linear_gemv.cuh"
#include "executor/tiles/linear_mma.cuh"

namespace megacut::tiles {

template <int kCols, int kMTiles>
using LinearGemv = LinearGemvTile<kCols, kMTiles, bf16>;
template <int kCols>
using LinearMma = LinearMmaTile<kCols, bf16>;

}  // namespace megacut::tiles
