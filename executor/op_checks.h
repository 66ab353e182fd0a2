// The can-implement column of the op-kind table (executor/op_kind_table.cuh): for each op kind,
// whether the tile bodies take an op of it (dtypes, shapes, attrs, tiling). Each returns "" where
// they do, else why not, naming the field and the value. Plain C++, like op_support.h.
#pragma once

#include <string>

#include "model/graph.h"

namespace megacut::executor::checks {

std::string embedding(const model::Graph& g, const model::Op& op);
std::string step_embedding(const model::Graph& g, const model::Op& op);
std::string rmsnorm(const model::Graph& g, const model::Op& op);
std::string linear(const model::Graph& g, const model::Op& op);
std::string lm_head(const model::Graph& g, const model::Op& op);
std::string step_head(const model::Graph& g, const model::Op& op);
std::string norm_linear(const model::Graph& g, const model::Op& op);
std::string linear_residual(const model::Graph& g, const model::Op& op);
std::string qk_norm(const model::Graph& g, const model::Op& op);
std::string rope(const model::Graph& g, const model::Op& op);
std::string kv_append(const model::Graph& g, const model::Op& op);
std::string attention(const model::Graph& g, const model::Op& op);
std::string qkv_attention(const model::Graph& g, const model::Op& op);
std::string silu_mul(const model::Graph& g, const model::Op& op);
std::string residual_add(const model::Graph& g, const model::Op& op);
std::string argmax(const model::Graph& g, const model::Op& op);
// conv1d and conv-transpose1d.
std::string conv(const model::Graph& g, const model::Op& op);
std::string codebook_sum(const model::Graph& g, const model::Op& op);
// snake-beta, leaky-relu, tanh, gelu and add-scaled.
std::string elementwise(const model::Graph& g, const model::Op& op);

}  // namespace megacut::executor::checks
