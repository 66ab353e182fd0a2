// What a kernel of a tile region (model::RegionKind::tile) is told beside its layout: where its
// region's counters are and which of them each of its tiles waits for. Plain struct, shared by
// the host (executor/tile_region.h fills it) and the conventional kernels (executor/tile_sync.cuh
// reads it); the counters, dependencies and error record are an mk region's (mk::Dep,
// mk::ErrorRecord), so that both wait and report alike.
#pragma once

#include "executor/megakernel_abi.cuh"

namespace megacut::executor {

struct TileSync {
  // The region's counters: one per tile of its ops, then one count per op (mk::Dep), then the
  // region's start.
  unsigned long long* counters;
  unsigned long long* arrivals;  // this kernel's CTAs started, over all launches: the run index
  const int* dep_offsets;        // (tiles + 1): tile t waits for deps[dep_offsets[t], [t + 1])
  const mk::Dep* deps;
  mk::ErrorRecord* error;
  unsigned long long watchdog_ns;  // how long one wait may last before the region gives up
  int tile_counter;                // the counter of this op's tile 0
  int op_counter;                  // this op's count
  int started_counter;             // set to the run by the region's first kernel once past its wait
  int first;   // the region's first kernel: it waits for the kernels before the region first
  int region;  // reported in errors
};

}  // namespace megacut::executor
