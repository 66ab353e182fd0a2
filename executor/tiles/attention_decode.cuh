// attention, one query row and one query head per tile (decode): flash-decoding within the tile.
// The key range [lo, pos] is dealt round-robin to "slots": groups of head_dim / 8 lanes, each lane
// holding 8 dimensions of one key, so the block's 256 threads hold 32 keys (16 at head_dim 128)
// at a time, kKeysPerSlot deep: a context of 256 keys (128) is one round of loads, all in flight
// at once, which is what a decode step's attention waits for. Each slot scores its keys of a
// round together, then updates its online softmax (max, sum, weighted values) once, in
// registers; the slots then meet in shared memory and a log-sum-exp merge over them, in a fixed
// order, gives the head's output. A tile per query head, not per KV head: the query heads that
// share a KV head read the same keys from L2, and the step's attention spreads over as many SMs
// as it has heads.
#pragma once

#include "executor/tiles/attention_layout.cuh"

namespace megacut::tiles {

template <int kHeadDim>
struct AttentionDecodeTile {
  using Layout = AttentionLayout;

  static constexpr int kThreads = 256;
  static constexpr int kLanesPerKey = kHeadDim / 8;
  static constexpr int kSlots = kThreads / kLanesPerKey;
  static constexpr int kKeysPerSlot = 8;            // keys in flight per slot and round
  static constexpr int kPartFloats = kHeadDim + 2;  // values, max, sum
  static_assert(kHeadDim == 16 || kHeadDim == 32 || kHeadDim == 64 || kHeadDim == 128, "head_dim");

  __host__ __device__ static int smem_bytes(const Layout&) { return kSlots * kPartFloats * 4; }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* part = reinterpret_cast<float*>(smem);  // (kSlots, kPartFloats)
    const int group = l.heads / l.kv_heads;
    const int head = static_cast<int>(box.col_begin / kHeadDim);
    const int kv_head = head / group;
    const int kv_cols = l.kv_heads * kHeadDim;
    const int slot = threadIdx.x / kLanesPerKey;
    const int d0 = threadIdx.x % kLanesPerKey * 8;
    const float scale_log2 = l.scale * 1.4426950408889634f;
    const float neg_inf = -__int_as_float(0x7f800000);

    for (long long row = box.row_begin; row < box.row_end; ++row) {
      const long long seq = static_cast<int>(row) / l.seq_len;  // 32-bit division (rows < 2^31)
      const int pos = l.past_len + static_cast<int>(row) % l.seq_len;
      const int lo = attention_first_key(l, pos);
      const bf16* keys =
          l.cache + seq * l.capacity * (2 * kv_cols) + kv_head * kHeadDim + d0;  // (keys, ...)
      float q[8], acc[8], m = neg_inf, sum = 0.f;
      unpack8(load8(l.q + row * l.q_stride + head * kHeadDim + d0), q);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        q[i] *= scale_log2;
        acc[i] = 0.f;
      }
      // Uniform trip count for the whole tile: the score sums shuffle across whole warps.
      for (int base = lo; base <= pos; base += kSlots * kKeysPerSlot) {
        uint4 k[kKeysPerSlot], v[kKeysPerSlot];
#pragma unroll
        for (int u = 0; u < kKeysPerSlot; ++u) {
          const int j = base + u * kSlots + slot;
          const bf16* key = keys + static_cast<long long>(j <= pos ? j : lo) * (2 * kv_cols);
          k[u] = *reinterpret_cast<const uint4*>(key);
          v[u] = *reinterpret_cast<const uint4*>(key + kv_cols);
        }
        // Scores of the round's keys first (independent shuffles), then one softmax update for
        // the lot: no chain of dependent updates from key to key.
        float s[kKeysPerSlot];
        float m_new = m;
#pragma unroll
        for (int u = 0; u < kKeysPerSlot; ++u) {
          float kf[8];
          unpack8(*reinterpret_cast<const Vec8*>(&k[u]), kf);
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < 8; ++i) dot += q[i] * kf[i];
          s[u] = group_sum(dot, kLanesPerKey);
          if (base + u * kSlots + slot <= pos) m_new = fmaxf(m_new, s[u]);
        }
        if (m_new == neg_inf) continue;  // no key for this slot in this round
        const float correction = exp2f(m - m_new);
        m = m_new;
        sum *= correction;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[i] *= correction;
#pragma unroll
        for (int u = 0; u < kKeysPerSlot; ++u) {
          if (base + u * kSlots + slot > pos) continue;
          const float p = exp2f(s[u] - m_new);
          float vf[8];
          unpack8(*reinterpret_cast<const Vec8*>(&v[u]), vf);
          sum += p;
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[i] += p * vf[i];
        }
      }
      float* mine = part + slot * kPartFloats;
#pragma unroll
      for (int i = 0; i < 8; ++i) mine[d0 + i] = acc[i];
      if (d0 == 0) {
        mine[kHeadDim] = m;
        mine[kHeadDim + 1] = sum;
      }
      tile_sync<kThreads>();
      for (int d = threadIdx.x; d < kHeadDim; d += kThreads) {
        float m_all = neg_inf;
        for (int s = 0; s < kSlots; ++s) m_all = fmaxf(m_all, part[s * kPartFloats + kHeadDim]);
        float total = 0.f, value = 0.f;
        for (int s = 0; s < kSlots; ++s) {
          const float* p = part + s * kPartFloats;
          const float w = exp2f(p[kHeadDim] - m_all);
          total += w * p[kHeadDim + 1];
          value += w * p[d];
        }
        l.out[row * l.heads * kHeadDim + head * kHeadDim + d] = __float2bfloat16_rn(value / total);
      }
      tile_sync<kThreads>();  // shared memory is free again
    }
  }
};

}  // namespace megacut::tiles
