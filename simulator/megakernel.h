// One persistent megakernel region on the engine: the tile graph of ops [a, b) under a static
// schedule. Each queue (one CTA) runs its tasks in order; a task starts when its queue is
// free and every dependency inside the region has signalled, plus the counter signal-to-wait
// latency when the producer ran on another queue, or a flagged word's where the hop goes by
// data (dependencies on earlier regions were met at the region's kernel boundary). A task first
// moves its bytes through the shared device bandwidth, and a communication task (tensor parallel's
// collectives) its link bytes through the GPU's links at the same time, each shared with the other
// tasks moving bytes there; then it spends its fixed time (compute and latency no other task slows
// down). The part of its bytes its CTA's weight ring loads ahead (TaskCosts::ahead_bytes) moves
// first, from when its queue is free: while it waits for its dependencies.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/graph.h"
#include "model/schedule.h"
#include "simulator/engine.h"

namespace megacut::simulator {

// Costs of a region's tasks, indexed by task id minus the region's first task id.
struct TaskCosts {
  std::vector<TimeNs> fixed_ns;
  std::vector<double> bytes;       // through the shared bandwidth; 0 for none
  std::vector<double> link_bytes;  // through the links to the other GPUs; empty: none at all
  // Of bytes, what the CTA's weight ring loads ahead: from the moment its queue is free (its
  // task before has ended; the region's start for the first), not waiting for its dependencies.
  // The rest follows, from the task's start or once these are through, whichever is later: one
  // stream a CTA. Empty: none at all.
  std::vector<double> ahead_bytes;
  // The region's hops by flagged words (model::data_edges): a task of the consumer on another
  // queue sees a task of the producer end MegakernelParams::word_latency_ns later, not the
  // counter's signal latency. Empty: every hop by counter.
  std::vector<model::DataEdge> by_data;
};

struct MegakernelParams {
  double bandwidth_bytes_per_ns = 0;
  TimeNs signal_latency_ns = 0;
  bool record_spans = false;
  double link_bytes_per_ns = 0;  // what one GPU sends to the others; needed for link bytes
  TimeNs word_latency_ns = 0;    // a hop by flagged words (TaskCosts::by_data)
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

// The makespans of the regions [schedule.op_begin, end), for each end in `ends` (increasing,
// in (op_begin, op_end]), each run with the schedule cut at `end` and the same task costs: what
// the planner asks for about n^2/2 times per stage. One run of the whole region stands in for
// all of them. Until the first task of op `end` starts, [op_begin, end) runs exactly as the
// whole region does (the later tasks only wait, at the back of their queues; the first of them
// to load weights ahead ends that span as a start does), so its run goes
// on from a copy of that moment's state (queued events, transfers in progress, in their
// order), restricted to its tasks not yet ended: usually a few hundred, however long the
// region. Event for event it is the run simulate_megakernel makes of the cut schedule, so each
// makespan equals that one's to the nanosecond.
//
// A caller that can tell some regions are of no use (the planner, from bounds) says so as the
// run reaches each end before the last, given `now`, when the first task of op `end` or later
// starts or begins to load ahead (no task of ops [end, e) moves a byte or starts before it, for
// every e; each still moves all its bytes and spends its fixed time between its queue's being
// free and its end), and `floor`, a lower bound on the makespan of the region ending there
// (exact when all its tasks have ended).
struct PrefixMakespans {
  std::vector<TimeNs> makespan_ns;  // per end; -1 where skipped or stopped
  int64_t tasks = 0;                // tasks simulated: the whole region, then each copy's
};
enum class PrefixChoice {
  run,            // finish the region that ends here
  skip,           // leave it at -1
  run_then_stop,  // finish it, then stop the run: every later end, the last included, at -1
  stop,           // stop the run now: this end and every later one at -1
};
using PrefixFilter = std::function<PrefixChoice(size_t end_index, TimeNs now, TimeNs floor)>;
PrefixMakespans simulate_megakernel_prefixes(const model::Graph& graph,
                                             const model::Schedule& schedule,
                                             const TaskCosts& costs, const MegakernelParams& params,
                                             std::span<const int> ends,
                                             const PrefixFilter& filter = {});

}  // namespace megacut::simulator
