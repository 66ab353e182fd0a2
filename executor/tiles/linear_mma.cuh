// linear, many rows (prefill: tile_rows == 128): y[128, C] = x[128, K] W[C, K]^T for one
// tile on tensor cores.
//
// A classic sm_80-style GEMM main loop, which Hopper runs unchanged: 64-wide K blocks of x and
// W staged in shared memory by cp.async, three stages deep so two blocks are in flight while
// one is multiplied; rows of 128 bytes swizzled (16-byte chunk c of row r sits at c ^
// (r % 8)) so ldmatrix reads are free of bank conflicts; mma.m16n8k16 with f32 accumulators. Eight
// warps tile the 128 x C output as 8 x 1 (C <= 32) or 4 x 2 (C >= 64). Rows past the tile's
// edge and K past its end are zero-filled by cp.async and never stored.
#pragma once

#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/mma.cuh"

namespace megacut::tiles {

template <int kCols, typename OutT>
struct LinearMmaTile {
  using Layout = LinearLayout<OutT>;

  static constexpr int kThreads = 256;
  static constexpr int kRows = 128;
  static constexpr int kBlockK = 64;  // one 128-byte smem row per tile row
  // Three stages: four or five measured no faster (H200, 2026-11-29: Llama-3.2-1B prefill
  // qkv 29.8 vs 29.6 us), the 128 x 16 tiles being bound by L2 traffic (each re-reads x).
  static constexpr int kStages = 3;
  static constexpr int kWarpsN = kCols >= 64 ? 2 : 1;
  static constexpr int kWarpsM = kThreads / 32 / kWarpsN;
  static constexpr int kWarpRows = kRows / kWarpsM;
  static constexpr int kWarpCols = kCols / kWarpsN;
  static constexpr int kMI = kWarpRows / 16;
  static constexpr int kNI = kWarpCols / 8;
  static constexpr int kStageBytes = (kRows + kCols) * kBlockK * 2;  // x rows, then W rows
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kNI % 2 == 0, "B fragments load two n-tiles at a time");
  static_assert(kStages * kStageBytes <= 227 * 1024, "shared memory");

  __host__ __device__ static int smem_bytes(const Layout&) { return kStages * kStageBytes; }

  // Stage `slot` <- K block `kb`: (kRows + kCols) rows of 8 16-byte chunks, x's then w's.
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
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / kWarpsN, wn = warp % kWarpsN;
    const int blocks = (l.k + kBlockK - 1) / kBlockK;

    float acc[kMI][kNI][4];
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < blocks) load_block(l, w, box, s, smem + s * kStageBytes);
      cp_async_commit();
    }
    for (int kb = 0; kb < blocks; ++kb) {
      cp_async_wait<kStages - 2>();
      tile_sync<kThreads>();  // block kb landed for all threads; block kb - 1 is consumed
      const int next = kb + kStages - 1;
      if (next < blocks) load_block(l, w, box, next, smem + (next % kStages) * kStageBytes);
      cp_async_commit();

      const char* stage = smem + (kb % kStages) * kStageBytes;
#pragma unroll
      for (int t = 0; t < kBlockK / 16; ++t) {
        unsigned a[kMI][4];
        unsigned b[kNI][2];
#pragma unroll
        for (int i = 0; i < kMI; ++i) {
          const int row = wm * kWarpRows + i * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
          const int chunk = 2 * t + lane / 16;
          ldmatrix_x4(a[i], stage + row * 128 + ((chunk ^ (row & 7)) * 16));
        }
#pragma unroll
        for (int j = 0; j < kNI; j += 2) {
          const int row = kRows + wn * kWarpCols + j * 8 + (lane % 8) + (lane / 16) * 8;
          const int chunk = 2 * t + (lane / 8) % 2;
          unsigned r[4];
          ldmatrix_x4(r, stage + row * 128 + ((chunk ^ (row & 7)) * 16));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < kMI; ++i)
#pragma unroll
          for (int j = 0; j < kNI; ++j) mma_bf16(acc[i][j], a[i], b[j]);
      }
    }
    cp_async_wait<0>();
    tile_sync<kThreads>();  // shared memory is free again

    const bool pair_aligned = l.n % 2 == 0;
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long r = box.row_begin + wm * kWarpRows + i * 16 + lane / 4 + 8 * h;
          const long long c = box.col_begin + wn * kWarpCols + j * 8 + 2 * (lane % 4);
          if (r >= box.row_end || c >= box.col_end) continue;
          OutT* y = l.y + r * l.n + c;
          if (c + 1 < box.col_end) {
            store_out2(y, acc[i][j][2 * h], acc[i][j][2 * h + 1], pair_aligned);
          } else {
            store_out(y, acc[i][j][2 * h]);
          }
        }
  }
};

}  // namespace megacut::tiles
