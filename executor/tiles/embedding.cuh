// embedding: out[t, :] = table[ids[t], :], one 16-byte vector per thread step.
//
// A gather with no arithmetic: each tile copies its rows' table rows, the threads walking the
// tile's (row, 8-column chunk) pairs in row-major order so that consecutive threads touch
// consecutive bytes. An id outside [0, vocab) yields a row of zeros rather than a read out of
// bounds (the host checks ids it writes; the device cannot throw).
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct EmbeddingTile {
  struct Layout {
    const int* ids;     // (rows)
    const bf16* table;  // (vocab, hidden)
    bf16* out;          // (rows, hidden)
    long long vocab;
    int hidden;     // multiple of 8
    TileGrid grid;  // (rows, hidden)
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = box.cols() / 8;  // per row
    const int items = box.rows() * chunks;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long row = box.row_begin + i / chunks;
      const long long col = box.col_begin + 8 * (i % chunks);
      const long long id = l.ids[row];
      Vec8 v;
      if (id >= 0 && id < l.vocab) {
        v = load8(l.table + id * l.hidden + col);
      } else {
        const float zeros[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        v = pack8(zeros);
      }
      store8(l.out + row * l.hidden + col, v);
    }
  }
};

}  // namespace megacut::tiles
