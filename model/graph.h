// The operator graph of one stage (prefill, decode, ...) and its tile graph.
//
// Ops are kept in execution order; each op writes one tensor cut into tiles. The tile graph
// has one vertex per task (one tile of one op) and an edge from every producer tile a task
// reads to the task. It is stored in a Boost compressed-sparse-row graph: built once, read many
// times by the schedule, the simulator and the executor.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/op.h"
#include "model/tensor.h"

namespace megacut::model {

using TaskId = int64_t;
using TileGraph =
    boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property,
                                       boost::no_property, boost::no_property, uint32_t, uint64_t>;

struct TaskRef {
  int op = 0;
  int64_t tile = 0;
};

class Graph {
 public:
  Graph(std::string stage, int64_t batch) : stage_(std::move(stage)), batch_(batch) {}

  // Building. Ops must be added in execution order; call finalize() once when done.
  int add_tensor(Tensor tensor);
  int add_op(std::string name, std::string_view kind, std::vector<int> inputs,
             std::vector<int> weights, int output, Tiling tiling, Attrs attrs = {}, int layer = -1);
  void finalize();

  const std::string& stage() const { return stage_; }
  int64_t batch() const { return batch_; }
  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(int index) const { return ops_.at(index); }
  int op_count() const { return static_cast<int>(ops_.size()); }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor& tensor(int id) const { return tensors_.at(id); }
  // The op that writes a tensor, or -1 for weights, inputs and state no op of the stage writes.
  int producer(int tensor) const { return producer_.at(tensor); }

  // The tile graph.
  const TileGraph& tiles() const { return tile_graph_; }
  TaskId task_count() const { return first_task_.back(); }
  // first_task(op_count()) is task_count(): [first_task(a), first_task(b)) are ops [a, b)'s tasks.
  TaskId first_task(int op) const { return first_task_.at(op); }
  TaskId task_id(int op, int64_t tile) const { return first_task_.at(op) + tile; }
  TaskRef task(TaskId id) const;
  // The op of task `id`, once finalized: task(id).op without a search.
  int task_op(TaskId id) const { return task_op_[static_cast<size_t>(id)]; }
  // What task `id` waits for, once finalized, in the order of its dependencies: an op of two
  // or more tasks that it needs every task of, once, as -(op + 1), where its first task would
  // be; each other task it needs as its id. A static schedule waits for a whole op with one
  // count (model::task_waits), so its walks ask this rather than every edge.
  std::span<const int64_t> dep_entries(TaskId id) const {
    const auto i = static_cast<size_t>(id);
    return {dep_entries_.data() + dep_offsets_[i], dep_entries_.data() + dep_offsets_[i + 1]};
  }
  // Tasks that `id` waits for, in increasing order.
  std::vector<TaskId> task_deps(TaskId id) const;
  TileCost task_cost(TaskId id) const;
  TileCost op_cost(int op) const;
  TileCost total_cost() const;

  // Parameters: every distinct weight tensor once (tied embeddings count once).
  int64_t parameter_count() const;
  int64_t parameter_bytes() const;

 private:
  std::string stage_;
  int64_t batch_;
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  std::vector<int> producer_;
  std::vector<TaskId> first_task_{0};
  std::vector<int32_t> task_op_;                    // (task_count()) each task's op, once finalized
  std::vector<int64_t> dep_offsets_, dep_entries_;  // dep_entries(id), by task
  TileGraph tile_graph_;
  bool finalized_ = false;
};

// The last dimension of tensor `tensor`: the features of a row.
inline int64_t cols_of(const Graph& graph, int tensor) { return graph.tensor(tensor).shape.back(); }

}  // namespace megacut::model
