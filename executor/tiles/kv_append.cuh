// kv-append: copies the stage's new keys and values into the KV cache. The output grid is
// (new rows, 2 * kv_heads * head_dim): columns [0, kv) are keys, taken from rope's output
// after the query heads; columns [kv, 2 kv) are values, taken from qkv after the queries and
// keys. Row t (sequence t / seq_len, position t % seq_len) lands in cache row
// (sequence, past_len + position). A pure 16-byte copy.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct KvAppendTile {
  struct Layout {
    const bf16* rope_out;  // (rows, rope_cols): q heads, then k heads
    const bf16* qkv;       // (rows, qkv_cols): q heads, k heads, v heads
    bf16* cache;           // (batch, capacity, 2 * kv_heads * head_dim): keys, then values
    int rope_cols;
    int qkv_cols;
    int q_cols;   // heads * head_dim
    int kv_cols;  // kv_heads * head_dim, multiple of 8
    int seq_len;
    int past_len;
    long long capacity;  // positions per sequence in the cache
    TileGrid grid;       // (rows, 2 * kv_cols)
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = box.cols() / 8;
    const int items = box.rows() * chunks;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long row = box.row_begin + i / chunks;
      const long long col = box.col_begin + 8 * (i % chunks);
      const bf16* src = col < l.kv_cols ? l.rope_out + row * l.rope_cols + l.q_cols + col
                                        : l.qkv + row * l.qkv_cols + l.q_cols + col;
      const int seq = static_cast<int>(row) / l.seq_len;  // 32-bit division (rows < 2^31)
      const long long pos = l.past_len + static_cast<int>(row) % l.seq_len;
      store8(l.cache + (seq * l.capacity + pos) * (2 * l.kv_cols) + col, load8(src));
    }
  }
};

}  // namespace megacut::tiles
