// A persistent megakernel region: ops [op_begin, op_end) of a stage graph run as one launch of
// at most one CTA per SM, each CTA walking its queue of model::make_schedule (the schedule the
// simulator models). Tasks wait on monotonic, run-scaled counters (one per task) under a
// watchdog; the run index lives on the device, counted from the CTAs that arrive (launch n's CTAs
// find n * grid to (n + 1) * grid - 1 arrivals before their own), so a captured CUDA graph
// replays correctly without resetting anything, one kernel per region.
//
// The kernel holds only the region's tile bodies; it is generated and compiled with NVRTC at
// construction (executor/megakernel_codegen.h, cached on disk) and launched through the driver
// API, whose entry points come from the runtime: nothing links libcuda.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/megakernel_schedule.h"
#include "executor/stage_buffers.h"
#include "model/graph.h"

namespace megacut::executor {

struct RegionOptions {
  int region_id = 0;  // named in watchdog errors
  // How long one dependency wait may last before the region gives up, by %globaltimer: a
  // second. Tests plant hangs with a millisecond.
  uint64_t watchdog_ns = 1'000'000'000;
  bool timing = false;  // compile in per-task %globaltimer records (read_timings)
  int max_ctas = 0;     // cap on the grid below one CTA per SM; 0: no cap
  // Launch the region with Programmatic Dependent Launch (cuLaunchKernelEx's programmatic stream
  // serialization): it may start while the kernel before it drains. The kernel is the same
  // either way.
  bool pdl = false;
  // Hand an op's x over as flagged words where an earlier op of the region wrote it and both
  // bodies can (tiles/flagged.cuh): the consumer then polls the words it reads instead of the
  // producer's counters, and no release fence is on the hop's path. Off: every hop through
  // counters, as a conventional region's, for comparison.
  bool flagged_hand_overs = true;
};

// The configuration the region really runs with, to check the simulator's prediction of it.
struct RegionConfig {
  int op_begin = 0;
  int op_end = 0;
  int tasks = 0;
  int bodies = 0;              // distinct tile bodies = switch cases
  int grid = 0;                // CTAs = queues
  int block_threads = 0;       // the widest body's, plus the producer's warpgroup with a ring
  int dynamic_smem_bytes = 0;  // the bodies' scratch, then the weight ring
  int ring_slots = 0;          // weight-ring slots of each CTA; 0: no streamed body
  int flagged_inputs = 0;      // ops whose x is handed over as flagged words (RegionOptions)
  int static_smem_bytes = 0;
  int registers = 0;      // per thread
  int local_bytes = 0;    // per thread (spills)
  int blocks_per_sm = 0;  // occupancy at this block size and shared memory
  int sm_count = 0;
  std::string kernel_key;  // cache key of the compiled kernel
  bool cache_hit = false;
  double compile_ms = 0;
  nlohmann::json to_json() const;
};

struct TaskTimingRecord {
  int task = 0;  // region-local index
  int op = 0;
  int64_t tile = 0;
  uint64_t start_ns = 0;  // %globaltimer
  uint64_t end_ns = 0;
  int sm = 0;
  int block = 0;
  uint64_t signal_ns = 0;   // the signaler saw it done (0: no signaler)
  uint64_t publish_ns = 0;  // its counter's store issued
  uint64_t inputs_ns = 0;   // its body had its flagged inputs (0: it waits for none)
};

class MegakernelRegion {
 public:
  // The region's schedule from model::make_schedule over min(SMs, tasks) queues.
  MegakernelRegion(const model::Graph& graph, int op_begin, int op_end, const StageBuffers& buffers,
                   RegionOptions options = {});
  // An explicit task table (its queue count is the grid). With `verify` false the deadlock
  // check is skipped: tests plant bad tables to see the watchdog fire.
  MegakernelRegion(const model::Graph& graph, TaskTable table, const StageBuffers& buffers,
                   RegionOptions options, bool verify = true);
  ~MegakernelRegion();
  MegakernelRegion(const MegakernelRegion&) = delete;
  MegakernelRegion& operator=(const MegakernelRegion&) = delete;

  // Launches the region on `stream` (with Programmatic Dependent Launch where options.pdl); its
  // CTAs take the run index from the arrival count. Never synchronizes, allocates nothing:
  // capturable into a CUDA graph.
  void launch(cudaStream_t stream);
  // Waits for `stream`; throws megacut::Error naming the region, SM, block and task when a
  // watchdog fired since the last check (and clears the record).
  void check(cudaStream_t stream);

  const RegionConfig& config() const;
  const TaskTable& table() const;
  // Timing records of the last finished launch (options.timing only), by task index.
  std::vector<TaskTimingRecord> read_timings(cudaStream_t stream) const;
  // When each CTA (queue) of the last finished launch started, by queue (options.timing only):
  // %globaltimer, as the task records.
  std::vector<uint64_t> read_cta_entries(cudaStream_t stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megacut::executor
