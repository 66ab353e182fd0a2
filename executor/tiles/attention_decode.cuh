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
#include "executor/tiles/stream.cuh"

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
    const int head = static_cast<int>(box.col_begin / kHeadDim);
    for (long long row = box.row_begin; row < box.row_end; ++row) {
      const int pos = l.past_len + static_cast<int>(row) % l.seq_len;
      Softmax r = start(l, l.q + row * l.q_stride + head * kHeadDim);
      cache_rounds(l, row, head, attention_first_key(l, pos), pos, r);
      finish(l, row, head, r, reinterpret_cast<float*>(smem));
    }
  }

  // One thread's part of a query row's online softmax: the query's 8 dimensions of its lane
  // (scaled for exp2), the running max, sum and weighted values of its slot's keys.
  struct Softmax {
    float q[8];
    float acc[8];
    float m;
    float sum;
  };

  // Its lane's dimensions of the query head at q_head, nothing seen yet.
  __device__ static Softmax start(const Layout& l, const bf16* q_head) {
    Softmax r;
    const int d0 = threadIdx.x % kLanesPerKey * 8;
    const float scale_log2 = l.scale * 1.4426950408889634f;
    unpack8(load8(q_head + d0), r.q);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      r.q[i] *= scale_log2;
      r.acc[i] = 0.f;
    }
    r.m = -__int_as_float(0x7f800000);
    r.sum = 0.f;
    return r;
  }

  // kKeys keys of the slot, their lane's 8 dimensions at k[u] and v[u], each counting where
  // counts[u] (alike in every lane of the slot): the scores first (independent shuffles), then one
  // softmax update for the lot, no chain of dependent updates from key to key. Whole warps call
  // it: the score sums shuffle across them.
  template <int kKeys>
  __device__ static void update(Softmax& r, const uint4 (&k)[kKeys], const uint4 (&v)[kKeys],
                                const bool (&counts)[kKeys]) {
    float s[kKeys];
    float m_new = r.m;
#pragma unroll
    for (int u = 0; u < kKeys; ++u) {
      float kf[8];
      unpack8(*reinterpret_cast<const Vec8*>(&k[u]), kf);
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot += r.q[i] * kf[i];
      s[u] = group_sum(dot, kLanesPerKey);
      if (counts[u]) m_new = fmaxf(m_new, s[u]);
    }
    if (m_new == -__int_as_float(0x7f800000)) return;  // no key for this slot
    const float correction = exp2f(r.m - m_new);
    r.m = m_new;
    r.sum *= correction;
#pragma unroll
    for (int i = 0; i < 8; ++i) r.acc[i] *= correction;
#pragma unroll
    for (int u = 0; u < kKeys; ++u) {
      if (!counts[u]) continue;
      const float p = exp2f(s[u] - m_new);
      float vf[8];
      unpack8(*reinterpret_cast<const Vec8*>(&v[u]), vf);
      r.sum += p;
#pragma unroll
      for (int i = 0; i < 8; ++i) r.acc[i] += p * vf[i];
    }
  }

  // Cache positions [lo, last] of query row `row`'s sequence, for query head `head`, read from
  // device memory in rounds of kSlots * kKeysPerSlot keys: a context of 256 keys (128 at
  // head_dim 128) is one round of loads, all in flight at once. Every thread of the tile calls
  // it (a uniform trip count: the score sums shuffle across whole warps).
  __device__ static void cache_rounds(const Layout& l, long long row, int head, int lo, int last,
                                      Softmax& r) {
    const int kv_head = head / (l.heads / l.kv_heads);
    const int kv_cols = l.kv_heads * kHeadDim;
    const int slot = threadIdx.x / kLanesPerKey;
    const int d0 = threadIdx.x % kLanesPerKey * 8;
    const long long seq = static_cast<int>(row) / l.seq_len;  // 32-bit division (rows < 2^31)
    const bf16* keys =
        l.cache + seq * l.capacity * (2 * kv_cols) + kv_head * kHeadDim + d0;  // (keys, ...)
    for (int base = lo; base <= last; base += kSlots * kKeysPerSlot) {
      uint4 k[kKeysPerSlot], v[kKeysPerSlot];
      bool counts[kKeysPerSlot];
#pragma unroll
      for (int u = 0; u < kKeysPerSlot; ++u) {
        const int j = base + u * kSlots + slot;
        counts[u] = j <= last;
        const bf16* key = keys + static_cast<long long>(counts[u] ? j : lo) * (2 * kv_cols);
        k[u] = *reinterpret_cast<const uint4*>(key);
        v[u] = *reinterpret_cast<const uint4*>(key + kv_cols);
      }
      update(r, k, v, counts);
    }
  }

  // The slots meet in shared memory (`part`: smem_bytes of it) and a log-sum-exp merge over them,
  // in a fixed order, gives the head's output. Every thread of the tile calls it. Where the
  // layout has y_flagged, the output also goes there, as `region`'s run's.
  __device__ static void finish(const Layout& l, long long row, int head, const Softmax& r,
                                float* part, const RegionRun& region = {}) {
    const int slot = threadIdx.x / kLanesPerKey;
    const int d0 = threadIdx.x % kLanesPerKey * 8;
    const float neg_inf = -__int_as_float(0x7f800000);
    float* mine = part + slot * kPartFloats;
#pragma unroll
    for (int i = 0; i < 8; ++i) mine[d0 + i] = r.acc[i];
    if (d0 == 0) {
      mine[kHeadDim] = r.m;
      mine[kHeadDim + 1] = r.sum;
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
      const long long at = row * l.heads * kHeadDim + head * kHeadDim + d;
      const float y = value / total;
      l.out[at] = __float2bfloat16_rn(y);
      if (l.y_flagged != nullptr) {
        // Outputs d and d + 1 (d even) are this lane's and the next's, of whole warps (or the
        // first kHeadDim lanes, below 32).
        constexpr unsigned kLanes = kHeadDim >= 32 ? 0xffffffffu : (1u << kHeadDim) - 1;
        const float next = __shfl_down_sync(kLanes, y, 1);
        if (d % 2 == 0) {
          store_flagged(l.y_flagged + at / 2, __float2bfloat16_rn(y), __float2bfloat16_rn(next),
                        region.run);
        }
      }
    }
    tile_sync<kThreads>();  // shared memory is free again
  }
};

// qkv-attention, one row and one query head per tile (decode, one new row a sequence): the
// query head and the KV head's new key and value straight from qkv's output. Two warps first
// make them what qk-norm, rope and kv-append would have left (a group of head_dim / 8 lanes a
// vector, as the key loop holds keys: the query, the key, the value), rounding where those ops
// round, into shared memory; the tile of the KV head's first query head also writes the key and
// the value into the cache. The cached positions [lo, pos) come through the CTA's stream
// (tiles/stream.cuh), as a streamed linear's weights do: no op of the stage writes them, so the
// producer copies them while the tile, or the tasks before it, still wait for qkv's words.
// Stage s holds kStageKeys positions from lo + s * kStageKeys: their keys, then their values;
// each slot scores its two keys of a stage, then the new position's key and value come from
// shared memory, after the stages: no tile reads the position the stage writes.
template <int kHeadDim>
struct QkvAttentionDecodeTile {
  using Layout = QkvAttentionLayout;
  using Attend = AttentionDecodeTile<kHeadDim>;
  using Softmax = typename Attend::Softmax;

  static constexpr int kThreads = Attend::kThreads;
  static constexpr int kLanes = Attend::kLanesPerKey;
  static constexpr int kHalf = kHeadDim / 2;
  // Cached positions a stage, their keys and their values: a slot's room.
  static constexpr int kStageKeys = kStreamSlotBytes / (4 * kHeadDim);
  static constexpr int kBoxBytes = kStageKeys * kHeadDim * 2;  // keys, or values, of a stage
  static constexpr int kKeysPerSlot = kStageKeys / Attend::kSlots;
  static_assert(kThreads == kStreamConsumerThreads, "a streamed body's warps");
  static_assert(kStageKeys <= 256 && kKeysPerSlot * Attend::kSlots == kStageKeys, "stage keys");
  static_assert(3 * kLanes <= 64, "the query, the key and the value in two warps");
  static_assert(64 + kHalf <= kThreads, "a rotation a thread after the first two warps");

  // The key loop's, then the new query, key and value (bf16), then the rotation's cosines and
  // sines.
  __host__ __device__ static int smem_bytes(const Layout& l) {
    return Attend::smem_bytes(l) + 3 * kHeadDim * 2 + 2 * kHalf * 4;
  }

  // Whether it can take q as flagged words, and give its output so (tiles/flagged.cuh).
  __host__ __device__ static bool takes_flagged_x(const Layout& l) { return l.q_stride % 2 == 0; }
  __host__ __device__ static bool gives_flagged_y(const Layout&) { return true; }

  // The cache as the stream reads it: (sequences * capacity, 2 * kv_heads * head_dim), boxes of
  // one head's head_dim columns by kStageKeys positions.
  __host__ __device__ static TensorMapShape map_shape(const Layout& l) {
    const long long sequences = (l.grid.rows + l.seq_len - 1) / l.seq_len;
    return {l.cache, 2ll * l.kv_heads * kHeadDim, sequences * l.capacity, kHeadDim, kStageKeys, 0};
  }

  // The tile's cached positions [lo, pos): keys at the KV head's columns, values kv_cols after.
  // The previous step's kernel wrote the last of them: read after the grids before.
  __device__ static StreamPlan stream(const Layout& l, long long tile, const void* map) {
    const long long row = l.grid.box(tile).row_begin;  // one row a tile
    const int head = static_cast<int>(l.grid.box(tile).col_begin / kHeadDim);
    const int pos = l.past_len + static_cast<int>(row) % l.seq_len;
    const int lo = attention_first_key(l, pos);
    const long long seq = static_cast<int>(row) / l.seq_len;
    StreamPlan p{};
    p.map = map;
    p.row = static_cast<int>(seq * l.capacity + lo);
    p.box_k = kHeadDim;
    p.boxes = 2;
    p.stages = (pos - lo + kStageKeys - 1) / kStageKeys;
    p.box_bytes = kBoxBytes;
    p.after_prior_grids = 1;
    p.stage_rows = kStageKeys;
    p.k_first = head / (l.heads / l.kv_heads) * kHeadDim;
    p.box_stride_k = l.kv_heads * kHeadDim;
    return p;
  }

  // Cached positions [lo, pos) of the row from the cursor's stages (plan: stream), into `r`.
  // Every thread of the tile calls it; each stage is released once the next one has landed, the
  // last after `done` (the output stored).
  __device__ static int staged_keys(StreamCursor& cursor, int lo, int pos, Softmax& r) {
    const int slot = threadIdx.x / kLanes;
    const int d0 = threadIdx.x % kLanes * 8;
    const int stages = (pos - lo + kStageKeys - 1) / kStageKeys;
    for (int s = 0; s < stages; ++s) {
      const bf16* keys = reinterpret_cast<const bf16*>(cursor.wait());
      if (s > 0) cursor.release();  // the stage before: its reads are done
      uint4 k[kKeysPerSlot], v[kKeysPerSlot];
      bool counts[kKeysPerSlot];
#pragma unroll
      for (int u = 0; u < kKeysPerSlot; ++u) {
        const int t = u * Attend::kSlots + slot;
        counts[u] = lo + s * kStageKeys + t < pos;
        k[u] = *reinterpret_cast<const uint4*>(keys + t * kHeadDim + d0);
        v[u] = *reinterpret_cast<const uint4*>(keys + (kStageKeys + t) * kHeadDim + d0);
      }
      Attend::update(r, k, v, counts);
    }
    return stages;
  }

  __device__ static void run(const Layout& l, long long tile, char* smem, StreamCursor& cursor) {
    if (threadIdx.x >= kThreads) return;
    const RegionRun& region = cursor.region;
    const AttentionLayout& a = l;
    const TileBox box = a.grid.box(tile);
    const int head = static_cast<int>(box.col_begin / kHeadDim);
    const int group = a.heads / a.kv_heads;
    const int kv_head = head / group;
    const int kv_cols = a.kv_heads * kHeadDim;
    bf16* fresh = reinterpret_cast<bf16*>(smem + Attend::smem_bytes(a));  // q, k, v
    float* rot = reinterpret_cast<float*>(fresh + 3 * kHeadDim);  // cos, then sin (head_dim / 2)
    const long long row = box.row_begin;  // one row a tile (decode's attention tiling)
    const int pos = a.past_len + static_cast<int>(row) % a.seq_len;
    // The warps after the first two compute the rotation's cosines and sines at the position (no
    // input of the stage's) while those two wait for qkv's words.
    if (threadIdx.x >= 64 && threadIdx.x < 64 + kHalf) {
      float sn, cs;
      sincosf(static_cast<float>(pos) * l.rope.inverse(threadIdx.x - 64), &sn, &cs);
      rot[threadIdx.x - 64] = cs;
      rot[kHalf + threadIdx.x - 64] = sn;
    }
    const int role = threadIdx.x / kLanes;  // 0 the query, 1 the key, 2 the value
    const int d0 = threadIdx.x % kLanes * 8;
    const int col = role == 0   ? head * kHeadDim
                    : role == 1 ? (a.heads + kv_head) * kHeadDim
                                : (a.heads + a.kv_heads + kv_head) * kHeadDim;
    // qk-norm's weights (the query's or the key's) before the wait, too.
    Vec8 norm_weights{};
    if (threadIdx.x < 64 && role < 2 && l.qk_norm != nullptr) {
      norm_weights = load8(l.qk_norm + role * kHeadDim + d0);
    }
    float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (threadIdx.x < 64 && role < 3) {
      const long long at = row * a.q_stride + col + d0;
      if (l.x_flagged != nullptr) {
        const unsigned long long* words[1] = {l.x_flagged + at / 2};
        uint4 v[1];
        check_flagged_wait(
            load_flagged_chunks<1>(words, region.run, region.stop, region.timeout_ns, v));
        unpack8(*reinterpret_cast<const Vec8*>(&v[0]), f);
      } else {
        unpack8(load8(a.q + at), f);
      }
    }
    tile_sync<kThreads>();  // the rotation
    if (l.x_flagged != nullptr) mark_inputs(region);
    if (threadIdx.x < 64) {        // whole warps: the sums and the rotation shuffle
      if (l.qk_norm != nullptr) {  // QkNormTile's arithmetic
        float sum_sq = 0.f;
#pragma unroll
        for (int i = 0; i < 8; ++i) sum_sq += f[i] * f[i];
        const float inv_rms = rsqrtf(group_sum(sum_sq, kLanes) / kHeadDim + l.eps);
        if (role < 2) {
          float w[8];
          unpack8(norm_weights, w);
#pragma unroll
          for (int i = 0; i < 8; ++i) f[i] = round_bf16(round_bf16(f[i] * inv_rms) * w[i]);
        }
      }
      // RopeTile's arithmetic: (x[i], x[i + d/2]) of a head sit kLanes / 2 lanes apart.
      float other[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) other[i] = __shfl_xor_sync(0xffffffffu, f[i], kLanes / 2);
      if (role < 2) {
        const bool first_half = d0 < kHalf;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float cs = rot[d0 % kHalf + i], sn = rot[kHalf + d0 % kHalf + i];
          f[i] = first_half ? f[i] * cs - other[i] * sn : f[i] * cs + other[i] * sn;
        }
      }
      if (role < 3) {
        const Vec8 packed = pack8(f);
        store8(fresh + role * kHeadDim + d0, packed);
        if (role > 0 && head % group == 0) {
          const long long seq = static_cast<int>(row) / a.seq_len;
          store8(l.cache_out + (seq * a.capacity + pos) * (2 * kv_cols) + (role - 1) * kv_cols +
                     kv_head * kHeadDim + d0,
                 packed);
        }
      }
    }
    tile_sync<kThreads>();
    Softmax r = Attend::start(a, fresh);
    const int stages = staged_keys(cursor, attention_first_key(a, pos), pos, r);
    own_key(fresh + kHeadDim, r);
    Attend::finish(a, row, head, r, reinterpret_cast<float*>(smem), region);
    if (stages > 0) cursor.release();
  }

  // The row's own key and value (shared memory, `newest`: the key, then the value) into `r`:
  // every slot scores it (whole warps), slot 0 keeps it.
  __device__ static void own_key(const bf16* newest, Softmax& r) {
    const int d0 = threadIdx.x % kLanes * 8;
    const uint4 k[1] = {*reinterpret_cast<const uint4*>(newest + d0)};
    const uint4 v[1] = {*reinterpret_cast<const uint4*>(newest + kHeadDim + d0)};
    const bool counts[1] = {threadIdx.x / kLanes == 0};
    Attend::update(r, k, v, counts);
  }
};

}  // namespace megacut::tiles
