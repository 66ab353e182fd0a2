// Builders of stage graphs for decoder-only transformers (Llama, Qwen3), and the dispatch from
// a model to its builder.
#pragma once

#include <string_view>

#include "model/config.h"
#include "model/graph.h"
#include "model/scenario.h"

namespace megacut::model {

// Whether a stage of `rows` rows (batch x its rows per sequence) runs each layer's norms, silu-mul
// and residual adds inside the linears around them (norm-linear, linear-residual; model/op.h):
// stages few enough rows for the weight-streaming body (a decode step, a short prompt).
inline constexpr int64_t kFusedLayerMaxRows = 64;
inline bool fuses_layer_ops(int64_t rows) { return rows <= kFusedLayerMaxRows; }

// The finalized graph of one stage of a decoder-only transformer at one batch size: with `tp` >
// 1, one rank's graph of the stage sliced over tp GPUs (build::StageBuilder::decoder_layer).
Graph build_decoder_stage(const DecoderConfig& config, const Stage& stage, int64_t batch,
                          int64_t tp = 1);

// The finalized graph of stage `stage` of `scenario` for `model`.
Graph build_graph(const ModelSpec& model, const Scenario& scenario, std::string_view stage);

}  // namespace megacut::model
