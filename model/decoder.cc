// One layer of a Llama/Qwen3 decoder, as ops:
//
//   h   = rmsnorm(x)                 qkv = linear(h)  [q, k, v heads fused]
//   qk  = qk-norm(qkv)  (Qwen3)      r   = rope(qk or qkv)  [q, k heads]
//   kv  = kv-append(r, qkv)          a   = attention(r, kv)
//   o   = linear(a)                  x1  = residual-add(x, o)
//   h2  = rmsnorm(x1)                gu  = linear(h2)  [gate, up fused]
//   m   = silu-mul(gu)               d   = linear(m)
//   x2  = residual-add(x1, d)
//
// framed by embedding before the stack and rmsnorm (last position of each sequence only),
// lm-head and argmax after it. Weights keep their Hugging Face names; fused linears list
// several weights, concatenated along the output features.
#include "model/decoder.h"

#include <algorithm>
#include <string>

#include "model/error.h"

namespace megacut::model {
namespace {

// Tile sizes. Rows are tokens: a stage with few rows (decode) keeps them in one tile and cuts
// features finely, so a matrix-vector product spreads its weights over many SMs; a stage with
// many rows (prefill) uses square tiles that suit tensor cores.
constexpr int64_t kFewRows = 64;
constexpr int64_t kGemvCols = 16;
constexpr int64_t kLmHeadGemvCols = 64;
constexpr int64_t kGemmTileRows = 128;
constexpr int64_t kGemmMaxTileCols = 128;
constexpr int64_t kGemmTargetTiles = 256;
constexpr int64_t kRowOpTargetTiles = 128;
constexpr int64_t kElementwiseCols = 512;
constexpr int64_t kElementwiseMinElements = 8192;
constexpr int64_t kHeadOpMinElements = 4096;
constexpr int64_t kAttentionQueryRows = 64;

int64_t row_op_rows(int64_t rows) { return (rows + kRowOpTargetTiles - 1) / kRowOpTargetTiles; }

// With many rows, 128-row tiles whose width is the widest of 128, 64, 32, 16 that still gives
// kGemmTargetTiles tiles: a short prompt at batch 1 has one row tile, and wide tiles would
// leave most SMs idle.
Tiling linear_tiling(int64_t rows, int64_t cols, bool lm_head) {
  if (rows <= kFewRows) return {rows, cols, rows, lm_head ? kLmHeadGemvCols : kGemvCols};
  const int64_t row_tiles = (rows + kGemmTileRows - 1) / kGemmTileRows;
  int64_t tile_cols = kGemmMaxTileCols;
  while (tile_cols > kGemvCols &&
         row_tiles * ((cols + tile_cols - 1) / tile_cols) < kGemmTargetTiles) {
    tile_cols /= 2;
  }
  return {rows, cols, kGemmTileRows, tile_cols};
}

// Query rows per attention tile: the largest divisor of seq_len up to 64, so no tile spans
// two sequences.
int64_t attention_rows(int64_t seq_len) {
  for (int64_t r = std::min(seq_len, kAttentionQueryRows); r > 1; --r) {
    if (seq_len % r == 0) return r;
  }
  return 1;
}

class DecoderBuilder {
 public:
  DecoderBuilder(const DecoderConfig& c, const Stage& stage, int64_t batch)
      : c_(c), stage_(stage), batch_(batch), rows_(batch * stage.seq_len), g_(stage.name, batch) {}

  Graph build() {
    const int ids = g_.add_tensor({"token_ids", TensorRole::input, DType::i32, {rows_}});
    const int table = weight("model.embed_tokens.weight", {c_.vocab_size, c_.hidden_size});
    int x = activation("embed", c_.hidden_size);
    add("embed", "embedding", {ids}, {table}, x, row_tiling(c_.hidden_size, c_.hidden_size));
    for (int layer = 0; layer < c_.num_layers; ++layer) x = add_layer(layer, x);

    const int final_norm = weight("model.norm.weight", {c_.hidden_size});
    const int h = g_.add_tensor(
        {"final_norm", TensorRole::activation, DType::bf16, {batch_, c_.hidden_size}});
    Attrs norm_attrs{{"eps", c_.rms_norm_eps}, {"select_stride", double(stage_.seq_len)}};
    add("final_norm", "rmsnorm", {x}, {final_norm}, h,
        Tiling{batch_, c_.hidden_size, row_op_rows(batch_), c_.hidden_size}, norm_attrs);
    const int head =
        c_.tie_word_embeddings ? table : weight("lm_head.weight", {c_.vocab_size, c_.hidden_size});
    const int logits =
        g_.add_tensor({"logits", TensorRole::activation, DType::f32, {batch_, c_.vocab_size}});
    add("lm_head", "lm-head", {h}, {head}, logits, linear_tiling(batch_, c_.vocab_size, true));
    const int next = g_.add_tensor({"next_token", TensorRole::activation, DType::i32, {batch_, 1}});
    add("argmax", "argmax", {logits}, {}, next, Tiling{batch_, 1, 1, 1});
    g_.finalize();
    return std::move(g_);
  }

 private:
  int add_layer(int layer, int x) {
    const std::string w = "model.layers." + std::to_string(layer) + ".";
    const std::string n = "layers." + std::to_string(layer) + ".";
    const int64_t hd = c_.head_dim, nh = c_.num_heads, nkv = c_.num_kv_heads;
    const int64_t hidden = c_.hidden_size, inter = c_.intermediate_size;
    layer_ = layer;

    const int h = activation(n + "attn_norm", hidden);
    add(n + "attn_norm", "rmsnorm", {x}, {weight(w + "input_layernorm.weight", {hidden})}, h,
        row_tiling(hidden, hidden), {{"eps", c_.rms_norm_eps}});

    const int qkv = activation(n + "qkv", (nh + 2 * nkv) * hd);
    add(n + "attn.qkv", "linear", {h},
        {weight(w + "self_attn.q_proj.weight", {nh * hd, hidden}),
         weight(w + "self_attn.k_proj.weight", {nkv * hd, hidden}),
         weight(w + "self_attn.v_proj.weight", {nkv * hd, hidden})},
        qkv, linear_tiling(rows_, (nh + 2 * nkv) * hd, false));

    const Attrs heads{{"heads", double(nh)}, {"kv_heads", double(nkv)}, {"head_dim", double(hd)}};
    int rope_in = qkv;
    if (c_.qk_norm) {
      rope_in = activation(n + "qk_norm", (nh + nkv) * hd);
      Attrs a = heads;
      a.set("eps", c_.rms_norm_eps);
      add(n + "attn.qk_norm", "qk-norm", {qkv},
          {weight(w + "self_attn.q_norm.weight", {hd}),
           weight(w + "self_attn.k_norm.weight", {hd})},
          rope_in, head_tiling((nh + nkv) * hd), a);
    }
    const int rotated = activation(n + "rope", (nh + nkv) * hd);
    add(n + "attn.rope", "rope", {rope_in}, {}, rotated, head_tiling((nh + nkv) * hd),
        rope_attrs(heads));

    const int cache = g_.add_tensor({n + "kv_cache",
                                     TensorRole::state,
                                     DType::bf16,
                                     {batch_, stage_.past_len + stage_.seq_len, 2 * nkv * hd}});
    add(n + "attn.kv_append", "kv-append", {rotated, qkv}, {}, cache, head_tiling(2 * nkv * hd),
        heads);

    const int attn = activation(n + "attn", nh * hd);
    const int64_t q_rows = attention_rows(stage_.seq_len);
    add(n + "attn.attention", "attention", {rotated, cache}, {}, attn,
        Tiling{rows_, nh * hd, q_rows, (nh / nkv) * hd}, heads);

    const int o = activation(n + "attn_out", hidden);
    add(n + "attn.o", "linear", {attn}, {weight(w + "self_attn.o_proj.weight", {hidden, nh * hd})},
        o, linear_tiling(rows_, hidden, false));
    const int x1 = activation(n + "attn_residual", hidden);
    add(n + "attn.residual", "residual-add", {x, o}, {}, x1, elementwise_tiling(hidden));

    const int h2 = activation(n + "mlp_norm", hidden);
    add(n + "mlp_norm", "rmsnorm", {x1}, {weight(w + "post_attention_layernorm.weight", {hidden})},
        h2, row_tiling(hidden, hidden), {{"eps", c_.rms_norm_eps}});
    const int gate_up = activation(n + "gate_up", 2 * inter);
    add(n + "mlp.gate_up", "linear", {h2},
        {weight(w + "mlp.gate_proj.weight", {inter, hidden}),
         weight(w + "mlp.up_proj.weight", {inter, hidden})},
        gate_up, linear_tiling(rows_, 2 * inter, false));
    const int m = activation(n + "mlp_act", inter);
    add(n + "mlp.silu_mul", "silu-mul", {gate_up}, {}, m, elementwise_tiling(inter));
    const int d = activation(n + "mlp_out", hidden);
    add(n + "mlp.down", "linear", {m}, {weight(w + "mlp.down_proj.weight", {hidden, inter})}, d,
        linear_tiling(rows_, hidden, false));
    const int x2 = activation(n + "mlp_residual", hidden);
    add(n + "mlp.residual", "residual-add", {x1, d}, {}, x2, elementwise_tiling(hidden));
    return x2;
  }

  Attrs rope_attrs(Attrs a) const {
    const RopeScaling& s = c_.rope_scaling;
    a.set("rope_theta", c_.rope_theta);
    a.set("rope_llama3", s.type == "llama3" ? 1 : 0);
    a.set("rope_factor", s.factor);
    a.set("rope_low_freq_factor", s.low_freq_factor);
    a.set("rope_high_freq_factor", s.high_freq_factor);
    a.set("rope_original_max_position", double(s.original_max_position));
    return a;
  }

  int weight(const std::string& name, std::vector<int64_t> shape) {
    return g_.add_tensor({name, TensorRole::weight, DType::bf16, std::move(shape)});
  }

  int activation(const std::string& name, int64_t cols) {
    return g_.add_tensor({name, TensorRole::activation, DType::bf16, {rows_, cols}});
  }

  // Row-wise ops: about kRowOpTargetTiles row blocks, but at least `min_elements` per tile so
  // a task is worth scheduling.
  Tiling row_tiling(int64_t cols, int64_t tile_cols, int64_t min_elements = 0) const {
    const int64_t rows = std::max(row_op_rows(rows_), (min_elements + tile_cols - 1) / tile_cols);
    return {rows_, cols, std::min(rows, rows_), tile_cols};
  }

  Tiling head_tiling(int64_t cols) const {
    return row_tiling(cols, c_.head_dim, kHeadOpMinElements);
  }

  Tiling elementwise_tiling(int64_t cols) const {
    return row_tiling(cols, std::min(cols, kElementwiseCols), kElementwiseMinElements);
  }

  void add(const std::string& name, std::string_view kind, std::vector<int> inputs,
           std::vector<int> weights, int output, Tiling tiling, Attrs attrs = {}) {
    attrs.set("seq_len", double(stage_.seq_len));
    attrs.set("past_len", double(stage_.past_len));
    g_.add_op(name, kind, std::move(inputs), std::move(weights), output, tiling, std::move(attrs),
              name.starts_with("layers.") ? layer_ : -1);
  }

  const DecoderConfig& c_;
  const Stage& stage_;
  int64_t batch_;
  int64_t rows_;
  int layer_ = -1;
  Graph g_;
};

}  // namespace

Graph build_decoder_stage(const DecoderConfig& config, const Stage& stage, int64_t batch) {
  if (batch <= 0) throw Error("batch must be positive, got " + std::to_string(batch));
  return DecoderBuilder(config, stage, batch).build();
}

Graph build_graph(const ModelSpec& model, const Scenario& scenario, std::string_view stage) {
  return build_decoder_stage(model.decoder, scenario.stage(stage), scenario.batch);
}

}  // namespace megacut::model
