// The buffers and shape of conv1d and conv-transpose1d, shared by their tile bodies, and the
// arithmetic of which input row a (output row, tap) pair reads.
//
// Time runs down the rows, sequence-major (row = sequence * rows per sequence + step), and no
// tap ever reads across a sequence boundary: the bodies skip (or zero) those taps, which is
// what the op kinds' input boxes promise (model/op_kinds_audio.cc), so a megakernel task reads
// only rows its dependencies cover.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

struct ConvLayout {
  const bf16* x;     // (batch * len, in_channels)
  const bf16* w;     // conv1d: (out, in / groups, kernel); conv-transpose1d: (in, out, kernel)
  const bf16* bias;  // (out), or null
  bf16* y;           // conv1d: (batch * len, out); conv-transpose1d: (batch * len * stride, out)
  int in_channels;
  int out_channels;
  int kernel;
  int dilation;   // conv1d; 1 for conv-transpose1d
  int groups;     // conv1d; 1 for conv-transpose1d
  int lookahead;  // conv1d: 0 (causal) to (kernel - 1) * dilation; 0 for conv-transpose1d
  int stride;     // conv-transpose1d; 1 for conv1d
  int len;        // input rows per sequence
  int chunk;      // tensor-core bodies: input channels staged per step (16, 32 or 64); else 0
  TileGrid grid;  // (output rows, out_channels); rows below 2^31
};

__device__ __forceinline__ float conv_bias(const ConvLayout& l, long long o) {
  return l.bias != nullptr ? __bfloat162float(l.bias[o]) : 0.f;
}

// The input rows [first, last) a conv1d tile of output rows [row_begin, row_end) reads: its
// taps' reach, clipped to the sequences of its first and last rows (exactly the union of the
// kind's input boxes).
__device__ __forceinline__ void conv1d_rows(const ConvLayout& l, const TileBox& box,
                                            long long& first, long long& last) {
  const long long reach = static_cast<long long>(l.kernel - 1) * l.dilation;
  const long long seq_first = box.row_begin / l.len * l.len;
  const long long seq_last = ((box.row_end - 1) / l.len + 1) * l.len;
  first = box.row_begin - reach + l.lookahead;
  last = box.row_end + l.lookahead;
  first = first > seq_first ? first : seq_first;
  last = last < seq_last ? last : seq_last;
}

// conv-transpose1d, output row t reads input row t / stride - n through tap j = t % stride +
// n * stride, for n = 0, 1, ... while j < kernel and the row stays in t's sequence (rows per
// output sequence len * stride, a multiple of stride, so t % stride is the phase in the sequence
// too). The input rows [first, last) a tile of output rows reads:
// [ceil((row_begin - kernel + 1) / stride), (row_end - 1) / stride], clipped to the sequence.
__device__ __forceinline__ void conv_transpose1d_rows(const ConvLayout& l, const TileBox& box,
                                                      long long& first, long long& last) {
  const long long lowest = box.row_begin - l.kernel + 1;
  const long long seq_first = box.row_begin / l.stride / l.len * l.len;
  first = lowest <= 0 ? 0 : (lowest + l.stride - 1) / l.stride;
  first = first > seq_first ? first : seq_first;
  last = (box.row_end - 1) / l.stride + 1;
}

}  // namespace megacut::tiles
