// Micro-benchmarks of boundaries and counters (simulator::MicroBenchmarks), and the device's
// description (simulator::DeviceProfile). Each is a dedicated run of empty or trivial kernels,
// and each is defined so that the simulator, which adds launch, kernel durations and gaps from
// CUPTI, lands where the GPU did:
//  - graph launch: untraced CUDA events around cudaGraphLaunch (a stage's graph_ns is timed so)
//    less the traced CUPTI span of the graph's kernels: launch latency plus the end event's tail;
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
//  - copy bandwidth: executor::measure_copy_bandwidth.
// CUPTI's GPU timestamps and %globaltimer were seen about 40 µs apart on an H200, so in-kernel
// times are compared with CUPTI's only if a check on the plain chain finds them in step; if not,
// the region's time outside its instructions (CUPTI duration less the in-kernel span, which no
// offset affects) is split evenly between launch and drain, and a note says so.
#pragma once

#include <string>
#include <vector>

#include "profiler/cupti_tracer.h"
#include "simulator/profile.h"

namespace megacut::profiler {

struct MicroOptions {
  int launches = 50;  // traced graph launches and region launches per benchmark
};

struct MicroResult {
  simulator::DeviceProfile device;
  simulator::MicroBenchmarks micro;
  std::vector<std::string> notes;  // how each was obtained, checks, warnings
};

// Runs on the current device; opens and closes its own trace windows on `tracer`.
MicroResult run_micro_benchmarks(CuptiTracer& tracer, const MicroOptions& options = {});

}  // namespace megacut::profiler
