// The stage graphs of decoder-only transformers (Llama, Qwen3): embedding, the layer stack
// (build::StageBuilder::decoder_layer), then rmsnorm (last position of each sequence only),
// lm-head and argmax. Weights keep their Hugging Face names; fused linears list several
// weights, concatenated along the output features.
#include "model/decoder.h"

#include <string>

#include "model/error.h"
#include "model/stage_builder.h"
#include "model/tts.h"

namespace megacut::model {
namespace build {

// The fused kinds run on the weight-streaming body, which takes the tiles of few-row stages.
static_assert(kFusedLayerMaxRows <= kFewRows, "fused layer ops need weight-streaming tiles");

int StageBuilder::decoder_layer(const DecoderConfig& c, const std::string& weight_prefix,
                                const std::string& name_prefix, int layer, int x, int64_t window) {
  const std::string w = weight_prefix + "layers." + std::to_string(layer) + ".";
  const std::string n = name_prefix + "layers." + std::to_string(layer) + ".";
  // One rank's slice under tensor parallel (make_scenario checked that they divide).
  const int64_t hd = c.head_dim, nh = c.num_heads / tp_, nkv = c.num_kv_heads / tp_;
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size / tp_;
  const bool parallel = tp_ > 1;
  auto op = [&](const std::string& name, std::string_view kind, std::vector<int> inputs,
                std::vector<int> weights, int output, Tiling tiling, Attrs attrs = {}) {
    add(n + name, kind, std::move(inputs), std::move(weights), output, tiling, std::move(attrs),
        layer);
  };

  // With few rows (decode) the norms, the silu-mul and the residual adds run inside the linears
  // around them (norm-linear, linear-residual), and with one new row a sequence qk-norm, rope and
  // kv-append inside attention (qkv-attention): 5 ops a layer in place of 12 (13 with qk-norm),
  // each a kernel or a dependency hop fewer. Prefill keeps them apart for the tensor-core bodies.
  const bool fused = fuses_layer_ops(rows_);
  const Attrs eps{{"eps", c.rms_norm_eps}};
  // A linear whose input is `in` normalized by the norm weight `norm`: fused, or two ops.
  auto normed_linear = [&](const std::string& norm_name, const std::string& norm, int in,
                           const std::string& name, std::vector<int> weights, int output) {
    const Tiling tiling = linear_tiling(rows_, g_.tensor(output).shape.back());
    if (fused) {
      weights.push_back(weight(norm, {hidden}));
      op(name, "norm-linear", {in}, std::move(weights), output, tiling, eps);
      return;
    }
    const int normed = activation(n + norm_name, hidden);
    op(norm_name, "rmsnorm", {in}, {weight(norm, {hidden})}, normed, row_tiling(hidden, hidden),
       eps);
    op(name, "linear", {normed}, std::move(weights), output, tiling);
  };

  const int qkv = activation(n + "qkv", (nh + 2 * nkv) * hd);
  normed_linear("attn_norm", w + "input_layernorm.weight", x, "attn.qkv",
                {weight(w + "self_attn.q_proj.weight", {nh * hd, hidden}),
                 weight(w + "self_attn.k_proj.weight", {nkv * hd, hidden}),
                 weight(w + "self_attn.v_proj.weight", {nkv * hd, hidden})},
                qkv);

  const Attrs heads{{"heads", double(nh)}, {"kv_heads", double(nkv)}, {"head_dim", double(hd)}};
  const int cache = g_.add_tensor({n + "kv_cache",
                                   TensorRole::state,
                                   DType::bf16,
                                   {batch_, stage_.past_len + stage_.seq_len, 2 * nkv * hd}});
  const int attn = activation(n + "attn", nh * hd);
  Attrs attention_attrs = heads;
  if (window > 0) attention_attrs.set("window", double(window));
  std::vector<int> qk_norm_weights;
  if (c.qk_norm) {
    qk_norm_weights = {weight(w + "self_attn.q_norm.weight", {hd}),
                       weight(w + "self_attn.k_norm.weight", {hd})};
  }

  if (fused && stage_.seq_len == 1) {
    // One new row a sequence (decode): qk-norm, rope, kv-append and attention as one op that
    // reads qkv's output, on the attention tiles (one query head each).
    Attrs a = rope_attrs(c, attention_attrs);
    if (c.qk_norm) a.set("eps", c.rms_norm_eps);
    op("attn.attention", "qkv-attention", {qkv, cache}, qk_norm_weights, attn,
       attention_tiling(nh, nkv, hd), a);
  } else {
    const Tiling head_tiling = row_tiling((nh + nkv) * hd, hd, kHeadOpMinElements);
    int rope_in = qkv;
    if (c.qk_norm) {
      rope_in = activation(n + "qk_norm", (nh + nkv) * hd);
      Attrs a = heads;
      a.set("eps", c.rms_norm_eps);
      op("attn.qk_norm", "qk-norm", {qkv}, qk_norm_weights, rope_in, head_tiling, a);
    }
    const int rotated = activation(n + "rope", (nh + nkv) * hd);
    op("attn.rope", "rope", {rope_in}, {}, rotated, head_tiling, rope_attrs(c, heads));
    op("attn.kv_append", "kv-append", {rotated, qkv}, {}, cache,
       row_tiling(2 * nkv * hd, hd, kHeadOpMinElements), heads);
    op("attn.attention", "attention", {rotated, cache}, {}, attn, attention_tiling(nh, nkv, hd),
       attention_attrs);
  }

  const int o_weight = weight(w + "self_attn.o_proj.weight", {hidden, nh * hd});
  const int down_weight = weight(w + "mlp.down_proj.weight", {hidden, inter});
  const int x1 = activation(n + "attn_residual", hidden);
  // A row-parallel linear's partial sums, all-reduced over the ranks and added to `residual`.
  auto row_parallel = [&](const std::string& name, const std::string& out, int in, int matrix,
                          int residual, int output) {
    const int partial = activation(n + out, hidden);
    op(name, "linear", {in}, {matrix}, partial, linear_tiling(rows_, hidden));
    op(name + "_all_reduce", "all-reduce-residual", {partial, residual}, {}, output,
       elementwise_tiling(hidden), {{"ranks", double(tp_)}});
  };
  if (parallel) {
    row_parallel("attn.o", "attn_out", attn, o_weight, x, x1);
  } else if (fused) {
    op("attn.o", "linear-residual", {attn, x}, {o_weight}, x1, linear_tiling(rows_, hidden));
  } else {
    const int o = activation(n + "attn_out", hidden);
    op("attn.o", "linear", {attn}, {o_weight}, o, linear_tiling(rows_, hidden));
    op("attn.residual", "residual-add", {x, o}, {}, x1, elementwise_tiling(hidden));
  }

  auto gate_and_up = [&] {
    return std::vector<int>{weight(w + "mlp.gate_proj.weight", {inter, hidden}),
                            weight(w + "mlp.up_proj.weight", {inter, hidden})};
  };
  int x2 = -1;
  if (fused) {
    // silu(gate) * up straight from the norm-linear: a tile streams the gate and the up rows of
    // its features, as many weight rows as a tile of the unfused gate_up.
    const int m = activation(n + "mlp_act", inter);
    std::vector<int> weights = gate_and_up();
    weights.push_back(weight(w + "post_attention_layernorm.weight", {hidden}));
    Attrs glu = eps;
    glu.set("glu", 1);
    const Tiling t = linear_tiling(rows_, 2 * inter);
    op("mlp.gate_up", "norm-linear", {x1}, std::move(weights), m,
       {t.rows, inter, t.tile_rows, t.tile_cols / 2}, glu);
    x2 = activation(n + "mlp_residual", hidden);
    if (parallel) {
      row_parallel("mlp.down", "mlp_out", m, down_weight, x1, x2);
    } else {
      op("mlp.down", "linear-residual", {m, x1}, {down_weight}, x2, linear_tiling(rows_, hidden));
    }
  } else {
    const int gate_up = activation(n + "gate_up", 2 * inter);
    normed_linear("mlp_norm", w + "post_attention_layernorm.weight", x1, "mlp.gate_up",
                  gate_and_up(), gate_up);
    x2 = activation(n + "mlp_residual", hidden);
    const int m = activation(n + "mlp_act", inter);
    op("mlp.silu_mul", "silu-mul", {gate_up}, {}, m, elementwise_tiling(inter));
    if (parallel) {
      row_parallel("mlp.down", "mlp_out", m, down_weight, x1, x2);
    } else {
      const int d = activation(n + "mlp_out", hidden);
      op("mlp.down", "linear", {m}, {down_weight}, d, linear_tiling(rows_, hidden));
      op("mlp.residual", "residual-add", {x1, d}, {}, x2, elementwise_tiling(hidden));
    }
  }
  return x2;
}

Attrs StageBuilder::rope_attrs(const DecoderConfig& c, Attrs a) const {
  const RopeScaling& s = c.rope_scaling;
  a.set("rope_theta", c.rope_theta);
  a.set("rope_llama3", s.type == "llama3" ? 1 : 0);
  a.set("rope_factor", s.factor);
  a.set("rope_low_freq_factor", s.low_freq_factor);
  a.set("rope_high_freq_factor", s.high_freq_factor);
  a.set("rope_original_max_position", double(s.original_max_position));
  return a;
}

}  // namespace build

Graph build_decoder_stage(const DecoderConfig& c, const Stage& stage, int64_t batch, int64_t tp) {
  if (batch <= 0) throw Error("batch must be positive, got " + std::to_string(batch));
  if (tp < 1 || c.num_heads % tp != 0 || c.num_kv_heads % tp != 0 ||
      c.intermediate_size % tp != 0 || c.vocab_size % tp != 0) {
    throw Error("tensor-parallel degree " + std::to_string(tp) +
                " does not divide the heads, KV heads, intermediate size and vocabulary");
  }
  build::StageBuilder b(stage, batch, tp);
  // Tensor parallel: the embedding table and the head are sliced by vocabulary (each rank holds
  // vocab / tp rows; its lookup, embedding-shard, writes zeros for the ids of other ranks, told
  // its rank by the stage input tp_rank, and an all-reduce sums them; its head writes its share
  // of the logits and an all-gather joins them).
  const int64_t vocab = c.vocab_size / tp;
  const int ids = b.input("token_ids", DType::i32, {b.rows()});
  const int table = b.weight("model.embed_tokens.weight", {vocab, c.hidden_size});
  int x = b.activation(tp > 1 ? "embed_partial" : "embed", c.hidden_size);
  if (tp > 1) {
    const int rank = b.input("tp_rank", DType::i32, {1});
    b.add("embed", "embedding-shard", {ids, rank}, {table}, x,
          b.row_tiling(c.hidden_size, c.hidden_size), {{"ranks", double(tp)}});
  } else {
    b.add("embed", "embedding", {ids}, {table}, x, b.row_tiling(c.hidden_size, c.hidden_size));
  }
  if (tp > 1) {
    const int summed = b.activation("embed", c.hidden_size);
    b.add("embed_all_reduce", "all-reduce", {x}, {}, summed, b.elementwise_tiling(c.hidden_size),
          {{"ranks", double(tp)}});
    x = summed;
  }
  for (int layer = 0; layer < c.num_layers; ++layer) x = b.decoder_layer(c, "model.", "", layer, x);

  const int h = b.final_norm(c, "model.norm.weight", x);
  const int head =
      c.tie_word_embeddings ? table : b.weight("lm_head.weight", {vocab, c.hidden_size});
  b.head_and_argmax("lm_head", "lm-head", {h}, head, c.vocab_size);
  return b.finish();
}

Graph build_graph(const ModelSpec& model, const Scenario& scenario, std::string_view stage) {
  if (model.tts) {
    if (scenario.tp != 1) {
      throw Error(model.name + " is a TTS pipeline; tensor parallel slices LLMs only");
    }
    return build_tts_stage(model, scenario, stage);
  }
  return build_decoder_stage(model.decoder, scenario.stage(stage), scenario.batch, scenario.tp);
}

}  // namespace megacut::model
