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

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = box.cols() / 8;
    const int items = box.rows() * chunks;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long row = box.row_begin + i / chunks;
      const long long col = box.col_begin + 8 * (i % chunks);
      float gate[8], up[8];
      unpack8(load8(l.gate_up + row * 2 * l.cols + col), gate);
      unpack8(load8(l.gate_up + row * 2 * l.cols + l.cols + col), up);
#pragma unroll
      for (int k = 0; k < 8; ++k) gate[k] = gate[k] / (1.0f + expf(-gate[k])) * up[k];
      store8(l.out + row * l.cols + col, pack8(gate));
    }
  }
};

}  // namespace megacut::tiles
