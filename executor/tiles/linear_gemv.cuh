// linear, few rows (decode: tile_rows <= 64): y[R, C] = x[R, K] W[C, K]^T for one tile,
// bound by reading the tile's C weight rows once.
//
// The tile's warps split K (and, for tiles wider than 32, the columns); each lane reads
// 16 contiguous bytes of a weight row straight from global memory into registers, several
// chunks ahead, with no shared-memory staging. The products run on tensor cores
// (mma.m16n8k16, rows padded to 16): the dot product over k may visit k in any order as long
// as x and W agree, so each lane's 8 contiguous k values serve as its fragment elements of two
// k16 steps (logical k 2q,2q+1 / 2q+8,2q+9 of step s = physical 8q+4s+0,1 / 8q+4s+2,3). That
// keeps every load 16 bytes wide without ldmatrix. Each K-slice's partial sums go to its own
// (R, C) f32 slice of shared memory, summed in a fixed order and written out coalesced: no
// atomics, so a tile's result does not depend on which warp finishes first.
#pragma once

#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/mma.cuh"

namespace megacut::tiles {

// kCols: tile width (16, 32, 64, 128); kMTiles: 16-row blocks covering tile_rows (1, 2, 4).
template <int kCols, int kMTiles, typename OutT>
struct LinearGemvTile {
  using Layout = LinearLayout<OutT>;

  static constexpr int kThreads = 256;
  // Two CTAs per SM keep the weight stream busy; with more rows the registers do not fit two.
  // (512-thread CTAs measured slower overall on H200, 2026-11-29: Llama-3.2-1B decode gate_up
  // 21.8 -> 27.2 us, o 5.3 -> 4.7 us.)
  static constexpr int kMinBlocksPerSm = kMTiles == 1 ? 2 : 1;
  static constexpr int kWarps = kThreads / 32;
  // Warps own at most 32 columns (wider tiles split columns as well as K): at most 64
  // accumulator registers per lane, and few enough registers for two CTAs per SM.
  static constexpr int kWarpCols = kCols < 32 ? kCols : 32;
  static constexpr int kWarpsN = kCols / kWarpCols;
  static constexpr int kWarpsK = kWarps / kWarpsN;
  static constexpr int kNTiles = kWarpCols / 8;
  // 32-k chunks loaded ahead per lane: about 80 registers of loads in flight.
  static constexpr int kChunkRegs = 4 * kNTiles + 8 * kMTiles;
  static constexpr int kUnroll = 80 / kChunkRegs > 0 ? 80 / kChunkRegs : 1;
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kMTiles == 1 || kMTiles == 2 || kMTiles == 4, "row blocks");
  static_assert(kWarpsN * kWarpCols == kCols && kWarpsK >= 1, "warp split");

  __host__ __device__ static int smem_bytes(const Layout& l) {
    return kWarpsK * l.grid.tile_rows * kCols * 4;
  }

  // The weight rows a tile reads, contiguous: a persistent region asks L2 for them ahead of
  // the task, since weights are no task's output. None for step-head, whose rows follow the
  // step, a stage input that may not be written yet.
  __device__ static ByteSpan weight_span(const Layout& l, long long tile) {
    if (l.step != nullptr) return {nullptr, 0};
    const TileBox box = l.grid.box(tile);
    return {l.w + box.col_begin * l.k, box.cols() * static_cast<long long>(l.k) * 2};
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const bf16* const weights = weight_rows(l);       // (n, k)
    float* partial = reinterpret_cast<float*>(smem);  // (kWarpsK, rows, kCols)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wn = warp % kWarpsN, wk = warp / kWarpsN;
    const int g = lane / 4, q = lane % 4;
    const int rows = box.rows(), cols = box.cols();

    float acc[kMTiles][kNTiles][4];
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    const int chunks = (l.k + 31) / 32;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int base = wk * kUnroll; base < chunks; base += kWarpsK * kUnroll) {
      uint4 w[kUnroll][kNTiles];   // (chunk, n-tile): 8 k of weight row n
      uint4 xa[kUnroll][kMTiles];  // (chunk, m-tile): 8 k of row g
      uint4 xb[kUnroll][kMTiles];  // (chunk, m-tile): 8 k of row g + 8
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int k = (base + u) * 32 + q * 8;
        const bool k_ok = k < l.k;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
          const int c = wn * kWarpCols + j * 8 + g;
          w[u][j] =
              k_ok && c < cols ? load16_stream(weights + (box.col_begin + c) * l.k + k) : zero;
        }
#pragma unroll
        for (int i = 0; i < kMTiles; ++i) {
          const int r = i * 16 + g;
          const bf16* x = l.x + (box.row_begin + r) * l.k + k;
          xa[u][i] = k_ok && r < rows ? *reinterpret_cast<const uint4*>(x) : zero;
          xb[u][i] = k_ok && r + 8 < rows ? *reinterpret_cast<const uint4*>(x + 8 * l.k) : zero;
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int s = 0; s < 2; ++s)
#pragma unroll
          for (int i = 0; i < kMTiles; ++i) {
            const unsigned a[4] = {word(xa[u][i], 2 * s), word(xb[u][i], 2 * s),
                                   word(xa[u][i], 2 * s + 1), word(xb[u][i], 2 * s + 1)};
#pragma unroll
            for (int j = 0; j < kNTiles; ++j) {
              const unsigned b[2] = {word(w[u][j], 2 * s), word(w[u][j], 2 * s + 1)};
              mma_bf16(acc[i][j], a, b);
            }
          }
    }

#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = i * 16 + g + 8 * h;
          const int c = wn * kWarpCols + j * 8 + 2 * q;
          if (r < rows) {
            *reinterpret_cast<float2*>(&partial[(wk * rows + r) * kCols + c]) =
                make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
          }
        }
    tile_sync<kThreads>();
    for (int i = threadIdx.x; i < rows * cols; i += kThreads) {
      const int r = i / cols, c = i % cols;
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kWarpsK; ++k) sum += partial[(k * rows + r) * kCols + c];
      store_out(l.y + (box.row_begin + r) * l.n + box.col_begin + c, sum);
    }
    tile_sync<kThreads>();  // shared memory is free again
  }
};

}  // namespace megacut::tiles
