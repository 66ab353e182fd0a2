// linear, many rows (prefill: tile_rows == 128): y[128, C] = x[128, K] W[C, K]^T for one
// tile on Hopper's warpgroup MMA (tiles/wgmma.cuh).
//
// 64-wide K blocks of x and W are staged in shared memory by cp.async, every thread copying its
// share, in the 128-byte swizzle wgmma reads (16-byte chunk c of row r at c ^ (r % 8)), zero
// filled past the tile's rows, columns and K. kStages stages: while block b is multiplied, block
// b - 1's wgmma may still run and blocks b + 1 .. b + kStages - 2 are in flight. Each of the two
// warpgroups multiplies 64 of the 128 rows by all C columns (m64nCk16, four k16 steps a block)
// into f32 accumulators in registers, which the threads store straight to y.
#pragma once

#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/mma.cuh"
#include "executor/tiles/wgmma.cuh"

namespace megacut::tiles {

template <int kCols, typename OutT>
struct LinearMmaTile {
  using Layout = LinearLayout<OutT>;

  static constexpr int kThreads = 256;  // two warpgroups: rows [0, 64) and [64, 128)
  static constexpr int kRows = 128;
  static constexpr int kBlockK = 64;  // one 128-byte swizzled row per tile row
  static constexpr int kStageBytes = (kRows + kCols) * kBlockK * 2;  // x rows, then W rows
  // Four stages (H200, 2026-12-03, every Llama-3.2-1B prefill linear shape at 128 to 4096 rows):
  // six to twelve were no faster at 128 rows and up to 40% slower at more, where the smaller
  // footprint lets two or three CTAs share an SM.
  static constexpr int kStages = 4;
  static constexpr int kAhead = kStages - 2;  // blocks in flight while one is multiplied
  static constexpr int kAccumulators = WarpgroupMma<kCols>::kAccumulators;
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kStageBytes % 1024 == 0, "stages keep the swizzle's 1024-byte alignment");
  static_assert(kStages >= 3, "a block multiplied, the one before it, one in flight");
  static_assert(kStages * kStageBytes + 1024 <= 227 * 1024, "shared memory");

  // The stages, and room to align the first to 1024 bytes.
  __host__ __device__ static int smem_bytes(const Layout&) { return kStages * kStageBytes + 1024; }

  // Stage <- K block `kb`: (kRows + kCols) rows of 8 16-byte chunks, x's then w's.
  __device__ static void load_block(const Layout& l, const bf16* w, const TileBox& box, int kb,
                                    char* stage) {
    const int k0 = kb * kBlockK;
    for (int i = threadIdx.x; i < (kRows + kCols) * 8; i += kThreads) {
      const int row = i / 8, chunk = i % 8;
      const int k = k0 + chunk * 8;
      const bf16* src;
      bool valid;
      if (row < kRows) {
        const long long r = box.row_begin + row;
        valid = r < box.row_end && k < l.k;
        src = l.x + (valid ? r * l.k + k : 0);
      } else {
        const long long n = box.col_begin + row - kRows;
        valid = n < box.col_end && k < l.k;
        src = w + (valid ? n * l.k + k : 0);
      }
      cp_async16(stage + row * 128 + ((chunk ^ (row & 7)) * 16), src, valid);
    }
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const bf16* const w = weight_rows(l);  // (n, k)
    char* const stages = smem + ((1024 - (shared_address(smem) & 1023)) & 1023);
    const int group = threadIdx.x / 128;  // warpgroup: rows [64 group, 64 group + 64)
    const int blocks = (l.k + kBlockK - 1) / kBlockK;

    float acc[kAccumulators];
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.f;

#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
      if (s < blocks) load_block(l, w, box, s, stages + s * kStageBytes);
      cp_async_commit();
    }
    for (int kb = 0; kb < blocks; ++kb) {
      cp_async_wait<kAhead - 1>();
      // This thread's copies of block kb, made by the generic proxy, become visible to the
      // async proxy wgmma reads through; after the barrier, everyone's are, and every
      // warpgroup's wgmma of block kb - 2 is done (each waited for all but its last group).
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      tile_sync<kThreads>();
      const int next = kb + kAhead;
      if (next < blocks) load_block(l, w, box, next, stages + (next % kStages) * kStageBytes);
      cp_async_commit();

      const char* stage = stages + (kb % kStages) * kStageBytes;
      const char* a = stage + group * 64 * 128;
      const char* b = stage + kRows * 128;
      __syncwarp();
      wgmma_hold(acc);
      wgmma_fence();
#pragma unroll
      for (int t = 0; t < kBlockK / 16; ++t) {
        WarpgroupMma<kCols>::run(acc, wgmma_desc_sw128(a + 32 * t), wgmma_desc_sw128(b + 32 * t));
      }
      wgmma_commit();
      wgmma_wait<1>();
      wgmma_hold(acc);
    }
    wgmma_wait<0>();
    wgmma_hold(acc);
    cp_async_wait<0>();
    tile_sync<kThreads>();  // shared memory is free again

    const bool pair_aligned = l.n % 2 == 0;
    const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kCols / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = box.row_begin + group * 64 + warp * 16 + lane / 4 + 8 * h;
        const long long c = box.col_begin + j * 8 + 2 * (lane % 4);
        if (r >= box.row_end || c >= box.col_end) continue;
        OutT* y = l.y + r * l.n + c;
        const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
        if (c + 1 < box.col_end) {
          store_out2(y, v0, v1, pair_aligned);
        } else {
          store_out(y, v0);
        }
      }
  }
};

}  // namespace megacut::tiles
