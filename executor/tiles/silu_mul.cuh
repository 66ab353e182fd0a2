// silu-mul: y[r, c] = silu(gu[r, c]) * gu[r, I + c], with gu the fused gate_up output and
// I = the output's columns. fp32 arithmetic, one rounding to bf16; 16 bytes per access.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct SiluMulTile {
  struct Layout {
    const bf16* gate_up;  // (rows, 2 * cols): gate, then up
    bf16* out;            // (rows, cols)
    int cols;             // multiple of 8
    TileGrid grid;        // (rows, cols), tile_cols a multiple of 8
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
      Vec8 gate[kBatch], up[kBatch];
      long long row[kBatch], col[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = base + u * kThreads;
        row[u] = box.row_begin + i / chunks;
        col[u] = box.col_begin + 8 * (i % chunks);
        if (i < items) {
          gate[u] = load8(l.gate_up + row[u] * 2 * l.cols + col[u]);
          up[u] = load8(l.gate_up + row[u] * 2 * l.cols + l.cols + col[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (base + u * kThreads >= items) continue;
        float g[8], v[8];
        unpack8(gate[u], g);
        unpack8(up[u], v);
#pragma unroll
        for (int k = 0; k < 8; ++k) g[k] = g[k] / (1.0f + expf(-g[k])) * v[k];
        store8(l.out + row[u] * l.cols + col[u], pack8(g));
      }
    }
  }
};

}  // namespace megacut::tiles
