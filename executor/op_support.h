// Which tile body runs an op, and whether the bodies support the op's shape at all, as the
// op-kind table (executor/op_kind_table.cuh) answers for the conventional launcher and the
// megakernel generator alike; and the shape rules its body selectors read. Plain C++ (no CUDA
// headers), so host tools and tests can ask without a GPU.
#pragma once

#include <string>

#include "model/graph.h"

namespace megacut::executor {

// CUTLASS-style verdict: ok, or why not (naming the op, the field and the value).
struct Support {
  bool ok = true;
  std::string reason;
  explicit operator bool() const { return ok; }
};

// Whether the tile bodies implement op `op` of `graph` (kind, dtypes, shapes, tiling).
Support can_implement(const model::Graph& graph, int op);

// Which body instantiation runs a linear, lm-head, step-head, norm-linear or linear-residual op.
struct LinearShape {
  bool mma = false;  // tensor-core GEMM (tile_rows == 128), else the weight-streaming body
  int cols = 0;      // tile width: 16, 32, 64 or 128
  int n8 = 0;        // weight-streaming body: 8-row blocks covering tile_rows (1, 2, 4 or 8)
};
LinearShape linear_shape(const model::Op& op);

// Which body instantiation runs an attention op.
struct AttentionShape {
  bool decode = false;  // one query row and one query head per tile
  int head_dim = 0;
};
AttentionShape attention_shape(const model::Op& op);

// Which body runs a conv1d or conv-transpose1d op: the tensor-core implicit GEMM
// (tiles/conv_mma.cuh) where it takes the shape (dense; in_channels a multiple of 8; tile_cols
// 16, 32, 64 or 128; tile_rows at most 128, and for conv-transpose1d stride * ceil(tile_rows /
// stride) rounded up to 16 rows per phase at most 128; its staging for some chunk within
// kConvMmaSmemBytes), else the direct body.
struct ConvShape {
  bool mma = false;
  int cols = 0;   // mma: tile width
  int chunk = 0;  // mma: input channels staged per step, the largest of 64, 32, 16 that fits
};
ConvShape conv_shape(const model::Graph& graph, const model::Op& op);

// Shared memory the tensor-core conv body may stage into: at most half of an SM's shared
// memory on the sm_90 targets megacut builds for, so that two of its CTAs can share an SM.
inline constexpr int kConvMmaSmemBytes = 112 * 1024;

// The C++ type of the tile body that runs op `op` as the compiler spells it, e.g.
// "megacut::tiles::LinearMmaTile<64, float>": what a megakernel region instantiates. Throws
// megacut::Error where can_implement fails.
std::string tile_body_name(const model::Graph& graph, int op);

}  // namespace megacut::executor
