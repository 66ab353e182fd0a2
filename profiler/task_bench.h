// Standalone benchmarks of one op at a time, for the simulator's cost model (model/profile.h
// says what is measured):
//  - tasks: the op alone as a persistent region (executor::MegakernelRegion with task timing
//    records) at several CTA counts, its tiles placed by model::make_schedule over that many
//    queues; each launch after an L2 flush, as in a stage where the op's weights come from
//    memory. A task's duration runs from its start to the start of the next task on its CTA (to
//    its end for a CTA's last task), so it holds the runtime's per-task cost; and each CTA's
//    start to its first task's start, the region's own startup;
//  - the conventional kernel alone: timed by CUPTI in the profiler's trace window, cold (after an
//    L2 flush) and warm (right after a launch of itself); profiler.cc does that part.
// Every measurement is of the op on its own, never of a composition the simulator will predict.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "executor/megakernel.h"
#include "executor/runner.h"
#include "model/profile.h"

namespace megacut::profiler {

struct TaskBenchOptions {
  std::vector<int> ctas;  // CTA counts, increasing; empty: default_task_ctas(SMs)
  int min_samples = 64;   // timed launches per CTA count until this many task durations...
  int max_launches = 8;   // ...but at most this many, and at least one
};

// 1, a quarter, half and all of the SMs (duplicates dropped on small devices).
std::vector<int> default_task_ctas(int sm_count);

// The duration of each task of one launch, in the table's order (queue after queue): see the
// file comment. Throws megacut::Error if a record is missing or runs backwards.
std::vector<double> task_durations_ns(const executor::TaskTable& table,
                                      const std::vector<executor::TaskTimingRecord>& records);

// Each CTA's start to its first task's start, one per queue with tasks, in queue order: the
// region's startup (TaskBenchmark::startup_ns). Throws megacut::Error where a CTA's first task
// starts before the CTA itself or a record is missing.
std::vector<double> task_startup_ns(const executor::TaskTable& table,
                                    const std::vector<executor::TaskTimingRecord>& records,
                                    const std::vector<uint64_t>& cta_entry_ns);

// Where one op's tasks ran in one launch of a region, in ns from the region's start (its
// earliest CTA entry). A task is busy from its start to its end (its body); it waited from the
// end of the task before it on its CTA (the CTA's entry for a CTA's first task) to its start:
// the signal and barrier after that task, and this one's dependency waits.
struct OpTimeline {
  int op = 0;
  int tasks = 0;
  double first_start_ns = 0;
  double last_end_ns = 0;
  double busy_ns = 0;    // summed over the op's tasks
  double wait_ns = 0;    // summed over the op's tasks
  double signal_ns = 0;  // end to counter store issued, summed over the tasks that record it
  int signaled = 0;      // tasks that record it (files written before publish times: none)
};

// The region's ops in order, each with tasks in the launch. Throws megacut::Error as
// task_durations_ns and task_startup_ns do for missing or inconsistent records.
std::vector<OpTimeline> op_timelines(const executor::TaskTable& table,
                                     const std::vector<executor::TaskTimingRecord>& records,
                                     const std::vector<uint64_t>& cta_entry_ns);

// The task timing records of a run (megacut run --task-timing): every task of the last launch
// of each mk region of the runner's stages, read back after the run, with where each op's tasks
// ran.
struct RegionTaskTiming {
  int stage = 0;
  const executor::MegakernelRegion* region = nullptr;
  std::vector<executor::TaskTimingRecord> records;
  std::vector<uint64_t> cta_entry_ns;
  std::vector<OpTimeline> ops;
};

std::vector<RegionTaskTiming> read_task_timings(const executor::ScenarioRunner& runner);

// Their file ("megacut.task_timing/1"): per stage its op names and regions (configuration, CTA
// entries, tasks), beside the run's measurement.
inline constexpr std::string_view kTaskTimingSchema = "megacut.task_timing/1";

nlohmann::json task_timing_to_json(const executor::ScenarioRunner& runner,
                                   const std::vector<RegionTaskTiming>& timings,
                                   const executor::Measurement& measurement);

// Launches `stream` work that evicts the device's L2: a memset of twice its size.
class L2Flush {
 public:
  L2Flush();
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void run(cudaStream_t stream);

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
};

struct OpTasks {
  model::RegionConfig region;  // of the single-op region (the largest CTA count's)
  std::vector<model::TaskBenchmark> tasks;
  int regions = 0;        // single-op regions built (one per distinct CTA count)
  int compiled = 0;       // of which compiled their kernel (not found in the kernel cache)
  double compile_ms = 0;  // NVRTC time of those
};

// Op `op` of `stage` of `runner`, alone, at each of options.ctas (capped at the op's tile
// count; duplicates after the cap are measured once).
OpTasks benchmark_op_tasks(executor::ScenarioRunner& runner, int stage, int op,
                           const TaskBenchOptions& options, L2Flush& flush);

}  // namespace megacut::profiler
