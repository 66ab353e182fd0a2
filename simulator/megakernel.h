// One persistent megakernel region on the engine: the tile graph of ops [a, b) under a static
// schedule. Each queue (one CTA) runs its tasks in order; a task starts when its queue is
// free and every dependency inside the region has signalled, plus the counter signal-to-wait
// latency when the producer ran on another queue (dependencies on earlier regions were met at
// the region's kernel boundary). A task first moves its bytes through the shared device
// bandwidth, then spends its fixed time (compute and latency no other task slows down).
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"
#include "model/schedule.h"
#include "simulator/engine.h"

namespace megacut::simulator {

// Costs of a region's tasks, indexed by task id minus the region's first task id.
struct TaskCosts {
  std::vector<TimeNs> fixed_ns;
  std::vector<double> bytes;  // through the shared bandwidth; 0 for none
};

struct MegakernelParams {
  double bandwidth_bytes_per_ns = 0;
  TimeNs signal_latency_ns = 0;
  bool record_spans = false;
};

// What a critical-path step or a trace span is.
enum class StepKind { gap, launch, kernel, task, wait, drain };
std::string_view step_kind_name(StepKind kind);

// One link of a critical path; `lane` is the SM (queue) of a task or wait, -1 otherwise.
struct PathStep {
  StepKind kind = StepKind::task;
  int op = -1;
  int64_t tile = -1;
  int lane = -1;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  friend bool operator==(const PathStep&, const PathStep&) = default;
};

// One task or kernel on the time line, for the Chrome trace.
struct Span {
  int op = -1;
  int64_t tile = -1;  // -1 for a whole kernel
  int lane = -1;      // SM of a task; -1 for a kernel on the stream
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  friend bool operator==(const Span&, const Span&) = default;
};

struct MegakernelRun {
  TimeNs makespan_ns = 0;               // first task start (0) to last task end
  std::vector<TimeNs> lane_busy_ns;     // per queue: time spent in tasks
  std::vector<PathStep> critical_path;  // tasks and waits, from 0 to makespan_ns
  std::vector<Span> spans;              // every task, when params.record_spans
  int64_t events = 0;                   // engine events processed
};

MegakernelRun simulate_megakernel(const model::Graph& graph, const model::Schedule& schedule,
                                  const TaskCosts& costs, const MegakernelParams& params);

}  // namespace megacut::simulator
