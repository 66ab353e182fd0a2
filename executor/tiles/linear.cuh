// linear, lm-head and step-head: y = x W^T (bf16 out for linear, f32 logits for the heads). Two
// bodies share LinearLayout, chosen by the tile's shape: tile_rows <= 64 (decode,
// matrix-vector-like): LinearStreamTile, bound by the weight stream; tile_rows == 128 (prefill):
// LinearMmaTile, a warpgroup-MMA GEMM with shared-memory staging. Both are templates on the tile
// width (16, 32, 64, 128); the host picks the instantiation (executor/op_kind_table.cuh) and
// refuses other shapes (its checks, executor/op_checks.h).
#pragma once

#include "executor/tiles/linear_mma.cuh"
#include "executor/tiles/linear_stream.cuh"
