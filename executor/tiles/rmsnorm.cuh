// rmsnorm: y = bf16(x * rsqrt(mean(x^2) + eps)) * w, in fp32, rounded to bf16 twice as
// Hugging Face's LlamaRMSNorm does (normalize in fp32, cast, multiply by the bf16 weight).
//
// A group of warps per row: one warp when the tile has a row for each of its warps (prefill
// over many rows), up to the whole block when it has fewer (a decode step's tile is one row per
// sequence, and a single warp alone would wait out several load round trips). Each lane loads
// up to kHeld of its 16-byte chunks of x and of the weight at once and keeps them in registers:
// one memory round trip for a row that fits (2048 columns over two warps or more), the rest read
// again. The sum of squares meets across the group's warps in shared memory. With attr
// select_stride S > 1 output row r normalizes input row r*S + S-1 (the last position of each
// sequence, all the language-model head needs).
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct RmsNormTile {
  struct Layout {
    const bf16* x;       // (rows * select_stride, cols)
    const bf16* weight;  // (cols)
    bf16* out;           // (rows, cols)
    int cols;            // multiple of 8
    int select_stride;   // 1, or S: output row r reads input row r*S + S-1
    float eps;
    TileGrid grid;  // (rows, cols), tile_cols == cols
  };

  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  // 16-byte chunks of x and of the weight a lane holds: rows up to kHeld * 8 * 32 * (warps per
  // row) columns take one round trip; wider ones read the rest again.
  static constexpr int kHeld = 4;

  __host__ __device__ static int smem_bytes(const Layout&) { return kWarps * 4; }

  // Warps per row: the largest power of two up to kWarps / rows (at least 1).
  __device__ static int warps_per_row(int rows) {
    int w = kWarps;
    while (w > 1 && w * rows > kWarps) w /= 2;
    return w;
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* warp_sums = reinterpret_cast<float*>(smem);  // (kWarps)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group_warps = warps_per_row(box.rows());
    const int groups = kWarps / group_warps;
    const int group = warp / group_warps;
    const int stride = group_warps * 32;                 // lanes of a group
    const int first = (warp % group_warps) * 32 + lane;  // this lane's first chunk
    const int chunks = l.cols / 8;
    // Every group runs the same number of rounds: the barriers below are the whole tile's.
    const int rounds = (box.rows() + groups - 1) / groups;
    for (int round = 0; round < rounds; ++round) {
      const long long row = box.row_begin + static_cast<long long>(round) * groups + group;
      const bool has_row = row < box.row_end;
      const bf16* x = l.x + (row * l.select_stride + l.select_stride - 1) * l.cols;
      Vec8 held_x[kHeld], held_w[kHeld];
      float sum_sq = 0.f;
#pragma unroll
      for (int j = 0; j < kHeld; ++j) {
        const int c = first + j * stride;
        if (has_row && c < chunks) {
          held_x[j] = load8(x + 8 * c);
          held_w[j] = load8(l.weight + 8 * c);
        }
      }
#pragma unroll
      for (int j = 0; j < kHeld; ++j) {
        if (has_row && first + j * stride < chunks) {
          float f[8];
          unpack8(held_x[j], f);
#pragma unroll
          for (int i = 0; i < 8; ++i) sum_sq += f[i] * f[i];
        }
      }
#pragma unroll 4
      for (int c = first + kHeld * stride; has_row && c < chunks; c += stride) {
        float f[8];
        unpack8(load8(x + 8 * c), f);
#pragma unroll
        for (int i = 0; i < 8; ++i) sum_sq += f[i] * f[i];
      }
      sum_sq = warp_sum(sum_sq);
      if (group_warps > 1) {
        if (lane == 0) warp_sums[warp] = sum_sq;
        tile_sync<kThreads>();
        sum_sq = 0.f;
        for (int w = group * group_warps; w < (group + 1) * group_warps; ++w)
          sum_sq += warp_sums[w];
        tile_sync<kThreads>();  // warp_sums is free for the next round
      }
      if (!has_row) continue;
      const float inv_rms = rsqrtf(sum_sq / l.cols + l.eps);
      bf16* out = l.out + row * l.cols;
#pragma unroll
      for (int j = 0; j < kHeld; ++j) {
        const int c = first + j * stride;
        if (c < chunks) {
          float f[8], w[8];
          unpack8(held_x[j], f);
          unpack8(held_w[j], w);
#pragma unroll
          for (int i = 0; i < 8; ++i) f[i] = round_bf16(f[i] * inv_rms) * w[i];
          store8(out + 8 * c, pack8(f));
        }
      }
#pragma unroll 4
      for (int c = first + kHeld * stride; c < chunks; c += stride) {
        float f[8], w[8];
        unpack8(load8(x + 8 * c), f);
        unpack8(load8(l.weight + 8 * c), w);
#pragma unroll
        for (int i = 0; i < 8; ++i) f[i] = round_bf16(f[i] * inv_rms) * w[i];
        store8(out + 8 * c, pack8(f));
      }
    }
  }
};

}  // namespace megacut::tiles
