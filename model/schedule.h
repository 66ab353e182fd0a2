// The static megakernel schedule: which task of an `mk` region runs on which queue (one queue
// per CTA of the persistent launch), in what order.
//
// One function, used by both the simulator and the executor, so the simulator models exactly
// the schedule that runs. Tasks are placed in global order (op, then tile), each on the queue
// that frees up first under a rough cost estimate, starting no earlier than its inputs are
// estimated to be ready. Because every dependency points to an earlier task in that order, a
// task never waits for one placed after it in its own queue, and the region cannot deadlock
// as long as all its CTAs are resident at once.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/graph.h"

namespace megacut::model {

struct Schedule {
  int op_begin = 0;
  int op_end = 0;
  std::vector<std::vector<TaskId>> queues;  // per queue, task ids in run order

  int queue_count() const { return static_cast<int>(queues.size()); }
  int64_t task_count() const;
};

// The schedule of ops [op_begin, op_end) of `graph` over `queues` queues. Deterministic.
Schedule make_schedule(const Graph& graph, int op_begin, int op_end, int queues);

// What each task of a schedule waits for when its queue reaches it: its dependencies within
// the region that no earlier task of its queue ran or waited for. A queue runs in order and a
// task starts only once its waits are over, so what its queue ran or saw done before is done;
// a wait for it again would only cost the poll. Dependencies before the region are left out
// too: the kernel boundary orders them. A task that depends on every task of an op of the
// region (of two or more tasks: a linear after a norm, lm-head's argmax) waits once for the
// op's count, which each of its tasks adds to, instead of for each task: one poll in place of
// hundreds, all of which would land on the same few lines of L2. By region-local task (task id
// minus the region's first task).
struct TaskWaits {
  std::vector<int64_t> offsets;  // (tasks + 1): task i waits for deps[offsets[i], offsets[i + 1])
  std::vector<TaskId> deps;      // task ids
  std::vector<int64_t> op_offsets;  // (tasks + 1): and for every task of ops[op_offsets[i], ...)
  std::vector<int> ops;             // op indices

  int64_t count(int64_t task) const {
    return offsets[task + 1] - offsets[task] + op_offsets[task + 1] - op_offsets[task];
  }
};

// An op of a region whose output another op of the region reads as flagged words (each holding
// its run beside the values: executor/tiles/flagged.cuh) and waits for by polling them, not for
// the producer's counters. Such a wait is no counter wait: task_waits leaves it out, and it does
// not count as seen for the tasks after it in the queue, which may read the producer's output
// through its counters.
struct DataEdge {
  int producer = 0;
  int consumer = 0;
  friend bool operator==(const DataEdge&, const DataEdge&) = default;
};

TaskWaits task_waits(const Graph& graph, const Schedule& schedule,
                     const std::vector<DataEdge>& by_data = {});
// How many waits each task has (TaskWaits::count of each), without the lists.
std::vector<int32_t> task_wait_counts(const Graph& graph, const Schedule& schedule,
                                      const std::vector<DataEdge>& by_data = {});

// The hops of region [op_begin, op_end) that go by flagged words, given what each op's tile body
// can do with them (`takes_x(op)`: wait on its x as words and read it from them; `gives_y(op)`:
// write its output as words besides it): an op whose first input an earlier op of the region
// wrote, where the consumer takes and the producer gives, and the consumer reads nothing else
// the producer writes (only counters order that). In op order. The runtime hands these over
// (executor::MegakernelRegion) and the simulator prices them; both ask here.
std::vector<DataEdge> data_edges(const Graph& graph, int op_begin, int op_end,
                                 const std::function<bool(int)>& takes_x,
                                 const std::function<bool(int)>& gives_y);

// Rough task cost in nanoseconds, used only to balance queues: the simulator uses measured
// costs. Exposed so tests can reason about the placement.
int64_t schedule_cost_estimate_ns(const TileCost& cost);

}  // namespace megacut::model
