// bench_publish: what publishing a finished task costs a megakernel region's CTA while its weight
// ring streams, and what it would cost with no fence. A grid of one CTA per SM, each CTA's first
// thread streaming kStreamSlotBytes bulk copies (cp.async.bulk, completing on mbarriers) from a
// 4 GiB buffer into a ring of 12 slots, as the runtime's producer does, with at most
// `in flight` copies outstanding. Two measurements:
//  1. fence: a second warp of every CTA times `fence.acq_rel.gpu`, the signaler's publishing
//     fence (executor/megakernel_runtime.cuh), after a store, at 0 (no stream) to 12 copies in
//     flight on its SM; beside it the stream's bandwidth: each CTA's bytes over its own streaming
//     time, averaged over the CTAs ("an SM") and summed ("in all"). The sum is the device's rate
//     only where every CTA streams over the same window; where their windows differ (the hop's
//     pairs end apart) it overstates it.
//  2. hop: CTAs in pairs, on two SMs, bounce 32 words 2000 times. Either as the runtime
//     publishes (the words, `fence.acq_rel.gpu`, then a flag the reader acquires), or as 8-byte
//     words of {flag, value} stored relaxed and read relaxed, which need no fence: a reader
//     takes a word once its flag is the round's. Round trip with no stream and with every
//     SM's ring streaming 12 copies; every round's words are checked.
// The first line prints the device copy ceiling measured in the same run (executor/bench/timing.h):
// a copy's bytes read plus written, where the stream only reads. The copies here carry no cache
// hint; the runtime's are evict-first (tiles::stream_cache_policy).
//
// Usage: bench_publish
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "executor/bench/timing.h"
#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/tiles/common.cuh"
#include "executor/tiles/stream.cuh"

namespace megacut::executor {
namespace {

using tiles::globaltimer_ns;
using tiles::shared_address;

constexpr int kSlots = 12;  // the ring of a decode region (stream_ring_slots of the room left)
constexpr int kSlotBytes = tiles::kStreamSlotBytes;
constexpr int kRingBytes = kSlots * kSlotBytes;
constexpr size_t kSourceBytes = size_t{4} << 30;
constexpr int kWords = 32;     // a hop's payload: one word a lane
constexpr int kRounds = 2000;  // fences timed, or round trips, per CTA
constexpr unsigned long long kGiveUpNs = 2'000'000'000ull;

// What a CTA's producer streamed, over how long (0 and 0 where it did not).
struct Streamed {
  unsigned long long bytes, ns;
};

// The producer (one thread): copies slot after slot until `stop`, each only once the copy
// `in_flight` before it has landed.
__device__ Streamed stream_until(const char* source, char* ring, unsigned long long* full,
                                 int in_flight, const volatile int& stop) {
  if (in_flight <= 0 || in_flight > kSlots) return {0, 0};  // 0: no stream
  const unsigned long long start = globaltimer_ns();
  size_t offset = size_t{blockIdx.x} * kSlotBytes;
  unsigned n = 0;
  for (; !stop; ++n) {
    if (n >= static_cast<unsigned>(in_flight)) {
      const unsigned before = n - in_flight;
      while (!tiles::mbarrier_try_wait(full + before % kSlots, (before / kSlots) & 1)) {
      }
    }
    const unsigned slot = n % kSlots;
    asm volatile(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(full + slot)),
        "r"(kSlotBytes)
        : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(shared_address(ring + slot * kSlotBytes)),
        "l"(source + offset), "r"(kSlotBytes), "r"(shared_address(full + slot))
        : "memory");
    offset += size_t{gridDim.x} * kSlotBytes;
    if (offset + kSlotBytes > kSourceBytes) offset = size_t{blockIdx.x} * kSlotBytes;
  }
  // Every copy lands before the CTA's shared memory goes.
  for (unsigned m = n > kSlots ? n - kSlots : 0; m < n; ++m) {
    while (!tiles::mbarrier_try_wait(full + m % kSlots, (m / kSlots) & 1)) {
    }
  }
  return {static_cast<unsigned long long>(n) * kSlotBytes, globaltimer_ns() - start};
}

__device__ void init_ring(unsigned long long* full) {
  for (int s = 0; s < kSlots; ++s) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(full + s)));
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

struct FenceResult {
  unsigned long long fence_ns_sum, fence_ns_worst;
  Streamed stream;
};

__global__ void time_fence(const char* source, unsigned* scratch, FenceResult* results,
                           int in_flight) {
  extern __shared__ __align__(1024) char ring[];
  __shared__ unsigned long long full[kSlots];
  __shared__ volatile int stop;
  if (threadIdx.x == 0) {
    stop = 0;
    init_ring(full);
  }
  __syncthreads();
  FenceResult& r = results[blockIdx.x];
  if (threadIdx.x == 0) {
    r.stream = stream_until(source, ring, full, in_flight, stop);
  } else if (threadIdx.x == 32) {
    unsigned long long sum = 0, worst = 0;
    for (int i = 0; i < kRounds; ++i) {
      scratch[blockIdx.x * 64 + i % 64] = i;  // a store for the fence to order
      const unsigned long long t0 = globaltimer_ns();
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      const unsigned long long t1 = globaltimer_ns();
      sum += t1 - t0;
      worst = t1 - t0 > worst ? t1 - t0 : worst;
      while (globaltimer_ns() < t1 + 3000) {
      }
    }
    stop = 1;
    r.fence_ns_sum = sum;
    r.fence_ns_worst = worst;
  }
}

// One side's mailbox: the runtime's way (words, then a flag) and the fence-free words.
struct Mailbox {
  unsigned words[kWords];
  unsigned flag;
  unsigned pad[31];
  unsigned long long flagged[kWords];  // flag << 32 | value
};

__device__ void publish(Mailbox* to, unsigned round, bool flagged_words) {
  const unsigned lane = threadIdx.x % 32, value = round * 977u + lane;
  if (flagged_words) {
    const unsigned long long word = static_cast<unsigned long long>(round) << 32 | value;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(to->flagged + lane), "l"(word)
                 : "memory");
    return;
  }
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(to->words + lane), "r"(value)
               : "memory");
  __syncwarp();
  if (lane == 0) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(&to->flag), "r"(round) : "memory");
  }
}

// Waits for round `round`'s words; false if they never came or came wrong.
__device__ bool receive(const Mailbox* from, unsigned round, bool flagged_words,
                        unsigned long long deadline) {
  const unsigned lane = threadIdx.x % 32;
  unsigned value;
  if (flagged_words) {
    for (;;) {
      unsigned long long word;
      asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
                   : "=l"(word)
                   : "l"(from->flagged + lane)
                   : "memory");
      if (__all_sync(~0u, static_cast<unsigned>(word >> 32) == round)) {
        value = static_cast<unsigned>(word);
        break;
      }
      if (__any_sync(~0u, globaltimer_ns() > deadline)) return false;
    }
  } else {
    for (;;) {
      unsigned flag;
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                   : "=r"(flag)
                   : "l"(&from->flag)
                   : "memory");
      // Every lane's own acquire must see the round before its load of the words.
      if (__all_sync(~0u, flag == round)) break;
      if (__any_sync(~0u, globaltimer_ns() > deadline)) return false;
    }
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                 : "=r"(value)
                 : "l"(from->words + lane)
                 : "memory");
  }
  return __all_sync(~0u, value == round * 977u + lane);
}

struct HopResult {
  unsigned long long trip_ns_sum, trip_ns_worst;
  Streamed stream;
  int rounds;  // those timed: kRounds unless the words stopped coming or came wrong
  int correct;
};

__global__ void time_hop(const char* source, Mailbox* mailboxes, HopResult* results, int streams,
                         int flagged_words) {
  extern __shared__ __align__(1024) char ring[];
  __shared__ unsigned long long full[kSlots];
  __shared__ volatile int stop;
  if (threadIdx.x == 0) {
    stop = 0;
    init_ring(full);
  }
  __syncthreads();
  HopResult& r = results[blockIdx.x];
  const int pair = blockIdx.x / 2, side = blockIdx.x % 2;
  if (threadIdx.x == 0) {
    if (streams) r.stream = stream_until(source, ring, full, kSlots, stop);
  } else if (threadIdx.x >= 32) {
    Mailbox* to = mailboxes + 2 * pair + 1 - side;
    const Mailbox* from = mailboxes + 2 * pair + side;
    const unsigned long long deadline = globaltimer_ns() + kGiveUpNs;
    unsigned long long sum = 0, worst = 0;
    bool ok = true;
    int rounds = 0;
    for (unsigned round = 1; ok && round <= kRounds; ++round, ++rounds) {
      const unsigned long long t0 = globaltimer_ns();
      if (side == 0) {
        publish(to, round, flagged_words);
        ok = receive(from, round, flagged_words, deadline);
      } else {
        ok = receive(from, round, flagged_words, deadline);
        publish(to, round, flagged_words);
      }
      const unsigned long long t1 = globaltimer_ns();
      sum += t1 - t0;
      worst = t1 - t0 > worst ? t1 - t0 : worst;
      while (globaltimer_ns() < t1 + 2000) {
      }
    }
    if (threadIdx.x == 32) {
      stop = 1;
      r.trip_ns_sum = sum;
      r.trip_ns_worst = worst;
      r.rounds = rounds;
      r.correct = ok;
    }
  }
}

int run() {
  const DeviceInfo device = current_device();
  if (device.arch < 90) {
    std::fprintf(stderr, "bench_publish: needs bulk copies (sm_90 or later); %s is sm_%d\n",
                 device.name.c_str(), device.arch);
    return 1;
  }
  const int sms = device.sm_count - device.sm_count % 2;  // pairs for the hop
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const double ceiling_gbs = copy_ceiling_gbs(stream);
  char* source;
  unsigned* scratch;
  Mailbox* mailboxes;
  CUDA_CHECK(cudaMalloc(&source, kSourceBytes));
  CUDA_CHECK(cudaMemsetAsync(source, 0x3c, kSourceBytes, stream));
  CUDA_CHECK(cudaMalloc(&scratch, sms * 64 * sizeof(unsigned)));
  CUDA_CHECK(cudaMalloc(&mailboxes, sms * sizeof(Mailbox)));
  const int smem = kRingBytes;
  CUDA_CHECK(cudaFuncSetAttribute(time_fence, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CUDA_CHECK(cudaFuncSetAttribute(time_hop, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::printf("%s, %d SMs; device copy ceiling %.0f GB/s (1 GiB, read + write), %.1f GB/s an SM\n",
              device.name.c_str(), device.sm_count, ceiling_gbs, ceiling_gbs / device.sm_count);

  std::printf(
      "\nfence.acq_rel.gpu on an SM whose ring streams (%d CTAs, one an SM, %d KB copies)\n", sms,
      kSlotBytes / 1024);
  std::printf("%9s %11s %12s %13s %11s\n", "in flight", "fence mean", "fence worst", "GB/s an SM",
              "GB/s in all");
  std::vector<FenceResult> fences(sms);
  FenceResult* fence_results;
  CUDA_CHECK(cudaMalloc(&fence_results, sms * sizeof(FenceResult)));
  for (int in_flight : {0, 1, 2, 3, 4, 6, 8, 12}) {
    CUDA_CHECK(cudaMemsetAsync(fence_results, 0, sms * sizeof(FenceResult), stream));
    // In flight 0: no stream.
    time_fence<<<sms, 64, smem, stream>>>(source, scratch, fence_results, in_flight);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(fences.data(), fence_results, sms * sizeof(FenceResult),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    double sum = 0, worst = 0, gbs = 0;
    for (const FenceResult& f : fences) {
      sum += static_cast<double>(f.fence_ns_sum) / kRounds;
      worst = std::max(worst, static_cast<double>(f.fence_ns_worst));
      if (f.stream.ns > 0) gbs += static_cast<double>(f.stream.bytes) / f.stream.ns;
    }
    std::printf("%9d %8.0f ns %9.0f ns %13.1f %11.0f\n", in_flight, sum / sms, worst, gbs / sms,
                gbs);
  }

  std::printf("\nround trip between two SMs, %d words each way, %d rounds a pair, %d pairs\n",
              kWords, kRounds, sms / 2);
  std::printf("%-26s %-34s %10s %11s %11s %8s\n", "stream", "publish", "trip mean", "trip worst",
              "GB/s in all", "correct");
  std::vector<HopResult> hops(sms);
  HopResult* hop_results;
  CUDA_CHECK(cudaMalloc(&hop_results, sms * sizeof(HopResult)));
  bool all_correct = true;
  for (int streams : {0, 1}) {
    for (int flagged_words : {0, 1}) {
      CUDA_CHECK(cudaMemsetAsync(mailboxes, 0, sms * sizeof(Mailbox), stream));
      CUDA_CHECK(cudaMemsetAsync(hop_results, 0, sms * sizeof(HopResult), stream));
      time_hop<<<sms, 64, smem, stream>>>(source, mailboxes, hop_results, streams, flagged_words);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaMemcpyAsync(hops.data(), hop_results, sms * sizeof(HopResult),
                                 cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      double sum = 0, worst = 0, gbs = 0;
      bool correct = true;
      for (int c = 0; c < sms; ++c) {
        correct = correct && hops[c].correct == 1;
        if (hops[c].stream.ns > 0)
          gbs += static_cast<double>(hops[c].stream.bytes) / hops[c].stream.ns;
        if (c % 2 != 0) continue;
        sum += static_cast<double>(hops[c].trip_ns_sum) / std::max(hops[c].rounds, 1);
        worst = std::max(worst, static_cast<double>(hops[c].trip_ns_worst));
      }
      all_correct = all_correct && correct;
      std::printf(
          "%-26s %-34s %7.0f ns %8.0f ns %11.0f %8s\n", streams ? "every SM, 12 in flight" : "none",
          flagged_words ? "{flag, value} words, no fence" : "words, fence.acq_rel.gpu, flag",
          sum / (sms / 2), worst, gbs, correct ? "yes" : "NO");
    }
  }
  CUDA_CHECK(cudaFree(hop_results));
  CUDA_CHECK(cudaFree(fence_results));
  CUDA_CHECK(cudaFree(mailboxes));
  CUDA_CHECK(cudaFree(scratch));
  CUDA_CHECK(cudaFree(source));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return all_correct ? 0 : 1;
}

}  // namespace
}  // namespace megacut::executor

int main() {
  try {
    return megacut::executor::run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_publish: %s\n", e.what());
    return 1;
  }
}
