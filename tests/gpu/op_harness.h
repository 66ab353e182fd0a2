// For GPU tests of one-op graphs: the graph's device buffers, and why can_implement refuses it.
#pragma once

#include <deque>
#include <span>

#include "executor/conventional.h"
#include "executor/op_support.h"
#include "model/graph.h"
#include "tests/gpu/gpu_support.h"

namespace megacut::testing {

// One graph's device buffers for launching its ops one by one: tensors placed as given (or
// poisoned), each op's weights uploaded as one bf16 run in op.weights order.
class OpBuffers {
 public:
  explicit OpBuffers(const model::Graph& g) : g_(g) {
    buffers.tensors.assign(g.tensors().size(), nullptr);
    buffers.op_weights.assign(g.op_count(), nullptr);
  }
  DeviceBuffer& place(int id, DeviceBuffer d) {
    owned_.push_back(std::move(d));
    buffers.tensors[id] = owned_.back().get();
    return owned_.back();
  }
  DeviceBuffer& poisoned(int id) { return place(id, DeviceBuffer(g_.tensor(id).bytes())); }
  void set_weights(int op, std::span<const float> values) {
    owned_.push_back(upload_bf16(values));
    buffers.op_weights[op] = owned_.back().get();
  }
  // Launches op `op` on the default stream and waits for it.
  void launch(int op) {
    executor::launch_op(g_, op, buffers, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  executor::StageBuffers buffers;

 private:
  const model::Graph& g_;
  std::deque<DeviceBuffer> owned_;
};

// Why can_implement refuses op 0 of `g` (a failure if it does not).
inline std::string refusal(const model::Graph& g) {
  const executor::Support s = executor::can_implement(g, 0);
  EXPECT_FALSE(s.ok);
  return s.reason;
}

}  // namespace megacut::testing
