// What the stage builders (decoder.cc, tts.cc) share: a stage graph under construction with
// its tensor helpers, the tilings, and one Llama/Qwen3-shaped transformer layer. Internal to
// model/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/graph.h"
#include "model/scenario.h"

namespace megacut::model::build {

// Tile sizes. Rows are tokens (or time steps): a stage with few rows (decode) keeps them in
// one tile and cuts features finely, so a matrix-vector product spreads its weights over many
// SMs; a stage with many rows (prefill) uses square tiles that suit tensor cores.
inline constexpr int64_t kFewRows = 64;
inline constexpr int64_t kGemvCols = 16;
inline constexpr int64_t kGemvTargetTiles = 96;
inline constexpr int64_t kGemmTileRows = 128;
inline constexpr int64_t kGemmMaxTileCols = 128;
inline constexpr int64_t kGemmTargetTiles = 96;
inline constexpr int64_t kRowOpTargetTiles = 128;
inline constexpr int64_t kElementwiseCols = 512;
inline constexpr int64_t kElementwiseMinElements = 8192;
inline constexpr int64_t kHeadOpMinElements = 4096;
inline constexpr int64_t kAttentionQueryRows = 64;
inline constexpr int64_t kAttentionTileQueries = 128;

inline int64_t row_op_rows(int64_t rows) {
  return (rows + kRowOpTargetTiles - 1) / kRowOpTargetTiles;
}

// The widest of 128, 64, 32, 16 columns that still cuts `cols` into `target` tiles over
// `row_tiles` row tiles (16 where none does).
inline int64_t widest_tile_cols(int64_t row_tiles, int64_t cols, int64_t target) {
  int64_t tile_cols = kGemmMaxTileCols;
  while (tile_cols > kGemvCols && row_tiles * ((cols + tile_cols - 1) / tile_cols) < target) {
    tile_cols /= 2;
  }
  return tile_cols;
}

// With few rows (decode), one row tile and the widest columns that still give kGemvTargetTiles
// tiles, at most one an SM: a task streams as many weight rows as it can while each SM has one,
// and few tasks a CTA mean few per-task costs (the dependency check, the final reduction); one
// round of 96 wide tasks (Llama-3.2-1B's qkv, Qwen3-0.6B's gate_up) beats two rounds of tasks
// half as wide on the H200 (reports/h200/bench-compositions.md). With
// many rows, 128-row tiles, the widest that still give kGemmTargetTiles tiles: a short prompt at
// batch 1 has one row tile, and wide tiles would leave most SMs idle; narrow ones re-read x once
// per column tile. Measured on the H200 (reports/h200/bench-ops.txt, every width of every Llama
// prefill linear at 128, 1024 and 4096 rows), a target of 96 picks the fastest width of each.
inline Tiling linear_tiling(int64_t rows, int64_t cols) {
  if (rows <= kFewRows) return {rows, cols, rows, widest_tile_cols(1, cols, kGemvTargetTiles)};
  const int64_t row_tiles = (rows + kGemmTileRows - 1) / kGemmTileRows;
  return {rows, cols, kGemmTileRows, widest_tile_cols(row_tiles, cols, kGemmTargetTiles)};
}

// Query rows per attention tile: the largest divisor of seq_len (so no tile spans two
// sequences) up to 64 and up to 128 query vectors, rows times the `group` query heads that
// share a KV head. The prefill body gives each of its eight warps 16 query vectors per pass
// over the keys: 128 make one pass, and a tile of more would stream the keys again where
// another tile could run beside it.
inline int64_t attention_rows(int64_t seq_len, int64_t group) {
  const int64_t most =
      std::max<int64_t>(1, std::min(kAttentionQueryRows, kAttentionTileQueries / group));
  for (int64_t r = std::min(seq_len, most); r > 1; --r) {
    if (seq_len % r == 0) return r;
  }
  return 1;
}

// Attention tiles: attention_rows query rows and the query heads of one KV head, which then
// read their keys once; tiles of one row (decode, or a prompt length with no divisor that fits)
// take one query head each, so that a step spreads over as many SMs as the model has heads.
inline Tiling attention_tiling(int64_t rows, int64_t seq_len, int64_t heads, int64_t kv_heads,
                               int64_t head_dim) {
  const int64_t group = heads / kv_heads;
  const int64_t tile_rows = attention_rows(seq_len, group);
  if (tile_rows == 1) return {rows, heads * head_dim, 1, head_dim};
  return {rows, heads * head_dim, tile_rows, group * head_dim};
}

class StageBuilder {
 public:
  // `tp` > 1: one rank's graph of a tensor-parallel stage (decoder_layer says how it slices).
  StageBuilder(const Stage& stage, int64_t batch, int64_t tp = 1)
      : stage_(stage),
        batch_(batch),
        rows_(batch * stage.seq_len),
        tp_(tp),
        g_(stage.name, batch) {}

  Graph finish() {
    g_.finalize();
    return std::move(g_);
  }

  const Stage& stage() const { return stage_; }
  int64_t batch() const { return batch_; }
  int64_t tp() const { return tp_; }
  int64_t rows() const { return rows_; }  // batch x the stage's rows per sequence

  int weight(const std::string& name, std::vector<int64_t> shape) {
    return g_.add_tensor({name, TensorRole::weight, DType::bf16, std::move(shape)});
  }
  int input(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    return g_.add_tensor({name, TensorRole::input, dtype, std::move(shape)});
  }
  int activation(const std::string& name, int64_t cols) { return activation(name, rows_, cols); }
  int activation(const std::string& name, int64_t rows, int64_t cols, DType dtype = DType::bf16) {
    return g_.add_tensor({name, TensorRole::activation, dtype, {rows, cols}});
  }

  // Row-wise ops over `rows` rows: about kRowOpTargetTiles row blocks, but at least
  // `min_elements` per tile so a task is worth scheduling.
  Tiling row_tiling_over(int64_t rows, int64_t cols, int64_t tile_cols,
                         int64_t min_elements = 0) const {
    const int64_t tile_rows =
        std::max(row_op_rows(rows), (min_elements + tile_cols - 1) / tile_cols);
    return {rows, cols, std::min(tile_rows, rows), tile_cols};
  }
  Tiling row_tiling(int64_t cols, int64_t tile_cols, int64_t min_elements = 0) const {
    return row_tiling_over(rows_, cols, tile_cols, min_elements);
  }
  Tiling elementwise_tiling(int64_t rows, int64_t cols) const {
    return row_tiling_over(rows, cols, std::min(cols, kElementwiseCols), kElementwiseMinElements);
  }
  Tiling elementwise_tiling(int64_t cols) const { return elementwise_tiling(rows_, cols); }

  Tiling attention_tiling(int64_t heads, int64_t kv_heads, int64_t head_dim) const {
    return build::attention_tiling(rows_, stage_.seq_len, heads, kv_heads, head_dim);
  }

  // Adds an op; every op carries the stage's seq_len and past_len.
  void add(const std::string& name, std::string_view kind, std::vector<int> inputs,
           std::vector<int> weights, int output, Tiling tiling, Attrs attrs = {}, int layer = -1) {
    attrs.set("seq_len", double(stage_.seq_len));
    attrs.set("past_len", double(stage_.past_len));
    g_.add_op(name, kind, std::move(inputs), std::move(weights), output, tiling, std::move(attrs),
              layer);
  }

  // One decoder layer over the stage's rows, ops named `name_prefix` + "layers.N." and
  // weights `weight_prefix` + "layers.N." with their Hugging Face names:
  //
  //   h   = rmsnorm(x)                 qkv = linear(h)  [q, k, v heads fused]
  //   qk  = qk-norm(qkv)  (Qwen3)      r   = rope(qk or qkv)  [q, k heads]
  //   kv  = kv-append(r, qkv)          a   = attention(r, kv)  [sliding if window > 0]
  //   o   = linear(a)                  x1  = residual-add(x, o)
  //   h2  = rmsnorm(x1)                gu  = linear(h2)  [gate, up fused]
  //   m   = silu-mul(gu)               d   = linear(m)
  //   x2  = residual-add(x1, d)
  //
  // Tensor parallel (tp > 1), Megatron style: qkv and gate_up are column-parallel (each rank
  // holds heads / tp query heads, kv_heads / tp KV heads and intermediate / tp features), o and
  // down row-parallel, each followed by an all-reduce of its partial sums that also adds the
  // residual (residual-add's place: no linear-residual fusion, the residual is added once).
  //
  // Returns x2.
  int decoder_layer(const DecoderConfig& c, const std::string& weight_prefix,
                    const std::string& name_prefix, int layer, int x, int64_t window = 0);

  // The final rmsnorm of a layer stack, of each sequence's last position only (all a head
  // needs for the next token or frame): (batch, hidden).
  int final_norm(const DecoderConfig& c, const std::string& weight, int x) {
    const int h = activation("final_norm", batch_, c.hidden_size);
    add("final_norm", "rmsnorm", {x}, {this->weight(weight, {c.hidden_size})}, h,
        Tiling{batch_, c.hidden_size, row_op_rows(batch_), c.hidden_size},
        {{"eps", c.rms_norm_eps}, {"select_stride", double(stage_.seq_len)}});
    return h;
  }

  // A head `name` of kind `kind` (lm-head, step-head) over the normed rows into f32 logits,
  // and the greedy pick of the next token.
  // With tensor parallel, the head writes the rank's vocab / tp logits and an all-gather joins
  // the ranks'.
  void head_and_argmax(const std::string& name, std::string_view kind, std::vector<int> inputs,
                       int weight, int64_t vocab) {
    const int logits = activation("logits", batch_, vocab, DType::f32);
    if (tp_ > 1) {
      const int share = activation("logits_share", batch_, vocab / tp_, DType::f32);
      add(name, kind, std::move(inputs), {weight}, share, linear_tiling(batch_, vocab / tp_));
      add(name + "_all_gather", "all-gather", {share}, {}, logits,
          row_tiling_over(batch_, vocab, vocab), {{"ranks", double(tp_)}});
    } else {
      add(name, kind, std::move(inputs), {weight}, logits, linear_tiling(batch_, vocab));
    }
    const int next = activation("next_token", batch_, 1, DType::i32);
    add("argmax", "argmax", {logits}, {}, next, Tiling{batch_, 1, 1, 1});
  }

 private:
  Attrs rope_attrs(const DecoderConfig& c, Attrs a) const;

  const Stage& stage_;
  int64_t batch_;
  int64_t rows_;
  int64_t tp_;
  Graph g_;
};

}  // namespace megacut::model::build
