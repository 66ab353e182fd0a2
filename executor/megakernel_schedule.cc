#include "executor/megakernel_schedule.h"

#include <algorithm>
#include <limits>

#include "model/error.h"

namespace megacut::executor {

TaskTable make_task_table(const model::Graph& graph, const model::Schedule& schedule,
                          const std::vector<model::DataEdge>& by_data) {
  TaskTable t;
  t.op_begin = schedule.op_begin;
  t.op_end = schedule.op_end;
  t.by_data = by_data;
  t.first_task = graph.first_task(schedule.op_begin);
  const model::TaskId end_task =
      schedule.op_end < graph.op_count() ? graph.first_task(schedule.op_end) : graph.task_count();
  if (end_task - t.first_task > std::numeric_limits<int>::max() / 2) {
    throw Error("megakernel region ops [" + std::to_string(t.op_begin) + ", " +
                std::to_string(t.op_end) + "): too many tasks");
  }
  t.task_count = static_cast<int>(end_task - t.first_task);
  t.op_of_task.resize(t.task_count);
  for (int op = t.op_begin; op < t.op_end; ++op) {
    const model::TaskId first = graph.first_task(op) - t.first_task;
    const model::TaskId last =
        (op + 1 < graph.op_count() ? graph.first_task(op + 1) : graph.task_count()) - t.first_task;
    for (model::TaskId i = first; i < last; ++i) t.op_of_task[i] = op;
  }
  const model::TaskWaits waits = model::task_waits(graph, schedule, by_data);
  t.queue_begin.push_back(0);
  for (const std::vector<model::TaskId>& queue : schedule.queues) {
    for (model::TaskId id : queue) {
      mk::Task task{};
      task.index = static_cast<int>(id - t.first_task);
      task.tile = graph.task(id).tile;
      task.op_counter = t.task_count + (t.op_of_task[task.index] - t.op_begin);
      task.dep_begin = static_cast<int>(t.deps.size());
      for (int64_t w = waits.offsets[task.index]; w < waits.offsets[task.index + 1]; ++w) {
        t.deps.push_back({static_cast<int>(waits.deps[w] - t.first_task), 1});
      }
      for (int64_t w = waits.op_offsets[task.index]; w < waits.op_offsets[task.index + 1]; ++w) {
        const int op = waits.ops[w];
        t.deps.push_back(
            {t.task_count + (op - t.op_begin), static_cast<int>(graph.op(op).tiling.count())});
      }
      task.dep_end = static_cast<int>(t.deps.size());
      t.tasks.push_back(task);
    }
    t.queue_begin.push_back(static_cast<int>(t.tasks.size()));
  }
  return t;
}

std::string find_deadlock(const TaskTable& t) {
  const std::string where = "megakernel region ops [" + std::to_string(t.op_begin) + ", " +
                            std::to_string(t.op_end) + "): ";
  if (t.queue_begin.empty() || t.queue_begin.front() != 0 ||
      t.queue_begin.back() != static_cast<int>(t.tasks.size())) {
    return where + "queue offsets do not cover the task list";
  }
  if (static_cast<int>(t.op_of_task.size()) != t.task_count) {
    return where + "the op of each task is not known";
  }
  // Per op of the region: its tasks and its last task.
  std::vector<int> op_tasks(t.op_end - t.op_begin, 0), op_last(t.op_end - t.op_begin, -1);
  for (int i = 0; i < t.task_count; ++i) {
    const int slot = t.op_of_task[i] - t.op_begin;
    if (slot < 0 || slot >= t.op_end - t.op_begin) {
      return where + "task " + std::to_string(i) + " is of no op of the region";
    }
    ++op_tasks[slot];
    op_last[slot] = std::max(op_last[slot], i);
  }
  for (const model::DataEdge& e : t.by_data) {
    if (e.producer < t.op_begin || e.consumer >= t.op_end || e.producer >= e.consumer) {
      return where + "op " + std::to_string(e.consumer) + " waits by data for op " +
             std::to_string(e.producer) + ", which is not an earlier op of the region";
    }
  }
  std::vector<int> seen(t.task_count, 0);
  for (int q = 0; q < t.queue_count(); ++q) {
    int previous = -1;
    for (int i = t.queue_begin[q]; i < t.queue_begin[q + 1]; ++i) {
      const mk::Task& task = t.tasks[i];
      const std::string name = "task " + std::to_string(task.index) + " (queue " +
                               std::to_string(q) + ", position " +
                               std::to_string(i - t.queue_begin[q]) + ")";
      if (task.index < 0 || task.index >= t.task_count) return where + name + " is not a task";
      if (seen[task.index]++) return where + name + " is placed twice";
      if (task.index <= previous) {
        return where + name + " runs after task " + std::to_string(previous) +
               " in its queue but comes before it in task order";
      }
      previous = task.index;
      if (task.dep_begin < 0 || task.dep_end < task.dep_begin ||
          task.dep_end > static_cast<int>(t.deps.size())) {
        return where + name + " has a bad dependency range";
      }
      if (task.op_counter != t.task_count + (t.op_of_task[task.index] - t.op_begin)) {
        return where + name + " adds to the count of another op than its own";
      }
      for (int d = task.dep_begin; d < task.dep_end; ++d) {
        const mk::Dep dep = t.deps[d];
        if (dep.counter >= t.task_count && dep.counter < t.counter_count()) {
          // An op's count: every task of the op comes before this one, and the count is theirs.
          const int slot = dep.counter - t.task_count, op = t.op_begin + slot;
          if (op_last[slot] >= task.index) {
            return where + name + " waits for op " + std::to_string(op) + ", whose task " +
                   std::to_string(op_last[slot]) + " is not an earlier task";
          }
          if (dep.count != op_tasks[slot]) {
            return where + name + " waits for op " + std::to_string(op) + " to count " +
                   std::to_string(dep.count) + " tasks of its " + std::to_string(op_tasks[slot]);
          }
          continue;
        }
        if (dep.counter < 0 || dep.counter >= task.index || dep.count != 1) {
          return where + name + " waits for task " + std::to_string(dep.counter) +
                 ", which is not an earlier task of the region";
        }
      }
    }
  }
  for (int i = 0; i < t.task_count; ++i) {
    if (!seen[i]) return where + "task " + std::to_string(i) + " is in no queue: never signalled";
  }
  return {};
}

}  // namespace megacut::executor
