#include "model/graph.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "model/error.h"

namespace megacut::model {

int Graph::add_tensor(Tensor tensor) {
  assert(!finalized_);
  tensors_.push_back(std::move(tensor));
  producer_.push_back(-1);
  return static_cast<int>(tensors_.size()) - 1;
}

int Graph::add_op(std::string name, std::string_view kind, std::vector<int> inputs,
                  std::vector<int> weights, int output, Tiling tiling, Attrs attrs, int layer) {
  assert(!finalized_);
  Op op;
  op.index = op_count();
  op.name = std::move(name);
  op.kind = &op_kind(kind);
  op.inputs = std::move(inputs);
  op.weights = std::move(weights);
  op.output = output;
  op.tiling = tiling;
  op.attrs = std::move(attrs);
  op.layer = layer;
  if (static_cast<int>(op.inputs.size()) != op.kind->input_count()) {
    throw Error("op " + op.name + ": kind " + std::string(kind) + " takes " +
                std::to_string(op.kind->input_count()) + " inputs, given " +
                std::to_string(op.inputs.size()));
  }
  if (tiling.rows <= 0 || tiling.cols <= 0 || tiling.tile_rows <= 0 || tiling.tile_cols <= 0) {
    throw Error("op " + op.name + ": empty tiling");
  }
  for (int input : op.inputs) {
    if (input < 0 || input >= static_cast<int>(tensors_.size())) {
      throw Error("op " + op.name + ": input tensor " + std::to_string(input) + " does not exist");
    }
  }
  if (producer_.at(output) != -1) {
    throw Error("op " + op.name + ": tensor " + tensors_[output].name + " is already written by " +
                ops_[producer_[output]].name);
  }
  producer_[output] = op.index;
  first_task_.push_back(first_task_.back() + tiling.count());
  ops_.push_back(std::move(op));
  return ops_.back().index;
}

void Graph::finalize() {
  assert(!finalized_);
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  std::vector<TaskId> deps;
  for (const Op& op : ops_) {
    for (int64_t tile = 0; tile < op.tiling.count(); ++tile) {
      const Box out = op.tiling.tile_box(tile);
      deps.clear();
      for (int i = 0; i < static_cast<int>(op.inputs.size()); ++i) {
        const int from = producer_[op.inputs[i]];
        if (from < 0) continue;
        if (from >= op.index) {
          throw Error("op " + op.name + " reads " + tensors_[op.inputs[i]].name +
                      " before its producer " + ops_[from].name + " runs");
        }
        for (const Box& box : op.kind->input_boxes(op, *this, i, out)) {
          for (int64_t t : ops_[from].tiling.tiles_overlapping(box)) {
            deps.push_back(first_task_[from] + t);
          }
        }
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      const TaskId self = first_task_[op.index] + tile;
      for (TaskId dep : deps) edges.emplace_back(dep, self);
    }
  }
  tile_graph_ = TileGraph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(),
                          static_cast<uint64_t>(task_count()));
  task_op_.resize(static_cast<size_t>(task_count()));
  for (const Op& op : ops_) {
    std::fill(task_op_.begin() + first_task_[op.index],
              task_op_.begin() + first_task_[op.index + 1], op.index);
  }
  // dep_entries: each task's dependencies counted by op, then listed with whole ops folded.
  dep_offsets_.assign(static_cast<size_t>(task_count()) + 1, 0);
  dep_entries_.clear();
  std::vector<std::pair<int, int64_t>> per_op;  // (op, dependencies on it) of one task
  for (TaskId id = 0; id < task_count(); ++id) {
    per_op.clear();
    const auto [begin, end] = boost::in_edges(static_cast<uint32_t>(id), tile_graph_);
    for (auto it = begin; it != end; ++it) {
      const int op = task_op_[boost::source(*it, tile_graph_)];
      auto found = std::find_if(per_op.begin(), per_op.end(),
                                [op](const auto& entry) { return entry.first == op; });
      if (found == per_op.end()) {
        per_op.emplace_back(op, 1);
      } else {
        ++found->second;
      }
    }
    for (auto it = begin; it != end; ++it) {
      const TaskId dep = boost::source(*it, tile_graph_);
      const int op = task_op_[dep];
      const int64_t tiles = first_task_[op + 1] - first_task_[op];
      auto found = std::find_if(per_op.begin(), per_op.end(),
                                [op](const auto& entry) { return entry.first == op; });
      if (tiles >= 2 && found->second == tiles) {
        found->second = -1;  // listed
        dep_entries_.push_back(-(static_cast<int64_t>(op) + 1));
      } else if (found->second != -1) {
        dep_entries_.push_back(dep);
      }
    }
    dep_offsets_[static_cast<size_t>(id) + 1] = static_cast<int64_t>(dep_entries_.size());
  }
  finalized_ = true;
}

// A table lookup once finalized: the schedule's and the simulator's walks over a region's
// dependencies ask it for every edge.
TaskRef Graph::task(TaskId id) const {
  assert(id >= 0 && id < task_count());
  int op = 0;
  if (finalized_) {
    op = task_op(id);
  } else {
    const auto it = std::upper_bound(first_task_.begin(), first_task_.end(), id);
    op = static_cast<int>(it - first_task_.begin()) - 1;
  }
  return TaskRef{op, id - first_task_[op]};
}

std::vector<TaskId> Graph::task_deps(TaskId id) const {
  std::vector<TaskId> deps;
  for (auto [it, end] = boost::in_edges(static_cast<uint32_t>(id), tile_graph_); it != end; ++it) {
    deps.push_back(boost::source(*it, tile_graph_));
  }
  std::sort(deps.begin(), deps.end());
  return deps;
}

TileCost Graph::task_cost(TaskId id) const {
  const TaskRef ref = task(id);
  const Op& op = ops_[ref.op];
  return op.kind->tile_cost(op, *this, op.tiling.tile_box(ref.tile));
}

TileCost Graph::op_cost(int index) const {
  TileCost total;
  const Op& o = ops_.at(index);
  for (int64_t tile = 0; tile < o.tiling.count(); ++tile) {
    total += o.kind->tile_cost(o, *this, o.tiling.tile_box(tile));
  }
  return total;
}

TileCost Graph::total_cost() const {
  TileCost total;
  for (int i = 0; i < op_count(); ++i) total += op_cost(i);
  return total;
}

int64_t Graph::parameter_count() const {
  int64_t count = 0;
  for (const Tensor& t : tensors_) {
    if (t.role == TensorRole::weight) count += t.elements();
  }
  return count;
}

int64_t Graph::parameter_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : tensors_) {
    if (t.role == TensorRole::weight) bytes += t.bytes();
  }
  return bytes;
}

}  // namespace megacut::model
