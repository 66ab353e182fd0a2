// Conventional execution: one kernel launch per op, one CTA per tile, each CTA running the
// op's tile body (the same body a megakernel runs as a task). Linear and lm-head ops may
// instead go through cuBLASLt, a second provider recorded as such.
//
// launch_op allocates nothing and never synchronizes, so a whole stage can be captured into a
// CUDA graph. What it needs beyond the graph and the buffers (the cuBLASLt handle, its
// workspace, cached matmul plans) lives in a KernelContext created beforehand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "executor/stage_buffers.h"
#include "executor/tile_sync_abi.h"
#include "model/graph.h"
#include "model/linear_provider.h"

namespace megacut::executor {

// ours: the tile bodies (executor/tiles/linear*.cuh); cublaslt: bf16 in, f32 accumulate, bf16
// (linear) or f32 (lm-head) out, for the kinds model::cublaslt_can_run names.
using model::LinearProvider;
using model::provider_name;

// Per-device state of the conventional kernels: the cuBLASLt handle, a preallocated workspace
// and the matmul plans chosen so far (one heuristic query per shape, made on first use; run a
// stage once before capturing it so that capture finds every plan cached). Create it on the
// device the kernels run on; not copyable. Thread-safe.
class KernelContext {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  explicit KernelContext(size_t cublaslt_workspace_bytes = kDefaultWorkspaceBytes);
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  // y = x W^T with x (m, k), W (n, k), y (m, n), all row-major, x and W bf16, y bf16 or f32
  // (f32_out), f32 accumulation.
  void lt_matmul(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                 bool f32_out, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Launches op `op` of `graph` on `stream`: one CTA per tile of op.tiling. With `pdl` our tile
// kernel is launched with Programmatic Dependent Launch (executor/launch.h); cuBLASLt's never
// are. With `sync`, as a kernel of a tile region (executor/tile_region.h fills it; our kernel
// only). Throws megacut::Error when the tile bodies do not support the op (see can_implement in
// executor/op_support.h), when a buffer is missing, when the cuBLASLt provider is asked
// for without a context or in a tile region, or when a launch fails.
void launch_op(const model::Graph& graph, int op, const StageBuffers& buffers, cudaStream_t stream,
               LinearProvider provider = LinearProvider::ours, KernelContext* context = nullptr,
               bool pdl = false, const TileSync* sync = nullptr);

// Raises the dynamic shared-memory limit of the kernels of every body the op-kind table may pick
// (executor/op_kind_table.cuh), once per process; launch_op also does it on first use of a
// kernel that needs more than the default 48 KB. Call it before capturing a graph to keep
// attribute changes out of the capture.
void prepare_kernels();

}  // namespace megacut::executor
