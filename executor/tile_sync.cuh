// Waiting on tiles, device side: what a persistent megakernel region (executor/
// megakernel_runtime.cuh, under NVRTC) and the kernels of a tile region (executor/conventional.cu,
// under nvcc) share: the barrier of the threads that wait, a dependency wait bounded by a
// watchdog that records where it gave up, and, for tile regions, a kernel's way in and out.
//
// A tile region's kernel (TileSync) differs from a conventional one in three places:
//  - at its start it lets the next kernel launch (Programmatic Dependent Launch), after waiting
//    for the kernels before the region if it is the region's first: a kernel's CTAs are all
//    resident or done before any CTA of the next one can be, so a CTA that waits on earlier
//    tiles never holds an SM that an earlier kernel still needs (the host's proof:
//    executor/tile_region.h); and it sees what the kernels before the region wrote through the
//    region's start counter, which the first kernel sets once past its wait;
//  - each tile first waits for the tiles of the region it reads (its mk::Dep list), and once
//    written publishes its counter and adds one to its op's count;
//  - at its end, unless it is the first, it waits for the kernel before it to complete: it
//    never did at its start, and without this a kernel could complete before the one it follows,
//    and what comes after the region would not see all of the region's writes.
#pragma once

#include "executor/counters.cuh"
#include "executor/grid_dependency.cuh"
#include "executor/megakernel_abi.cuh"
#include "executor/tile_sync_abi.h"
#include "executor/tiles/common.cuh"

namespace megacut::executor {

// The waiting threads' barrier: id 15, above the bodies' (tiles/common.cuh). Not the .aligned
// forms (bar.sync, bar.red): the threads of a warp reach it from waits of different lengths, and
// an aligned barrier reached by a warp not yet reconverged may release before its other lanes
// arrive.
inline constexpr int kRuntimeBarrier = 15;

template <int kThreads>
__device__ __forceinline__ void consumer_sync() {
  asm volatile("barrier.sync %0, %1;" ::"n"(kRuntimeBarrier), "n"(kThreads) : "memory");
}

// True on every consumer thread when `ok` holds on every one.
template <int kThreads>
__device__ __forceinline__ bool consumer_sync_and(bool ok) {
  unsigned all;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n barrier.red.and.pred q, %2, %3, p;\n"
      " selp.u32 %0, 1, 0, q;\n}"
      : "=r"(all)
      : "r"(static_cast<unsigned>(ok)), "n"(kRuntimeBarrier), "n"(kThreads)
      : "memory");
  return all != 0;
}

__device__ __forceinline__ unsigned int smid() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Records the first give-up of the launch: which task (region-local counter index) waited for
// which counter.
__device__ __forceinline__ void record_hang(mk::ErrorRecord* error, int region, int task,
                                            int counter, unsigned long long target,
                                            unsigned long long seen) {
  if (atomicCAS(&error->flag, 0u, 1u) == 0u) {
    error->region = region;
    error->sm = static_cast<int>(smid());
    error->block = static_cast<int>(blockIdx.x);
    error->task = task;
    error->counter = counter;
    error->target = target;
    error->seen = seen;
    __threadfence();
  }
}

__device__ __forceinline__ bool wait_failed(const mk::ErrorRecord* error) {
  return *reinterpret_cast<volatile const unsigned int*>(&error->flag) != 0u;
}

// wait_counter's polls and back-off (executor/counters.cuh) for one dependency of launch `run`,
// bounded by watchdog_ns of waiting, with a look at the error word between sleeps so that one
// hung wait stops every waiter at once. False after a give-up (recorded, if the first).
__device__ __forceinline__ bool wait_dependency(const unsigned long long* counters, mk::Dep dep,
                                                unsigned long long run,
                                                unsigned long long watchdog_ns,
                                                mk::ErrorRecord* error, int region, int task) {
  const uint64_t* counter = reinterpret_cast<const uint64_t*>(counters + dep.counter);
  const unsigned long long target = run * static_cast<unsigned long long>(dep.count);
  if (load_acquire(counter) >= target) return true;
  const unsigned long long start = tiles::globaltimer_ns();
  unsigned backoff_ns = kBackoffMinNs;
  unsigned long long value = 0;
  for (int poll = 1;; ++poll) {
    value = load_acquire(counter);
    if (value >= target) return true;
    if (poll >= kSpinPolls) {
      if (wait_failed(error)) return false;
      if (tiles::globaltimer_ns() - start > watchdog_ns) break;
      __nanosleep(backoff_ns);
      backoff_ns = min(2 * backoff_ns, kBackoffMaxNs);
    }
  }
  record_hang(error, region, task, dep.counter, target, value);
  return false;
}

// ---- a tile region's kernel ---------------------------------------------------------------

// What a CTA of a tile region learns on entry: the run index (launches counted from 1), and
// whether the region's start was seen (false only after a wait gave up: the CTA's tiles must not
// be trusted).
struct TileEntry {
  unsigned long long run;
  bool ok;
};

// Every thread of the CTA, first thing; `first_tile` names the CTA in errors. Ends in a barrier
// of the whole CTA (not the .aligned form: thread 0 may arrive from a wait). The region's first
// kernel waits for the kernels before the region and then publishes the run on the region's
// start counter; a later kernel, which never waits for those kernels, acquires it, so that what
// they wrote is visible to it too.
__device__ __forceinline__ TileEntry enter_tile_region(const TileSync& s, long long first_tile) {
  __shared__ unsigned long long run;
  __shared__ int started_ok;
  if (s.first) wait_for_prior_grids();
  allow_dependent_launch();
  if (threadIdx.x == 0) {
    // Launches of a kernel never overlap (it waits, at its end or its start, for the one before
    // it, which did the same for the launch before), so launch n's CTAs find n - 1 full grids
    // of arrivals before their own.
    run = atomicAdd(s.arrivals, 1ull) / gridDim.x + 1;
    uint64_t* started = reinterpret_cast<uint64_t*>(s.counters + s.started_counter);
    bool ok = true;
    if (s.first) {
      signal_counter(started, run);
    } else {
      ok = wait_dependency(s.counters, mk::Dep{s.started_counter, 1}, run, s.watchdog_ns, s.error,
                           s.region, s.tile_counter + static_cast<int>(first_tile));
    }
    started_ok = ok ? 1 : 0;
  }
  asm volatile("barrier.sync 0;" ::: "memory");
  return {run, started_ok != 0};
}

// Threads [0, kThreads) of the CTA, before tile `tile` reads anything: this thread's share of
// its dependencies (thread t takes t, t + kThreads, ...). Combine with consumer_sync_and: false
// on any thread means a wait gave up, and the tile must not be trusted.
template <int kThreads>
__device__ __forceinline__ bool wait_tile_inputs(const TileSync& s, long long tile,
                                                 unsigned long long run) {
  bool ok = true;
  const int end = s.dep_offsets[tile + 1];
  for (int d = s.dep_offsets[tile] + static_cast<int>(threadIdx.x); ok && d < end; d += kThreads) {
    ok = wait_dependency(s.counters, s.deps[d], run, s.watchdog_ns, s.error, s.region,
                         s.tile_counter + static_cast<int>(tile));
  }
  return ok;
}

// One thread, once every thread that wrote tile `tile` is past a barrier after its writes.
__device__ __forceinline__ void publish_tile(const TileSync& s, long long tile,
                                             unsigned long long run) {
  __threadfence();
  signal_counter(reinterpret_cast<uint64_t*>(s.counters + s.tile_counter + tile), run);
  atomicAdd(s.counters + s.op_counter, 1ull);
}

// Every thread of the CTA, last thing.
__device__ __forceinline__ void leave_tile_region(const TileSync& s) {
  if (!s.first) wait_for_prior_grids();
}

}  // namespace megacut::executor
