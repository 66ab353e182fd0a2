// Which tile body runs an op, and whether the bodies support the op's shape at all: the
// choice the conventional launcher and the megakernel generator share. Plain C++ (no CUDA
// headers), so host tools and CI can ask without a GPU.
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

// Which body instantiation runs a linear or lm-head op.
struct LinearShape {
  bool mma = false;  // tensor-core GEMM (tile_rows == 128), else the few-rows body
  int cols = 0;      // tile width: 16, 32, 64 or 128
  int m_tiles = 0;   // few-rows body: 16-row blocks covering tile_rows (1, 2 or 4)
};
LinearShape linear_shape(const model::Op& op);

// Which body instantiation runs an attention op.
struct AttentionShape {
  bool decode = false;  // one query row per tile
  int head_dim = 0;
  int max_group = 0;  // decode: query heads handled at once (1, 2, 4 or 8)
};
AttentionShape attention_shape(const model::Op& op);

// The C++ type of the tile body that runs op `op`, e.g. "megacut::tiles::LinearMmaTile<64,
// float>": what a megakernel region instantiates. Throws megacut::Error where can_implement
// fails.
std::string tile_body_name(const model::Graph& graph, int op);

}  // namespace megacut::executor
