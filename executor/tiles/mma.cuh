// Tensor-core and asynchronous-copy primitives for the GEMM and attention tile bodies:
// mma.sync m16n8k16 (bf16 in, f32 accumulate), ldmatrix, and cp.async with zero fill.
//
// Fragment layout of mma.m16n8k16 (g = lane / 4, q = lane % 4), which the bodies rely on:
//   A (16x16, row-major): a[0] = (g, 2q..2q+1), a[1] = (g+8, 2q..), a[2] = (g, 2q+8..),
//                         a[3] = (g+8, 2q+8..)
//   B (16x8, "col": stored as [n][k]): b[0] = (k 2q..2q+1, n g), b[1] = (k 2q+8.., n g)
//   C (16x8, f32): c[0..1] = (g, 2q..2q+1), c[2..3] = (g+8, 2q..2q+1)
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// d += a * b for one m16n8k16 block.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Four 8x8 bf16 matrices; lane l gives the row address of matrix l / 8, row l % 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// 16-byte global-to-shared copy; when `valid` is false nothing is read and zeros are written.
__device__ __forceinline__ void cp_async16(void* smem, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(smem)),
               "l"(global), "r"(valid ? 16 : 0)
               : "memory");
}

// 4- and 8-byte global-to-shared copies (table entries), through L1 as .ca requires.
__device__ __forceinline__ void cp_async4(void* smem, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(shared_address(smem)), "l"(global)
               : "memory");
}

__device__ __forceinline__ void cp_async8(void* smem, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(shared_address(smem)), "l"(global)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

}  // namespace megacut::tiles
