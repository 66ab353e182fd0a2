// residual-add: y = a + b, fp32 add, one rounding to bf16; 16 bytes per access.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct ResidualAddTile {
  struct Layout {
    const bf16* a;  // (rows, cols)
    const bf16* b;  // (rows, cols)
    bf16* out;      // (rows, cols)
    int cols;       // multiple of 8
    TileGrid grid;  // (rows, cols), tile_cols a multiple of 8
  };

  static constexpr int kThreads = 256;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = box.cols() / 8;
    const int items = box.rows() * chunks;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long offset =
          (box.row_begin + i / chunks) * l.cols + box.col_begin + 8 * (i % chunks);
      float a[8], b[8];
      unpack8(load8(l.a + offset), a);
      unpack8(load8(l.b + offset), b);
#pragma unroll
      for (int k = 0; k < 8; ++k) a[k] += b[k];
      store8(l.out + offset, pack8(a));
    }
  }
};

}  // namespace megacut::tiles
