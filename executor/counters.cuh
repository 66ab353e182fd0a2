// Dependency counters of the persistent runtime, as device functions: a task signals with a
// release store of a monotonic, run-scaled count; a waiting task polls with acquire loads and
// __nanosleep back-off under a bounded watchdog, so that a region which cannot make progress
// gives up (its caller sets the error word and exits) instead of hanging the GPU.
//
// The profiler's counter micro-benchmark (profiler/micro.cu) measures exactly these functions,
// so the simulator's signal-to-wait latency is the runtime's.
#pragma once

#include <cstdint>

namespace megacut::executor {

// The wait's back-off: polls back to back at first, then sleeps doubling from kBackoffMinNs to
// kBackoffMaxNs between polls.
inline constexpr unsigned kBackoffMinNs = 32;
inline constexpr unsigned kBackoffMaxNs = 256;
inline constexpr int kSpinPolls = 8;
// Polls before a wait gives up: over a second at the longest back-off.
inline constexpr uint64_t kWatchdogPolls = uint64_t{1} << 23;

__device__ __forceinline__ uint64_t load_acquire(const uint64_t* counter) {
  uint64_t value;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(counter) : "memory");
  return value;
}

__device__ __forceinline__ void signal_counter(uint64_t* counter, uint64_t value) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(counter), "l"(value) : "memory");
}

// Waits until *counter >= target; false if the watchdog ran out first.
__device__ __forceinline__ bool wait_counter(const uint64_t* counter, uint64_t target) {
  unsigned backoff_ns = kBackoffMinNs;
  for (uint64_t poll = 0; poll < kWatchdogPolls; ++poll) {
    if (load_acquire(counter) >= target) return true;
    if (poll >= kSpinPolls) {
      __nanosleep(backoff_ns);
      backoff_ns = min(2 * backoff_ns, kBackoffMaxNs);
    }
  }
  return false;
}

}  // namespace megacut::executor
