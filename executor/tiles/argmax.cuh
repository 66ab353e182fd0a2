// argmax: for each row of f32 logits, the first index of the largest value (NaN counts as
// largest, as torch.argmax has it), as int32: greedy decoding's next token.
//
// One row per tile: a long, thin reduction (128k logits) that one CTA must stream alone. The
// tile is 256 threads wide, the width of the other bodies, so that a megakernel region holding
// it keeps the register budget of a 256-thread block. Each thread keeps kUnroll 16-byte loads
// in flight while it scans the kUnroll before (64 KB per CTA in flight, as many as 1024 threads
// with four loads each had); then (value, index) pairs are reduced by shuffles, and across
// warps in shared memory.
//
// A thread meets its elements in increasing index order, so its scan needs no index compare: a
// later element wins only if it is larger, or NaN where the best so far is not. Most groups of
// four hold no such element, which their NaN-propagating maximum shows at a quarter of the
// cost. A thread whose elements are all -inf keeps no index (kNone); the reduction across
// threads uses the full order, and a row of nothing but -inf ends at index 0.
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

  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kUnroll = 8;  // 16-byte loads in flight per thread, twice in registers
  static constexpr int kNone = 0x7fffffff;
  static_assert((kWarps & (kWarps - 1)) == 0 && kWarps <= 32, "one warp reduces the warps");

  __host__ __device__ static int smem_bytes(const Layout&) { return kWarps * 8; }

  // Whether (v, i) beats (best_v, best_i): larger, or equal at a smaller index; NaN beats all.
  __device__ static bool better(float v, int i, float best_v, int best_i) {
    if (v != v) return best_v == best_v || i < best_i;
    if (best_v != best_v) return false;
    return v > best_v || (v == best_v && i < best_i);
  }

  // `better` for an index above best_i: !(v <= best_v) holds when v is larger or either is NaN.
  __device__ static void scan(float v, int i, float& best_v, int& best_i) {
    if (!(v <= best_v) && best_v == best_v) {
      best_v = v;
      best_i = i;
    }
  }

  // The larger of a and b, NaN if either is (fmaxf would drop it).
  __device__ static float max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float m;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
    return m;
#else
    return a != a || b != b ? __int_as_float(0x7fffffff) : fmaxf(a, b);
#endif
  }

  // Elements i .. i + 3, all above best_i.
  __device__ static void scan4(const float4& v, int i, float& best_v, int& best_i) {
    const float m = max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w));
    if (!(m <= best_v) && best_v == best_v) {
      scan(v.x, i, best_v, best_i);
      scan(v.y, i + 1, best_v, best_i);
      scan(v.z, i + 2, best_v, best_i);
      scan(v.w, i + 3, best_v, best_i);
    }
  }

  // float4s j0, j0 + kThreads, ... of the row body; zeros past its end (never scanned).
  __device__ static void load(const float4* p4, int j0, int body, float4 (&v)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = j0 + u * kThreads;
      v[u] = j < body ? p4[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }

  __device__ static void reduce(float& best_v, int& best_i, int width) {
    for (int offset = width / 2; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(0xffffffffu, best_v, offset);
      const int i = __shfl_xor_sync(0xffffffffu, best_i, offset);
      if (better(v, i, best_v, best_i)) {
        best_v = v;
        best_i = i;
      }
    }
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* warp_v = reinterpret_cast<float*>(smem);           // (kWarps)
    int* warp_i = reinterpret_cast<int*>(smem + kWarps * 4);  // (kWarps)
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    for (long long row = box.row_begin; row < box.row_end; ++row) {
      const float* p = l.logits + row * l.vocab;
      // Scalar head up to 16-byte alignment, float4 body, scalar tail.
      int head = static_cast<int>((16 - (reinterpret_cast<unsigned long long>(p) & 15)) & 15) / 4;
      head = head < l.vocab ? head : l.vocab;
      const int body = (l.vocab - head) / 4;
      float best_v = -__int_as_float(0x7f800000);
      int best_i = kNone;
      if (t < head) scan(p[t], t, best_v, best_i);
      const float4* p4 = reinterpret_cast<const float4*>(p + head);
      float4 cur[kUnroll];  // (kUnroll) float4s t + u * kThreads of this step
      load(p4, t, body, cur);
      for (int j0 = t; j0 < body; j0 += kUnroll * kThreads) {
        float4 next[kUnroll];
        load(p4, j0 + kUnroll * kThreads, body, next);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int j = j0 + u * kThreads;
          if (j < body) scan4(cur[u], head + 4 * j, best_v, best_i);
          cur[u] = next[u];
        }
      }
      const int tail = head + 4 * body + t;
      if (tail < l.vocab) scan(p[tail], tail, best_v, best_i);
      reduce(best_v, best_i, 32);
      if (lane == 0) {
        warp_v[warp] = best_v;
        warp_i[warp] = best_i;
      }
      tile_sync<kThreads>();
      if (warp == 0) {
        best_v = lane < kWarps ? warp_v[lane] : best_v;
        best_i = lane < kWarps ? warp_i[lane] : best_i;
        reduce(best_v, best_i, kWarps);
        if (lane == 0) l.out[row] = best_i == kNone ? 0 : best_i;
      }
      tile_sync<kThreads>();  // shared memory is free for the next row
    }
  }
};

}  // namespace megacut::tiles
