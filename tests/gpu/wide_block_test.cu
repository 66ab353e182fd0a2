// The tile-body contract the megakernel relies on: a body run by a block wider than kThreads
// (the extra threads return at once; the body synchronizes only its own threads through a named
// barrier), and several tiles one after another in the same block and shared memory (a
// persistent grid smaller than the tile count), gives exactly the conventional kernel's bits.
// (Weight-streaming bodies always run in blocks of their own width and persistent grids: the
// megakernel suite checks them in regions of few CTAs against the conventional kernel.)
#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "executor/conventional.h"
#include "executor/tensor_map.h"
#include "executor/tile_layouts.cuh"
#include "tests/gpu/gpu_support.h"
#include "tests/gpu/op_cases.h"

namespace megacut::testing {
namespace {

// A block of kBlockThreads >= Body::kThreads threads; the bound keeps its registers in budget.
// A mapped body reads its operands through `maps`; the others leave them unused.
template <class Body, int kBlockThreads>
__global__ void __launch_bounds__(kBlockThreads, 1)
    persistent_kernel(const __grid_constant__ executor::OperandMapParams maps,
                      const typename Body::Layout layout) {
  extern __shared__ __align__(128) char smem[];
  for (long long tile = blockIdx.x; tile < layout.grid.count(); tile += gridDim.x) {
    if constexpr (tiles::MappedBody<Body>) {
      Body::run(layout, tile, smem, reinterpret_cast<const char*>(&maps));
    } else {
      Body::run(layout, tile, smem);
    }
  }
}

// Runs op `op` twice from the same random inputs, through launch_op and through a wide,
// persistent launch of Body, and compares the output bits.
template <class Body, class MakeLayout>
void check_wide(const model::Graph& g, int op_index, const std::string& body_name,
                MakeLayout make_layout) {
  const model::Op& op = g.op(op_index);
  ASSERT_EQ(executor::tile_body_name(g, op_index), body_name);
  std::deque<DeviceBuffer> owned;
  executor::StageBuffers b;
  b.tensors.assign(g.tensors().size(), nullptr);
  b.op_weights.assign(g.op_count(), nullptr);
  for (int id : op.inputs) {
    const model::Tensor& t = g.tensor(id);
    owned.push_back(upload_bf16(random_bf16(id + 1, t.elements())));
    b.tensors[id] = owned.back().get();
  }
  int64_t weight_count = 0;
  for (int w : op.weights) weight_count += g.tensor(w).elements();
  if (weight_count > 0) {
    owned.push_back(upload_bf16(random_bf16(99, weight_count, 0.5f, 1.f)));
    b.op_weights[op.index] = owned.back().get();
  }
  const size_t out_bytes = g.tensor(op.output).bytes();
  DeviceBuffer conventional(out_bytes), wide(out_bytes);
  if (op.kind->name() == "kv-append") {  // the output is the cache: start both the same
    CUDA_CHECK(cudaMemset(conventional.get(), 0x3c, out_bytes));
    CUDA_CHECK(cudaMemset(wide.get(), 0x3c, out_bytes));
  }

  b.tensors[op.output] = conventional.get();
  executor::launch_op(g, op_index, b, nullptr);
  b.tensors[op.output] = wide.get();
  const typename Body::Layout layout = make_layout(g, op, b);
  const int smem_bytes = Body::smem_bytes(layout);
  constexpr int kBlockThreads = Body::kThreads + 96 <= 1024 ? Body::kThreads + 96 : 1024;
  auto* kernel = persistent_kernel<Body, kBlockThreads>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  const long long tiles = layout.grid.count();
  const unsigned blocks = static_cast<unsigned>(tiles > 3 ? tiles / 3 : 1);
  executor::OperandMapParams maps{};
  if constexpr (tiles::MappedBody<Body>) {
    maps = executor::encode_operand_maps(Body::operand_maps(layout), op.name);
  }
  kernel<<<blocks, kBlockThreads, smem_bytes>>>(maps, layout);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  const auto want = download<uint8_t>(conventional, out_bytes);
  const auto got = download<uint8_t>(wide, out_bytes);
  EXPECT_TRUE(want == got) << op.name << ": a wide persistent run differs from the kernel's";
}

int find_op(const model::Graph& g, const std::string& name) {
  for (const model::Op& op : g.ops()) {
    if (op.name == name) return op.index;
  }
  throw std::invalid_argument("no op " + name);
}

using namespace executor;
using tiles::bf16;

TEST(WideBlock, PrefillBodies) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph g = build_stage("gqa16", 128, 0, 2);
  const std::string ns = "megacut::tiles::";
  check_wide<tiles::RmsNormTile>(g, find_op(g, "layers.0.attn_norm"), ns + "RmsNormTile",
                                 rmsnorm_layout);
  check_wide<tiles::LinearMmaTile<16, bf16>>(g, find_op(g, "layers.0.mlp.gate_up"),
                                             ns + "LinearMmaTile<16, __nv_bfloat16>",
                                             linear_layout);
  check_wide<tiles::RopeTile>(g, find_op(g, "layers.0.attn.rope"), ns + "RopeTile", rope_layout);
  check_wide<tiles::KvAppendTile>(g, find_op(g, "layers.0.attn.kv_append"), ns + "KvAppendTile",
                                  kv_append_layout);
  check_wide<tiles::AttentionPrefillTile<64>>(g, find_op(g, "layers.0.attn.attention"),
                                              ns + "AttentionPrefillTile<64>", attention_layout);
  check_wide<tiles::SiluMulTile>(g, find_op(g, "layers.0.mlp.silu_mul"), ns + "SiluMulTile",
                                 silu_mul_layout);
  check_wide<tiles::ResidualAddTile>(g, find_op(g, "layers.0.mlp.residual"), ns + "ResidualAddTile",
                                     residual_add_layout);
}

TEST(WideBlock, WideGemmTile) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph g = build_stage("gqa16", 128, 0, 32);  // 4096 rows: 128-wide tiles
  check_wide<tiles::LinearMmaTile<128, bf16>>(g, find_op(g, "layers.0.mlp.gate_up"),
                                              "megacut::tiles::LinearMmaTile<128, __nv_bfloat16>",
                                              linear_layout);
}

// qk-norm runs as its own op in prefill (decode's qkv-attention normalizes in its body, and
// streams: the megakernel suite checks it).
TEST(WideBlock, QkNormBody) {
  MEGACUT_REQUIRE_GPU();
  const model::Graph q_prefill = build_stage("oddqwen", 7, 0, 3);
  check_wide<tiles::QkNormTile>(q_prefill, find_op(q_prefill, "layers.0.attn.qk_norm"),
                                "megacut::tiles::QkNormTile", qk_norm_layout);
}

}  // namespace
}  // namespace megacut::testing
