// A float64 interpreter of a stage graph: each op, in execution order, through its kind's
// reference in op_reference.h, reading its attrs and weights as the tile bodies do
// (executor/tile_layouts.cu). It checks what the graph builders wire (which tensor feeds which
// input, the attrs each op carries) as well as the kernels: a whole stage on the GPU against
// this, or a decoder's stages against model_reference.h, which is written from the
// architecture instead.
//
// Values follow the device: a bf16 output is rounded to bf16 as the GPU stores it, an f32 one
// (logits) to float, an i32 one (tokens) is exact. An op's weights are read as the device
// arena packs them (weights.h): a linear's weight tensors concatenated along output rows (q, k,
// v or gate, up), a convolution's kernel then its optional bias, qk-norm's q_norm then k_norm,
// snake-beta's alpha then beta. A KV cache (a state tensor, kv-append's output and attention's
// second input) starts as the caller's state; kv-append writes its rows past_len ..
// past_len + seq_len - 1 of each sequence, and attention reads the cache up to each query's
// position.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/graph.h"

namespace megacut::reference {

// Values by tensor name, row-major in the tensor's shape.
using TensorValues = std::map<std::string, std::vector<double>, std::less<>>;

// Evaluates `graph` (finalized) in float64 and returns the values of every tensor that is not a
// weight: inputs and state as given (rounded to their dtype), activations as computed, each
// KV cache after the stage appended to it.
//
//   weights  Hugging Face name -> values (bf16 widened to float), every weight the graph names
//   inputs   every input tensor's values: token ids and codes as exact integers, bf16 inputs
//            (frames) rounded to bf16 on the way in
//   state    initial KV caches by tensor name, (batch, capacity, 2 * kv_heads * head_dim); a
//            cache left out starts as NaN everywhere, which only a stage with past_len 0 may
//            leave unread
//
// Throws megacut::Error naming the op and its kind for a kind with no reference or attrs,
// weights or inputs that do not fit it, and naming the tensor for a missing or misshapen
// weight, input or state, or two non-weight tensors sharing a name.
TensorValues evaluate_graph(const model::Graph& graph,
                            const std::map<std::string, std::vector<float>>& weights,
                            const TensorValues& inputs, const TensorValues& state = {});

// One rank's graph of tensor parallel (model::build_graph with Scenario::tp = the ranks given),
// evaluated for every rank at once, op by op: each rank with its own weights (its slices,
// executor::HostWeights::rank), inputs (its tp_rank among them) and state (KV caches of its KV
// heads; empty for none), and each collective over the ranks' values (all-reduce: their sum in
// float64; all-gather: rank r's columns r-th). Returns each rank's values as evaluate_graph
// does. evaluate_graph refuses a collective, naming the op.
std::vector<TensorValues> evaluate_ranks(
    const model::Graph& graph, std::span<const std::map<std::string, std::vector<float>>> weights,
    std::span<const TensorValues> inputs, std::span<const TensorValues> state = {});

}  // namespace megacut::reference
