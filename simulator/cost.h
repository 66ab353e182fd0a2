// The cost model's rules, separate from the engine so each can be tested on its own:
//  - task durations: from the standalone task benchmark (the op alone in a persistent region
//    at 1, sm/4, sm/2 and sm CTAs), fit d(x) = solo + shared * x, where x is the number of
//    tasks running at once (min(CTAs, tiles)). `solo` is time no other task can take away;
//    `shared` * bandwidth is the bytes each task moves through the device's shared bandwidth.
//    In the simulation those bytes share the bandwidth with every other task in flight, so
//    the fit's own x tasks reproduce its measurement exactly, and any mix of ops contends;
//  - region configuration: a region that was never built has no measured configuration, so
//    predict it from its ops' standalone ones (the largest member decides) and charge ops
//    that it gives fewer registers than they had alone;
//  - graph launch: a stage's CUDA graph takes longer to launch the more nodes it holds; fit
//    launch(nodes) = fixed + per_node * nodes to the micro-benchmark's graph sizes.
#pragma once

#include <span>

#include "model/profile.h"

namespace megacut::simulator {

struct TaskFit {
  double solo_ns = 0;
  double shared_ns = 0;     // per task running at once; bytes = shared_ns * bytes per ns
  bool from_prior = false;  // the benchmark could not separate the terms (see below)
  friend bool operator==(const TaskFit&, const TaskFit&) = default;
};

// Least squares (Eigen) over the points (x, d), both terms kept non-negative: a negative term
// is set to 0 and the other refitted alone. With fewer than two distinct x (an op with one
// tile, or one CTA count measured) the slope cannot be told from the intercept, so
// `prior_shared_ns` (the tile's TileCost bytes at the device bandwidth) stands in for it.
TaskFit fit_task_durations(std::span<const double> concurrency, std::span<const double> duration_ns,
                           double prior_shared_ns);

struct GraphLaunchFit {
  double fixed_ns = 0;
  double per_node_ns = 0;
  // What tracing adds to each node's kernel and gap (GraphLaunchPoint::back_to_back_ns), which
  // the measured launch leaves out: 0 where the profile did not measure it.
  double trace_excess_per_node_ns = 0;
  double at(double nodes) const { return fixed_ns + per_node_ns * nodes; }
  friend bool operator==(const GraphLaunchFit&, const GraphLaunchFit&) = default;
};

// Least squares (Eigen) over the points (nodes, launch), both terms kept non-negative as in
// fit_task_durations. With fewer than two distinct node counts the launch is a constant (their
// mean), as it was before graphs of several sizes were measured.
GraphLaunchFit fit_graph_launch(std::span<const double> nodes, std::span<const double> launch_ns);

// A collective's time from its micro-benchmark (model::CollectiveBenchmark): latency_ns +
// link_bytes / link_bytes_per_ns, where link_bytes is what each rank sends for the message
// (model::ring_link_bytes). A communication task of an mk region is predicted the same way from
// its tile's link bytes: the latency as its fixed time, the bytes through the GPU's links.
struct CollectiveFit {
  double latency_ns = 0;
  double link_bytes_per_ns = 0;  // 0: the benchmark could not tell (one message size)
  friend bool operator==(const CollectiveFit&, const CollectiveFit&) = default;
};

// Least squares (Eigen) over the points (link bytes, time), both terms kept non-negative as in
// fit_task_durations. One message size, or a slope of 0, gives no bandwidth: the caller refuses
// to predict link transfers from it.
CollectiveFit fit_collective(std::span<const double> link_bytes, std::span<const double> time_ns);

// The configuration a region built from these members gets: the most threads and the most
// shared memory of any member, the most registers per thread that the register file allows at
// that block size (a multiple of 8, at most 255; one CTA per SM), and a weight ring where a
// member has one: the room the largest scratch of any member leaves it (a member's shared memory
// besides its ring), as the executor sizes it.
model::RegionConfig predict_region_config(std::span<const model::RegionConfig> members,
                                          int64_t registers_per_sm);

// How much slower an op's fixed time runs in `region` than in its standalone region: only
// registers count. With fewer registers than it had alone, a tile body spills; we charge
// standalone / region (a 168-register body given 128 runs 1.31x slower). More threads than the
// body uses leave warps idle at its barriers (no cost); more shared memory is unused (no cost;
// one CTA per SM either way). A first-order rule, to be calibrated against the configurations
// the executor reports after compiling a region.
double config_slowdown(const model::RegionConfig& standalone, const model::RegionConfig& region);

}  // namespace megacut::simulator
