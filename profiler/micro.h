// Micro-benchmarks of boundaries and counters (model::MicroBenchmarks), and the device's
// description (model::DeviceProfile). Each is a dedicated run of empty or trivial kernels,
// and each is defined so that the simulator, which adds launch, kernel durations and gaps from
// CUPTI, lands where the GPU did:
//  - graph launch: untraced CUDA events around cudaGraphLaunch (a stage's graph_ns is timed so)
//    less the traced CUPTI span of the graph's kernels: launch latency plus the end event's tail;
//    for the plain chain below, and for chains of 1 to 512 trivial kernels (LaunchSweep: the
//    launch grows with the graph's nodes, and the simulator fits it); the longest chains are also
//    replayed back to back untraced, which gives what tracing adds to each kernel and gap;
//  - kernel gap: a CUDA graph of dependent one-CTA kernels, each one's end to the next one's
//    start (CUPTI), as the conventional trace measures gaps;
//  - kernel gap with Programmatic Dependent Launch: each kernel lets its dependent launch at once
//    and waits (griddepcontrol.wait) for its predecessor; the gap is what a boundary adds beyond
//    the dependent's own plain duration (end to end, less that duration; 0 if the launch hides
//    more than the gap);
//  - region launch and drain: a trivial persistent kernel of one CTA per SM (grid from the device
//    properties, checked against the occupancy API): its start to its first task's start, its
//    last task's end to its end;
//  - counter signal to wait: two CTAs on different SMs ping-pong a counter through the runtime's
//    release store and acquire wait (executor/counters.cuh); half the round trip (%globaltimer on
//    one SM);
//  - flagged word hop: the same two CTAs ping-pong a chunk of four flagged words (8 bf16 and
//    the run, executor/tiles/flagged.cuh), each side storing them relaxed and polling them as an
//    mk region's bodies do; half the round trip;
//  - dependency check: one CTA of 256 threads, each acquire-loading one signalled counter per
//    round and the block's barrier after it, as the region kernel checks a task's dependencies;
//    the time of one round (%globaltimer on one SM);
//  - dependent launch: a one-CTA kernel lets its dependent launch first thing, then spins; the
//    dependent, launched with Programmatic Dependent Launch, reads %globaltimer first: that read
//    less the first kernel's, read just before it let the dependent launch;
//  - SM limits: the device properties (threads, CTAs and shared memory one SM holds);
//  - copy bandwidth: measure_copy_bandwidth.
// CUPTI's GPU timestamps and %globaltimer were seen about 40 µs apart on an H200, so in-kernel
// times are compared with CUPTI's only if a check on the plain chain finds them in step; if not,
// the region's time outside its instructions (CUPTI duration less the in-kernel span, which no
// offset affects) is split evenly between launch and drain, and a note says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/profile.h"
#include "profiler/cupti_tracer.h"

namespace megacut::profiler {

struct MicroOptions {
  int launches = 50;  // traced graph launches and region launches per benchmark
};

struct MicroResult {
  model::DeviceProfile device;
  model::MicroBenchmarks micro;
  std::vector<std::string> notes;  // how each was obtained, checks, warnings
};

// Runs on the current device; opens and closes its own trace windows on `tracer`.
MicroResult run_micro_benchmarks(CuptiTracer& tracer, const MicroOptions& options = {});

// Device-to-device copy bandwidth, counting bytes read plus bytes written, over `bytes`-sized
// buffers (median of several copies after warm-up).
double measure_copy_bandwidth(int64_t bytes = int64_t{1} << 30);

// The graph-launch sweep: chains of 1 to 512 trivial kernels, each captured as a CUDA graph and
// launched alone on an idle stream, as a stage graph is replayed. A round launches each size once,
// the sizes taking turns. A point (model::GraphLaunchPoint) is a size's untraced rounds, each
// timed with CUDA events around cudaGraphLaunch, less the CUPTI span of its traced rounds' kernels,
// round by round: what a stage's graph_ns adds to its traced kernels and gaps, per size. What it
// measures depends on the host as much as on the graph: the GPU starts the first kernel only when
// the cudaGraphLaunch call returns, and that call's time per node was seen to double for seconds
// at a time on the same machine; and tracing lengthens each kernel and gap, which the difference
// takes off the launch. So the profiler runs a round after each replay of a batch's stages,
// untraced and traced alike, and the sweep sees the host as the replays do. An untraced round
// also replays each chain of 256 nodes or more back to back (GraphLaunchPoint::back_to_back_ns):
// its kernels and gaps without tracing, to set against the traced span. The launch so measured
// lacks what tracing adds (about 0.41 µs a node on the H200): a graph replayed alone still adds
// up, its traced kernels carrying it; a graph launched while the one before runs hides its
// launch, and the simulator moves the excess there (trace excess).
class LaunchSweep {
 public:
  LaunchSweep();
  ~LaunchSweep();
  LaunchSweep(const LaunchSweep&) = delete;
  LaunchSweep& operator=(const LaunchSweep&) = delete;

  // One untraced round, kept for points().
  void time_round();
  // One round of launches tagged Tag{TagKind::micro, kLaunchSweepTag + size index, round}; call it
  // inside a trace window, rounds numbered from 0 like the untraced ones they pair with.
  void trace_round(int round);
  // Kernels of the traced rounds (all of them: count them as the profiler's own).
  int64_t traced_kernels() const;
  // One point per size over rounds [first_round, untraced rounds); every traced round must have
  // been seen by CUPTI (`tagged`), else megacut::Error.
  std::vector<model::GraphLaunchPoint> points(const TaggedKernels& tagged,
                                              int first_round = 0) const;
  // "1: 3392 ns, 16: 3744 ns, ..." (p50s).
  static std::string describe(const std::vector<model::GraphLaunchPoint>& points);

  static constexpr int kLaunchSweepTag = 3;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megacut::profiler
