// Dependency counters of the persistent runtime, as device functions: a task signals with a
// release store of a monotonic, run-scaled count; a waiting task polls with acquire loads and
// __nanosleep back-off, bounded in time by %globaltimer, so that a region which cannot make
// progress gives up (its caller sets the error word and exits) instead of hanging the GPU. A
// bound in time, not in polls, holds however slowly the polls come back: with other processes
// on the GPU a poll can take far longer than alone.
//
// The profiler's counter micro-benchmark (profiler/micro.cu) measures exactly these functions,
// so the simulator's signal-to-wait latency is the runtime's.
#pragma once

#include <cstdint>

#include "executor/tiles/common.cuh"

namespace megacut::executor {

// The wait's back-off: polls back to back at first, then sleeps doubling from kBackoffMinNs to
// kBackoffMaxNs between polls. A short ceiling: a waiting task sees its dependency within about
// a poll of its signal (a hop between ops is on the critical path), and the polls of at most one
// thread per CTA cost the memory system nothing that shows.
inline constexpr unsigned kBackoffMinNs = 32;
inline constexpr unsigned kBackoffMaxNs = 64;
inline constexpr int kSpinPolls = 8;
// How long wait_counter waits before giving up: a second.
inline constexpr uint64_t kWatchdogNs = 1'000'000'000;

__device__ __forceinline__ uint64_t load_acquire(const uint64_t* counter) {
  uint64_t value;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(counter) : "memory");
  return value;
}

__device__ __forceinline__ void signal_counter(uint64_t* counter, uint64_t value) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(counter), "l"(value) : "memory");
}

// Waits until *counter >= target; false if timeout_ns passed first.
__device__ __forceinline__ bool wait_counter(const uint64_t* counter, uint64_t target,
                                             uint64_t timeout_ns = kWatchdogNs) {
  if (load_acquire(counter) >= target) return true;
  const uint64_t start = tiles::globaltimer_ns();
  unsigned backoff_ns = kBackoffMinNs;
  for (int poll = 1;; ++poll) {
    if (load_acquire(counter) >= target) return true;
    if (poll >= kSpinPolls) {
      if (tiles::globaltimer_ns() - start > timeout_ns) return false;
      __nanosleep(backoff_ns);
      backoff_ns = min(2 * backoff_ns, kBackoffMaxNs);
    }
  }
}

}  // namespace megacut::executor
