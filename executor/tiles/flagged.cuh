// Flagged words: how a megakernel region hands a decode activation from the tasks of one op to
// those of the next without a release fence on the way. Each 8-byte word holds two bf16 of the
// tensor (elements 2i, 2i + 1: the low half, first element in its low 16 bits) and, in its high
// half, the run that wrote them (launches of the region counted from 1: the runtime's run
// index, truncated). A 64-bit access is single-copy atomic, so a reader that sees its run in a
// word sees that run's values, whatever order the writer's stores land in: the word is its own
// flag. The counters the runtime's signaler publishes need a gpu-scope release fence first,
// which waits for the bulk copies the SM's weight ring has in flight (1-4 µs a hop on a
// streaming SM, reports/h200/bench-compositions.md); a flagged word needs none. The plain
// tensor is still written and published as before, for every reader that waits on counters.
// A buffer of flagged words starts zeroed: run 0 is no run.
#pragma once

#include "executor/tiles/common.cuh"

namespace megacut::tiles {

// Word `word` := {lo, hi} (two bf16) of run `run`.
__device__ __forceinline__ void store_flagged(unsigned long long* word, bf16 lo, bf16 hi,
                                              unsigned run) {
  const unsigned pair = static_cast<unsigned>(__bfloat16_as_ushort(lo)) |
                        static_cast<unsigned>(__bfloat16_as_ushort(hi)) << 16;
  const unsigned long long value = static_cast<unsigned long long>(run) << 32 | pair;
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
}

enum class FlaggedWait { done, stopped, timed_out };

// Chunks of 8 bf16 (4 words each, 32-byte aligned), chunk j at at[j] (none where null), into
// out[j], once every word of them holds run `run`. All of a round's loads are in flight at once;
// a round reloads only what was not there yet. Gives up (stopped) once `*stop`, the region's
// error word, is set: another wait gave up, and the producer may never write; or (timed_out)
// after timeout_ns: a defect.
template <int kChunks>
__device__ __forceinline__ FlaggedWait
load_flagged_chunks(const unsigned long long* const (&at)[kChunks], unsigned run,
                    const unsigned* stop, unsigned long long timeout_ns, uint4 (&out)[kChunks]) {
  unsigned pending = 0;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    // Defined where at[j] is null too: left undefined, ptxas kept out in local memory as it
    // did w below.
    out[j] = make_uint4(0, 0, 0, 0);
    if (at[j] != nullptr) pending |= 1u << j;
  }
  unsigned long long start = 0;
  while (pending != 0) {
    unsigned long long w[kChunks][4];
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      // Every word defined on every path: with the words of chunks not loaded left undefined,
      // ptxas kept w in local memory, a store and a reload on every round of the wait (a decode
      // region's stack frame 128 bytes rather than 40).
      w[j][0] = w[j][1] = w[j][2] = w[j][3] = 0;
      if (pending >> j & 1) {
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(w[j][0]), "=l"(w[j][1])
                     : "l"(at[j])
                     : "memory");
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(w[j][2]), "=l"(w[j][3])
                     : "l"(at[j] + 2)
                     : "memory");
      }
    }
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      if (!(pending >> j & 1)) continue;
      bool there = true;
#pragma unroll
      for (int e = 0; e < 4; ++e) there = there && static_cast<unsigned>(w[j][e] >> 32) == run;
      if (there) {
        out[j] = make_uint4(static_cast<unsigned>(w[j][0]), static_cast<unsigned>(w[j][1]),
                            static_cast<unsigned>(w[j][2]), static_cast<unsigned>(w[j][3]));
        pending &= ~(1u << j);
      }
    }
    if (pending == 0) break;
    if (stop != nullptr && *reinterpret_cast<const volatile unsigned*>(stop) != 0u) {
      return FlaggedWait::stopped;
    }
    const unsigned long long now = globaltimer_ns();
    if (start == 0) {
      start = now;
    } else if (now - start > timeout_ns) {
      return FlaggedWait::timed_out;
    }
  }
  return FlaggedWait::done;
}

// Where a body runs in a megakernel region: the run its flagged words carry, the region's error
// word, which stops a wait for them, how long such a wait may last, and, where the region times
// its tasks, where the body records when its flagged inputs were all there. A conventional
// kernel has no run (0) and hands nothing over.
struct RegionRun {
  unsigned run = 0;
  const unsigned* stop = nullptr;
  unsigned long long timeout_ns = 0;
  unsigned long long* inputs_ns = nullptr;
};

// The body's flagged inputs are all there (every thread of it calls this after the barrier that
// follows every thread's wait; its first thread records): the task timing's inputs_ns, where the
// region times its tasks.
__device__ __forceinline__ void mark_inputs(const RegionRun& region) {
  if (region.inputs_ns != nullptr && threadIdx.x == 0) *region.inputs_ns = globaltimer_ns();
}

// A wait for flagged words that timed out is a runtime defect: it traps rather than hangs. One
// the region's error stopped goes on with what it has: the host reports the run failed.
__device__ __forceinline__ void check_flagged_wait(FlaggedWait wait) {
  if (wait == FlaggedWait::timed_out) __trap();
}

}  // namespace megacut::tiles
