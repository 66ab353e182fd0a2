// rope: rotary position embedding of the query and key heads, Hugging Face's rotate_half
// convention: within a head, (x[i], x[i + d/2]) rotate by angle pos * inv_freq[i], with
// pos = past_len + row % seq_len and inv_freq[i] = theta^(-2i/d), rescaled as HF's
// _compute_llama3_parameters does when llama3 is set. All in fp32, as HF computes the angles;
// one rounding to bf16 at the end.
//
// The tile first computes its head's d/2 frequencies into shared memory; then each thread
// rotates 8 pairs at a time: 16 bytes from each half of the head.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// The rotation's frequencies: HF's inverse frequency i (of head_dim / 2), fp32 step by step.
struct RopeFrequencies {
  int head_dim;  // multiple of 16
  float theta;
  int llama3;  // 1: Llama-3 frequency scaling with the four fields below
  float factor;
  float low_freq_factor;
  float high_freq_factor;
  float original_max_position;

  __device__ float inverse(int i) const {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float inv = 1.0f / powf(theta, exponent);
    if (!llama3) return inv;
    const float low_freq_wavelen = original_max_position / low_freq_factor;
    const float high_freq_wavelen = original_max_position / high_freq_factor;
    const float wavelen = 6.283185307179586f / inv;
    const float scaled = wavelen > low_freq_wavelen ? inv / factor : inv;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (!medium) return scaled;
    const float smooth =
        (original_max_position / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
    return (1.0f - smooth) * scaled / factor + smooth * scaled;
  }
};

struct RopeTile {
  struct Layout {
    const bf16* x;  // (rows, x_stride): q heads, then k heads, in the first out_cols columns
    bf16* out;      // (rows, out_cols), out_cols = (heads + kv_heads) * head_dim
    int x_stride;
    int out_cols;
    int seq_len;
    int past_len;
    RopeFrequencies freq;
    TileGrid grid;  // (rows, out_cols), tile_cols a multiple of head_dim
  };

  static constexpr int kThreads = 128;

  __host__ __device__ static int smem_bytes(const Layout& l) { return l.freq.head_dim / 2 * 4; }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* freq = reinterpret_cast<float*>(smem);  // (head_dim / 2)
    const int head_dim = l.freq.head_dim, half = head_dim / 2;
    for (int i = threadIdx.x; i < half; i += kThreads) freq[i] = l.freq.inverse(i);
    tile_sync<kThreads>();

    const int chunks = half / 8;  // per head
    const int heads_in_tile = box.cols() / head_dim;
    const int items = box.rows() * heads_in_tile * chunks;
    for (int item = threadIdx.x; item < items; item += kThreads) {
      const int chunk = item % chunks;
      const int head = item / chunks % heads_in_tile;
      const long long row = box.row_begin + item / chunks / heads_in_tile;
      const long long col = box.col_begin + head * head_dim + 8 * chunk;
      const float pos = static_cast<float>(l.past_len + row % l.seq_len);
      float a[8], b[8];
      unpack8(load8(l.x + row * l.x_stride + col), a);
      unpack8(load8(l.x + row * l.x_stride + col + half), b);
      float ya[8], yb[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float s, c;
        sincosf(pos * freq[8 * chunk + i], &s, &c);
        ya[i] = a[i] * c - b[i] * s;
        yb[i] = b[i] * c + a[i] * s;
      }
      store8(l.out + row * l.out_cols + col, pack8(ya));
      store8(l.out + row * l.out_cols + col + half, pack8(yb));
    }
    tile_sync<kThreads>();  // shared memory is free again
  }
};

}  // namespace megacut::tiles
