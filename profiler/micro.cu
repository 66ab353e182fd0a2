// The micro-benchmarks (micro.h says what each measures and how). Every kernel here is trivial
// on purpose: what is timed is the boundary around it, not its work.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "executor/counters.cuh"
#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/device_memory.h"
#include "executor/launch.h"
#include "executor/tiles/flagged.cuh"
#include "model/error.h"
#include "profiler/micro.h"

namespace megacut::profiler {
namespace {

// Which micro-benchmark a tagged launch belongs to (Tag::stage); the launch sweep's graph sizes
// take LaunchSweep::kLaunchSweepTag + their index.
enum Bench : int { kPlainChain = 0, kPdlChain = 1, kRegion = 2 };
static_assert(LaunchSweep::kLaunchSweepTag > kRegion);

constexpr int kChainKernels = 32;
// Graph sizes of the launch sweep: from one node to past the largest stage graphs of the
// bundled models (a few hundred kernels).
constexpr int kLaunchSweepNodes[] = {1, 16, 64, 128, 256, 512};
// Sizes also replayed back to back: long enough that the GPU, at about a microsecond a trivial
// kernel and gap (0.96 µs untraced on the H200), falls behind the host, at under half a
// microsecond a node; and replays per sample after the first.
constexpr int kBackToBackMinNodes = 256;
constexpr int kBackToBackReplays = 4;
constexpr int kChainThreads = 32;
constexpr int kRegionThreads = 128;
constexpr int kRegionTasks = 4;
constexpr int kPingPongBatches = 100;
constexpr int kDependencyCheckThreads = 256;  // the widest tile body's block
constexpr int kDependencyCheckRounds = 16;
constexpr int kDependencyCheckBatches = 100;
constexpr int kRoundTripsPerBatch = 100;
constexpr int kTickReads = 1 << 16;

using u64 = unsigned long long;

using executor::DeviceArray;
using executor::wait_for_legacy_stream;
using tiles::globaltimer_ns;

struct ChainLayout {
  u64* value;     // (1,) the word every link increments: each depends on the one before
  u64* entry_ns;  // (kChainKernels,) %globaltimer once past the dependency wait
  u64* exit_ns;   // (kChainKernels,) %globaltimer after the last store
};

// One link of a chain of dependent one-CTA kernels. Launched with PDL, it waits for its
// predecessor (griddepcontrol.wait) and lets its own dependent launch at once; launched without,
// both instructions do nothing.
__global__ void chain_kernel(ChainLayout l, int index) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const u64 entry = globaltimer_ns();
  asm volatile("griddepcontrol.launch_dependents;");
  if (threadIdx.x == 0) {
    *l.value += 1;
    l.entry_ns[index] = entry;
  }
  __syncthreads();
  if (threadIdx.x == 0) l.exit_ns[index] = globaltimer_ns();
}

// One node of the launch sweep's chains: each increments the word the one before incremented.
__global__ void sweep_kernel(u64* value) {
  if (threadIdx.x == 0) *value += 1;
}

// The smallest step %globaltimer takes on this device.
__global__ void timer_tick_kernel(u64* tick_ns) {
  u64 best = ~0ull, previous = globaltimer_ns();
  for (int i = 0; i < kTickReads; ++i) {
    const u64 now = globaltimer_ns();
    if (now != previous) best = min(best, now - previous);
    previous = now;
  }
  *tick_ns = best;
}

struct RegionLayout {
  u64* entry_ns;       // (ctas,) each CTA's first instruction
  u64* first_task_ns;  // (ctas,) its first task's start
  u64* last_end_ns;    // (ctas,) its last task's end
  float* sink;         // (ctas, kRegionThreads)
};

// A trivial persistent region: each CTA runs kRegionTasks empty tasks, back to back.
__global__ void __launch_bounds__(kRegionThreads) region_kernel(RegionLayout l) {
  const u64 entry = globaltimer_ns();
  float value = static_cast<float>(threadIdx.x);
  for (int task = 0; task < kRegionTasks; ++task) {
    __syncthreads();
    if (task == 0 && threadIdx.x == 0) l.first_task_ns[blockIdx.x] = globaltimer_ns();
    value = value * 1.0001f + 1.f;
    l.sink[blockIdx.x * kRegionThreads + threadIdx.x] = value;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    l.entry_ns[blockIdx.x] = entry;
    l.last_end_ns[blockIdx.x] = globaltimer_ns();
  }
}

struct PingPongLayout {
  uint64_t* counter;  // (1,) zero at launch
  u64* batch_ns;      // (kPingPongBatches,) kRoundTripsPerBatch round trips, as CTA 0 saw them
  int* smid;          // (2,)
  int* error;         // (1,) set when a wait ran out of watchdog
};

// CTA 0 signals 2n+1 and waits for 2n+2; CTA 1 waits for 2n+1 and signals 2n+2. Each CTA takes
// more than half an SM's shared memory, so the two run on different SMs.
__global__ void pingpong_kernel(PingPongLayout l) {
  extern __shared__ char reserved[];
  if (threadIdx.x != 0) return;
  int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  l.smid[blockIdx.x] = sm;
  reserved[0] = 0;
  const bool ping = blockIdx.x == 0;
  uint64_t n = 0;
  for (int batch = 0; batch < kPingPongBatches; ++batch) {
    const u64 start = globaltimer_ns();
    for (int i = 0; i < kRoundTripsPerBatch; ++i, ++n) {
      if (ping) {
        executor::signal_counter(l.counter, 2 * n + 1);
        if (!executor::wait_counter(l.counter, 2 * n + 2)) {
          *l.error = 1;
          return;
        }
      } else {
        if (!executor::wait_counter(l.counter, 2 * n + 1)) {
          *l.error = 1;
          return;
        }
        executor::signal_counter(l.counter, 2 * n + 2);
      }
    }
    if (ping) l.batch_ns[batch] = globaltimer_ns() - start;
  }
}

struct WordPingPongLayout {
  unsigned long long* words;  // (4,) 32-byte aligned, zero at launch: one chunk of flagged words
  u64* batch_ns;              // (kPingPongBatches,) as pingpong_kernel's
  int* smid;                  // (2,)
  int* error;                 // (1,) the first error: 1 a poll timed out; 2 a torn chunk
};

// As pingpong_kernel, with a chunk of flagged words for the counter: CTA 0 writes the chunk of
// run 2n+1 and polls for run 2n+2, CTA 1 the other way round. Each chunk's values come from
// its run, and the poller checks them.
__global__ void word_pingpong_kernel(WordPingPongLayout l) {
  extern __shared__ char reserved[];
  if (threadIdx.x != 0) return;
  int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  l.smid[blockIdx.x] = sm;
  reserved[0] = 0;
  const bool ping = blockIdx.x == 0;
  constexpr unsigned long long kTimeoutNs = 1'000'000'000;
  auto put = [&](unsigned run) {
    const tiles::bf16 value = __float2bfloat16(static_cast<float>(run & 0xff));
    for (int i = 0; i < 4; ++i) tiles::store_flagged(l.words + i, value, value, run);
  };
  auto take = [&](unsigned run) {
    const unsigned long long* const at[1] = {l.words};
    uint4 chunk[1];
    if (tiles::load_flagged_chunks<1>(at, run, nullptr, kTimeoutNs, chunk) !=
        tiles::FlaggedWait::done) {
      atomicCAS(l.error, 0, 1);  // the first error wins: the other CTA then times out
      return false;
    }
    const unsigned short expected =
        __bfloat16_as_ushort(__float2bfloat16(static_cast<float>(run & 0xff)));
    if ((chunk[0].x & 0xffff) != expected || chunk[0].w >> 16 != expected) {
      atomicCAS(l.error, 0, 2);
      return false;
    }
    return true;
  };
  unsigned n = 0;
  for (int batch = 0; batch < kPingPongBatches; ++batch) {
    const u64 start = globaltimer_ns();
    for (int i = 0; i < kRoundTripsPerBatch; ++i, ++n) {
      if (ping) {
        put(2 * n + 1);
        if (!take(2 * n + 2)) return;
      } else {
        if (!take(2 * n + 1)) return;
        put(2 * n + 2);
      }
    }
    if (ping) l.batch_ns[batch] = globaltimer_ns() - start;
  }
}

struct DependencyCheckLayout {
  const uint64_t* counters;  // (kDependencyCheckRounds * kDependencyCheckThreads,) all nonzero
  u64* batch_ns;             // (kDependencyCheckBatches,) kDependencyCheckRounds rounds each
  int* missing;              // (1,) rounds that saw a counter at zero (none should)
};

// One CTA checks already-signalled counters as the region kernel checks a task's dependencies:
// each thread acquire-loads one counter of the round, then the block's barrier ANDs what they
// saw; thread 0 times kDependencyCheckRounds rounds at a time.
__global__ void __launch_bounds__(kDependencyCheckThreads)
    dependency_check_kernel(DependencyCheckLayout l) {
  int missing = 0;
  for (int batch = 0; batch < kDependencyCheckBatches; ++batch) {
    __syncthreads();
    const u64 start = globaltimer_ns();
    for (int r = 0; r < kDependencyCheckRounds; ++r) {
      const uint64_t* counter = l.counters + r * kDependencyCheckThreads + threadIdx.x;
      missing += __syncthreads_and(executor::load_acquire(counter) >= 1) ? 0 : 1;
    }
    if (threadIdx.x == 0) l.batch_ns[batch] = globaltimer_ns() - start;
  }
  if (threadIdx.x == 0) *l.missing = missing;
}

// Dependent launch: a one-CTA kernel lets its dependent launch first thing, then spins long
// enough that the dependent starts while it runs; the dependent (launched with PDL, so it may)
// reads %globaltimer first. Neither waits for the other's memory: each writes its own word.
constexpr int kDependentLaunchPairs = 100;
constexpr u64 kDependentLaunchSpinNs = 50'000;

__global__ void trigger_first_kernel(u64* trigger_ns) {
  if (threadIdx.x == 0) *trigger_ns = globaltimer_ns();
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const u64 start = globaltimer_ns();
  while (globaltimer_ns() - start < kDependentLaunchSpinNs) {
  }
}

__global__ void dependent_kernel(u64* start_ns) {
  const u64 now = globaltimer_ns();
  if (threadIdx.x == 0) *start_ns = now;
}

// ---- host side ---------------------------------------------------------------------------------

class Event {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

void launch_chain(const ChainLayout& l, bool pdl, cudaStream_t stream) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(kChainThreads);
  config.stream = stream;
  config.attrs = pdl ? &attribute : nullptr;
  config.numAttrs = pdl ? 1 : 0;
  for (int i = 0; i < kChainKernels; ++i)
    CUDA_CHECK(cudaLaunchKernelEx(&config, chain_kernel, l, i));
}

double signed_ns(uint64_t from, uint64_t to) {
  return static_cast<double>(static_cast<int64_t>(to - from));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ns_text(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f ns", ns);
  return text;
}

std::string ns_text(uint64_t ns) { return ns_text(static_cast<double>(ns)); }

// The kernels of one tagged launch: exactly `expected` of kernel `name`, else an error.
const std::vector<KernelRecord>& launch_kernels(const TaggedKernels& tagged, Tag tag,
                                                size_t expected, const char* name,
                                                const char* what) {
  const std::vector<KernelRecord>& kernels = tagged.of(tag);
  if (kernels.size() != expected) {
    throw Error(std::string("micro-benchmark ") + what + ", launch " + std::to_string(tag.index) +
                ": CUPTI saw " + std::to_string(kernels.size()) + " kernels, expected " +
                std::to_string(expected));
  }
  for (const KernelRecord& k : kernels) {
    if (k.name.find(name) == std::string::npos) {
      throw Error(std::string("micro-benchmark ") + what + ": unexpected kernel " + k.name);
    }
  }
  return kernels;
}

// Positive samples only: in-kernel reads can land a timer tick on the wrong side.
std::vector<double> clamped(const std::vector<double>& samples, int* negatives) {
  std::vector<double> out;
  for (double s : samples) {
    if (s < 0) ++*negatives;
    out.push_back(std::max(0.0, s));
  }
  return out;
}

// One launch of a chain: each kernel's %globaltimer once past its dependency and after its last
// store, and for the plain chain the CUDA events around the graph launch.
struct ChainRun {
  std::vector<u64> entry, exit;
  double event_ms = 0;
};

struct RegionRun {
  std::vector<u64> entry, first_task, last_end;
};

// What the launch benchmarks recorded: the plain chain launched untraced, then the plain chain,
// the PDL chain and the region traced, each alone on an idle stream with its in-kernel times
// read back after it, and the launch sweep's rounds beside them.
struct LaunchRecords {
  std::vector<double> untraced_launch_ms;
  std::vector<ChainRun> plain, pdl;
  std::vector<RegionRun> region;
  TaggedKernels tagged;
};

LaunchRecords record_launches(CuptiTracer& tracer, int launches, int ctas, cudaStream_t stream,
                              LaunchSweep& sweep) {
  // The chains, captured once each.
  DeviceArray<u64> value(1), entry_ns(kChainKernels), exit_ns(kChainKernels);
  const ChainLayout chain{value.get(), entry_ns.get(), exit_ns.get()};
  executor::CudaGraph plain, pdl;
  plain.capture(stream, [&] { launch_chain(chain, false, stream); });
  pdl.capture(stream, [&] { launch_chain(chain, true, stream); });
  DeviceArray<u64> region_entry(ctas), first_task(ctas), last_end(ctas);
  DeviceArray<float> sink(static_cast<size_t>(ctas) * kRegionThreads);
  const RegionLayout region{region_entry.get(), first_task.get(), last_end.get(), sink.get()};

  for (int i = 0; i < 3; ++i) {  // warm-up, untraced
    plain.replay(stream);
    pdl.replay(stream);
    region_kernel<<<ctas, kRegionThreads, 0, stream>>>(region);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));

  LaunchRecords out;
  const Event before, after;
  auto time_launch_ms = [&](const executor::CudaGraph& graph) {
    CUDA_CHECK(cudaEventRecord(before.get(), stream));
    graph.replay(stream);
    CUDA_CHECK(cudaEventRecord(after.get(), stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, before.get(), after.get()));
    return static_cast<double>(ms);
  };
  // Untraced first: tracing slows the launch itself (it instruments each kernel node).
  for (int i = 0; i < launches; ++i) out.untraced_launch_ms.push_back(time_launch_ms(plain));
  for (int i = 0; i < launches; ++i) sweep.time_round();
  out.tagged = tracer.trace("micro-benchmarks", [&] {
    for (int i = 0; i < launches; ++i) {
      double ms;
      {
        CuptiTracer::Scope tag(Tag{TagKind::micro, kPlainChain, i});
        ms = time_launch_ms(plain);
      }
      out.plain.push_back({entry_ns.download(), exit_ns.download(), ms});
    }
    for (int i = 0; i < launches; ++i) {
      {
        CuptiTracer::Scope tag(Tag{TagKind::micro, kPdlChain, i});
        pdl.replay(stream);
      }
      CUDA_CHECK(cudaStreamSynchronize(stream));
      out.pdl.push_back({entry_ns.download(), exit_ns.download()});
    }
    for (int i = 0; i < launches; ++i) {
      {
        CuptiTracer::Scope tag(Tag{TagKind::micro, kRegion, i});
        region_kernel<<<ctas, kRegionThreads, 0, stream>>>(region);
      }
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaStreamSynchronize(stream));
      out.region.push_back({region_entry.download(), first_task.download(), last_end.download()});
    }
    for (int i = 0; i < launches; ++i) sweep.trace_round(i);
  });
  return out;
}

// What the plain chain says about the clocks and a plain kernel, for the benchmarks after it.
struct PlainChain {
  bool clocks_agree = false;
  double duration_ns = 0;   // a chain kernel's, p50
  double inner_gap_ns = 0;  // last store to the next kernel's first instruction, p50
  int clamped_gaps = 0;     // CUPTI overlaps within kOverlapToleranceNs, counted as gaps of 0
  std::string clocks_note;  // how the clocks compare, for MicroResult::notes
};

// Plain chain. Graph launch: untraced events around cudaGraphLaunch less the traced CUPTI span
// of its kernels, as a stage's untraced graph_ns is its launch plus its kernels and gaps (only
// GPU timestamps: CUPTI's CPU-side clock was seen tens of µs off them). Gaps: CUPTI.
// In-kernel reads (entry, exit) against CUPTI's start and end: entry - start + end - exit is a
// kernel's time outside its instructions whatever the offset between the two clocks.
PlainChain plain_chain(const LaunchRecords& r, u64 tick_ns, MicroResult& out) {
  std::vector<double> launch_ns, traced_launch_ns, gap_ns, durations_ns, entry_offsets,
      exit_offsets, outside_ns, inner_gaps;
  PlainChain chain;
  for (size_t i = 0; i < r.plain.size(); ++i) {
    const Tag tag{TagKind::micro, kPlainChain, static_cast<int>(i)};
    const auto& ks = launch_kernels(r.tagged, tag, kChainKernels, "chain_kernel", "kernel gap");
    const ChainRun& run = r.plain[i];
    const double span_ns = signed_ns(ks.front().start_ns, ks.back().end_ns);
    launch_ns.push_back(r.untraced_launch_ms[i] * 1e6 - span_ns);
    traced_launch_ns.push_back(run.event_ms * 1e6 - span_ns);
    for (int k = 0; k < kChainKernels; ++k) {
      durations_ns.push_back(signed_ns(ks[k].start_ns, ks[k].end_ns));
      entry_offsets.push_back(signed_ns(ks[k].start_ns, run.entry[k]));
      exit_offsets.push_back(signed_ns(run.exit[k], ks[k].end_ns));
      outside_ns.push_back(entry_offsets.back() + exit_offsets.back());
      if (k + 1 == kChainKernels) continue;
      const double gap = signed_ns(ks[k].end_ns, ks[k + 1].start_ns);
      if (gap < -static_cast<double>(kOverlapToleranceNs)) {
        throw Error("micro-benchmark kernel gap: a kernel of a plain graph chain started " +
                    ns_text(-gap) + " before its predecessor ended");
      }
      chain.clamped_gaps += gap < 0;
      gap_ns.push_back(std::max(0.0, gap));
      inner_gaps.push_back(signed_ns(run.exit[k], run.entry[k + 1]));
    }
  }
  int negatives = 0;
  out.micro.graph_launch_ns = model::compute_stats(clamped(launch_ns, &negatives));
  out.notes.push_back(
      "graph launch: untraced CUDA events around cudaGraphLaunch less the CUPTI "
      "span of its " +
      std::to_string(kChainKernels) + " chained kernels; " + std::to_string(negatives) +
      " samples below zero counted as 0; traced, " + ns_text(median(traced_launch_ns)) + " (p50)");
  out.micro.kernel_gap_ns = model::compute_stats(gap_ns);
  const double entry_offset = median(entry_offsets), exit_offset = median(exit_offsets);
  const double slack_ns = std::max(1000.0, 2.0 * static_cast<double>(tick_ns));
  chain.clocks_agree = entry_offset > -slack_ns && entry_offset < 10000 &&
                       exit_offset > -slack_ns && exit_offset < 10000;
  chain.clocks_note =
      "clocks: first %globaltimer read " + ns_text(entry_offset) + " after the CUPTI start, last " +
      ns_text(exit_offset) + " before the CUPTI end (p50s): " +
      (chain.clocks_agree ? "CUPTI and %globaltimer agree"
                          : "the clocks are offset, so they are not compared directly") +
      "; a chain kernel spends " + ns_text(median(outside_ns)) +
      " outside its instructions (start to first, last to end)";
  chain.duration_ns = median(durations_ns);
  chain.inner_gap_ns = median(inner_gaps);
  return chain;
}

// PDL chain: what each boundary adds to the chain beyond the dependent's own duration (as the
// plain chain measured it), so that predecessor end + gap + duration lands where the dependent
// ends; with its launch hidden behind the predecessor this can fall below zero, counted as 0.
// CUPTI timestamps only.
void pdl_chain(const LaunchRecords& r, const PlainChain& plain, MicroResult& out) {
  std::vector<double> gap_ns, inner_gaps;
  int overlapped = 0;
  for (size_t i = 0; i < r.pdl.size(); ++i) {
    const Tag tag{TagKind::micro, kPdlChain, static_cast<int>(i)};
    const auto& ks = launch_kernels(r.tagged, tag, kChainKernels, "chain_kernel", "PDL gap");
    for (int k = 0; k + 1 < kChainKernels; ++k) {
      if (ks[k + 1].start_ns < ks[k].end_ns) ++overlapped;
      gap_ns.push_back(signed_ns(ks[k].end_ns, ks[k + 1].end_ns) - plain.duration_ns);
      inner_gaps.push_back(signed_ns(r.pdl[i].exit[k], r.pdl[i].entry[k + 1]));
    }
  }
  const double raw_p50 = median(gap_ns);
  int negatives = 0;
  out.micro.kernel_gap_pdl_ns = model::compute_stats(clamped(gap_ns, &negatives));
  out.notes.push_back(
      "PDL: the dependent started before its predecessor ended at " + std::to_string(overlapped) +
      " of " + std::to_string(gap_ns.size()) +
      " boundaries; end-to-end spacing less a plain kernel's " + ns_text(plain.duration_ns) +
      ": p50 " + ns_text(raw_p50) + ", " + std::to_string(negatives) +
      " samples below zero counted as 0; in-kernel, last store to "
      "first instruction past the dependency: " +
      ns_text(median(inner_gaps)) + " with PDL, " + ns_text(plain.inner_gap_ns) + " without");
}

// Region: its start to the first task, its last task to its end. Where the clocks disagree, the
// kernel's time outside its CTAs' instructions (CUPTI duration less the in-kernel span, free of
// the offset) cannot be split between start and end: half goes to each.
void region_launch_and_drain(const LaunchRecords& r, int ctas, int per_sm, bool clocks_agree,
                             MicroResult& out) {
  std::vector<double> launch_ns, drain_ns;
  for (size_t i = 0; i < r.region.size(); ++i) {
    const Tag tag{TagKind::micro, kRegion, static_cast<int>(i)};
    const KernelRecord& k = launch_kernels(r.tagged, tag, 1, "region_kernel", "region").front();
    if (k.launch.grid[0] != ctas) {
      throw Error("micro-benchmark region: CUPTI saw a grid of " +
                  std::to_string(k.launch.grid[0]) + " CTAs, launched " + std::to_string(ctas));
    }
    const RegionRun& run = r.region[i];
    const u64 entry = *std::min_element(run.entry.begin(), run.entry.end());
    const u64 first = *std::min_element(run.first_task.begin(), run.first_task.end());
    const u64 last = *std::max_element(run.last_end.begin(), run.last_end.end());
    if (clocks_agree) {
      launch_ns.push_back(signed_ns(k.start_ns, first));
      drain_ns.push_back(signed_ns(last, k.end_ns));
    } else {
      const double outside = signed_ns(k.start_ns, k.end_ns) - signed_ns(entry, last);
      launch_ns.push_back(signed_ns(entry, first) + outside / 2);
      drain_ns.push_back(outside / 2);
    }
  }
  int negatives = 0;
  out.micro.region_launch_ns = model::compute_stats(clamped(launch_ns, &negatives));
  out.micro.region_drain_ns = model::compute_stats(clamped(drain_ns, &negatives));
  out.notes.push_back(
      "region: " + std::to_string(ctas) + " CTAs of " + std::to_string(kRegionThreads) +
      " threads (one per SM; occupancy allows " + std::to_string(per_sm) + "), " +
      std::to_string(kRegionTasks) + " empty tasks each; " +
      (clocks_agree ? "CUPTI start and end against %globaltimer"
                    : "its time outside its instructions split evenly between launch and drain") +
      "; " + std::to_string(negatives) + " samples below zero counted as 0");
}

// Two CTAs of `kernel` (each takes more than half an SM's shared memory, so they run on two SMs)
// ping-pong kPingPongBatches batches of kRoundTripsPerBatch round trips; `make_layout(batch_ns,
// smid, error)` gives the kernel its layout. Untraced: %globaltimer on one SM only. Half of each
// batch's round trip, and a note naming `what` and the SMs; an error word other than 0 throws
// what `error_text` says of it.
struct PingPong {
  model::LatencyStats one_way_ns;
  std::string note;
};

template <class Layout, class MakeLayout>
PingPong ping_pong(const executor::DeviceInfo& device, cudaStream_t stream, void (*kernel)(Layout),
                   MakeLayout make_layout, const std::string& what,
                   const std::function<std::string(int)>& error_text) {
  const int smem_optin = device.smem_per_block_optin;
  if (2 * int64_t{smem_optin} <= device.smem_per_sm) {
    throw Error("micro-benchmark " + what + ": cannot keep two CTAs off one SM with shared memory");
  }
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
  DeviceArray<u64> batch_ns(kPingPongBatches);
  DeviceArray<int> smid(2), error(1);
  kernel<<<2, 32, smem_optin, stream>>>(make_layout(batch_ns.get(), smid.get(), error.get()));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (const int e = error.download()[0]; e != 0) {
    throw Error("micro-benchmark " + what + ": " + error_text(e));
  }
  const std::vector<int> sms = smid.download();
  if (sms[0] == sms[1]) throw Error("micro-benchmark " + what + ": both CTAs ran on one SM");
  std::vector<double> one_way_ns;
  for (u64 ns : batch_ns.download()) {
    one_way_ns.push_back(static_cast<double>(ns) / (2.0 * kRoundTripsPerBatch));
  }
  return {model::compute_stats(one_way_ns),
          what + ": SM " + std::to_string(sms[0]) + " and SM " + std::to_string(sms[1]) + ", " +
              std::to_string(kPingPongBatches * kRoundTripsPerBatch) +
              " round trips in batches of " + std::to_string(kRoundTripsPerBatch) +
              "; half a round trip each"};
}

// Counter ping-pong. Returns its note.
std::string counter_signal_to_wait(const executor::DeviceInfo& device, cudaStream_t stream,
                                   MicroResult& out) {
  DeviceArray<uint64_t> counter(1);
  const PingPong p = ping_pong(
      device, stream, pingpong_kernel,
      [&](u64* batch_ns, int* smid, int* error) {
        return PingPongLayout{counter.get(), batch_ns, smid, error};
      },
      "counter",
      [](int) { return "a wait ran out of its watchdog (the other CTA never signalled)"; });
  out.micro.counter_signal_to_wait_ns = p.one_way_ns;
  return p.note;
}

// Flagged-word ping-pong, a chunk of four words. Returns its note.
std::string flagged_word_hop(const executor::DeviceInfo& device, cudaStream_t stream,
                             MicroResult& out) {
  DeviceArray<unsigned long long> words(4);  // zeroed (no run); cudaMalloc: 256-byte aligned
  const PingPong p = ping_pong(
      device, stream, word_pingpong_kernel,
      [&](u64* batch_ns, int* smid, int* error) {
        return WordPingPongLayout{words.get(), batch_ns, smid, error};
      },
      "flagged words",
      [](int e) -> std::string {
        return e == 1 ? "a poll timed out (the other CTA never wrote its run)"
                      : "a chunk showed its run with other values (a torn word)";
      });
  out.micro.flagged_word_hop_ns = p.one_way_ns;
  return p.note;
}

// Dependency checks, untraced: %globaltimer on one SM.
void dependency_check_round(cudaStream_t stream, MicroResult& out) {
  DeviceArray<uint64_t> counters(kDependencyCheckRounds * kDependencyCheckThreads);
  CUDA_CHECK(cudaMemset(counters.get(), 1,
                        kDependencyCheckRounds * kDependencyCheckThreads * sizeof(uint64_t)));
  wait_for_legacy_stream();
  DeviceArray<u64> check_ns(kDependencyCheckBatches);
  DeviceArray<int> missing(1);
  dependency_check_kernel<<<1, kDependencyCheckThreads, 0, stream>>>(
      DependencyCheckLayout{counters.get(), check_ns.get(), missing.get()});
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (missing.download()[0] != 0) {
    throw Error("micro-benchmark dependency check: a signalled counter read as zero");
  }
  std::vector<double> round_ns;
  for (u64 ns : check_ns.download()) {
    round_ns.push_back(static_cast<double>(ns) / kDependencyCheckRounds);
  }
  out.micro.dependency_check_round_ns = model::compute_stats(round_ns);
  out.notes.push_back("dependency check: one CTA of " + std::to_string(kDependencyCheckThreads) +
                      " threads, " + std::to_string(kDependencyCheckBatches) + " times " +
                      std::to_string(kDependencyCheckRounds) +
                      " rounds of one signalled counter per thread and a barrier");
}

// Dependent launch, untraced: %globaltimer in both kernels (one clock, read on two SMs).
void dependent_launch(cudaStream_t stream, MicroResult& out) {
  DeviceArray<u64> trigger_ns(kDependentLaunchPairs), start_ns(kDependentLaunchPairs);
  for (int i = 0; i < kDependentLaunchPairs; ++i) {
    trigger_first_kernel<<<1, kChainThreads, 0, stream>>>(trigger_ns.get() + i);
    CUDA_CHECK(cudaGetLastError());
    const executor::KernelLaunch launch(1, kChainThreads, 0, stream, /*pdl=*/true);
    CUDA_CHECK(cudaLaunchKernelEx(launch.config(), dependent_kernel, start_ns.get() + i));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<u64> trigger = trigger_ns.download(), start = start_ns.download();
  std::vector<double> launch_ns;
  int late = 0;
  for (int i = 0; i < kDependentLaunchPairs; ++i) {
    const double ns = signed_ns(trigger[i], start[i]);
    late += ns >= static_cast<double>(kDependentLaunchSpinNs);
    launch_ns.push_back(ns);
  }
  int negatives = 0;
  out.micro.dependent_launch_ns = model::compute_stats(clamped(launch_ns, &negatives));
  out.notes.push_back(
      "dependent launch: " + std::to_string(kDependentLaunchPairs) +
      " pairs of one-CTA kernels, the first letting the second launch at its start; " +
      std::to_string(late) + " dependents started only after the first kernel's " +
      ns_text(static_cast<double>(kDependentLaunchSpinNs)) + " spin (no early launch), " +
      std::to_string(negatives) + " samples below zero counted as 0");
}

}  // namespace

double measure_copy_bandwidth(int64_t bytes) {
  DeviceArray<std::byte> from(static_cast<size_t>(bytes)), to(static_cast<size_t>(bytes));
  CUDA_CHECK(cudaMemset(from.get(), 0x3c, static_cast<size_t>(bytes)));
  const Event start, stop;
  std::vector<double> seconds;
  for (int i = 0; i < 13; ++i) {
    CUDA_CHECK(cudaEventRecord(start.get()));
    CUDA_CHECK(cudaMemcpyAsync(to.get(), from.get(), static_cast<size_t>(bytes),
                               cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(stop.get()));
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (i >= 3) seconds.push_back(ms / 1e3);
  }
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * static_cast<double>(bytes) / seconds[seconds.size() / 2];
}

MicroResult run_micro_benchmarks(CuptiTracer& tracer, const MicroOptions& options) {
  if (options.launches < 2) throw Error("micro-benchmarks: need at least 2 launches each");
  MicroResult out;
  const executor::DeviceInfo device = executor::current_device();
  out.device.name = device.name;
  out.device.sm_count = device.sm_count;
  out.device.l2_bytes = device.l2_bytes;
  out.device.registers_per_sm = device.registers_per_sm;
  out.device.sm_limits = model::SmLimits{device.threads_per_sm, device.ctas_per_sm,
                                         device.smem_per_sm, device.reserved_smem_per_block};
  out.device.copy_bandwidth_gb_per_s = measure_copy_bandwidth() / 1e9;

  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } stream_guard{stream};

  DeviceArray<u64> tick(1);
  timer_tick_kernel<<<1, 1, 0, stream>>>(tick.get());
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const u64 tick_ns = tick.download()[0];
  out.notes.push_back("%globaltimer ticks every " + ns_text(static_cast<double>(tick_ns)) +
                      " or less");

  // The region: one CTA per SM, if the occupancy API allows one.
  int per_sm = 0;
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, region_kernel, kRegionThreads, 0));
  if (per_sm < 1) throw Error("micro-benchmarks: the region kernel fits no CTA on an SM");
  const int ctas = device.sm_count;

  LaunchSweep sweep;
  const LaunchRecords records = record_launches(tracer, options.launches, ctas, stream, sweep);
  const PlainChain plain = plain_chain(records, tick_ns, out);
  out.micro.graph_launch_by_nodes = sweep.points(records.tagged);
  out.notes.push_back("graph launch by nodes (chains of trivial kernels, measured alike), p50: " +
                      LaunchSweep::describe(out.micro.graph_launch_by_nodes));
  out.notes.push_back(plain.clocks_note);
  pdl_chain(records, plain, out);
  if (plain.clamped_gaps > 0) {
    out.notes.push_back("kernel gap: " + std::to_string(plain.clamped_gaps) +
                        " CUPTI overlaps within " + ns_text(kOverlapToleranceNs) +
                        " counted as gaps of 0");
  }
  region_launch_and_drain(records, ctas, per_sm, plain.clocks_agree, out);
  const std::string counter_note = counter_signal_to_wait(device, stream, out);
  const std::string word_note = flagged_word_hop(device, stream, out);
  dependency_check_round(stream, out);
  dependent_launch(stream, out);
  out.notes.push_back(counter_note);
  out.notes.push_back(word_note);
  return out;
}

// ---- the graph-launch sweep --------------------------------------------------------------------

struct LaunchSweep::Impl {
  cudaStream_t stream = nullptr;
  DeviceArray<u64> value{1};
  std::array<executor::CudaGraph, std::size(kLaunchSweepNodes)> graphs;
  Event before, after;
  std::vector<std::vector<double>> untraced_ns;  // (size, round)
  // (size, round), for the sizes from kBackToBackMinNodes on.
  std::vector<std::vector<double>> back_to_back_ns;
  int traced_rounds = 0;

  Impl() : untraced_ns(graphs.size()), back_to_back_ns(graphs.size()) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (size_t p = 0; p < graphs.size(); ++p) {
      graphs[p].capture(stream, [&] {
        for (int k = 0; k < kLaunchSweepNodes[p]; ++k) {
          sweep_kernel<<<1, kChainThreads, 0, stream>>>(value.get());
        }
        CUDA_CHECK(cudaGetLastError());
      });
    }
    for (int i = 0; i < 3; ++i) {  // warm-up, untraced
      for (const executor::CudaGraph& graph : graphs) graph.replay(stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  ~Impl() { cudaStreamDestroy(stream); }

  // As a stage replay is timed (executor::ScenarioRunner::time_replay_ms).
  double time_ns(const executor::CudaGraph& graph) {
    CUDA_CHECK(cudaEventRecord(before.get(), stream));
    graph.replay(stream);
    CUDA_CHECK(cudaEventRecord(after.get(), stream));
    CUDA_CHECK(cudaEventSynchronize(after.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, before.get(), after.get()));
    return static_cast<double>(ms) * 1e6;
  }

  // As the runner replays a TTS chunk's graphs: one replay, then kBackToBackReplays more timed
  // from its end, launched while the GPU runs the ones before; per replay.
  double time_back_to_back_ns(const executor::CudaGraph& graph) {
    graph.replay(stream);
    CUDA_CHECK(cudaEventRecord(before.get(), stream));
    for (int r = 0; r < kBackToBackReplays; ++r) graph.replay(stream);
    CUDA_CHECK(cudaEventRecord(after.get(), stream));
    CUDA_CHECK(cudaEventSynchronize(after.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, before.get(), after.get()));
    return static_cast<double>(ms) * 1e6 / kBackToBackReplays;
  }
};

LaunchSweep::LaunchSweep() : impl_(std::make_unique<Impl>()) {}
LaunchSweep::~LaunchSweep() = default;

void LaunchSweep::time_round() {
  for (size_t p = 0; p < impl_->graphs.size(); ++p) {
    impl_->untraced_ns[p].push_back(impl_->time_ns(impl_->graphs[p]));
  }
  for (size_t p = 0; p < impl_->graphs.size(); ++p) {
    if (kLaunchSweepNodes[p] < kBackToBackMinNodes) continue;
    impl_->back_to_back_ns[p].push_back(impl_->time_back_to_back_ns(impl_->graphs[p]));
  }
}

void LaunchSweep::trace_round(int round) {
  for (size_t p = 0; p < impl_->graphs.size(); ++p) {
    CuptiTracer::Scope tag(Tag{TagKind::micro, kLaunchSweepTag + static_cast<int>(p), round});
    impl_->time_ns(impl_->graphs[p]);
  }
  ++impl_->traced_rounds;
}

int64_t LaunchSweep::traced_kernels() const {
  int64_t nodes = 0;
  for (int n : kLaunchSweepNodes) nodes += n;
  return nodes * impl_->traced_rounds;
}

std::vector<model::GraphLaunchPoint> LaunchSweep::points(const TaggedKernels& tagged,
                                                         int first_round) const {
  const int rounds = static_cast<int>(impl_->untraced_ns.front().size());
  if (first_round < 0 || first_round >= rounds || impl_->traced_rounds < rounds) {
    throw Error("graph launch sweep: " + std::to_string(rounds) + " untraced and " +
                std::to_string(impl_->traced_rounds) + " traced rounds, from round " +
                std::to_string(first_round));
  }
  std::vector<model::GraphLaunchPoint> out;
  for (size_t p = 0; p < impl_->graphs.size(); ++p) {
    const int nodes = kLaunchSweepNodes[p];
    std::vector<double> samples, spans;
    for (int r = first_round; r < rounds; ++r) {
      const Tag tag{TagKind::micro, kLaunchSweepTag + static_cast<int>(p), r};
      const auto& ks = launch_kernels(tagged, tag, static_cast<size_t>(nodes), "sweep_kernel",
                                      "graph launch sweep");
      spans.push_back(signed_ns(ks.front().start_ns, ks.back().end_ns));
      samples.push_back(impl_->untraced_ns[p][r] - spans.back());
    }
    // Below zero where tracing lengthened the chain more than launching it took; the statistics
    // hold no negative times.
    int negatives = 0;
    model::GraphLaunchPoint point{nodes, model::compute_stats(clamped(samples, &negatives))};
    point.span_ns = model::compute_stats(spans);
    const std::vector<double>& back_to_back = impl_->back_to_back_ns[p];
    if (!back_to_back.empty()) {
      point.back_to_back_ns = model::compute_stats(
          std::vector<double>(back_to_back.begin() + first_round, back_to_back.end()));
    }
    out.push_back(std::move(point));
  }
  return out;
}

std::string LaunchSweep::describe(const std::vector<model::GraphLaunchPoint>& points) {
  std::string text;
  for (const model::GraphLaunchPoint& g : points) {
    text += (text.empty() ? "" : ", ") + std::to_string(g.nodes) + ": " + ns_text(g.launch_ns.p50);
  }
  for (const model::GraphLaunchPoint& g : points) {
    if (!g.span_ns || !g.back_to_back_ns) continue;
    text += "; " + std::to_string(g.nodes) + " nodes traced " + ns_text(g.span_ns->p50) +
            ", back to back untraced " + ns_text(g.back_to_back_ns->p50) + " a replay";
  }
  return text;
}

}  // namespace megacut::profiler
