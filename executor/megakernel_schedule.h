// A megakernel region's task table: model::make_schedule's queues flattened into the arrays the
// generated kernel walks, and the host check that the table cannot deadlock. Plain C++: the
// planner's tests and CI use it without a GPU.
#pragma once

#include <string>
#include <vector>

#include "executor/megakernel_abi.cuh"
#include "model/graph.h"
#include "model/schedule.h"

namespace megacut::executor {

struct TaskTable {
  int op_begin = 0;
  int op_end = 0;
  model::TaskId first_task = 0;  // global id of region-local task 0
  int task_count = 0;            // tasks in the region = counters
  std::vector<int> queue_begin;  // (queues + 1)
  std::vector<mk::Task> tasks;   // queue after queue; body and layout_offset filled later
  std::vector<mk::Dep> deps;     // counters: region-local task indices, then one per op
  std::vector<int> op_of_task;   // by region-local index: op index in the graph
  // Ops whose consumer waits for their output by polling its flagged words, not their counters
  // (model::DataEdge): no dependency of the table stands for them.
  std::vector<model::DataEdge> by_data;

  int queue_count() const { return static_cast<int>(queue_begin.size()) - 1; }
  // Counters: one per task, then one per op (mk::Task::op_counter).
  int counter_count() const { return task_count + (op_end - op_begin); }
};

// The table of `schedule` (of ops [schedule.op_begin, schedule.op_end) of `graph`). A task's
// dependencies are its model::task_waits: those on tasks before the region are dropped (the
// kernel boundary before the region orders them), and so are those its queue already ran or
// waited for, and those along `by_data`; a wait for a whole op is one for the op's count.
TaskTable make_task_table(const model::Graph& graph, const model::Schedule& schedule,
                          const std::vector<model::DataEdge>& by_data = {});

// Empty when the table cannot deadlock with all its queues' CTAs resident; otherwise why not,
// naming the queue and task. The proof: every task appears exactly once, every dependency is a
// task of the region with a smaller index, and each queue runs its tasks in increasing index
// order; an op's count is waited for only by tasks after all of the op's (each of which adds one
// to it); and a wait by data (by_data) is for an op of the region before the waiting op, so for
// tasks of smaller index too. Then the smallest unfinished task always heads its queue with all
// its dependencies done.
std::string find_deadlock(const TaskTable& table);

}  // namespace megacut::executor
