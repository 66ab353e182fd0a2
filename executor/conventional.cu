// The conventional kernels: tile_kernel<Body> runs Body::run on tile blockIdx.x; a mapped body
// (tiles::MappedBody) runs as mapped_kernel<Body>, the same with its tensor maps and its tiles
// in an order that keeps their operands in L2; a streamed body (tiles/stream.cuh) runs as
// stream_kernel<Body>, a persistent grid of one CTA per SM walking tiles blockIdx.x, +
// gridDim.x, ... with a producer thread streaming the weights of its next tiles into the CTA's
// ring, as a megakernel region runs the same body. launch_op runs the body the
// op-kind table selects for an op (op_kind_table.cuh). Each kernel first waits for the
// kernel before it (a stream kernel's producer only reads weights, and starts at once) and, its
// tiles done, lets the one after it launch, which does nothing unless they are launched with
// Programmatic Dependent Launch (grid_dependency.cuh).
#include <cublasLt.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "executor/conventional.h"
#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/grid_dependency.cuh"
#include "executor/launch.h"
#include "executor/op_kind_table.cuh"
#include "executor/tensor_map.h"
#include "executor/tile_layouts.cuh"
#include "executor/tile_sync.cuh"
#include "model/error.h"
#include "model/tensor.h"

namespace megacut::executor {
namespace {

using model::Graph;
using model::Op;

// CTAs per SM the register budget must allow: Body::kMinBlocksPerSm where a body asks (the
// weight-streaming bodies want two), else 1. With ptxas's own default it would aim at two and
// spill the widest GEMM tile at 128 registers.
template <class Body>
constexpr int min_blocks_per_sm() {
  if constexpr (requires { Body::kMinBlocksPerSm; }) {
    return Body::kMinBlocksPerSm;
  } else {
    return 1;
  }
}

// A CTA of one tile, `tile`, which `run` computes: as a conventional kernel's, or with kTiled
// as a tile region's (executor/tile_sync.cuh; `sync` unused otherwise). Each kernel comes in
// both kinds, so that the conventional one compiles exactly as it would alone.
template <int kThreads, bool kTiled, class Run>
__device__ __forceinline__ void run_tile(const TileSync& sync, long long tile, const Run& run) {
  if constexpr (kTiled) {
    const TileEntry entry = enter_tile_region(sync, tile);
    const bool ok =
        consumer_sync_and<kThreads>(wait_tile_inputs<kThreads>(sync, tile, entry.run)) && entry.ok;
    if (ok) run();
    consumer_sync<kThreads>();
    if (ok && threadIdx.x == 0) publish_tile(sync, tile, entry.run);
    leave_tile_region(sync);
  } else {
    wait_for_prior_grids();
    run();
    // After the work, not before: a dependent launched early holds SM resources while it
    // waits, which a kernel of several waves of CTAs still needs.
    allow_dependent_launch();
  }
}

template <class Body, bool kTiled>
__global__ void __launch_bounds__(Body::kThreads, min_blocks_per_sm<Body>())
    tile_kernel(const typename Body::Layout layout, const TileSync sync) {
  extern __shared__ __align__(128) char smem[];
  run_tile<Body::kThreads, kTiled>(sync, blockIdx.x, [&] { Body::run(layout, blockIdx.x, smem); });
}

// The tile the i-th CTA of a mapped body's kernel takes: the tiles in groups of kGroupRows row
// tiles, each group walked one column of tiles at a time, so that the CTAs running at once read
// a few row blocks of x and a few column blocks of W, which stay in L2, rather than every column
// block of W for each row block of x in turn (a Llama-3.2-1B batch of 32 prompts re-read
// gate_up's 64 MB of weights once per 128 rows). model::grouped_tile is its host twin, which the
// simulator's tile regions follow.
__device__ long long grouped_tile(const tiles::TileGrid& grid, long long i) {
  constexpr long long kGroupRows = model::kTileGroupRows;
  const long long cols = grid.col_tiles();
  const long long first = i / (kGroupRows * cols) * kGroupRows;
  const long long height = min(kGroupRows, grid.row_tiles() - first);
  const long long in_group = i - first * cols;
  return (first + in_group % height) * cols + in_group / height;
}

// A mapped body's kernel (tiles::MappedBody): tile_kernel's, with the body's tensor maps.
template <class Body, bool kTiled>
__global__ void __launch_bounds__(Body::kThreads, min_blocks_per_sm<Body>())
    mapped_kernel(const __grid_constant__ OperandMapParams maps, const typename Body::Layout layout,
                  const TileSync sync) {
  extern __shared__ __align__(128) char smem[];
  const long long tile = grouped_tile(layout.grid, blockIdx.x);
  run_tile<Body::kThreads, kTiled>(
      sync, tile, [&] { Body::run(layout, tile, smem, reinterpret_cast<const char*>(&maps)); });
}

// A streamed body's persistent kernel: shared memory is the body's scratch (scratch_bytes,
// 128-byte aligned), then the room of the ring of `slots` slots; `map` is the weights' tensor
// map. Thread kThreads streams the weights of the CTA's tiles; the body's threads run them. With
// kTiled, in a tile region: the body's threads wait for each tile's inputs together and publish
// it once written; a tile whose wait gave up still takes its weights from the ring, so that the
// producer never waits for consumers that left, but its result is void (the region's error
// record says so) and is not published. Weights are no kernel's output: in a tile region the
// producer streams from the start, the kernels before the region being done once the region's
// first kernel has passed its wait.
template <class Body, bool kTiled>
__global__ void __launch_bounds__(Body::kThreads + tiles::kStreamProducerThreads, 1)
    stream_kernel(const __grid_constant__ CUtensorMap map, const typename Body::Layout layout,
                  int scratch_bytes, int slots, const TileSync sync) {
  constexpr int kThreads = Body::kThreads;
  static_assert(kThreads == tiles::kStreamConsumerThreads, "a streamed body's warps");
  extern __shared__ __align__(128) char smem[];
  __shared__ unsigned long long full[tiles::kStreamMaxSlots], empty[tiles::kStreamMaxSlots];
  const tiles::StreamRing ring{tiles::ring_data(smem + scratch_bytes), full, empty, slots, slots};
  // A wait this long is a defect of ours: trap rather than hang. In a tile region, no sooner than
  // well past the region's watchdog, which reports a hang first.
  constexpr unsigned long long kTimeoutNs = 10'000'000'000ull;
  const unsigned long long timeout_ns = kTiled ? max(kTimeoutNs, 4 * sync.watchdog_ns) : kTimeoutNs;
  if (threadIdx.x == 0) init_stream_ring(ring);
  TileEntry entry{0, true};
  if constexpr (kTiled) {
    entry = enter_tile_region(sync, blockIdx.x);  // its barrier publishes the ring too
  } else {
    __syncthreads();
  }
  const long long count = layout.grid.count();
  if (threadIdx.x == kThreads) {
    const unsigned long long policy = tiles::stream_cache_policy();
    unsigned position = 0;
    bool after_prior_grids = kTiled;
    for (long long tile = blockIdx.x; tile < count; tile += gridDim.x) {
      tiles::StreamPlan plan = Body::stream(layout, tile, &map);
      if (plan.after_prior_grids && !after_prior_grids) {
        wait_for_prior_grids();
        after_prior_grids = true;
        plan = Body::stream(layout, tile, &map);  // its row reads the step: read it again now
      }
      tiles::produce_stream(ring, position, plan, policy, [&](unsigned long long waited_ns) {
        if (waited_ns > timeout_ns) __trap();
        return false;
      });
    }
  } else if (threadIdx.x < kThreads) {
    if constexpr (!kTiled) wait_for_prior_grids();
    tiles::StreamCursor weights{ring, 0, timeout_ns};
    for (long long tile = blockIdx.x; tile < count; tile += gridDim.x) {
      if constexpr (kTiled) {
        const bool ok =
            consumer_sync_and<kThreads>(wait_tile_inputs<kThreads>(sync, tile, entry.run)) &&
            entry.ok;
        Body::run(layout, tile, smem, weights);
        consumer_sync<kThreads>();
        if (ok && threadIdx.x == 0) publish_tile(sync, tile, entry.run);
      } else {
        Body::run(layout, tile, smem, weights);
      }
    }
  }
  if constexpr (kTiled) {
    leave_tile_region(sync);
  } else {
    allow_dependent_launch();
  }
}

constexpr int kDefaultSmemBytes = 48 * 1024;

// The kernel that runs Body's tiles one CTA each.
template <class Body, bool kTiled>
constexpr auto* tile_kernel_of() {
  if constexpr (tiles::MappedBody<Body>) {
    return mapped_kernel<Body, kTiled>;
  } else {
    return tile_kernel<Body, kTiled>;
  }
}

// Lets Body's tile kernel take up to the device's opt-in shared memory less its static part;
// once per process.
template <class Body, bool kTiled>
void raise_smem_limit() {
  static const bool raised = [] {
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, tile_kernel_of<Body, kTiled>()));
    CUDA_CHECK(cudaFuncSetAttribute(
        tile_kernel_of<Body, kTiled>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
        current_device().smem_per_block_optin - static_cast<int>(attributes.sharedSizeBytes)));
    return true;
  }();
  (void)raised;
}

// What a streamed body's kernel is launched with on this device: one CTA per SM (at most one
// per tile), and the ring's slots in the shared memory the body's scratch leaves
// (tiles::stream_ring_slots).
struct StreamLaunch {
  int ctas = 0;
  int scratch_bytes = 0;
  int slots = 0;
  int smem_bytes() const {
    return scratch_bytes + tiles::kStreamRingAlignBytes + slots * tiles::kStreamSlotBytes;
  }
};

// The device's SMs and the shared memory stream_kernel<Body> may take beyond its static part;
// raises its limit to that, once per process.
struct StreamDevice {
  int sm_count = 0;
  int dynamic_smem_bytes = 0;
};

template <class Body, bool kTiled>
const StreamDevice& stream_device() {
  static const StreamDevice d = [] {
    const DeviceInfo device = current_device();
    StreamDevice d;
    d.sm_count = device.sm_count;
    const int optin = device.smem_per_block_optin;
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, stream_kernel<Body, kTiled>));
    d.dynamic_smem_bytes = optin - static_cast<int>(attributes.sharedSizeBytes);
    CUDA_CHECK(cudaFuncSetAttribute(stream_kernel<Body, kTiled>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    d.dynamic_smem_bytes));
    return d;
  }();
  return d;
}

template <class Body, bool kTiled>
StreamLaunch stream_launch(const typename Body::Layout& layout) {
  const StreamDevice& d = stream_device<Body, kTiled>();
  StreamLaunch s;
  s.scratch_bytes = (Body::smem_bytes(layout) + 127) / 128 * 128;
  s.slots = tiles::stream_ring_slots(
      (d.dynamic_smem_bytes - s.scratch_bytes - tiles::kStreamRingAlignBytes) /
      tiles::kStreamSlotBytes);
  if (s.slots < 2) {
    throw Error("a weight-streaming kernel needs " + std::to_string(s.scratch_bytes) +
                " bytes of scratch and two 16 KB slots; the device has " +
                std::to_string(d.dynamic_smem_bytes) + " bytes of shared memory per block");
  }
  s.ctas = static_cast<int>(std::min<long long>(d.sm_count, layout.grid.count()));
  return s;
}

template <class Body, bool kTiled>
void launch_tiles(const typename Body::Layout& layout, cudaStream_t stream, bool pdl,
                  const TileSync& sync) {
  if constexpr (tiles::StreamedBody<Body>) {
    const StreamLaunch s = stream_launch<Body, kTiled>(layout);
    const KernelLaunch launch(static_cast<unsigned>(s.ctas),
                              Body::kThreads + tiles::kStreamProducerThreads,
                              static_cast<size_t>(s.smem_bytes()), stream, pdl);
    const CUtensorMap map = encode_tensor_map(Body::map_shape(layout), "a streamed body's bytes");
    CUDA_CHECK(cudaLaunchKernelEx(launch.config(), stream_kernel<Body, kTiled>, map, layout,
                                  s.scratch_bytes, s.slots, sync));
  } else {
    const int smem_bytes = Body::smem_bytes(layout);
    // The tiled kind's own static shared memory counts against the default limit too.
    if (kTiled || smem_bytes > kDefaultSmemBytes) raise_smem_limit<Body, kTiled>();
    const long long tiles = layout.grid.count();
    const KernelLaunch launch(static_cast<unsigned>(tiles), Body::kThreads,
                              static_cast<size_t>(smem_bytes), stream, pdl);
    if constexpr (tiles::MappedBody<Body>) {
      const OperandMapParams maps = encode_operand_maps(Body::operand_maps(layout), "a linear");
      CUDA_CHECK(
          cudaLaunchKernelEx(launch.config(), mapped_kernel<Body, kTiled>, maps, layout, sync));
    } else {
      CUDA_CHECK(cudaLaunchKernelEx(launch.config(), tile_kernel<Body, kTiled>, layout, sync));
    }
  }
}

}  // namespace

void prepare_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    op_kind_table::for_each_body([&]<class Body>() {
      if constexpr (tiles::StreamedBody<Body>) {
        stream_device<Body, false>();
        stream_device<Body, true>();
      } else {
        raise_smem_limit<Body, false>();
        raise_smem_limit<Body, true>();
      }
    });
  });
}

void launch_op(const Graph& graph, int op, const StageBuffers& buffers, cudaStream_t stream,
               LinearProvider provider, KernelContext* context, bool pdl, const TileSync* sync) {
  const Op& o = graph.op(op);
  const bool lm_head = o.kind->name() == "lm-head";
  // cuBLASLt takes any tiling; our bodies need theirs. step-head always runs our body: its head
  // is chosen by a step that only the device holds.
  if (provider == LinearProvider::cublaslt && model::cublaslt_can_run(o.kind->name())) {
    if (sync != nullptr) {
      throw Error("op " + o.name + ": a tile region's kernels are ours, not cuBLASLt's");
    }
    if (context == nullptr) {
      throw Error("op " + o.name + ": the cuBLASLt provider needs a KernelContext");
    }
    const auto l = linear_layout(graph, o, buffers);  // pointers only; dtype unused
    context->lt_matmul(l.x, l.w, l.y, o.tiling.rows, l.n, l.k, lm_head, stream);
    return;
  }
  if (Support s = can_implement(graph, op); !s) throw Error(s.reason);
  visit_tile_body(graph, op, buffers, [&]<class Body>(const typename Body::Layout& layout) {
    if (sync != nullptr) {
      launch_tiles<Body, true>(layout, stream, pdl, *sync);
    } else {
      launch_tiles<Body, false>(layout, stream, pdl, TileSync{});
    }
  });
}

// ---- cuBLASLt ------------------------------------------------------------------------------

namespace {

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
  }
}

#define CUBLAS_CHECK(expr) check_cublas((expr), #expr, __FILE__, __LINE__)

// One matmul shape: descriptors and the algorithm the heuristic chose.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct KernelContext::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::mutex mutex;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, LtPlan> plans;

  // Row-major y (m, n) = x (m, k) W (n, k)^T is column-major y^T (n, m) = W^T x^T: cuBLASLt's
  // A is W seen as column-major (k, n), transposed; B is x seen as column-major (k, m).
  const LtPlan& plan(int64_t m, int64_t n, int64_t k, bool f32_out) {
    std::lock_guard lock(mutex);
    auto [it, fresh] = plans.try_emplace({m, n, k, f32_out});
    if (!fresh) return it->second;
    LtPlan& p = it->second;
    try {
      CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
      CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                  sizeof(transpose)));
      CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)));
      CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, k, n, k));
      CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, k, m, k));
      CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, f32_out ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
      cublasLtMatmulPreference_t pref = nullptr;
      CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref,
                                                        CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace_bytes, sizeof(workspace_bytes)));
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c,
                                                                   p.c, pref, 1, &result, &found);
      cublasLtMatmulPreferenceDestroy(pref);
      if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        throw Error("cuBLASLt has no algorithm for y(" + std::to_string(m) + ", " +
                    std::to_string(n) + ") = x(" + std::to_string(m) + ", " + std::to_string(k) +
                    ") W^T with " + (f32_out ? "f32" : "bf16") + " output (status " +
                    std::to_string(static_cast<int>(status)) + ")");
      }
      p.algo = result.algo;
    } catch (...) {
      destroy(p);
      plans.erase(it);
      throw;
    }
    return p;
  }

  static void destroy(LtPlan& p) {
    if (p.c) cublasLtMatrixLayoutDestroy(p.c);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  }

  ~Impl() {
    for (auto& [key, p] : plans) destroy(p);
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }
};

KernelContext::KernelContext(size_t cublaslt_workspace_bytes) : impl_(std::make_unique<Impl>()) {
  CUBLAS_CHECK(cublasLtCreate(&impl_->handle));
  impl_->workspace_bytes = cublaslt_workspace_bytes;
  if (cublaslt_workspace_bytes > 0) {
    CUDA_CHECK(cudaMalloc(&impl_->workspace, cublaslt_workspace_bytes));
  }
}

KernelContext::~KernelContext() = default;

void KernelContext::lt_matmul(const void* x, const void* w, void* y, int64_t m, int64_t n,
                              int64_t k, bool f32_out, cudaStream_t stream) {
  const LtPlan& p = impl_->plan(m, n, k, f32_out);
  const float alpha = 1.f, beta = 0.f;
  CUBLAS_CHECK(cublasLtMatmul(impl_->handle, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c,
                              &p.algo, impl_->workspace, impl_->workspace_bytes, stream));
}

}  // namespace megacut::executor
