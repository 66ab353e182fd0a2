// rmsnorm: y = bf16(x * rsqrt(mean(x^2) + eps)) * w, in fp32, rounded to bf16 twice as
// Hugging Face's LlamaRMSNorm does (normalize in fp32, cast, multiply by the bf16 weight).
//
// One warp per row: a row of a few thousand features is a handful of 16-byte loads per lane,
// all in flight at once, and the sum of squares needs only shuffles. The second pass re-reads
// the row from L1. With attr select_stride S > 1 output row r normalizes input row r*S + S-1
// (the last position of each sequence, all the language-model head needs).
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

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int chunks = l.cols / 8;
    for (long long row = box.row_begin + warp; row < box.row_end; row += kWarps) {
      const long long in_row = row * l.select_stride + l.select_stride - 1;
      const bf16* x = l.x + in_row * l.cols;
      float sum_sq = 0.f;
#pragma unroll 4
      for (int c = lane; c < chunks; c += 32) {
        float f[8];
        unpack8(load8(x + 8 * c), f);
#pragma unroll
        for (int i = 0; i < 8; ++i) sum_sq += f[i] * f[i];
      }
      const float inv_rms = rsqrtf(warp_sum(sum_sq) / l.cols + l.eps);
      for (int c = lane; c < chunks; c += 32) {
        float f[8], w[8];
        unpack8(load8(x + 8 * c), f);
        unpack8(load8(l.weight + 8 * c), w);
#pragma unroll
        for (int i = 0; i < 8; ++i) f[i] = round_bf16(f[i] * inv_rms) * w[i];
        store8(l.out + row * l.cols + 8 * c, pack8(f));
      }
    }
  }
};

}  // namespace megacut::tiles
