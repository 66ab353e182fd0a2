// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a): a warpgroup of four warps multiplies a
// 64-row A by an N-column B, both read from shared memory through matrix descriptors, into f32
// accumulators spread over its 128 threads. The GEMM tile body (tiles/linear_mma.cuh) uses it.
//
// Operands are K-major in the 128-byte swizzle: each row of 64 bf16 is 128 bytes, 16-byte chunk c
// of row r stored at chunk c ^ (r % 8), rows in groups of 8 (1024 bytes) one after the other, the
// group's base 1024-byte aligned. A k16 step within the 64 k of a row is the descriptor's start
// address plus 32 bytes: the swizzle applies to the address bits, so the hardware finds the
// chunks of rows 1..7 where the swizzle put them.
//
// Accumulators of m64nN (g = lane / 4, q = lane % 4, w = warp % 4): d[4j + 2h + e] is
// (row 16w + g + 8h, column 8j + 2q + e), j < N / 8, h and e in {0, 1}.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// The descriptor of a K-major, 128-byte swizzled operand whose first row starts at `p`
// (shared memory): start address, stride between 8-row groups (1024 bytes), swizzle mode 1.
// The leading-dimension offset is unused in this layout (one swizzle atom spans the 64 k).
__device__ __forceinline__ unsigned long long wgmma_desc_sw128(const void* p) {
  const unsigned address = shared_address(p);
  unsigned long long d = (address & 0x3ffff) >> 4;
  d |= 1ull << 16;            // leading-dimension byte offset / 16 (unused)
  d |= (1024ull >> 4) << 32;  // stride byte offset / 16: the next 8 rows
  d |= 1ull << 62;            // 128-byte swizzle
  return d;
}

// Before a warpgroup's first wgmma, and after its threads touched the accumulators.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Waits until at most N committed groups of this warpgroup's wgmma are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Tells the compiler the accumulators are live across an asynchronous wgmma: it must neither
// read them early nor move them between registers while one runs.
template <int kCount>
__device__ __forceinline__ void wgmma_hold(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d += A (64 x 16, descriptor a) * B (16 x N, descriptor b), bf16 in, f32 accumulators.
template <int N>
struct WarpgroupMma;

template <>
struct WarpgroupMma<16> {
  static constexpr int kAccumulators = 8;
  __device__ static void run(float (&d)[8], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7"
        "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7])
        : "l"(a), "l"(b), "r"(1)
        : "memory");
  }
};

template <>
struct WarpgroupMma<32> {
  static constexpr int kAccumulators = 16;
  __device__ static void run(float (&d)[16], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15])
        : "l"(a), "l"(b), "r"(1)
        : "memory");
  }
};

template <>
struct WarpgroupMma<64> {
  static constexpr int kAccumulators = 32;
  __device__ static void run(float (&d)[32], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(1)
        : "memory");
  }
};

template <>
struct WarpgroupMma<128> {
  static constexpr int kAccumulators = 64;
  __device__ static void run(float (&d)[64], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(a), "l"(b), "r"(1)
        : "memory");
  }
};

}  // namespace megacut::tiles
