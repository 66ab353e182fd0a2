// The persistent megakernel runtime, device side: what every generated region kernel runs
// (executor/megakernel_codegen.cc writes the kernel, which names its bodies in a `Region` struct
// and calls run_region<Region>). Compiled by NVRTC only.
//
// One CTA per queue. Its first kConsumerThreads threads run the queue's tasks: they wait for a
// task's dependencies together (thread t for dependencies t, t + kConsumerThreads, ...: one
// round of acquire loads per kConsumerThreads of them), meet at the runtime's barrier, run the
// body (threads past its kThreads skip it; the body syncs on the named barrier of its width,
// tiles/common.cuh), meet again, and the task's counter is published (by the signaler warp
// where there is one, else by thread 0), and its op's count goes up by one: a task that needs
// every task of an op waits for that count alone (mk::Dep).
// Where the region has streamed bodies, one more warp, the producer, walks the same queue and
// fills the CTA's weight ring (tiles/stream.cuh) with the weights of the tasks ahead, from the
// region's first instruction on: weights are no kernel's output, so neither the kernels before
// the region nor the task's dependencies hold them back. Every wait is bounded in time
// (Params::watchdog_ns): a region that cannot make progress records where it hung and exits.
// A body's wait for flagged words (tiles/flagged.cuh), whose producers' waits are all bounded,
// gives up once one of those has, and traps after four watchdogs rather than hang.
#pragma once

#include "executor/counters.cuh"
#include "executor/grid_dependency.cuh"
#include "executor/megakernel_abi.cuh"
#include "executor/tile_sync.cuh"
#include "executor/tiles/mma.cuh"
#include "executor/tiles/stream.cuh"

namespace megacut::executor::mk {

// With streamed bodies the block is three warpgroups: two of consumers and the producer's, of
// which one thread streams. An SM's registers are four files, each holding one warp of each
// warpgroup, so a block of 12 warps starts at 168 registers a thread; the producer's warpgroup
// then gives back what it does not need and the consumers take it. setmaxnreg.inc takes only
// what a dec of the same CTA gave back (2 * 232 + 40 = 3 * 168): asking for more would wait
// forever. setmaxnreg is an sm_90a instruction; elsewhere every warp keeps 168.
inline constexpr int kProducerRegisters = 40;
inline constexpr int kConsumerRegisters = 232;

template <int kRegisters, bool kIncrease>
__device__ __forceinline__ void set_register_count() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kIncrease) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegisters));
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegisters));
  }
#endif
}

// One dependency (Dep) of task `task` (executor/tile_sync.cuh: bounded by the watchdog, one
// hung wait stopping the whole region at once).
__device__ __forceinline__ bool wait_dep(const Params& p, int task, Dep dep,
                                         unsigned long long run) {
  return wait_dependency(p.counters, dep, run, p.watchdog_ns, p.error, p.region, task);
}

// The producer (one thread): the queue's weight streams, in queue order. It stops early only once
// the consumers did (`stopped`, set before they leave); either way it waits for its copies to land.
template <class Region>
__device__ __forceinline__ void produce_queue(const Params& p, const tiles::StreamRing& ring,
                                              int first, int last, const volatile int& stopped) {
  const unsigned long long policy = tiles::stream_cache_policy();
  const unsigned long long limit = 4 * p.watchdog_ns;  // the consumers give up well before
  auto give_up = [&](unsigned long long waited_ns) {
    if (stopped) return true;
    if (waited_ns > limit) __trap();  // a runtime defect: never hang
    return false;
  };
  unsigned position = 0;
  bool after_prior_grids = false;
  for (int i = first; i < last; ++i) {
    tiles::StreamPlan plan = Region::stream(p, p.tasks[i]);
    if (plan.stages == 0) continue;
    if (plan.after_prior_grids && !after_prior_grids) {
      wait_for_prior_grids();
      after_prior_grids = true;
      plan = Region::stream(p, p.tasks[i]);  // its row reads the step: read it again now
    }
    if (!tiles::produce_stream(ring, position, plan, policy, give_up)) break;
  }
  // Copies still in flight must land before the CTA can leave, whether or not its consumers
  // take them.
  tiles::drain_stream(ring, position,
                      [&](unsigned long long waited_ns) { return waited_ns > limit; });
}

// What the consumers of a task need before it runs, copied into shared memory with cp.async one
// task ahead (the descriptor two ahead), each thread copying its own entries: thread t copies
// 16 bytes of the layout, descriptor word t and the task's dependency t. The blob holds
// kMaxLayoutBytes past its last layout, so whole chunks may be read. Loop state in shared memory
// rather than in registers: held across the bodies, registers would spill to local memory, whose
// reloads miss L1 once a dependency wait's acquire has emptied it.
struct TaskPrefetch {
  Task tasks[3];                                   // task i in tasks[i % 3]
  __align__(16) char layouts[2][kMaxLayoutBytes];  // task i's layout in layouts[i % 2]
  Dep deps[2][kMaxPrefetchedDeps];                 // task i's first dependencies in deps[i % 2]
};

__device__ __forceinline__ void fetch_task(const Params& p, int index, Task& slot) {
  constexpr int kWords = static_cast<int>(sizeof(Task) / 4);
  if (threadIdx.x < kWords) {
    tiles::cp_async4(reinterpret_cast<int*>(&slot) + threadIdx.x,
                     reinterpret_cast<const int*>(p.tasks + index) + threadIdx.x);
  }
}

__device__ __forceinline__ void fetch_layout_and_deps(const Params& p, const Task& t, char* layout,
                                                      Dep* deps) {
  const int offset = static_cast<int>(threadIdx.x) * 16;
  if (offset < t.layout_bytes && offset < kMaxLayoutBytes) {
    tiles::cp_async16(layout + offset, p.layouts + t.layout_offset + offset, true);
  }
  const int d = t.dep_begin + static_cast<int>(threadIdx.x);
  if (threadIdx.x < kMaxPrefetchedDeps && d < t.dep_end) {
    tiles::cp_async8(deps + threadIdx.x, p.deps + d);
  }
}

// The signaler (one thread, with streamed bodies): publishes the counters of the tasks the
// consumers finished (`done` of them, set with a release after their barrier) and adds each to
// its op's count, with one release fence for all those it finds finished at once, so that the
// fence's wait for the CTA's stores holds up no consumer. It polls `done` without sleeping (a
// sleep's wake-up is on every hop's path) and reads the counters of the task being run while
// it runs. Stops early only once the consumers did.
__device__ __forceinline__ void signal_queue(const Params& p, int first, int last, const int& done,
                                             const unsigned long long& run_index,
                                             const volatile int& stopped) {
  const unsigned long long limit = 4 * p.watchdog_ns;  // the consumers give up well before
  const unsigned done_address = tiles::shared_address(&done);
  unsigned long long idle_since = 0;
  int index = 0, op_counter = 0;  // task `next`'s counters
  if (first < last) {
    index = p.tasks[first].index;
    op_counter = p.tasks[first].op_counter;
  }
  for (int next = first; next < last;) {
    int finished;
    asm volatile("ld.acquire.cta.shared.s32 %0, [%1];"
                 : "=r"(finished)
                 : "r"(done_address)
                 : "memory");
    finished += first;
    if (finished <= next) {
      if (stopped) return;
      const unsigned long long now = tiles::globaltimer_ns();
      if (idle_since == 0) idle_since = now;
      if (now - idle_since > limit) __trap();  // a runtime defect: never hang
      continue;
    }
    idle_since = 0;
#ifdef MEGACUT_MK_TIMING
    if (p.timings != nullptr) {
      const unsigned long long seen = tiles::globaltimer_ns();
      for (int t = next; t < finished; ++t) p.timings[p.tasks[t].index].signal_ns = seen;
    }
#endif
    // Cumulative: the consumers' writes, ordered before `done` by their barrier and its release.
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    const unsigned long long run = *const_cast<const volatile unsigned long long*>(&run_index);
    for (; next < finished; ++next) {
      asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p.counters + index), "l"(run)
                   : "memory");
      asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(p.counters + op_counter)
                   : "memory");
#ifdef MEGACUT_MK_TIMING
      if (p.timings != nullptr) p.timings[index].publish_ns = tiles::globaltimer_ns();
#endif
      if (next + 1 < last) {
        index = p.tasks[next + 1].index;
        op_counter = p.tasks[next + 1].op_counter;
      }
    }
  }
}

// The consumers' part of the region: the queue's tasks, in order. What a task needs before it runs
// (TaskPrefetch) is copied during the task before, so that neither its dependency wait nor its
// body waits on memory for it. With a signaler (kSignaler) thread 0 only counts the finished
// tasks; without, it publishes each one's counter itself.
template <class Region, bool kSignaler>
__device__ __forceinline__ void run_tasks(const Params& p, char* smem,
                                          const tiles::StreamRing& ring, int first, int last,
                                          unsigned long long& run_index, int& done,
                                          volatile int& stopped) {
  constexpr int kConsumers = Region::kConsumerThreads;
  static_assert(kConsumers * 16 >= kMaxLayoutBytes, "one copy a thread");
  __shared__ TaskPrefetch ahead;
  // Launched with Programmatic Dependent Launch, the region may start while the kernels it
  // reads still run: wait for them (the weight stream reads no kernel's output).
  wait_for_prior_grids();
  // Launches of a region never overlap (stream order, and the wait above), so launch n's CTAs
  // all arrive after launch n - 1's and before launch n + 1's: each finds n * gridDim.x or more
  // arrivals before its own, and fewer than (n + 1) * gridDim.x. Runs count from 1.
  if (threadIdx.x == 0) run_index = atomicAdd(p.arrivals, 1ull) / gridDim.x + 1;
  if (first < last) fetch_task(p, first, ahead.tasks[0]);
  if (first + 1 < last) fetch_task(p, first + 1, ahead.tasks[1]);
  tiles::cp_async_commit();
  tiles::cp_async_wait<0>();
  consumer_sync<kConsumers>();
  if (first < last) fetch_layout_and_deps(p, ahead.tasks[0], ahead.layouts[0], ahead.deps[0]);
  tiles::cp_async_commit();
  const unsigned long long run = run_index;
  tiles::StreamCursor weights{ring, 0, 4 * p.watchdog_ns};
  weights.region = {static_cast<unsigned>(run), &p.error->flag, 4 * p.watchdog_ns};
  for (int i = first; i < last; ++i) {
    const int k = i - first;
    // This thread's copies for task i (issued during task i - 1) have landed; the barrier below
    // shows every thread's.
    tiles::cp_async_wait<0>();
    const Task& task = ahead.tasks[k % 3];
    const int dep_begin = task.dep_begin, dep_end = task.dep_end;
    bool ok = true;
    const int mine = dep_begin + static_cast<int>(threadIdx.x);
    for (int d = mine; ok && d < dep_end; d += kConsumers) {
      const bool copied = d == mine && threadIdx.x < kMaxPrefetchedDeps;
      ok = wait_dep(p, task.index, copied ? ahead.deps[k % 2][threadIdx.x] : p.deps[d], run);
    }
    if (!consumer_sync_and<kConsumers>(ok)) {
      if (threadIdx.x == 0) stopped = 1;
      return;
    }
    // Task i + 1's layout and dependencies, and task i + 2's descriptor, while task i runs.
    if (i + 1 < last) {
      fetch_layout_and_deps(p, ahead.tasks[(k + 1) % 3], ahead.layouts[(k + 1) % 2],
                            ahead.deps[(k + 1) % 2]);
    }
    if (i + 2 < last) fetch_task(p, i + 2, ahead.tasks[(k + 2) % 3]);
    tiles::cp_async_commit();
#ifdef MEGACUT_MK_TIMING
    if (p.timings != nullptr) {
      if (threadIdx.x == 0) p.timings[task.index].start_ns = tiles::globaltimer_ns();
      weights.region.inputs_ns = &p.timings[task.index].inputs_ns;
    }
#endif
    Region::run(p, ahead.layouts[k % 2], task, smem, weights);
    consumer_sync<kConsumers>();
    if (threadIdx.x == 0) {
#ifdef MEGACUT_MK_TIMING
      if (p.timings != nullptr) {
        p.timings[task.index].end_ns = tiles::globaltimer_ns();
        p.timings[task.index].sm = smid();
        p.timings[task.index].block = blockIdx.x;
      }
#endif
      if constexpr (kSignaler) {
        asm volatile("st.release.cta.shared.s32 [%0], %1;" ::"r"(tiles::shared_address(&done)),
                     "r"(k + 1)
                     : "memory");
      } else {
        __threadfence();
        signal_counter(reinterpret_cast<uint64_t*>(p.counters + task.index), run);
        atomicAdd(p.counters + task.op_counter, 1ull);
#ifdef MEGACUT_MK_TIMING
        if (p.timings != nullptr) p.timings[task.index].publish_ns = tiles::globaltimer_ns();
#endif
      }
    }
  }
  tiles::cp_async_wait<0>();
  // The next kernel may launch once every CTA is past its queue (with Programmatic Dependent
  // Launch; it still waits for this grid to finish before it reads anything).
  allow_dependent_launch();
}

// The region: `Region` names its bodies (kConsumerThreads, kStreams, stream, run), p the tables.
template <class Region>
__device__ void run_region(const Params& p) {
  extern __shared__ __align__(128) char smem[];
  __shared__ unsigned long long run_index;
  __shared__ int stopped, done;
  __shared__ unsigned long long full[tiles::kStreamMaxSlots], empty[tiles::kStreamMaxSlots];
  const tiles::StreamRing ring{tiles::ring_data(smem + p.ring_offset), full, empty, p.ring_slots,
                               tiles::kRegionStagesInFlight};
#ifdef MEGACUT_MK_TIMING
  if (threadIdx.x == 0 && p.timings != nullptr)
    p.cta_entry_ns[blockIdx.x] = tiles::globaltimer_ns();
#endif
  const int first = p.queue_begin[blockIdx.x], last = p.queue_begin[blockIdx.x + 1];
  if constexpr (Region::kStreams) {
    if (threadIdx.x == 0) {
      stopped = 0;
      done = 0;
      tiles::init_stream_ring(ring);
    }
    __syncthreads();
    if (threadIdx.x >= Region::kConsumerThreads) {
      // The producer's warpgroup gives its registers to the consumers'; its first thread streams,
      // the first of its second warp signals.
      set_register_count<kProducerRegisters, false>();
      if (threadIdx.x == Region::kConsumerThreads) {
        produce_queue<Region>(p, ring, first, last, stopped);
      } else if (threadIdx.x == Region::kConsumerThreads + 32) {
        signal_queue(p, first, last, done, run_index, stopped);
      }
    } else {
      set_register_count<kConsumerRegisters, true>();
      run_tasks<Region, true>(p, smem, ring, first, last, run_index, done, stopped);
    }
  } else {
    run_tasks<Region, false>(p, smem, ring, first, last, run_index, done, stopped);
  }
}

// A body's part of Region::stream and Region::run: streamed bodies take the CTA's weight
// cursor (and with it the region's run, for flagged words), mapped bodies their tensor maps;
// the others have nothing to stream.
using tiles::StreamedBody;

template <class Body>
__device__ __forceinline__ tiles::StreamPlan body_stream(const char* layout, long long tile,
                                                         const void* map) {
  if constexpr (StreamedBody<Body>) {
    return Body::stream(*reinterpret_cast<const typename Body::Layout*>(layout), tile, map);
  } else {
    return tiles::StreamPlan{};
  }
}

template <class Body>
__device__ __forceinline__ void body_run(const char* layout, long long tile, char* smem,
                                         tiles::StreamCursor& weights, const char* maps) {
  if (threadIdx.x >= Body::kThreads) return;
  const typename Body::Layout l = *reinterpret_cast<const typename Body::Layout*>(layout);
  if constexpr (StreamedBody<Body>) {
    Body::run(l, tile, smem, weights);
  } else if constexpr (tiles::MappedBody<Body>) {
    Body::run(l, tile, smem, maps);
  } else {
    Body::run(l, tile, smem);
  }
}

template <class... Body>
__host__ __device__ constexpr int max_threads() {
  int n = 32;
  ((n = Body::kThreads > n ? Body::kThreads : n), ...);
  return n;
}

template <class... Body>
__host__ __device__ constexpr bool any_streamed() {
  return (StreamedBody<Body> || ...);
}

}  // namespace megacut::executor::mk
