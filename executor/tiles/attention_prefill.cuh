// attention, several query rows per tile (prefill): flash attention (FA2-style) on tensor
// cores, grouped-query aware.
//
// The tile's R query rows times its group's G heads make M = R * G query vectors, which all
// attend to the same KV head: they are stacked as the M dimension (m = row * G + head), so the
// keys and values are read once for the whole group. Eight warps each own a 16-row block of M
// (more blocks: more rounds). 64-key blocks of K and V stream through shared memory, two
// stages of cp.async; rows are padded by 16 bytes so ldmatrix is free of bank conflicts. Per
// block a warp computes S = Q K^T (mma), masks it (causal, sliding window, sequence start),
// updates its online softmax in fp32 and accumulates O += P V with P rounded to bf16 (mma,
// V through ldmatrix.trans). Blocks entirely outside a warp's key range are skipped.
#pragma once

#include "executor/tiles/attention_layout.cuh"
#include "executor/tiles/mma.cuh"

namespace megacut::tiles {

template <int kHeadDim>
struct AttentionPrefillTile {
  using Layout = AttentionLayout;

  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kBlockN = 64;           // keys per block
  static constexpr int kPitch = kHeadDim + 8;  // smem row, bf16 elements
  static constexpr int kTileBytes = kBlockN * kPitch * 2;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K, then V
  static constexpr int kKSteps = kHeadDim / 16;
  static constexpr int kDTiles = kHeadDim / 8;
  static_assert(kHeadDim == 16 || kHeadDim == 32 || kHeadDim == 64 || kHeadDim == 128, "head_dim");

  __host__ __device__ static int smem_bytes(const Layout&) { return 2 * kStageBytes; }

  __device__ static void load_block(const Layout& l, const bf16* keys, int first, int end,
                                    char* stage) {
    const int kv_cols = l.kv_heads * kHeadDim;
    constexpr int kChunks = kHeadDim / 8;
    for (int i = threadIdx.x; i < 2 * kBlockN * kChunks; i += kThreads) {
      const int which = i / (kBlockN * kChunks);  // 0: keys, 1: values
      const int key = i / kChunks % kBlockN, chunk = i % kChunks;
      const int j = first + key;
      const bool valid = j < end;
      const bf16* src = keys + (valid ? static_cast<long long>(j) * 2 * kv_cols : 0) +
                        which * kv_cols + chunk * 8;
      cp_async16(stage + which * kTileBytes + key * kPitch * 2 + chunk * 16, src, valid);
    }
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, q = lane % 4;
    const int group = l.heads / l.kv_heads;
    const int kv_head = static_cast<int>(box.col_begin / (group * kHeadDim));
    const int m_total = box.rows() * group;
    const int m_blocks = (m_total + 15) / 16;
    const long long seq = box.row_begin / l.seq_len;
    const int pos0 = l.past_len + static_cast<int>(box.row_begin % l.seq_len);  // of row 0
    const bf16* keys = l.cache + seq * l.capacity * 2 * l.kv_heads * kHeadDim + kv_head * kHeadDim;
    const float scale_log2 = l.scale * 1.4426950408889634f;
    const float neg_inf = -__int_as_float(0x7f800000);

    for (int round = 0; round * kWarps < m_blocks; ++round) {
      // Keys the round needs: from its first row's first key to its last row's position.
      const int m_first = round * kWarps * 16;
      const int m_last = min(m_total, m_first + kWarps * 16) - 1;
      const int key_begin = attention_first_key(l, pos0 + m_first / group);
      const int key_end = pos0 + m_last / group + 1;

      const int block = round * kWarps + warp;
      const bool active = block < m_blocks;
      // This thread's two query vectors (rows g and g + 8 of the warp's block).
      int lo[2], hi[2];
      const bf16* qrow[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = block * 16 + g + 8 * h;
        const bool live = active && m < m_total;
        const int r = live ? m / group : 0;
        hi[h] = live ? pos0 + r : -1;
        lo[h] = live ? attention_first_key(l, pos0 + r) : 0;
        qrow[h] = l.q + (box.row_begin + r) * l.q_stride +
                  (kv_head * group + (live ? m % group : 0)) * kHeadDim;
      }
      const int warp_lo = active ? attention_first_key(l, pos0 + block * 16 / group) : 0;
      const int warp_hi = active ? pos0 + (min(m_total, block * 16 + 16) - 1) / group : -1;

      unsigned qf[kKSteps][4];
#pragma unroll
      for (int t = 0; t < kKSteps; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e % 2, col = t * 16 + 2 * q + (e / 2) * 8;
          qf[t][e] = hi[h] >= 0 ? *reinterpret_cast<const unsigned*>(qrow[h] + col) : 0u;
        }
      float o[kDTiles][4];
#pragma unroll
      for (int d = 0; d < kDTiles; ++d)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[d][e] = 0.f;
      float row_max[2] = {neg_inf, neg_inf}, row_sum[2] = {0.f, 0.f};

      const int blocks = (key_end - key_begin + kBlockN - 1) / kBlockN;
      load_block(l, keys, key_begin, key_end, smem);
      cp_async_commit();
      for (int b = 0; b < blocks; ++b) {
        if (b + 1 < blocks) {
          load_block(l, keys, key_begin + (b + 1) * kBlockN, key_end,
                     smem + ((b + 1) % 2) * kStageBytes);
        }
        cp_async_commit();
        cp_async_wait<1>();
        tile_sync<kThreads>();  // block b landed for every thread
        const int first = key_begin + b * kBlockN;
        if (active && first <= warp_hi && first + kBlockN > warp_lo) {
          const char* stage = smem + (b % 2) * kStageBytes;
          float s[kBlockN / 8][4];  // (key n-tile, fragment)
#pragma unroll
          for (int n = 0; n < kBlockN / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
          for (int t = 0; t < kKSteps; ++t)
#pragma unroll
            for (int n = 0; n < kBlockN / 8; n += 2) {
              const int key = n * 8 + (lane % 8) + (lane / 16) * 8;
              const int col = t * 16 + ((lane / 8) % 2) * 8;
              unsigned r[4];
              ldmatrix_x4(r, stage + key * kPitch * 2 + col * 2);
              const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
              mma_bf16(s[n], qf[t], b0);
              mma_bf16(s[n + 1], qf[t], b1);
            }
            // Mask and online softmax, in log2 units; each row is spread over a quad of lanes.
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float block_max = neg_inf;
#pragma unroll
            for (int n = 0; n < kBlockN / 8; ++n)
#pragma unroll
              for (int e = 2 * h; e < 2 * h + 2; ++e) {
                const int j = first + n * 8 + 2 * q + (e & 1);
                s[n][e] = j >= lo[h] && j <= hi[h] ? s[n][e] * scale_log2 : neg_inf;
                block_max = fmaxf(block_max, s[n][e]);
              }
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 1));
            block_max = fmaxf(block_max, __shfl_xor_sync(0xffffffffu, block_max, 2));
            const float m_new = fmaxf(row_max[h], block_max);
            const float base = m_new == neg_inf ? 0.f : m_new;
            const float correction = exp2f(row_max[h] - base);
            row_max[h] = m_new;
            float block_sum = 0.f;
#pragma unroll
            for (int n = 0; n < kBlockN / 8; ++n)
#pragma unroll
              for (int e = 2 * h; e < 2 * h + 2; ++e) {
                s[n][e] = exp2f(s[n][e] - base);
                block_sum += s[n][e];
              }
            row_sum[h] = row_sum[h] * correction + block_sum;
#pragma unroll
            for (int d = 0; d < kDTiles; ++d) {
              o[d][2 * h] *= correction;
              o[d][2 * h + 1] *= correction;
            }
          }
          const char* values = stage + kTileBytes;
#pragma unroll
          for (int t = 0; t < kBlockN / 16; ++t) {
            const unsigned p[4] = {pack_bf16x2(s[2 * t][0], s[2 * t][1]),
                                   pack_bf16x2(s[2 * t][2], s[2 * t][3]),
                                   pack_bf16x2(s[2 * t + 1][0], s[2 * t + 1][1]),
                                   pack_bf16x2(s[2 * t + 1][2], s[2 * t + 1][3])};
#pragma unroll
            for (int d = 0; d < kDTiles; d += 2) {
              const int key = t * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
              const int col = d * 8 + (lane / 16) * 8;
              unsigned r[4];
              ldmatrix_x4_trans(r, values + key * kPitch * 2 + col * 2);
              const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
              mma_bf16(o[d], p, b0);
              mma_bf16(o[d + 1], p, b1);
            }
          }
        }
        tile_sync<kThreads>();  // block b consumed: its stage may be refilled
      }
      cp_async_wait<0>();

#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float total = row_sum[h];
        total += __shfl_xor_sync(0xffffffffu, total, 1);
        total += __shfl_xor_sync(0xffffffffu, total, 2);
        if (hi[h] < 0) continue;
        const float inv = 1.f / total;
        const int m = block * 16 + g + 8 * h;
        bf16* out = l.out + (box.row_begin + m / group) * l.heads * kHeadDim +
                    (kv_head * group + m % group) * kHeadDim + 2 * q;
#pragma unroll
        for (int d = 0; d < kDTiles; ++d) {
          *reinterpret_cast<__nv_bfloat162*>(out + d * 8) =
              __floats2bfloat162_rn(o[d][2 * h] * inv, o[d][2 * h + 1] * inv);
        }
      }
    }
  }
};

}  // namespace megacut::tiles
