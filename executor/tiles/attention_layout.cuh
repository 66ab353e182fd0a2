// The buffers of attention, shared by its decode and prefill bodies.
#pragma once

#include "executor/tiles/common.cuh"
#include "executor/tiles/flagged.cuh"
#include "executor/tiles/rope.cuh"

namespace megacut::tiles {

// A tile is (query rows of one sequence, the query heads of one KV head): columns
// [kv_head * group * head_dim, (kv_head + 1) * group * head_dim) of the output; in decode (one
// row) one query head. Query row t
// (sequence t / seq_len) sits at position past_len + t % seq_len and sees cache positions
// [lo, pos], lo = pos - window + 1 when window > 0 (clamped at 0), else 0.
struct AttentionLayout {
  const bf16* q;      // (rows, q_stride): the query heads come first
  const bf16* cache;  // (batch, capacity, 2 * kv_heads * head_dim): keys, then values
  bf16* out;          // (rows, heads * head_dim)
  int q_stride;
  int heads;
  int kv_heads;
  int head_dim;
  int seq_len;
  int past_len;
  int window;  // 0: every cached position
  long long capacity;
  float scale;    // softmax scale, 1 / sqrt(head_dim)
  TileGrid grid;  // (rows, heads * head_dim), tile_cols = heads / kv_heads * head_dim
  // Inside a megakernel region, where the op after takes out as flagged words
  // (tiles/flagged.cuh): out's, (rows, heads * head_dim / 2), written besides out.
  unsigned long long* y_flagged = nullptr;
};

// qkv-attention (decode: one new row a sequence): q is the qkv output (q heads, k heads, v heads;
// q_stride its columns), and the row's new key and value, normalized (qk_norm, where not null:
// q_norm then k_norm, head_dim each) and rotated as qk-norm and rope would, go into the cache at
// the row's position through cache_out (the cache, writable).
struct QkvAttentionLayout : AttentionLayout {
  bf16* cache_out;
  const bf16* qk_norm;
  float eps;
  RopeFrequencies rope;
  // Where the op before hands q over as flagged words: q's, (rows, q_stride / 2), read in its
  // place.
  const unsigned long long* x_flagged = nullptr;
};

// Cache positions [lo, hi] that query position `pos` attends to.
__device__ __forceinline__ int attention_first_key(const AttentionLayout& l, int pos) {
  return l.window > 0 && pos - l.window + 1 > 0 ? pos - l.window + 1 : 0;
}

}  // namespace megacut::tiles
