// qk-norm (Qwen3): RMSNorm over each query and key head of the fused qkv output, with weight
// q_norm for query heads and k_norm for key heads, rounded as rmsnorm is (fp32, cast, times
// the bf16 weight). Output: (rows, (heads + kv_heads) * head_dim), q heads then k heads.
//
// One head of one row is head_dim / 8 lanes of 16 bytes each (a group of lanes rounded up to a
// power of two), so a warp normalizes 32 / group heads at once and the sum of squares is a
// few shuffles within the group.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct QkNormTile {
  struct Layout {
    const bf16* qkv;     // (rows, qkv_cols): q heads, k heads, v heads
    const bf16* weight;  // (2, head_dim): q_norm, then k_norm
    bf16* out;           // (rows, (heads + kv_heads) * head_dim)
    int qkv_cols;
    int heads;
    int kv_heads;
    int head_dim;  // multiple of 8, at most 256
    float eps;
    TileGrid grid;  // (rows, (heads + kv_heads) * head_dim), tile_cols a multiple of head_dim
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int chunks = l.head_dim / 8;  // lanes that carry data
    int group = 1;
    while (group < chunks) group *= 2;
    const int lane_in_group = threadIdx.x % group;
    const int groups = kThreads / group;
    const int out_cols = (l.heads + l.kv_heads) * l.head_dim;
    const int heads_in_tile = box.cols() / l.head_dim;
    const int items = box.rows() * heads_in_tile;
    // Every thread runs the same number of iterations: the shuffles need whole warps.
    for (int base = 0; base < items; base += groups) {
      const int item = base + threadIdx.x / group;
      const bool live = item < items && lane_in_group < chunks;
      const long long row = box.row_begin + (live ? item / heads_in_tile : 0);
      const int head = static_cast<int>(box.col_begin / l.head_dim) + item % heads_in_tile;
      const int col = head * l.head_dim + 8 * lane_in_group;
      float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (live) unpack8(load8(l.qkv + row * l.qkv_cols + col), f);
      float sum_sq = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) sum_sq += f[i] * f[i];
      const float inv_rms = rsqrtf(group_sum(sum_sq, group) / l.head_dim + l.eps);
      if (!live) continue;
      float w[8];
      unpack8(load8(l.weight + (head < l.heads ? 0 : l.head_dim) + 8 * lane_in_group), w);
#pragma unroll
      for (int i = 0; i < 8; ++i) f[i] = round_bf16(f[i] * inv_rms) * w[i];
      store8(l.out + row * out_cols + col, pack8(f));
    }
  }
};

}  // namespace megacut::tiles
