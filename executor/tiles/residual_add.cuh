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
  static constexpr int kBatch = 4;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = box.cols() / 8;
    const int items = box.rows() * chunks;
    // kBatch items per thread at a time: all their loads in flight before any arithmetic.
    for (int base = threadIdx.x; base < items; base += kBatch * kThreads) {
      Vec8 a[kBatch], b[kBatch];
      long long offset[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = base + u * kThreads;
        offset[u] = (box.row_begin + i / chunks) * l.cols + box.col_begin + 8 * (i % chunks);
        if (i < items) {
          a[u] = load8(l.a + offset[u]);
          b[u] = load8(l.b + offset[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (base + u * kThreads >= items) continue;
        float x[8], y[8];
        unpack8(a[u], x);
        unpack8(b[u], y);
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] += y[k];
        store8(l.out + offset[u], pack8(x));
      }
    }
  }
};

}  // namespace megacut::tiles
