// attention, one query row per tile (decode): flash-decoding within the tile. The key range
// [lo, pos] is dealt round-robin to "slots": groups of head_dim / 8 lanes, each reading one
// key's 16-byte slice per lane, so 4 warps hold 4 * 32 / (head_dim / 8) keys in flight, four
// deep (two for groups of 8). A slot scores its keys of a round together, then updates its
// online softmax (max, sum, weighted values) once per query head of the group, in registers;
// the slots then meet in shared memory and one pass rescales and sums them. The group's heads all
// read the same keys: GQA costs no extra traffic. Groups wider than kMaxGroup heads are done
// kMaxGroup at a time.
#pragma once

#include "executor/tiles/attention_layout.cuh"

namespace megacut::tiles {

template <int kHeadDim, int kMaxGroup>
struct AttentionDecodeTile {
  using Layout = AttentionLayout;

  static constexpr int kThreads = 128;
  static constexpr int kLanesPerKey = kHeadDim / 8;
  static constexpr int kSlots = kThreads / kLanesPerKey;
  static constexpr int kUnroll = kMaxGroup < 8 ? 4 : 2;  // keys in flight per slot
  static constexpr int kPartFloats = kHeadDim + 2;       // values, max, sum
  static_assert(kHeadDim == 16 || kHeadDim == 32 || kHeadDim == 64 || kHeadDim == 128, "head_dim");
  static_assert(kMaxGroup == 1 || kMaxGroup == 2 || kMaxGroup == 4 || kMaxGroup == 8, "group");

  __host__ __device__ static int smem_bytes(const Layout&) {
    return kSlots * kMaxGroup * kPartFloats * 4;
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    float* part = reinterpret_cast<float*>(smem);  // (kSlots, kMaxGroup, kPartFloats)
    const int group = l.heads / l.kv_heads;
    const int kv_head = static_cast<int>(box.col_begin / (group * kHeadDim));
    const int kv_cols = l.kv_heads * kHeadDim;
    const int slot = threadIdx.x / kLanesPerKey;
    const int d0 = threadIdx.x % kLanesPerKey * 8;
    const float scale_log2 = l.scale * 1.4426950408889634f;
    const float neg_inf = -__int_as_float(0x7f800000);

    for (long long row = box.row_begin; row < box.row_end; ++row) {
      const long long seq = row / l.seq_len;
      const int pos = l.past_len + static_cast<int>(row % l.seq_len);
      const int lo = attention_first_key(l, pos);
      const bf16* keys =
          l.cache + seq * l.capacity * (2 * kv_cols) + kv_head * kHeadDim + d0;  // (keys, ...)
      for (int g0 = 0; g0 < group; g0 += kMaxGroup) {
        const int heads_now = group - g0 < kMaxGroup ? group - g0 : kMaxGroup;
        const int head0 = kv_head * group + g0;
        float q[kMaxGroup][8], acc[kMaxGroup][8], m[kMaxGroup], sum[kMaxGroup];
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          if (g < heads_now)
            unpack8(load8(l.q + row * l.q_stride + (head0 + g) * kHeadDim + d0), q[g]);
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            q[g][i] = g < heads_now ? q[g][i] * scale_log2 : 0.f;
            acc[g][i] = 0.f;
          }
          m[g] = neg_inf;
          sum[g] = 0.f;
        }
        // Uniform trip count for the whole tile: the score sums shuffle across whole warps.
        for (int base = lo; base <= pos; base += kSlots * kUnroll) {
          float k[kUnroll][8], v[kUnroll][8];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int j = base + u * kSlots + slot;
            if (j <= pos) {
              unpack8(load8(keys + static_cast<long long>(j) * (2 * kv_cols)), k[u]);
              unpack8(load8(keys + static_cast<long long>(j) * (2 * kv_cols) + kv_cols), v[u]);
            } else {
#pragma unroll
              for (int i = 0; i < 8; ++i) k[u][i] = v[u][i] = 0.f;
            }
          }
          // Scores of all kUnroll keys first (independent shuffles), then one softmax update
          // per head for the lot: no chain of dependent updates from key to key.
          float s[kUnroll][kMaxGroup];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int g = 0; g < kMaxGroup; ++g) {
              float dot = 0.f;
#pragma unroll
              for (int i = 0; i < 8; ++i) dot += q[g][i] * k[u][i];
              s[u][g] = group_sum(dot, kLanesPerKey);
            }
#pragma unroll
          for (int g = 0; g < kMaxGroup; ++g) {
            float m_new = m[g];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              if (base + u * kSlots + slot <= pos) m_new = fmaxf(m_new, s[u][g]);
            }
            if (m_new == neg_inf) continue;  // no key for this slot in this round
            const float correction = exp2f(m[g] - m_new);
            m[g] = m_new;
            sum[g] *= correction;
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[g][i] *= correction;
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              if (base + u * kSlots + slot > pos) continue;
              const float p = exp2f(s[u][g] - m_new);
              sum[g] += p;
#pragma unroll
              for (int i = 0; i < 8; ++i) acc[g][i] += p * v[u][i];
            }
          }
        }
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          float* mine = part + (slot * kMaxGroup + g) * kPartFloats;
#pragma unroll
          for (int i = 0; i < 8; ++i) mine[d0 + i] = acc[g][i];
          if (d0 == 0) {
            mine[kHeadDim] = m[g];
            mine[kHeadDim + 1] = sum[g];
          }
        }
        tile_sync<kThreads>();
        for (int i = threadIdx.x; i < heads_now * kHeadDim; i += kThreads) {
          const int g = i / kHeadDim, d = i % kHeadDim;
          float m_all = neg_inf;
          for (int s = 0; s < kSlots; ++s) {
            m_all = fmaxf(m_all, part[(s * kMaxGroup + g) * kPartFloats + kHeadDim]);
          }
          float total = 0.f, value = 0.f;
          for (int s = 0; s < kSlots; ++s) {
            const float* p = part + (s * kMaxGroup + g) * kPartFloats;
            const float w = exp2f(p[kHeadDim] - m_all);
            total += w * p[kHeadDim + 1];
            value += w * p[d];
          }
          l.out[row * l.heads * kHeadDim + (head0 + g) * kHeadDim + d] =
              __float2bfloat16_rn(value / total);
        }
        tile_sync<kThreads>();  // shared memory is free again
      }
    }
  }
};

}  // namespace megacut::tiles
