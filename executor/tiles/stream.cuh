// The weight stream: a ring of shared-memory slots that one producer thread fills with the bytes
// a CTA's coming tasks read and no task writes (weights), while the body's warps compute from the
// slots already filled. Weights depend on no activation, so the producer runs ahead of the
// consumers across tasks, through their dependency waits and the hops between ops, as far as the
// ring reaches: the CTA's share of device bandwidth stays busy whatever its consumers wait for.
//
// A task's weights are a box of a weight matrix (the tile's rows, all of k), cut into stages of
// one slot each: stage s holds k [s * boxes * box_k, (s + 1) * boxes * box_k) of the rows, as
// `boxes` boxes of (rows, box_k) one after the other. The producer copies a stage with one
// bulk tensor copy (cp.async.bulk.tensor) per box, through the matrix's tensor map, completing
// on the slot's `full` mbarrier; the copy engine fills what lies past the matrix's edge (the last
// rows of an edge tile, the end of k) with zeros. The body's warps wait on `full`, read, and each
// arrives once on the slot's `empty` mbarrier, which frees the slot for the producer. Producer and
// consumers walk the same tasks in the same order, so both count stages the same way: stage n of
// the CTA's life is in slot n % slots, its (n / slots)-th use. A ring may bound the stages in
// flight (StreamRing::in_flight): the producer then waits for stage n - in_flight to land before
// it issues stage n.
//
// Decode's qkv-attention streams the same way the cached positions of its KV head (no op of the
// stage writes them), a stage of positions at a time down the cache (StreamPlan::stage_rows).
//
// Used by the conventional kernel of a streamed body (a persistent grid, executor/conventional.cu)
// and by the megakernel runtime (executor/megakernel_runtime.cuh). Device code and plain structs:
// compiles under NVRTC.
#pragma once

#include "executor/tiles/common.cuh"
#include "executor/tiles/flagged.cuh"
#include "executor/tiles/stream_shape.h"

namespace megacut::tiles {

// What a task streams: `stages` stages of `boxes` boxes each through the tensor map at `map`
// (global or kernel-parameter memory), box b of stage s at coordinates (k = (s * boxes + b) *
// box_k, row). A box may come in `parts` pieces of the map's box rows each, piece p from rows
// row + p * part_rows, one after the other in the slot: rows of a matrix that lie apart (a fused
// gate_up's gate and up rows of the same features) land as one box. box_bytes counts a piece,
// zero fill included: what the copy engine delivers.
// With after_prior_grids the row depends on a stage input (a code predictor's step), or the
// bytes on an earlier kernel's output (the cached positions of qkv-attention, the previous step's
// last), which the producer reads only after the kernels before it are done.
// With stage_rows, the stages walk down the map rather than along k: stage s from row
// row + s * stage_rows, its box b at k = k_first + b * box_stride_k (a KV head's keys, then its
// values, of stage_rows cached positions).
struct StreamPlan {
  const void* map;
  int row;
  int box_k;
  int boxes;
  int stages;
  int box_bytes;
  int after_prior_grids;
  int parts = 1;
  int part_rows = 0;
  int stage_rows = 0;
  int k_first = 0;
  int box_stride_k = 0;

  __device__ int stage_bytes() const { return boxes * parts * box_bytes; }
};

// A body that streams: its stream(layout, tile, map) says what a tile reads through the ring (map:
// the tensor map of its map_shape(layout)), and its run(layout, tile, smem, cursor) takes the
// stages in that order.
template <class Body>
concept StreamedBody = requires(const typename Body::Layout& l, long long tile, const void* map) {
  Body::stream(l, tile, map);
  Body::map_shape(l);
};

// A body that reads its operands through tensor maps in place of pointers (tiles/linear_mma.cuh):
// operand_maps(layout) says what they describe, and its run(layout, tile, smem, maps) takes
// their CUtensorMaps, kTensorMapBytes apart, in kernel-parameter or global memory.
template <class Body>
concept MappedBody = requires(const typename Body::Layout& l) {
  Body::operand_maps(l);
};

// Where a CTA's ring is: `slots` slots of kStreamSlotBytes from shared address `data`
// (kStreamRingAlignBytes aligned: ring_data), and their barriers.
struct StreamRing {
  unsigned data;
  unsigned long long* full;   // (slots): the producer's copies of a stage landed
  unsigned long long* empty;  // (slots): every consumer warp is done with the slot
  int slots;
  // The most stages the producer keeps issued and not yet landed (kRegionStagesInFlight); at
  // `slots` or more, as many as the ring has free.
  int in_flight;
};

// The ring's first slot in the room a host gave it from `room` on (kStreamRingAlignBytes more
// than its slots): the next multiple of kStreamRingAlignBytes of the shared address space, found
// on the device rather than assumed of where dynamic shared memory starts.
__device__ __forceinline__ unsigned ring_data(char* room) {
  const unsigned address = shared_address(room);
  return (address + kStreamRingAlignBytes - 1) & ~(kStreamRingAlignBytes - 1u);
}

// Thread 0 of the CTA, once, before a barrier over every thread that uses the ring.
__device__ __forceinline__ void init_stream_ring(const StreamRing& ring) {
  for (int s = 0; s < ring.slots; ++s) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(ring.full + s)));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(ring.empty + s)),
                 "n"(kStreamConsumerWarps));
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ bool mbarrier_try_wait(unsigned long long* bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// Waits for the phase of `bar` with this parity to complete; false once `give_up()` says so,
// asked every few microseconds of waiting (try_wait itself suspends the thread a while).
template <class GiveUp>
__device__ __forceinline__ bool wait_phase(unsigned long long* bar, unsigned parity,
                                           GiveUp&& give_up) {
  if (mbarrier_try_wait(bar, parity)) return true;
  const unsigned long long start = globaltimer_ns();
  while (!mbarrier_try_wait(bar, parity)) {
    if (give_up(globaltimer_ns() - start)) return false;
  }
  return true;
}

// One bulk tensor copy: the box of the 2-D map at `map` whose first element is (k, row) lands
// at `dst` (shared memory; 1024-byte aligned for a swizzled map) and completes on the mbarrier
// at shared address `bar`, which must expect its bytes.
__device__ __forceinline__ void bulk_tensor_copy(void* dst, const void* map, int k, int row,
                                                 unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(shared_address(dst)),
      "l"(map), "r"(k), "r"(row), "r"(bar)
      : "memory");
}

// A copy that has not landed after this long never will (a bad tensor map): a defect of ours,
// which traps rather than hangs.
inline constexpr unsigned long long kCopyTimeoutNs = 10'000'000'000ull;

// The producer's cache policy for the weight stream: read once, first out of L2, so that
// activations and the KV cache stay.
__device__ __forceinline__ unsigned long long stream_cache_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// Streams `plan`'s stages into the ring from stage `position` on (one thread: the producer);
// false if a wait for a free slot gave up. `position` counts on past the plan.
template <class GiveUp>
__device__ __forceinline__ bool produce_stream(const StreamRing& ring, unsigned& position,
                                               const StreamPlan& plan, unsigned long long policy,
                                               GiveUp&& give_up) {
  for (int s = 0; s < plan.stages; ++s, ++position) {
    const unsigned slot = position % ring.slots, use = position / ring.slots;
    if (!wait_phase(ring.empty + slot, (use & 1) ^ 1, give_up)) return false;
    // Stage position - in_flight has landed: its slot's use is complete, and only this thread
    // arms the slot's next, stages later.
    if (ring.in_flight < ring.slots && position >= static_cast<unsigned>(ring.in_flight)) {
      const unsigned landed = position - ring.in_flight;
      if (!wait_phase(ring.full + landed % ring.slots, (landed / ring.slots) & 1, give_up)) {
        return false;
      }
    }
    const unsigned full = shared_address(ring.full + slot);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(full),
                 "r"(plan.stage_bytes())
                 : "memory");
    const unsigned stage = ring.data + slot * kStreamSlotBytes;
    const int row = plan.row + s * plan.stage_rows;
    for (int b = 0; b < plan.boxes; ++b) {
      const int k = plan.stage_rows > 0 ? plan.k_first + b * plan.box_stride_k
                                        : (s * plan.boxes + b) * plan.box_k;
      for (int part = 0; part < plan.parts; ++part) {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(
                stage + (b * plan.parts + part) * plan.box_bytes),
            "l"(plan.map), "r"(k), "r"(row + part * plan.part_rows), "r"(full), "l"(policy)
            : "memory");
      }
    }
  }
  return true;
}

// Before a producer leaves while its consumers may be gone (they stopped early): the copies it
// issued into the last `slots` stages must land before the CTA's shared memory goes away.
template <class GiveUp>
__device__ __forceinline__ void drain_stream(const StreamRing& ring, unsigned position,
                                             GiveUp&& give_up) {
  const unsigned first = position > static_cast<unsigned>(ring.slots) ? position - ring.slots : 0;
  for (unsigned n = first; n < position; ++n) {
    wait_phase(ring.full + n % ring.slots, (n / ring.slots) & 1, give_up);
  }
}

// The consumer side, one per thread of the body: the next stage to wait for and the oldest one
// still held. Its waits end: the producer has issued every stage up to the one a consumer waits
// for whenever it waits for a free slot, and it stops only once the consumers did. A wait longer
// than timeout_ns is a runtime defect, and traps rather than hangs.
//
// A body releases a stage only after its products of the stage were issued and it has waited for
// the next stage (or, for the last, stored what it computed): the slot's shared-memory loads are
// then done whatever order the hardware completes them in. A release right after the products
// lets the producer's copy of the slot's next use overwrite rows a lane has not yet read: on the
// H200, one megakernel over Llama-3.2-1B's prefill then got whole weight rows of mlp.down wrong in
// 3 to 5 runs of 10, and more with every thread arriving for itself.
struct StreamCursor {
  StreamRing ring;
  unsigned position;  // the next stage to wait for
  unsigned long long timeout_ns;
  unsigned released;  // the oldest stage this thread still holds
  // position's and released's slots, and position's phase parity: counted on, not divided out,
  // on the consumers' path through every stage.
  unsigned slot = 0, parity = 0, released_slot = 0;
  // The megakernel region the body runs in, for its flagged words (tiles/flagged.cuh); none in a
  // conventional kernel.
  RegionRun region{};

  // Waits for the stage at the cursor; its slot. The cursor moves on.
  __device__ const char* wait() {
    const char* stage = wait_for(slot, parity);
    ++position;
    if (++slot == static_cast<unsigned>(ring.slots)) {
      slot = 0;
      parity ^= 1;
    }
    return stage;
  }
  // The calling warp is done with the oldest stage it holds (every lane calls it).
  __device__ void release() {
    __syncwarp();
    if (threadIdx.x % 32 == 0) arrive(released_slot, 1);
    ++released;
    if (++released_slot == static_cast<unsigned>(ring.slots)) released_slot = 0;
  }

  // A body whose warps take a task's stages apart waits for stage `position + offset` itself
  // (sure only once the slot's use before, `slots` stages earlier, has landed: an mbarrier's
  // parity tells two uses of a slot apart, not three) and releases it for `count` of the
  // kStreamConsumerWarps arrivals a slot takes. After the task, skip(stages) moves every thread's
  // cursor past its stages, all of them released.
  __device__ const char* wait_at(unsigned offset) {
    const unsigned n = position + offset;
    return wait_for(n % ring.slots, (n / ring.slots) & 1);
  }
  __device__ void release_at(unsigned offset, unsigned count) {
    __syncwarp();
    if (threadIdx.x % 32 == 0) arrive((position + offset) % ring.slots, count);
  }
  __device__ void skip(unsigned stages) {
    position += stages;
    released += stages;
    slot = position % ring.slots;
    parity = (position / ring.slots) & 1;
    released_slot = released % ring.slots;
  }

 private:
  __device__ const char* wait_for(unsigned at, unsigned phase) const {
    const unsigned long long limit = timeout_ns;
    if (!wait_phase(ring.full + at, phase,
                    [limit](unsigned long long waited_ns) { return waited_ns > limit; })) {
      __trap();
    }
    return static_cast<const char*>(__cvta_shared_to_generic(ring.data + at * kStreamSlotBytes));
  }
  __device__ void arrive(unsigned at, unsigned count) const {
    asm volatile(
        "mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(ring.empty + at)),
        "r"(count)
        : "memory");
  }
};

}  // namespace megacut::tiles
