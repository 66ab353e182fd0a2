// A tile region (model::RegionKind::tile): ops [op_begin, op_end) of a stage graph, each its own
// kernel of ours (launch_op with a TileSync), each launched while the one before runs and each
// tile waiting on the tiles of the region it reads (executor/tile_sync.cuh), not on the kernel
// before. Counters are monotonic and run-scaled, one per tile and one count per op, as in an mk
// region, so that a captured CUDA graph replays without resetting anything.
//
// Why it cannot deadlock (find_tile_deadlock checks the table's part of it): every kernel after
// the first is launched with Programmatic Dependent Launch, and every CTA lets the next kernel
// launch first thing, so no CTA of a kernel is placed before every CTA of the kernel before it
// has been; and a tile waits only for tiles of earlier ops of the region. Then, by induction
// over the ops: an op's CTAs wait only on tiles of earlier ops, all of whose CTAs are placed
// (resident or done) and finish; so its resident CTAs finish, and free SMs for its CTAs not yet
// placed, and for the next kernel's. Reads of ops before the region are ordered by the first
// kernel, which waits for the kernels before the region before it lets the next one launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/megakernel_abi.cuh"
#include "executor/stage_buffers.h"
#include "model/graph.h"

namespace megacut::executor {

// The region's dependency tables, plain C++.
struct TileTable {
  int op_begin = 0;
  int op_end = 0;
  // Counters: one per tile of the region's ops, in task order, then one count per op, then the
  // region's start (executor/tile_sync.cuh).
  int tile_count = 0;
  // By op of the region (op - op_begin): its tile 0's counter, and each tile's dependencies,
  // dep_offsets[t] to dep_offsets[t + 1] into deps: a tile of an earlier op of the region
  // (count 1), or an earlier op's count (count: its tiles) where the tile reads all of it.
  std::vector<int> tile_counter;
  std::vector<std::vector<int>> dep_offsets;
  std::vector<std::vector<mk::Dep>> deps;

  int op_count() const { return op_end - op_begin; }
  int op_counter(int op) const { return tile_count + (op - op_begin); }
  int started_counter() const { return tile_count + op_count(); }
  int counter_count() const { return started_counter() + 1; }
};

// The tables of ops [op_begin, op_end) of `graph`: each tile waits for what the tile graph says
// it reads inside the region (model::Graph::dep_entries); what it reads before the region, the
// region's first kernel orders.
TileTable make_tile_table(const model::Graph& graph, int op_begin, int op_end);

// Empty when the ops' tiles follow each other from counter 0 and every tile of `table` waits
// only for tiles or counts of earlier ops of the region (each count for all of its op's
// tiles); otherwise what is wrong, naming the op and tile.
std::string find_tile_deadlock(const TileTable& table);

struct TileRegionOptions {
  int region_id = 0;  // named in watchdog errors
  // How long one dependency wait may last before the region gives up: a second.
  uint64_t watchdog_ns = 1'000'000'000;
  // Launch the region's first kernel with Programmatic Dependent Launch too (the others always
  // are).
  bool pdl = false;
};

class TileRegion {
 public:
  // Checks the table (find_tile_deadlock) and that each op has a tile body, and uploads it.
  TileRegion(const model::Graph& graph, int op_begin, int op_end, const StageBuffers& buffers,
             TileRegionOptions options = {});
  // An explicit table; with `verify` false it is not checked: tests plant bad tables to see the
  // watchdog fire.
  TileRegion(const model::Graph& graph, TileTable table, const StageBuffers& buffers,
             TileRegionOptions options, bool verify = true);
  ~TileRegion();
  TileRegion(const TileRegion&) = delete;
  TileRegion& operator=(const TileRegion&) = delete;

  // Its kernels, one per op, on `stream`; allocates nothing, never waits (capturable).
  void launch(cudaStream_t stream);
  // Waits for `stream`; throws megacut::Error naming the op and tile if a wait gave up.
  void check(cudaStream_t stream);
  const TileTable& table() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megacut::executor
