// The buffers of linear, lm-head, step-head (y = x W^T), norm-linear and linear-residual, shared
// by both tile bodies, and the output conversion they share. step-head's w stacks a code
// predictor's per-step heads, (steps * n, k); the step s is read on the device (a stage input, so
// one CUDA graph serves every step) and picks W = rows [s * n, (s + 1) * n).
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// OutT is bf16 for linear, float for lm-head and step-head (logits).
template <typename OutT>
struct LinearLayout {
  const bf16* x;  // (rows, k)
  const bf16* w;  // (n, k): the op's weights concatenated along n; step-head: (steps * n, k);
                  // normed_glu: (2n, k), gate then up
  OutT* y;        // (rows, n)
  int n;          // output features
  int k;          // multiple of 8
  TileGrid grid;  // (rows, n)
  const int* step = nullptr;  // (1): step-head's step; null for linear and lm-head
  int steps = 0;              // step-head: heads stacked in w
  // The fusions of the weight-streaming body (norm-linear, linear-residual):
  const bf16* norm = nullptr;      // (k): x is rmsnorm'ed with this scale (norm-linear)
  float eps = 0.f;                 // norm-linear's
  const bf16* residual = nullptr;  // (rows, n): added to y (linear-residual)
  // Inside a megakernel region (tiles/flagged.cuh), where the op before hands x over as flagged
  // words: x's, (rows, k / 2), which the body waits on and reads in place of x. And where the
  // op after takes y so: y's, (rows, n / 2), which the body writes besides y.
  const unsigned long long* x_flagged = nullptr;
  unsigned long long* y_flagged = nullptr;
};

// What the weight-streaming body does besides y = x W^T: nothing; normalize x per row
// (norm-linear, the row's scale applied after the sum); or that, with W gate rows (n) then up
// rows (n), and y = silu(gate) * up (norm-linear with attr glu: an MLP's gate_up and silu-mul).
enum class LinearFusion { plain, normed, normed_glu };

// The (n, k) weight rows a tile multiplies by: w itself, or step-head's head s. A step outside
// [0, steps) is clamped into it rather than read out of bounds (the host writes valid steps;
// the device cannot throw).
template <typename OutT>
__device__ __forceinline__ const bf16* weight_rows(const LinearLayout<OutT>& l) {
  if (l.step == nullptr) return l.w;
  const long long s = min(max(*l.step, 0), l.steps - 1);
  return l.w + s * l.n * l.k;
}

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
