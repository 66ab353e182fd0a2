// Where a stage graph's tensors live on the device, as kernels and tasks see them. Plain data:
// filled by the runner, read by every op launcher and megakernel region.
#pragma once

#include <cstdint>
#include <vector>

namespace megacut::executor {

struct StageBuffers {
  // By tensor id: inputs, activations and state (KV caches). Weight entries are unused.
  std::vector<void*> tensors;
  // By op index: the op's weights concatenated in op.weights order (q, k, v rows one after the
  // other, as one [N, K] matrix); nullptr for ops without weights.
  std::vector<const void*> op_weights;
  // Positions per sequence each KV cache holds: a cache is [batch, kv_capacity, 2 * kv_heads *
  // head_dim] bf16, keys then values in each row.
  int64_t kv_capacity = 0;
};

}  // namespace megacut::executor
