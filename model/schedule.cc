#include "model/schedule.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "model/error.h"

namespace megacut::model {
namespace {

// Rough per-SM rates on a current datacenter GPU: about 30 GB/s of device bandwidth and 6 TFLOP/s
// of bf16 tensor throughput per SM when all SMs are busy, plus a fixed cost per task.
constexpr int64_t kBytesPerNs = 30;
constexpr int64_t kFlopsPerNs = 6000;
// A communication task's share of its GPU's links (tensor parallel): some 400 GB/s of NVLink
// split among the twenty-odd such tasks in flight.
constexpr int64_t kLinkBytesPerNs = 20;
constexpr int64_t kTaskOverheadNs = 500;

}  // namespace

int64_t Schedule::task_count() const {
  int64_t n = 0;
  for (const auto& q : queues) n += static_cast<int64_t>(q.size());
  return n;
}

int64_t schedule_cost_estimate_ns(const TileCost& cost) {
  return kTaskOverheadNs + std::max({(cost.bytes_read + cost.bytes_written) / kBytesPerNs,
                                     cost.flops / kFlopsPerNs, cost.link_bytes / kLinkBytesPerNs});
}

Schedule make_schedule(const Graph& graph, int op_begin, int op_end, int queues) {
  if (queues <= 0) throw Error("schedule: queue count must be positive");
  if (op_begin < 0 || op_end > graph.op_count() || op_begin >= op_end) {
    throw Error("schedule: op range [" + std::to_string(op_begin) + ", " + std::to_string(op_end) +
                ") is not within the stage's " + std::to_string(graph.op_count()) + " ops");
  }
  Schedule s;
  s.op_begin = op_begin;
  s.op_end = op_end;
  s.queues.resize(queues);

  const TaskId first = graph.first_task(op_begin);
  const TaskId last = graph.first_task(op_end - 1) + graph.op(op_end - 1).tiling.count();
  std::vector<int64_t> finish_ns(last - first, 0);
  std::vector<int64_t> op_finish_ns(op_end - op_begin, 0);  // the latest of each op's tasks

  // Queues by (estimated free time, index): the earliest-free queue, lowest index on ties.
  using Slot = std::pair<int64_t, int>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at;
  for (int q = 0; q < queues; ++q) free_at.emplace(0, q);

  // Tasks in order, so an op's tasks are all placed before any task that waits for the whole op.
  for (TaskId id = first; id < last; ++id) {
    int64_t ready_ns = 0;
    for (const int64_t entry : graph.dep_entries(id)) {
      if (entry < 0) {
        const int op = static_cast<int>(-entry - 1);
        if (op >= op_begin) ready_ns = std::max(ready_ns, op_finish_ns[op - op_begin]);
      } else if (entry >= first) {
        ready_ns = std::max(ready_ns, finish_ns[entry - first]);
      }
    }
    auto [free_ns, q] = free_at.top();
    free_at.pop();
    const int64_t start_ns = std::max(free_ns, ready_ns);
    finish_ns[id - first] = start_ns + schedule_cost_estimate_ns(graph.task_cost(id));
    int64_t& op_finish = op_finish_ns[graph.task_op(id) - op_begin];
    op_finish = std::max(op_finish, finish_ns[id - first]);
    s.queues[q].push_back(id);
    free_at.emplace(finish_ns[id - first], q);
  }
  return s;
}

namespace {

// Walks every queue of `schedule` in order and calls wait(task, dep) for each dependency a task
// waits for, and wait_op(task, op) for each op it waits for whole (TaskWaits says which), the
// task region-local. Dependencies along `by_data` are skipped, and not marked seen.
template <class Wait, class WaitOp>
void walk_waits(const Graph& graph, const Schedule& schedule, const std::vector<DataEdge>& by_data,
                Wait&& wait, WaitOp&& wait_op) {
  const TaskId first = graph.first_task(schedule.op_begin),
               last = graph.first_task(schedule.op_end);
  auto on_data = [&](int producer, int consumer) {
    return std::find(by_data.begin(), by_data.end(), DataEdge{producer, consumer}) != by_data.end();
  };
  // done[i] == q: queue q ran task first + i or waited for it (queues are walked one at a time).
  std::vector<int> done(last - first, -1);
  std::vector<int> whole_done(schedule.op_end - schedule.op_begin, -1);  // likewise, whole ops
  for (int q = 0; q < schedule.queue_count(); ++q) {
    for (TaskId id : schedule.queues[q]) {
      if (id < first || id >= last) {
        throw Error("task waits: task " + std::to_string(id) + " of queue " + std::to_string(q) +
                    " is outside the region's tasks [" + std::to_string(first) + ", " +
                    std::to_string(last) + ")");
      }
      // Graph::dep_entries: whole ops folded; those before the region are no wait of it.
      const int own_op = graph.task_op(id);
      for (const int64_t entry : graph.dep_entries(id)) {
        if (entry < 0) {
          const int op = static_cast<int>(-entry - 1);
          if (op < schedule.op_begin || on_data(op, own_op)) continue;
          const int slot = op - schedule.op_begin;
          // Every task of the op: one wait for all of them, unless this queue saw them all.
          if (whole_done[slot] != q) {
            const TaskId begin = graph.first_task(op) - first,
                         end = graph.first_task(op + 1) - first;
            bool seen = true;
            for (TaskId t = begin; t < end; ++t) seen = seen && done[t] == q;
            if (!seen) wait_op(id - first, op);
            for (TaskId t = begin; t < end; ++t) done[t] = q;
            whole_done[slot] = q;
          }
          continue;
        }
        if (entry < first || done[entry - first] == q) continue;
        if (on_data(graph.task_op(entry), own_op)) continue;
        wait(id - first, entry);
        done[entry - first] = q;
      }
      done[id - first] = q;
    }
  }
}

}  // namespace

TaskWaits task_waits(const Graph& graph, const Schedule& schedule,
                     const std::vector<DataEdge>& by_data) {
  // (region-local task, dep) and (region-local task, op), in walk order.
  std::vector<std::pair<TaskId, TaskId>> waits;
  std::vector<std::pair<TaskId, int>> op_waits;
  walk_waits(
      graph, schedule, by_data, [&](TaskId task, TaskId dep) { waits.emplace_back(task, dep); },
      [&](TaskId task, int op) { op_waits.emplace_back(task, op); });
  const TaskId tasks = graph.first_task(schedule.op_end) - graph.first_task(schedule.op_begin);
  // Lists by task from (task, value) pairs: offsets (tasks + 1) and values.
  auto by_task = [tasks](const auto& pairs, std::vector<int64_t>& offsets, auto& values) {
    offsets.assign(static_cast<size_t>(tasks) + 1, 0);
    for (const auto& [task, value] : pairs) ++offsets[task + 1];
    for (size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
    values.resize(pairs.size());
    std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
    for (const auto& [task, value] : pairs) values[next[task]++] = value;
  };
  TaskWaits w;
  by_task(waits, w.offsets, w.deps);
  by_task(op_waits, w.op_offsets, w.ops);
  return w;
}

std::vector<int32_t> task_wait_counts(const Graph& graph, const Schedule& schedule,
                                      const std::vector<DataEdge>& by_data) {
  const TaskId tasks = graph.first_task(schedule.op_end) - graph.first_task(schedule.op_begin);
  std::vector<int32_t> counts(static_cast<size_t>(tasks), 0);
  walk_waits(
      graph, schedule, by_data, [&](TaskId task, TaskId) { ++counts[task]; },
      [&](TaskId task, int) { ++counts[task]; });
  return counts;
}

std::vector<DataEdge> data_edges(const Graph& graph, int op_begin, int op_end,
                                 const std::function<bool(int)>& takes_x,
                                 const std::function<bool(int)>& gives_y) {
  std::vector<DataEdge> edges;
  for (int op = op_begin; op < op_end; ++op) {
    const Op& o = graph.op(op);
    if (o.inputs.empty() || !takes_x(op)) continue;
    const int producer = graph.producer(o.inputs[0]);
    if (producer < op_begin || !gives_y(producer)) continue;
    bool reads_more = false;
    for (size_t i = 1; i < o.inputs.size(); ++i) {
      reads_more = reads_more || graph.producer(o.inputs[i]) == producer;
    }
    if (!reads_more) edges.push_back({producer, op});
  }
  return edges;
}

}  // namespace megacut::model
