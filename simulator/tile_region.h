// A tile region's boundary between two kernels: how much later the consumer ends than its
// producer when the consumer launches as soon as every producer CTA has started (Programmatic
// Dependent Launch, triggered at each CTA's start) and each of its CTAs waits on the producer
// tiles it reads rather than on the whole producer.
//
// The model, from the profile alone:
//  - each kernel runs its measured conventional configuration (grid, threads, registers,
//    shared memory) and mean duration D; it fits `per_sm` CTAs on an SM alone (SmLimits and the
//    register file), so its CTAs run in ceil(grid / (per_sm * SMs)) waves of D / waves each, and
//    a CTA that walks several tiles (grid below the tile count: tile c, c + grid, ...) spends an
//    equal share of that on each; a kernel that reads through tensor maps takes its tiles in
//    model::grouped_tile's order, as the executor's does;
//  - CTAs are placed in index order, each on the SM with the fewest resident CTAs that has room
//    for it (threads, CTAs, registers, shared memory, side by side with CTAs of the other
//    kernel), once one has; the producer's all at once or as its own CTAs end, the consumer's
//    from the producer's last placement plus the dependent launch (micro-benchmarks);
//  - a consumer tile starts when its CTA is placed, its CTA's previous tile is done, and every
//    producer tile it reads has ended plus the counter's signal-to-wait latency; it then checks
//    its dependencies (ceil(n / threads) rounds, a whole producer read being one count) and
//    runs; a consumer CTA done with its tiles keeps its SM until the producer has ended (the
//    executor's kernels wait for the one before them at their end);
//  - reads of ops before the producer are taken as done: the region's time adds one such step
//    per op (never below 0), so that it depends on each op and its predecessor only, as the
//    planner's search needs.
// Not modelled: the producer's tail running faster once its neighbours are done, and the
// bandwidth the two kernels share while they overlap.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "model/profile.h"
#include "model/tensor.h"
#include "simulator/engine.h"

namespace megacut::simulator {

// One op's kernel as a tile region runs it.
struct TileKernel {
  int64_t ctas = 0;        // grid
  int threads = 0;         // per CTA
  int registers = 0;       // per thread
  int64_t smem_bytes = 0;  // per CTA
  model::Tiling tiling;    // the op's tiles: CTA c runs c, c + ctas, ...
  bool grouped = false;    // ... or, one tile a CTA, model::grouped_tile(tiling, c)
  double duration_ns = 0;  // mean, in the conventional graph

  int64_t tiles() const { return tiling.count(); }
};

struct TileDevice {
  int sm_count = 0;
  int64_t registers_per_sm = 0;
  model::SmLimits limits;
  TimeNs dependent_launch_ns = 0;
  TimeNs signal_latency_ns = 0;
  TimeNs check_round_ns = 0;  // one round of dependency checks; 0: not charged
};

// The producer tiles consumer tile `tile` reads, appended to `out`; `all` set where it reads
// every one (a reduction over the producer's output).
struct TileReads {
  std::vector<int64_t> tiles;
  bool all = false;
};
using TileReadsFn = std::function<void(int64_t tile, TileReads& out)>;

// How many CTAs of `k` one SM holds alone; at least 1 (a kernel that launched fits once).
int ctas_per_sm(const TileKernel& k, const TileDevice& device);

struct TileStep {
  TimeNs producer_end_ns = 0;  // from the producer's launch
  TimeNs consumer_end_ns = 0;
  TimeNs step_ns = 0;  // max(0, consumer end - producer end)
};

TileStep simulate_tile_step(const TileKernel& producer, const TileKernel& consumer,
                            const TileReadsFn& reads, const TileDevice& device);

}  // namespace megacut::simulator
