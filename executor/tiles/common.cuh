// What every tile body shares: the tile grid (model::Tiling on the device), the tile barrier,
// 16-byte vector access to bf16 rows and warp reductions.
//
// Tile bodies run in two hosts: a conventional kernel (one CTA per tile, blockDim = kThreads)
// and a persistent megakernel whose blocks may be wider than kThreads and run other tasks
// before and after. So a body (a) returns at once on threads at or past kThreads, (b)
// synchronizes only its own kThreads threads, through a named barrier of its own thread count
// (tile_sync), never __syncthreads, and (c) takes shared memory only from the pointer it is given
// (128-byte aligned). Headers under tiles/ are device code plus plain structs: they compile under
// NVRTC, so no host-only includes and no standard library.
#pragma once

#include <cuda_bf16.h>

namespace megacut::tiles {

using bf16 = __nv_bfloat16;

// Barrier over threads [0, N) of the block. Barrier 0 is the megakernel runtime's
// (__syncthreads); tile bodies take named barrier 1 + log2(N / 32), so that each named barrier
// is only ever used with one thread count in a region kernel that holds bodies of several
// widths. N must be the body's kThreads: every one of them must arrive.
template <int N>
inline constexpr int kTileBarrier = N == 32    ? 1
                                    : N == 64  ? 2
                                    : N == 128 ? 3
                                    : N == 256 ? 4
                                    : N == 512 ? 5
                                               : 6;

template <int N>
__device__ __forceinline__ void tile_sync() {
  static_assert(N == 32 || N == 64 || N == 128 || N == 256 || N == 512 || N == 1024,
                "tile_sync: a power of two of whole warps, at most 1024");
  asm volatile("bar.sync %0, %1;" ::"n"(kTileBarrier<N>), "n"(N) : "memory");
}

// The device's nanosecond clock (%globaltimer): the same on every SM, for timing records and
// for bounding waits in time.
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A shared-memory pointer as the 32-bit address PTX's shared-space operands take.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// A half-open box [row_begin, row_end) x [col_begin, col_end) of an op's output.
struct TileBox {
  long long row_begin;
  long long row_end;
  long long col_begin;
  long long col_end;
  __host__ __device__ int rows() const { return static_cast<int>(row_end - row_begin); }
  __host__ __device__ int cols() const { return static_cast<int>(col_end - col_begin); }
};

// Bytes [p, p + bytes) of device memory.
struct ByteSpan {
  const void* p;
  long long bytes;
};

// model::Tiling as the device sees it: a uniform grid over (rows, cols), row-major tiles, edge
// tiles cut short.
struct TileGrid {
  long long rows;
  long long cols;
  int tile_rows;
  int tile_cols;

  __host__ __device__ long long col_tiles() const { return (cols + tile_cols - 1) / tile_cols; }
  __host__ __device__ long long row_tiles() const { return (rows + tile_rows - 1) / tile_rows; }
  __host__ __device__ long long count() const { return row_tiles() * col_tiles(); }
  // In 32-bit arithmetic: a 64-bit division is a long instruction sequence on the GPU, and
  // every task's body starts with this one (the host keeps rows, cols and the tile count below
  // 2^31: executor::tile_grid).
  __host__ __device__ TileBox box(long long tile) const {
    const int col_count = (static_cast<int>(cols) + tile_cols - 1) / tile_cols;
    const int r = static_cast<int>(tile) / col_count;
    const int c = static_cast<int>(tile) - r * col_count;
    const long long row_begin = static_cast<long long>(r) * tile_rows;
    const long long col_begin = static_cast<long long>(c) * tile_cols;
    const long long row_end = row_begin + tile_rows < rows ? row_begin + tile_rows : rows;
    const long long col_end = col_begin + tile_cols < cols ? col_begin + tile_cols : cols;
    return TileBox{row_begin, row_end, col_begin, col_end};
  }
};

// Eight bf16 values: one 16-byte access.
struct alignas(16) Vec8 {
  __nv_bfloat162 h[4];
};

__device__ __forceinline__ Vec8 load8(const bf16* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  return *reinterpret_cast<const Vec8*>(&raw);
}

// Streaming read: data touched once (weights), kept out of L1.
__device__ __forceinline__ uint4 load16_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void store8(bf16* p, const Vec8& v) {
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
}

__device__ __forceinline__ void unpack8(const Vec8& v, float (&f)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __bfloat1622float2(v.h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

__device__ __forceinline__ Vec8 pack8(const float (&f)[8]) {
  Vec8 v;
#pragma unroll
  for (int i = 0; i < 4; ++i) v.h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

// The two bf16 of a 32-bit word (the lower one first in memory) as floats: on registers, no
// address taken (tiles/mma.cuh's pack_bf16x2 packs them back).
__device__ __forceinline__ float bf16_low(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_high(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

// Sum over aligned groups of `width` lanes (a power of two up to 32).
__device__ __forceinline__ float group_sum(float v, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float warp_sum(float v) { return group_sum(v, 32); }

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

}  // namespace megacut::tiles
