// conv1d and conv-transpose1d, computed directly: one thread per output element, fp32
// accumulation over (tap, input channel), one rounding to bf16. The bodies for every shape the
// tensor-core body (conv_mma.cuh) does not take: grouped and depthwise convolutions, channel
// counts that are not whole 8-channel chunks (the one-channel waveform of a vocoder's last
// conv), tiles of any width.
//
// Threads walk the tile's elements row-major, so a warp covers consecutive output channels of
// one row: a depthwise conv reads consecutive input channels, a dense one broadcasts each input
// value to the warp. Taps that fall outside the output row's sequence are skipped, so a task
// reads only rows inside its input boxes. Inputs and weights come straight from global memory
// (L1 and L2 hold the tile's working set); no shared memory.
#pragma once

#include "executor/tiles/conv_layout.cuh"

namespace megacut::tiles {

struct Conv1dTile {
  using Layout = ConvLayout;

  static constexpr int kThreads = 256;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int cols = box.cols();
    const int items = box.rows() * cols;
    const int in_per_group = l.in_channels / l.groups;
    const int out_per_group = l.out_channels / l.groups;
    const int reach = (l.kernel - 1) * l.dilation;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long t = box.row_begin + i / cols;
      const int o = static_cast<int>(box.col_begin) + i % cols;
      const bf16* x = l.x + o / out_per_group * in_per_group;  // o's group's first input channel
      const bf16* w = l.w + static_cast<long long>(o) * in_per_group * l.kernel;  // (in / g, k)
      // Tap j reads row t + j * dilation + lookahead - reach, inside [t - position, t - position
      // + len). Rows fit an int (ConvLayout).
      const int position = static_cast<int>(t) % l.len;
      float acc = conv_bias(l, o);
      // A tap outside the sequence reads row t itself (inside the task's input boxes) and adds
      // nothing: no branch, so the loads of several taps are in flight at once.
#pragma unroll 4
      for (int j = 0; j < l.kernel; ++j) {
        const int shift = j * l.dilation + l.lookahead - reach;
        const bool inside = position + shift >= 0 && position + shift < l.len;
        const bf16* xr = x + (t + (inside ? shift : 0)) * l.in_channels;
#pragma unroll 4
        for (int c = 0; c < in_per_group; ++c) {
          const float v = __bfloat162float(xr[c]);
          acc += (inside ? v : 0.f) * __bfloat162float(w[c * l.kernel + j]);
        }
      }
      l.y[t * l.out_channels + o] = __float2bfloat16_rn(acc);
    }
  }
};

struct ConvTranspose1dTile {
  using Layout = ConvLayout;

  static constexpr int kThreads = 256;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int cols = box.cols();
    const int items = box.rows() * cols;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const int t = static_cast<int>(box.row_begin) + i / cols;  // rows fit an int (ConvLayout)
      const int o = static_cast<int>(box.col_begin) + i % cols;
      const int m = t / l.stride;  // the newest input row t reads
      const int position = m % l.len;
      const int w_step = l.out_channels * l.kernel;  // W[c, o, j] at c * out_channels * kernel
      float acc = conv_bias(l, o);
      // Taps j = t % stride + n * stride read input row m - n, never before the sequence start.
      for (int j = t - m * l.stride, n = 0; j < l.kernel && n <= position; j += l.stride, ++n) {
        const bf16* xr = l.x + static_cast<long long>(m - n) * l.in_channels;
        const bf16* w = l.w + o * l.kernel + j;
#pragma unroll 4
        for (int c = 0; c < l.in_channels; ++c) {
          acc += __bfloat162float(xr[c]) * __bfloat162float(w[c * w_step]);
        }
      }
      l.y[static_cast<long long>(t) * l.out_channels + o] = __float2bfloat16_rn(acc);
    }
  }
};

}  // namespace megacut::tiles
