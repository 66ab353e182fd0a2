// The element-wise kinds of audio decoders: snake-beta, leaky-relu, tanh, gelu and add-scaled.
// fp32 arithmetic, one rounding to bf16.
//
// One body shape for all five, ElementwiseTile<F>, F the per-element function: 16 bytes per
// access where the rows and the tile are whole 8-channel chunks (the codec's and the vocoder's
// hidden widths), element by element otherwise (the one-channel waveform before the last tanh).
// snake-beta takes exp of its per-channel log parameters once per element it computes; the op
// is bound by memory traffic, not by those.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct ElementwiseLayout {
  const bf16* x;       // (rows, cols)
  const bf16* x2;      // add-scaled: the second input (rows, cols); else null
  const bf16* params;  // snake-beta: alpha_log (cols), then beta_log (cols); else null
  bf16* out;           // (rows, cols)
  int cols;
  float scalar;   // leaky-relu: slope; add-scaled: scale
  TileGrid grid;  // (rows, cols)
};

// y = x + sin^2(exp(alpha_log) x) / (exp(beta_log) + 1e-9), per channel (BigVGAN's SnakeBeta).
struct SnakeBeta {
  static constexpr bool kTwoInputs = false;
  __device__ static float apply(const ElementwiseLayout& l, float x, float, long long col) {
    const float alpha = expf(__bfloat162float(l.params[col]));
    const float inv_beta = 1.f / (expf(__bfloat162float(l.params[l.cols + col])) + 1e-9f);
    const float s = sinf(alpha * x);
    return x + inv_beta * s * s;
  }
};

struct LeakyRelu {
  static constexpr bool kTwoInputs = false;
  __device__ static float apply(const ElementwiseLayout& l, float x, float, long long) {
    return x >= 0.f ? x : l.scalar * x;
  }
};

struct Tanh {
  static constexpr bool kTwoInputs = false;
  __device__ static float apply(const ElementwiseLayout&, float x, float, long long) {
    return tanhf(x);
  }
};

// y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2: exact GELU, between a ConvNeXt block's pointwise
// layers.
struct Gelu {
  static constexpr bool kTwoInputs = false;
  __device__ static float apply(const ElementwiseLayout&, float x, float, long long) {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
};

// y = (a + b) * scale: the average of HiFi-GAN's multi-receptive-field branches.
struct AddScaled {
  static constexpr bool kTwoInputs = true;
  __device__ static float apply(const ElementwiseLayout& l, float a, float b, long long) {
    return (a + b) * l.scalar;
  }
};

template <class F>
struct ElementwiseTile {
  using Layout = ElementwiseLayout;

  static constexpr int kThreads = 256;

  __host__ __device__ static int smem_bytes(const Layout&) { return 0; }

  __device__ static void run(const Layout& l, long long tile, char*) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    if (l.cols % 8 == 0 && l.grid.tile_cols % 8 == 0) {
      const int chunks = box.cols() / 8;
      const int items = box.rows() * chunks;
      for (int i = threadIdx.x; i < items; i += kThreads) {
        const long long col = box.col_begin + 8 * (i % chunks);
        const long long offset = (box.row_begin + i / chunks) * l.cols + col;
        float a[8], b[8];
        unpack8(load8(l.x + offset), a);
        if constexpr (F::kTwoInputs) unpack8(load8(l.x2 + offset), b);
#pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = F::apply(l, a[k], F::kTwoInputs ? b[k] : 0.f, col + k);
        store8(l.out + offset, pack8(a));
      }
      return;
    }
    const int cols = box.cols();
    const int items = box.rows() * cols;
    for (int i = threadIdx.x; i < items; i += kThreads) {
      const long long col = box.col_begin + i % cols;
      const long long offset = (box.row_begin + i / cols) * l.cols + col;
      const float b = F::kTwoInputs ? __bfloat162float(l.x2[offset]) : 0.f;
      l.out[offset] = __float2bfloat16_rn(F::apply(l, __bfloat162float(l.x[offset]), b, col));
    }
  }
};

using SnakeBetaTile = ElementwiseTile<SnakeBeta>;
using LeakyReluTile = ElementwiseTile<LeakyRelu>;
using TanhTile = ElementwiseTile<Tanh>;
using GeluTile = ElementwiseTile<Gelu>;
using AddScaledTile = ElementwiseTile<AddScaled>;

}  // namespace megacut::tiles
