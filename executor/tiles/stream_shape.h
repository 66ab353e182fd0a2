// The weight ring's sizes (tiles/stream.cuh) and the shape of the weights a body streams, as
// plain data: the host sizes a region's or a kernel's shared memory from them and encodes the
// weights' tensor map (executor/tensor_map.h) from the shape. No CUDA types, so the host compiler,
// nvcc and NVRTC all read it.
#pragma once

namespace megacut::tiles {

// One slot: 16 KB holds 16 rows of 512 bf16, 32 of 256, 64 of 128.
inline constexpr int kStreamSlotBytes = 16384;
// The ring starts at a multiple of this in shared memory (the copy engine's 128-byte swizzle lays
// out 1024-byte blocks): a host gives a ring this much room beyond its slots to align it in.
inline constexpr int kStreamRingAlignBytes = 1024;
// mbarriers are static shared memory, sized for the most slots a ring may have.
inline constexpr int kStreamMaxSlots = 14;
// A megakernel region's producer keeps at most this many stages in flight (issued, not yet
// landed). A ring's worth in flight on every SM queues the memory system so deep that the hops
// between tasks, polls and counters under the stream, wait behind it; two or three stages still
// keep an SM's share of the bandwidth busy. On an H100, one mk region over the decode step at
// batch 1: Llama-3.2-1B 0.985 ms with no cap, 1.12 at 1 stage, 0.92 at 2 and 3, 0.94 at 4,
// 0.95 at 6; Qwen3-0.6B within 2% either way (reports/h100/README.md, "Lease 5"). A
// conventional kernel hands nothing over: no cap there.
inline constexpr int kRegionStagesInFlight = 3;
// A streamed body has this many warps, each arriving once on `empty` to free a slot.
inline constexpr int kStreamConsumerWarps = 8;
inline constexpr int kStreamConsumerThreads = 32 * kStreamConsumerWarps;
// Pairs of them may take a task's stages apart (tiles/linear_stream.cuh, by_stage), which needs
// a ring of a multiple of the pairs' slots, more than one pair's worth.
inline constexpr int kStreamWarpPairs = kStreamConsumerWarps / 2;

#ifndef __CUDACC_RTC__
// The slots of a ring where `fit` slots fit: at most kStreamMaxSlots, and where two pairs' worth
// or more fit, a multiple of the pairs (a slot or three less), which by_stage takes; fewer are
// kept as they are, by_stage or not. For the hosts.
constexpr int stream_ring_slots(int fit) {
  const int slots = fit < kStreamMaxSlots ? fit : kStreamMaxSlots;
  return slots >= 2 * kStreamWarpPairs ? slots - slots % kStreamWarpPairs : slots;
}
static_assert(stream_ring_slots(13) == 12 && stream_ring_slots(99) == 12 &&
              stream_ring_slots(9) == 8 && stream_ring_slots(7) == 7 && stream_ring_slots(2) == 2);
#endif

// The producer: one warp after the body's in a conventional kernel; in a megakernel region, the
// first warp of a warpgroup after the consumers' (executor/megakernel_runtime.cuh says why).
inline constexpr int kStreamProducerThreads = 32;
inline constexpr int kRegionProducerThreads = 128;

// A row-major bf16 matrix of `rows` rows of `k` elements at `base` (16-byte aligned, k a
// multiple of 8), read by the copy engine in boxes of box_rows rows by box_k elements (each at
// most 256, box_k a multiple of 8): what a tensor map describes (a streamed body's weights, the
// GEMM body's x and W). swizzle_bytes 128 lays each box row's 16-byte chunk c at c ^ (row % 8),
// the layout wgmma reads (box_k * 2 is then 128 bytes at most); 0 lays rows as they are.
struct TensorMapShape {
  const void* base;
  long long k;
  long long rows;
  int box_k;
  int box_rows;
  int swizzle_bytes = 0;
};

// A tensor map's bytes (CUtensorMap): maps one after the other are this far apart, and each is
// 64-byte aligned.
inline constexpr int kTensorMapBytes = 128;

// The tensor maps a body reads both its operands through (tiles/linear_mma.cuh): x, then W.
struct OperandMaps {
  TensorMapShape map[2];
};

}  // namespace megacut::tiles
