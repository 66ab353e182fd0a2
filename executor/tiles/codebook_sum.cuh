// codebook-sum: out[t, :] = sum over codebooks q of tables[q * entries + codes[t, q], :], the
// residual-vector-quantizer lookup that starts a codec decoder. A gather like embedding, summed
// in fp32 and rounded to bf16 once.
//
// The threads walk the tile's (row, 8-column chunk) pairs in row-major order, so consecutive
// threads read consecutive bytes of each table row; where the width is not whole chunks they
// walk single columns. A code outside [0, entries) adds nothing rather than reading out of
// bounds (the host checks the codes it writes; the device cannot throw).
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct CodebookSumTile {
  struct Layout {
    const int* codes;    // (rows, codebooks)
    const bf16* tables;  // (codebooks * entries, dim): codebook q's table in rows q * entries..
    bf16* out;           // (rows, dim)
    long long entries;   // per codebook
    int codebooks;
    int dim;
    TileGrid grid;  // (rows, dim)
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static const bf16* entry(const Layout& l, long long row, int q) {
    const long long code = l.codes[row * l.codebooks + q];
    if (code < 0 || code >= l.entries) return nullptr;
    return l.tables + (q * l.entries + code) * l.dim;
  }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    if (l.dim % 8 == 0 && l.grid.tile_cols % 8 == 0) {
      const int chunks = box.cols() / 8;
      const int items = box.rows() * chunks;
      for (int i = threadIdx.x; i < items; i += kThreads) {
        const long long row = box.row_begin + i / chunks;
        const long long col = box.col_begin + 8 * (i % chunks);
        float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int q = 0; q < l.codebooks; ++q) {
          const bf16* e = entry(l, row, q);
          if (e == nullptr) continue;
          float v[8];
          unpack8(load8(e + col), v);
#pragma unroll
          for (int k = 0; k < 8; ++k) sum[k] += v[k];
        }
        store8(l.out + row * l.dim + col, pack8(sum));
      }
      return;
    }
    const int cols = box.cols();
    const int items = box.rows() * cols;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long row = box.row_begin + i / cols;
      const long long col = box.col_begin + i % cols;
      float sum = 0.f;
      for (int q = 0; q < l.codebooks; ++q) {
        const bf16* e = entry(l, row, q);
        if (e != nullptr) sum += __bfloat162float(e[col]);
      }
      l.out[row * l.dim + col] = __float2bfloat16_rn(sum);
    }
  }
};

}  // namespace megacut::tiles
