// From a graph op and the stage's buffers to its tile body's layout: where the op's buffers
// are. Shared by the conventional launcher and the megakernel runtime, so both run the same
// body with the same layout (executor/op_kind_table.cuh says which body). Host code, included from
// CUDA sources only: the layouts are device types.
#pragma once

#include <cstdint>

#include "executor/op_support.h"
#include "executor/stage_buffers.h"
#include "executor/tiles/argmax.cuh"
#include "executor/tiles/attention.cuh"
#include "executor/tiles/audio_elementwise.cuh"
#include "executor/tiles/codebook_sum.cuh"
#include "executor/tiles/conv.cuh"
#include "executor/tiles/embedding.cuh"
#include "executor/tiles/kv_append.cuh"
#include "executor/tiles/linear.cuh"
#include "executor/tiles/qk_norm.cuh"
#include "executor/tiles/residual_add.cuh"
#include "executor/tiles/rmsnorm.cuh"
#include "executor/tiles/rope.cuh"
#include "executor/tiles/silu_mul.cuh"
#include "model/graph.h"

namespace megacut::executor {

tiles::TileGrid tile_grid(const model::Tiling& tiling);

// One layout per op kind: where the op's buffers are. Throw megacut::Error when a buffer the
// op needs is missing from `buffers`.
tiles::EmbeddingTile::Layout embedding_layout(const model::Graph&, const model::Op&,
                                              const StageBuffers&);
tiles::RmsNormTile::Layout rmsnorm_layout(const model::Graph&, const model::Op&,
                                          const StageBuffers&);
tiles::LinearLayout<tiles::bf16> linear_layout(const model::Graph&, const model::Op&,
                                               const StageBuffers&);
tiles::LinearLayout<float> lm_head_layout(const model::Graph&, const model::Op&,
                                          const StageBuffers&);
// norm-linear: linear's with the norm's scale (the last of the op's weights, after W; with attr
// glu, W is gate then up, twice the output's features) and eps. linear-residual: linear's with
// the residual, input 1.
tiles::LinearLayout<tiles::bf16> norm_linear_layout(const model::Graph&, const model::Op&,
                                                    const StageBuffers&);
tiles::LinearLayout<tiles::bf16> linear_residual_layout(const model::Graph&, const model::Op&,
                                                        const StageBuffers&);
// A code predictor's step-embedding and step-head: the embedding and lm-head layouts with the
// step input (input 1), which the body reads on the device, and the rows of one step.
tiles::EmbeddingTile::Layout step_embedding_layout(const model::Graph&, const model::Op&,
                                                   const StageBuffers&);
tiles::LinearLayout<float> step_head_layout(const model::Graph&, const model::Op&,
                                            const StageBuffers&);
tiles::QkNormTile::Layout qk_norm_layout(const model::Graph&, const model::Op&,
                                         const StageBuffers&);
tiles::RopeTile::Layout rope_layout(const model::Graph&, const model::Op&, const StageBuffers&);
tiles::KvAppendTile::Layout kv_append_layout(const model::Graph&, const model::Op&,
                                             const StageBuffers&);
tiles::AttentionLayout attention_layout(const model::Graph&, const model::Op&, const StageBuffers&);
tiles::QkvAttentionLayout qkv_attention_layout(const model::Graph&, const model::Op&,
                                               const StageBuffers&);
tiles::SiluMulTile::Layout silu_mul_layout(const model::Graph&, const model::Op&,
                                           const StageBuffers&);
tiles::ResidualAddTile::Layout residual_add_layout(const model::Graph&, const model::Op&,
                                                   const StageBuffers&);
tiles::ArgmaxTile::Layout argmax_layout(const model::Graph&, const model::Op&, const StageBuffers&);
// The audio kinds. conv_layout serves conv1d and conv-transpose1d (the bias, when the op has
// one, follows the kernel in the op's weights); elementwise_layout serves snake-beta,
// leaky-relu, tanh, gelu and add-scaled.
tiles::CodebookSumTile::Layout codebook_sum_layout(const model::Graph&, const model::Op&,
                                                   const StageBuffers&);
tiles::ConvLayout conv_layout(const model::Graph&, const model::Op&, const StageBuffers&);
tiles::ElementwiseLayout elementwise_layout(const model::Graph&, const model::Op&,
                                            const StageBuffers&);

// Positions per sequence the op's KV cache holds: buffers.kv_capacity, or the cache tensor's
// own length when that is 0.
int64_t kv_capacity(const model::Graph& graph, const model::Op& op, const StageBuffers& buffers);

}  // namespace megacut::executor
