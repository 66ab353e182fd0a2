// argmax: for each row of f32 logits, the first index of the largest value (NaN counts as
// largest, as torch.argmax has it), as int32: greedy decoding's next token.
//
// One row per tile: a long, thin reduction (128k logits) that one CTA must stream alone, so
// the tile is wide (1024 threads), reads 16 bytes per load with four loads in flight
// per thread, and reduces (value, index) pairs by shuffles, then across warps in shared memory.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct ArgmaxTile {
  struct Layout {
    const float* logits;  // (rows, vocab)
    int* out;             // (rows)
    int vocab;
    TileGrid grid;  // (rows, 1)
  };

  static constexpr int kThreads = 1024;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kUnroll = 4;  // 16-byte loads in flight per thread (64 registers)
  static_assert(kWarps == 32, "one warp reduces the warps' results");

  __host__ __device__ static int smem_bytes(const Layout&) { return kWarps * 8; }

  // Whether (v, i) beats (best_v, best_i): larger, or equal at a smaller index; NaN beats all.
  __device__ static bool better(float v, int i, float best_v, int best_i) {
    if (v != v) return best_v == best_v || i < best_i;
    if (best_v != best_v) return false;
    return v > best_v || (v == best_v && i < best_i);
  }

  __device__ static void consider(float v, int i, float& best_v, int& best_i) {
    if (better(v, i, best_v, best_i)) {
      best_v = v;
      best_i = i;
    }
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* warp_v = reinterpret_cast<float*>(smem);           // (kWarps)
    int* warp_i = reinterpret_cast<int*>(smem + kWarps * 4);  // (kWarps)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (long long row = box.row_begin; row < box.row_end; ++row) {
      const float* p = l.logits + row * l.vocab;
      // Scalar head up to 16-byte alignment, float4 body, scalar tail.
      int head = static_cast<int>((16 - (reinterpret_cast<unsigned long long>(p) & 15)) & 15) / 4;
      head = head < l.vocab ? head : l.vocab;
      const int body = (l.vocab - head) / 4;
      float best_v = -__int_as_float(0x7f800000);
      int best_i = 0x7fffffff;
      if (static_cast<int>(threadIdx.x) < head)
        consider(p[threadIdx.x], threadIdx.x, best_v, best_i);
      const float4* p4 = reinterpret_cast<const float4*>(p + head);
      for (int j0 = threadIdx.x; j0 < body; j0 += kUnroll * kThreads) {
        float4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int j = j0 + u * kThreads;
          v[u] = j < body ? p4[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int j = j0 + u * kThreads;
          if (j >= body) break;
          const int i = head + 4 * j;
          consider(v[u].x, i, best_v, best_i);
          consider(v[u].y, i + 1, best_v, best_i);
          consider(v[u].z, i + 2, best_v, best_i);
          consider(v[u].w, i + 3, best_v, best_i);
        }
      }
      const int tail = head + 4 * body + threadIdx.x;
      if (tail < l.vocab) consider(p[tail], tail, best_v, best_i);
      for (int offset = 16; offset > 0; offset /= 2) {
        const float v = __shfl_xor_sync(0xffffffffu, best_v, offset);
        const int i = __shfl_xor_sync(0xffffffffu, best_i, offset);
        consider(v, i, best_v, best_i);
      }
      if (lane == 0) {
        warp_v[warp] = best_v;
        warp_i[warp] = best_i;
      }
      tile_sync<kThreads>();
      if (warp == 0) {
        best_v = warp_v[lane];
        best_i = warp_i[lane];
        for (int offset = 16; offset > 0; offset /= 2) {
          const float v = __shfl_xor_sync(0xffffffffu, best_v, offset);
          const int i = __shfl_xor_sync(0xffffffffu, best_i, offset);
          consider(v, i, best_v, best_i);
        }
        if (lane == 0) l.out[row] = best_i;
      }
      tile_sync<kThreads>();  // shared memory is free for the next row
    }
  }
};

}  // namespace megacut::tiles
