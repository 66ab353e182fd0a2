// conv1d and conv-transpose1d on tensor cores: an implicit GEMM over the taps. For each tap the
// tile's output rows read a window of input rows shifted by that tap, so
//   y[128, C] = sum over taps j and input-channel blocks of X_j[128, chunk] W_j[C, chunk]^T
// where X_j is the staged input window seen from row offset j and W_j the tap's weights.
//
// Per step of `chunk` input channels (64, 32 or 16: the host picks the largest whose staging
// fits, ConvLayout::chunk) the CTA stages (a) the tile's whole input window by cp.async, rows
// outside the tile's sequences zero-filled, and (b) the weights of every tap, transposed from
// the checkpoint's layout to (tap, output channel, input channel): read 16 bytes at a time,
// scattered by 2-byte stores (conv1d) or transposed 8 x 8 in registers and stored 16 bytes at a
// time (conv-transpose1d); then eight warps run mma.m16n8k16 (f32 accumulate), fragments by
// ldmatrix from rows padded by 16 bytes (any 8 consecutive rows hit distinct banks, whatever the
// shift). A tap that falls outside an output row's sequence is zeroed in the
// A fragment, row by row.
//
// Staging is not overlapped with the multiplies within a CTA (two CTAs per SM overlap each
// other), and the weights are re-read per 128-row tile (AudioOpsThroughput in
// tests/gpu/audio_ops_test.cc prints what that costs).
//
// conv1d (dense): output row r of the tile reads window row r + j * dilation through tap j.
// conv-transpose1d: output row t reads input row t / stride - n through tap t % stride +
// n * stride, so the GEMM takes the tile's rows phase by phase (t % stride), each phase's rows
// (at most ceil(tile_rows / stride)) padded to whole m16 blocks: every block holds one phase,
// hence one set of taps. The padded rows, stride * that, must fit the 128 GEMM rows.
// C = kCols output channels.
#pragma once

#include "executor/tiles/conv_layout.cuh"
#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/mma.cuh"

namespace megacut::tiles {

template <int kCols, bool kTranspose>
struct ConvMmaTile {
  using Layout = ConvLayout;

  static constexpr int kThreads = 256;
  // Two CTAs per SM: one stages while the other multiplies (staging is not pipelined within a
  // CTA). Shared memory allows it (kConvMmaSmemBytes); registers are held to 128.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kRows = 128;
  static constexpr int kWarpsN = kCols >= 64 ? 2 : 1;
  static constexpr int kWarpsM = kThreads / 32 / kWarpsN;
  static constexpr int kWarpRows = kRows / kWarpsM;
  static constexpr int kWarpCols = kCols / kWarpsN;
  static constexpr int kMI = kWarpRows / 16;
  static constexpr int kNI = kWarpCols / 8;
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kNI % 2 == 0, "B fragments load two n-tiles at a time");

  // A staged row: `chunk` bf16 values and 16 bytes of padding. Taps of the weights sit 16 bytes
  // further apart than their kCols rows, so that the transposing stores of one warp, which walk
  // the taps, spread over the banks.
  __host__ __device__ static int row_bytes(const Layout& l) { return 2 * l.chunk + 16; }
  __host__ __device__ static int tap_bytes(const Layout& l) { return kCols * row_bytes(l) + 16; }
  // conv-transpose1d: GEMM rows per phase, ceil(tile_rows / stride) rounded up to 16.
  __host__ __device__ static int phase_rows(const Layout& l) {
    return ((l.grid.tile_rows + l.stride - 1) / l.stride + 15) / 16 * 16;
  }
  // Input rows staged: conv1d, the 128 rows' reach; conv-transpose1d, the ceil(tile_rows /
  // stride) + 1 rows a tile's phases can start in and the (kernel - 1) / stride before them.
  __host__ __device__ static int window_rows(const Layout& l) {
    return kTranspose ? (l.grid.tile_rows + l.stride - 1) / l.stride + 1 + (l.kernel - 1) / l.stride
                      : kRows + (l.kernel - 1) * l.dilation;
  }
  // The input window, then the weights, (kernel, kCols) rows. op_support.cc's conv_shape sizes
  // `chunk` with the same formula.
  __host__ __device__ static int smem_bytes(const Layout& l) {
    return window_rows(l) * row_bytes(l) + l.kernel * tap_bytes(l);
  }

  // Input channels [c0, c0 + chunk) of the window; input row `base` is window row 0, and only
  // rows [first, last) are read.
  __device__ static void stage_window(const Layout& l, long long base, long long first,
                                      long long last, int c0, char* xs) {
    const int pieces = l.chunk / 8, rb = row_bytes(l), rows = window_rows(l);
    for (int i = threadIdx.x; i < rows * pieces; i += kThreads) {
      const int row = i / pieces, piece = i % pieces;
      const long long src = base + row;
      const int c = c0 + 8 * piece;
      const bool valid = src >= first && src < last && c < l.in_channels;
      cp_async16(xs + row * rb + 16 * piece, valid ? l.x + src * l.in_channels + c : l.x, valid);
    }
  }

  // Weights of input channels [c0, c0 + chunk) and the tile's output channels, every tap, as
  // (tap, output channel, input channel); zero past the tile's channels. The global reads walk
  // the checkpoint's layout in 16-byte pieces, several in flight per thread.
  __device__ static void stage_weights(const Layout& l, const TileBox& box, int c0, char* ws) {
    if constexpr (kTranspose) {
      if (l.out_channels * l.kernel % 8 == 0) {
        stage_transposed_weights(l, box, c0, ws);
      } else {
        stage_weights_by_element(l, box, c0, ws);
      }
    } else {
      stage_conv_weights(l, box, c0, ws);
    }
  }

  // conv1d, W (out, in, kernel): output channel o's chunk * kernel values are contiguous, 16-byte
  // aligned (in_channels is a multiple of 8, c0 of 16), and whole pieces lie inside or outside
  // in_channels. Each piece's 8 values go to 8 (tap, channel) places, 2 bytes each.
  __device__ static void stage_conv_weights(const Layout& l, const TileBox& box, int c0, char* ws) {
    constexpr int kBatch = 4;
    const int rb = row_bytes(l), tb = tap_bytes(l), k = l.kernel;
    const int per_o = l.chunk * k / 8;  // pieces per output channel
    const int in_left = l.in_channels - c0;
    const int valid = (in_left < l.chunk ? in_left : l.chunk) * k / 8;
    const int pieces = kCols * per_o, cols = box.cols();
    for (int u0 = threadIdx.x; u0 < pieces; u0 += kBatch * kThreads) {
      uint4 v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int u = u0 + b * kThreads, o = u / per_o, p = u % per_o;
        const uint4* src =
            reinterpret_cast<const uint4*>(l.w + ((box.col_begin + o) * l.in_channels + c0) * k);
        v[b] = u < pieces && o < cols && p < valid ? __ldg(src + p) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int u = u0 + b * kThreads;
        if (u >= pieces) break;
        const int o = u / per_o, e = u % per_o * 8;
        int c = e / k, j = e % k;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const unsigned half = q % 2 == 0 ? word(v[b], q / 2) & 0xffffu : word(v[b], q / 2) >> 16;
          *reinterpret_cast<unsigned short*>(ws + j * tb + o * rb + 2 * c) =
              static_cast<unsigned short>(half);
          if (++j == k) j = 0, ++c;
        }
      }
    }
  }

  // conv-transpose1d, W (in, out, kernel) with out * kernel a multiple of 8: input channel c's
  // kCols * kernel values for the tile are contiguous. A thread takes one 16-byte piece of 8
  // consecutive input channels, transposes the 8 x 8 values in registers and stores 8 pieces,
  // one per (tap, output channel), each 8 input channels wide.
  __device__ static void stage_transposed_weights(const Layout& l, const TileBox& box, int c0,
                                                  char* ws) {
    const int rb = row_bytes(l), tb = tap_bytes(l), k = l.kernel;
    const int per_c = kCols * k / 8;   // pieces per input channel
    const int valid = box.cols() * k;  // values per input channel inside the tile
    for (int u = threadIdx.x; u < l.chunk / 8 * per_c; u += kThreads) {
      const int c = u / per_c * 8, e = u % per_c * 8;
      const bf16* src =
          l.w + ((c0 + c) * static_cast<long long>(l.out_channels) + box.col_begin) * k + e;
      const long long row = static_cast<long long>(l.out_channels) * k;
      uint4 v[8];
      if (c0 + c < l.in_channels && e + 8 <= valid) {
#pragma unroll
        for (int r = 0; r < 8; ++r) v[r] = __ldg(reinterpret_cast<const uint4*>(src + r * row));
      } else {  // past the tile's channels (or all input channels): zeros where outside
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          unsigned h[8];
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const bool in = c0 + c < l.in_channels && e + q < valid;
            h[q] = in ? *reinterpret_cast<const unsigned short*>(src + r * row + q) : 0u;
          }
          v[r] = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                            h[6] | h[7] << 16);
        }
      }
      int o = e / k, j = e % k;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        // Value q of each of the 8 rows: the low or high half of word q / 2.
        const unsigned sel = q % 2 == 0 ? 0x5410u : 0x7632u;
        const uint4 t = make_uint4(__byte_perm(word(v[0], q / 2), word(v[1], q / 2), sel),
                                   __byte_perm(word(v[2], q / 2), word(v[3], q / 2), sel),
                                   __byte_perm(word(v[4], q / 2), word(v[5], q / 2), sel),
                                   __byte_perm(word(v[6], q / 2), word(v[7], q / 2), sel));
        *reinterpret_cast<uint4*>(ws + j * tb + o * rb + 2 * c) = t;
        if (++j == k) j = 0, ++o;
      }
    }
  }

  // conv-transpose1d with out * kernel not a multiple of 8: value by value.
  __device__ static void stage_weights_by_element(const Layout& l, const TileBox& box, int c0,
                                                  char* ws) {
    const int rb = row_bytes(l), tb = tap_bytes(l), k = l.kernel, per_c = kCols * k;
    const bf16 zero = __float2bfloat16_rn(0.f);
    for (int e = threadIdx.x; e < l.chunk * per_c; e += kThreads) {
      const int c = e / per_c, o = e % per_c / k, j = e % k;
      const bool valid = c0 + c < l.in_channels && box.col_begin + o < box.col_end;
      const long long at = ((c0 + c) * static_cast<long long>(l.out_channels) + box.col_begin + o);
      *reinterpret_cast<bf16*>(ws + j * tb + o * rb + 2 * c) = valid ? l.w[at * k + j] : zero;
    }
  }

  __device__ static void run(const Layout& l, long long tile, char* smem) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / kWarpsN, wn = warp % kWarpsN;
    const int rb = row_bytes(l), rows = window_rows(l);
    // Rows of the tile in the GEMM: conv1d, the box's; conv-transpose1d, `per_phase` rows for
    // each phase in turn (rows past the box's end are masked).
    const int per_phase = kTranspose ? phase_rows(l) : 0;
    const int gemm_rows = kTranspose ? l.stride * per_phase : box.rows();
    long long first, last, base;
    if constexpr (kTranspose) {
      conv_transpose1d_rows(l, box, first, last);
      base = box.row_begin / l.stride - (l.kernel - 1) / l.stride;
    } else {
      conv1d_rows(l, box, first, last);
      base = box.row_begin - static_cast<long long>(l.kernel - 1) * l.dilation + l.lookahead;
    }
    char* xs = smem;              // (rows, chunk)
    char* ws = smem + rows * rb;  // (kernel, kCols, chunk)

    float acc[kMI][kNI][4];
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    for (int c0 = 0; c0 < l.in_channels; c0 += l.chunk) {
      stage_window(l, base, first, last, c0, xs);
      cp_async_commit();
      stage_weights(l, box, c0, ws);
      cp_async_wait<0>();
      tile_sync<kThreads>();
      if constexpr (kTranspose) {
#pragma unroll
        for (int i = 0; i < kMI; ++i) {
          const int block = wm * kWarpRows + i * 16;
          if (block < gemm_rows)
            mma_phase_block(l, box, block, per_phase, rows, xs, ws, lane, wn, acc[i]);
        }
      } else {
        mma_rows(l, box, xs, ws, lane, wm, wn, acc);
      }
      tile_sync<kThreads>();  // the staged step is consumed
    }

    const bool pair_aligned = l.out_channels % 2 == 0;
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int v = wm * kWarpRows + i * 16 + lane / 4 + 8 * h;
        const long long t = output_row(box, v, per_phase, l.stride);
        if (v >= gemm_rows || t >= box.row_end) continue;
#pragma unroll
        for (int j = 0; j < kNI; ++j) {
          const long long c = box.col_begin + wn * kWarpCols + j * 8 + 2 * (lane % 4);
          if (c >= box.col_end) continue;
          bf16* y = l.y + t * l.out_channels + c;
          const float a = acc[i][j][2 * h] + conv_bias(l, c);
          if (c + 1 < box.col_end) {
            store_out2(y, a, acc[i][j][2 * h + 1] + conv_bias(l, c + 1), pair_aligned);
          } else {
            store_out(y, a);
          }
        }
      }
  }

  // The output row of GEMM row v: conv-transpose1d, row v % per_phase of phase v / per_phase,
  // counted from the tile's first row of that phase.
  __device__ static long long output_row(const TileBox& box, int v, int per_phase, int stride) {
    if constexpr (kTranspose) {
      const int phase = v / per_phase;
      const int skip = (phase - static_cast<int>(box.row_begin % stride) + stride) % stride;
      return box.row_begin + skip + static_cast<long long>(v % per_phase) * stride;
    }
    return box.row_begin + v;
  }

  // conv1d: the warp's kMI m16 blocks (tile rows wm * kWarpRows + 16 i ...) over every tap of
  // the staged step. Tap n shifts the A rows by n * dilation; each B fragment is loaded once and
  // serves every block.
  __device__ static void mma_rows(const Layout& l, const TileBox& box, const char* xs,
                                  const char* ws, int lane, int wm, int wn,
                                  float (&acc)[kMI][kNI][4]) {
    const int rb = row_bytes(l), reach = (l.kernel - 1) * l.dilation;
    const int first = wm * kWarpRows;
    if (first >= box.rows()) return;
    int pos_lo[kMI], pos_hi[kMI];  // the fragment rows' positions in their sequences
    bool live_lo[kMI], live_hi[kMI];
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
      const int row = first + i * 16 + lane / 4;
      pos_lo[i] = static_cast<int>((box.row_begin + row) % l.len);
      pos_hi[i] = static_cast<int>((box.row_begin + row + 8) % l.len);
      live_lo[i] = row < box.rows();
      live_hi[i] = row + 8 < box.rows();
    }
    const char* a_base = xs + (first + lane % 8 + (lane / 8) % 2 * 8) * rb + lane / 16 * 16;
    for (int n = 0; n < l.kernel; ++n) {
      const int shift = n * l.dilation + l.lookahead - reach;
      bool ok_lo[kMI], ok_hi[kMI], any = false;
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
        ok_lo[i] = live_lo[i] && pos_lo[i] + shift >= 0 && pos_lo[i] + shift < l.len;
        ok_hi[i] = live_hi[i] && pos_hi[i] + shift >= 0 && pos_hi[i] + shift < l.len;
        any = any || ok_lo[i] || ok_hi[i];
      }
      if (!__any_sync(0xffffffffu, any)) continue;
      const char* a_tap = a_base + n * l.dilation * rb;
      const char* w_tap = ws + n * tap_bytes(l);
#pragma unroll 2
      for (int s = 0; s < l.chunk / 16; ++s) {
        unsigned b[kNI][2];
#pragma unroll
        for (int j = 0; j < kNI; j += 2) {
          const int wrow = wn * kWarpCols + j * 8 + lane % 8 + lane / 16 * 8;
          unsigned r[4];
          ldmatrix_x4(r, w_tap + wrow * rb + (2 * s + (lane / 8) % 2) * 16);
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < kMI; ++i) {
          if (first + i * 16 >= box.rows()) break;
          unsigned a[4];
          ldmatrix_x4(a, a_tap + i * 16 * rb + 2 * s * 16);
          if (!ok_lo[i]) a[0] = a[2] = 0u;
          if (!ok_hi[i]) a[1] = a[3] = 0u;
#pragma unroll
          for (int j = 0; j < kNI; ++j) mma_bf16(acc[i][j], a, b[j]);
        }
      }
    }
  }

  // conv-transpose1d: one m16 block (GEMM rows [block, block + 16), one phase) of one warp over
  // the phase's taps of the staged step.
  __device__ static void mma_phase_block(const Layout& l, const TileBox& box, int block,
                                         int per_phase, int rows, const char* xs, const char* ws,
                                         int lane, int wn, float (&acc)[kNI][4]) {
    const int rb = row_bytes(l);
    // This lane's ldmatrix row and the two rows its fragments hold (the second 8 * stride
    // output rows after the first).
    const int addr_row = block + lane % 8 + (lane / 8) % 2 * 8;
    const int frag_row = block + lane / 4;
    const int phase = block / per_phase;
    const int taps = (l.kernel - phase + l.stride - 1) / l.stride;
    const long long base = box.row_begin / l.stride - (l.kernel - 1) / l.stride;
    const long long t_lo = output_row(box, frag_row, per_phase, l.stride);
    const long long pos_lo = t_lo / l.stride % l.len, pos_hi = (t_lo / l.stride + 8) % l.len;
    const bool live_lo = t_lo < box.row_end, live_hi = t_lo + 8 * l.stride < box.row_end;
    // The window row of the address row's input row t / stride; tap n reads n rows before it.
    const int addr_in =
        static_cast<int>(output_row(box, addr_row, per_phase, l.stride) / l.stride - base);
    for (int n = 0; n < taps; ++n) {
      const bool ok_lo = live_lo && pos_lo >= n, ok_hi = live_hi && pos_hi >= n;
      if (!__any_sync(0xffffffffu, ok_lo || ok_hi)) continue;
      // Padding rows past the phase's last may point past the window: clamp, they are masked.
      const int row = addr_in - n < rows ? addr_in - n : rows - 1;
      const char* a_row = xs + row * rb;
      const char* w_tap = ws + (phase + n * l.stride) * tap_bytes(l);
#pragma unroll 4
      for (int s = 0; s < l.chunk / 16; ++s) {
        unsigned a[4];
        ldmatrix_x4(a, a_row + (2 * s + lane / 16) * 16);
        if (!ok_lo) a[0] = a[2] = 0u;
        if (!ok_hi) a[1] = a[3] = 0u;
#pragma unroll
        for (int j = 0; j < kNI; j += 2) {
          const int wrow = wn * kWarpCols + j * 8 + lane % 8 + lane / 16 * 8;
          unsigned r[4];
          ldmatrix_x4(r, w_tap + wrow * rb + (2 * s + (lane / 8) % 2) * 16);
          const unsigned b0[2] = {r[0], r[1]};
          const unsigned b1[2] = {r[2], r[3]};
          mma_bf16(acc[j], a, b0);
          mma_bf16(acc[j + 1], a, b1);
        }
      }
    }
  }
};

}  // namespace megacut::tiles
