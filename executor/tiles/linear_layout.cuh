// The buffers of linear and lm-head (y = x W^T), shared by both tile bodies, and the output
// conversion they share.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// OutT is bf16 for linear, float for lm-head (logits).
template <typename OutT>
struct LinearLayout {
  const bf16* x;  // (rows, k)
  const bf16* w;  // (n, k): the op's weights concatenated along n
  OutT* y;        // (rows, n)
  int n;
  int k;          // multiple of 8
  TileGrid grid;  // (rows, n)
};

__device__ __forceinline__ void store_out(bf16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store_out(float* p, float v) { *p = v; }

// Two adjacent outputs (col, col + 1) of one row; the pair is one aligned store when n is
// even, else two.
__device__ __forceinline__ void store_out2(bf16* p, float a, float b, bool pair_aligned) {
  if (pair_aligned) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
  } else {
    p[0] = __float2bfloat16_rn(a);
    p[1] = __float2bfloat16_rn(b);
  }
}
__device__ __forceinline__ void store_out2(float* p, float a, float b, bool pair_aligned) {
  if (pair_aligned) {
    *reinterpret_cast<float2*>(p) = make_float2(a, b);
  } else {
    p[0] = a;
    p[1] = b;
  }
}

__device__ __forceinline__ unsigned word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

}  // namespace megacut::tiles
