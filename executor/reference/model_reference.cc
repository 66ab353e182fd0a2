#include "executor/reference/model_reference.h"

#include <cmath>

#include "executor/reference/op_reference.h"
#include "model/decoder.h"
#include "model/error.h"

namespace megacut::reference {
namespace {

using Weights = std::map<std::string, std::vector<float>>;

const std::vector<float>& weight(const Weights& weights, const std::string& name) {
  const auto it = weights.find(name);
  if (it == weights.end()) throw Error("reference: weight " + name + " is missing");
  return it->second;
}

std::vector<float> to_bf16(const std::vector<double>& values) { return round_bf16(values); }

std::vector<float> concat_rows(const std::vector<const std::vector<float>*>& parts) {
  std::vector<float> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// One forward pass of `tokens` (batch * seq_len ids) at positions past_len.., reading and
// extending the per-layer KV caches; returns the logits of each sequence's last row.
std::vector<float> forward(const model::DecoderConfig& c, const Weights& w,
                           std::vector<std::vector<float>>& caches, int64_t capacity,
                           const StageShape& stage, std::span<const int32_t> tokens) {
  const HeadShape heads{c.num_heads, c.num_kv_heads, c.head_dim};
  const int64_t hidden = c.hidden_size;
  const int64_t qkv_cols = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  const int64_t rows = stage.batch * stage.seq_len;
  RopeParams rope_params;
  rope_params.theta = c.rope_theta;
  rope_params.llama3 = c.rope_scaling.type == "llama3";
  rope_params.factor = c.rope_scaling.factor;
  rope_params.low_freq_factor = c.rope_scaling.low_freq_factor;
  rope_params.high_freq_factor = c.rope_scaling.high_freq_factor;
  rope_params.original_max_position = static_cast<double>(c.rope_scaling.original_max_position);

  // rmsnorm, then a linear over its output; where megacut fuses the two (a stage of few rows),
  // the norm's row scale multiplies the product instead (model/decoder.h), which rounds once.
  auto normed_linear = [&](const std::vector<float>& in, const std::vector<float>& scale,
                           const std::vector<float>& weights) {
    if (model::fuses_layer_ops(rows)) {
      return to_bf16(norm_linear(in, weights, scale, hidden, c.rms_norm_eps));
    }
    return to_bf16(linear(to_bf16(rmsnorm(in, hidden, scale, c.rms_norm_eps)), weights, hidden));
  };

  const std::vector<float>& table = weight(w, "model.embed_tokens.weight");
  std::vector<float> x = to_bf16(embedding(tokens, table, hidden));
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    const std::vector<float> wqkv = concat_rows({&weight(w, p + "self_attn.q_proj.weight"),
                                                 &weight(w, p + "self_attn.k_proj.weight"),
                                                 &weight(w, p + "self_attn.v_proj.weight")});
    const std::vector<float> qkv = normed_linear(x, weight(w, p + "input_layernorm.weight"), wqkv);
    std::vector<float> qk;
    int64_t qk_cols = qkv_cols;
    if (c.qk_norm) {
      qk = to_bf16(qk_norm(qkv, qkv_cols, heads, weight(w, p + "self_attn.q_norm.weight"),
                           weight(w, p + "self_attn.k_norm.weight"), c.rms_norm_eps));
      qk_cols = (c.num_heads + c.num_kv_heads) * c.head_dim;
    }
    const std::vector<float> rotated =
        to_bf16(rope(c.qk_norm ? qk : qkv, qk_cols, heads, stage, rope_params));
    const std::vector<float> new_kv = to_bf16(kv_append(rotated, qkv, heads));
    const int64_t kv_cols = 2 * c.num_kv_heads * c.head_dim;
    std::vector<float>& cache = caches[layer];
    for (int64_t t = 0; t < rows; ++t) {
      const int64_t seq = t / stage.seq_len;
      const int64_t pos = stage.past_len + t % stage.seq_len;
      std::copy_n(new_kv.begin() + t * kv_cols, kv_cols,
                  cache.begin() + (seq * capacity + pos) * kv_cols);
    }
    const std::vector<float> attn = to_bf16(attention(
        rotated, (c.num_heads + c.num_kv_heads) * c.head_dim, cache, capacity, heads, stage));
    const std::vector<float> o =
        to_bf16(linear(attn, weight(w, p + "self_attn.o_proj.weight"), c.num_heads * c.head_dim));
    const std::vector<float> x1 = to_bf16(residual_add(x, o));
    const std::vector<float> wgu =
        concat_rows({&weight(w, p + "mlp.gate_proj.weight"), &weight(w, p + "mlp.up_proj.weight")});
    const std::vector<float> gate_up =
        normed_linear(x1, weight(w, p + "post_attention_layernorm.weight"), wgu);
    const std::vector<float> m = to_bf16(silu_mul(gate_up, c.intermediate_size));
    const std::vector<float> d =
        to_bf16(linear(m, weight(w, p + "mlp.down_proj.weight"), c.intermediate_size));
    x = to_bf16(residual_add(x1, d));
  }
  const std::vector<float> last =
      to_bf16(rmsnorm(x, hidden, weight(w, "model.norm.weight"), c.rms_norm_eps, stage.seq_len));
  const std::vector<float>& head = c.tie_word_embeddings ? table : weight(w, "lm_head.weight");
  const std::vector<double> logits = linear(last, head, hidden);
  return std::vector<float>(logits.begin(), logits.end());
}

}  // namespace

GenerationLogits decoder_logits(const model::DecoderConfig& config, const Weights& weights,
                                int64_t batch, std::span<const int32_t> prompt,
                                std::span<const int32_t> decode_inputs) {
  if (batch <= 0 || prompt.empty() || prompt.size() % batch != 0 ||
      decode_inputs.size() % batch != 0) {
    throw Error("reference: prompt and decode inputs must hold whole batches");
  }
  const int64_t prompt_len = static_cast<int64_t>(prompt.size()) / batch;
  const int64_t steps = static_cast<int64_t>(decode_inputs.size()) / batch;
  const int64_t capacity = prompt_len + steps;
  std::vector<std::vector<float>> caches(
      config.num_layers,
      std::vector<float>(batch * capacity * 2 * config.num_kv_heads * config.head_dim, NAN));
  GenerationLogits out;
  out.prefill = forward(config, weights, caches, capacity, {batch, prompt_len, 0}, prompt);
  for (int64_t k = 0; k < steps; ++k) {
    const std::vector<float> step =
        forward(config, weights, caches, capacity, {batch, 1, prompt_len + k},
                decode_inputs.subspan(k * batch, batch));
    out.decode.insert(out.decode.end(), step.begin(), step.end());
  }
  return out;
}

}  // namespace megacut::reference
