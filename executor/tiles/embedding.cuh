// embedding: out[t, :] = table[ids[t], :], one 16-byte vector per thread step. step-embedding
// runs the same body over a code predictor's stacked per-step tables: with the step s read from
// the device (a stage input, so one CUDA graph serves every step), out[t, :] = table[s * entries
// + ids[t] % entries, :]. Ids at or above entries (a talker's control codes, which reach the
// code predictor as its first input) are taken modulo entries.
//
// A gather with no arithmetic: each tile copies its rows' table rows, the threads walking the
// tile's (row, 8-column chunk) pairs in row-major order so that consecutive threads touch
// consecutive bytes. A row outside the table (an id below 0 or at or above vocab; with a step,
// a negative id or a step outside [0, steps)) yields zeros rather than a read out of bounds (the
// host checks ids it writes; the device cannot throw).
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct EmbeddingTile {
  struct Layout {
    const int* ids;             // (rows)
    const bf16* table;          // (vocab, hidden); step-embedding: (steps * entries, hidden)
    bf16* out;                  // (rows, hidden)
    long long vocab;            // table rows
    int hidden;                 // multiple of 8
    TileGrid grid;              // (rows, hidden)
    const int* step = nullptr;  // (1): step-embedding's step; null for embedding
    long long entries = 0;      // step-embedding: rows of one step's table
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const long long step_row = l.step == nullptr ? 0 : *l.step * l.entries;  // step's first row
    const int chunks = box.cols() / 8;                                       // per row
    const int items = box.rows() * chunks;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long row = box.row_begin + i / chunks;
      const long long col = box.col_begin + 8 * (i % chunks);
      long long id = l.ids[row];
      if (l.step != nullptr && id >= 0) id = step_row + id % l.entries;
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
