// The built-in op kinds of decoder-only transformers (Llama, Qwen3, and the talkers and code
// predictors of TTS pipelines).
//
// Conventions shared by every kind here: activations are (tokens, features) with tokens
// sequence-major (row = sequence * seq_len + position); attrs "seq_len" (query rows per
// sequence in this stage) and "past_len" (cached positions before them) describe the stage.
// Costs count each byte a tile must move through device memory once: the floor a tile body
// can reach, not what a particular body does.
#include <algorithm>
#include <memory>
#include <vector>

#include "model/graph.h"
#include "model/op.h"
#include "model/op_kind_base.h"

namespace megacut::model {
namespace {

using kinds::kBf16;
using kinds::Kind;

Box all_cols(const Graph& graph, int tensor, int64_t row_begin, int64_t row_end) {
  return Box{row_begin, row_end, 0, cols_of(graph, tensor)};
}

// embedding: out[t, :] = table[ids[t], :]. Input 0: token ids (i32, a stage input).
class Embedding final : public Kind {
 public:
  Embedding() : Kind("embedding", {Access::one_to_one}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {Box{out.row_begin, out.row_end, 0, 1}};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    return {out.rows() * 4 + out.rows() * out.cols() * kBf16, out.rows() * out.cols() * kBf16, 0};
  }
};

// rmsnorm: y = x / rms(x) * w over the feature axis. With attr "select_stride" S > 1, output
// row r normalizes input row r*S + S-1: the last position of each sequence, all that the
// language-model head needs for the first token.
class RmsNorm final : public Kind {
 public:
  RmsNorm() : Kind("rmsnorm", {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    const int64_t stride = op.attrs.has("select_stride") ? op.attrs.i("select_stride") : 1;
    if (stride == 1) return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
    std::vector<Box> boxes;
    for (int64_t r = out.row_begin; r < out.row_end; ++r) {
      boxes.push_back(all_cols(graph, op.inputs[0], r * stride + stride - 1, r * stride + stride));
    }
    return boxes;
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {elements * kBf16 + out.cols() * kBf16, elements * kBf16, 4 * elements};
  }
};

// What a tile of y = x W^T moves and computes at the floor: its x rows, its W rows (k each,
// weight_rows of them an output feature) and its output; 2 FLOPs a weight element and row.
TileCost product_cost(const Box& out, int64_t k, int64_t out_bytes, int64_t weight_rows = 1) {
  const int64_t rows = weight_rows * out.cols();
  TileCost c{out.rows() * k * kBf16 + rows * k * kBf16, out.rows() * out.cols() * out_bytes,
             2 * out.rows() * rows * k};
  c.stream_bytes = rows * k * kBf16;
  return c;
}

// linear and lm-head: y = x W^T with W the row-wise concatenation of the op's weights
// (q/k/v or gate/up fused as one GEMM). Output dtype follows the output tensor.
class Linear final : public Kind {
 public:
  explicit Linear(std::string_view name) : Kind(name, {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t k = cols_of(graph, op.inputs[0]);
    return product_cost(out, k, dtype_bytes(graph.tensor(op.output).dtype));
  }
};

// norm-linear: y = rmsnorm(x) W^T in one pass over the weights (a decode step's rmsnorm and the
// linear after it): the weights are W's tensors, concatenated as linear's, then the norm's scale
// g (k). y[r, c] = rsqrt(mean(x[r]^2) + eps) * sum_k bf16(x[r, k] g[k]) W[c, k]: the row's scale
// comes after the sum, so each tile reads x once and needs no separate norm pass. Attr "eps".
// With attr "glu" = 1, W is gate (n, k) then up (n, k) for an output of n features, and the op
// writes silu(bf16(gate)) * bf16(up), the bits of the gate_up linear and the silu-mul after it:
// a tile reads the gate and the up rows of its features.
class NormLinear final : public Kind {
 public:
  NormLinear() : Kind("norm-linear", {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t k = cols_of(graph, op.inputs[0]);
    const bool glu = norm_linear_glu(op);
    TileCost c = product_cost(out, k, kBf16, glu ? 2 : 1);  // glu: a gate and an up row a feature
    c.bytes_read += k * kBf16;                              // the norm's scale
    c.flops += 3 * out.rows() * k;                          // the squares and the scaling of x
    if (glu) c.flops += 5 * out.rows() * out.cols();        // silu(gate) * up
    return c;
  }
};

// linear-residual: y = r + bf16(x W^T), input 1 the residual r (rows, n): a linear and the
// residual add after it, rounded as the two would round.
class LinearResidual final : public Kind {
 public:
  LinearResidual() : Kind("linear-residual", {Access::full_row, Access::one_to_one}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int input,
                               const Box& out) const override {
    if (input == 1) return {out};
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t k = cols_of(graph, op.inputs[0]);
    const int64_t elements = out.rows() * out.cols();
    TileCost c = product_cost(out, k, kBf16);
    c.bytes_read += elements * kBf16;  // the residual
    c.flops += elements;               // the add
    return c;
  }
};

// qk-norm (Qwen3): RMSNorm over each query and key head of the fused qkv output. One tile
// per head column block; q heads then k heads, as in qkv.
class QkNorm final : public Kind {
 public:
  QkNorm() : Kind("qk-norm", {Access::head_grouped}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {elements * kBf16 + out.cols() * kBf16, elements * kBf16, 4 * elements};
  }
};

// rope: rotary position embedding of the query and key heads (plain or Llama-3 scaled); the
// position of row r is past_len + r % seq_len.
class Rope final : public Kind {
 public:
  Rope() : Kind("rope", {Access::head_grouped}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {elements * kBf16, elements * kBf16, 6 * elements};
  }
};

// kv-append: writes the new keys (from rope's output) and values (from qkv) into the KV cache.
// Its output grid is (new tokens, 2 * kv_heads * head_dim): keys then values.
class KvAppend final : public Kind {
 public:
  KvAppend() : Kind("kv-append", {Access::head_grouped, Access::head_grouped}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph&, int input,
                               const Box& out) const override {
    const int64_t heads = op.attrs.i("heads");
    const int64_t kv_cols = op.attrs.i("kv_heads") * op.attrs.i("head_dim");
    const int64_t q_cols = heads * op.attrs.i("head_dim");
    // Output columns [0, kv_cols) are keys: rope output columns after the query heads.
    // Output columns [kv_cols, 2 kv_cols) are values: qkv columns after queries and keys.
    const Box keys{out.row_begin, out.row_end, std::max(out.col_begin, int64_t{0}),
                   std::min(out.col_end, kv_cols)};
    const Box values{out.row_begin, out.row_end, std::max(out.col_begin, kv_cols) - kv_cols,
                     std::min(out.col_end, 2 * kv_cols) - kv_cols};
    if (input == 0 && !keys.empty()) {
      return {Box{keys.row_begin, keys.row_end, q_cols + keys.col_begin, q_cols + keys.col_end}};
    }
    if (input == 1 && !values.empty()) {
      return {Box{values.row_begin, values.row_end, q_cols + kv_cols + values.col_begin,
                  q_cols + kv_cols + values.col_end}};
    }
    return {};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {elements * kBf16, elements * kBf16, 0};
  }
};

// attention: grouped-query attention of new queries over the cached and new keys, causal.
// A tile is (query rows of one sequence, the query heads of one KV head); in decode each
// tile's key range is split across the tile's warps and combined on chip. Input 0: rope
// output (queries); input 1: kv-append output (new keys and values). Attr "window" > 0 limits
// each query to the last `window` positions (sliding-window attention).
class Attention final : public Kind {
 public:
  Attention() : Kind("attention", {Access::head_grouped, Access::windowed}) {}

  std::vector<Box> input_boxes(const Op& op, const Graph&, int input,
                               const Box& out) const override {
    const int64_t head_dim = op.attrs.i("head_dim");
    const int64_t group = op.attrs.i("heads") / op.attrs.i("kv_heads");
    const int64_t kv_head = out.col_begin / (group * head_dim);
    if (input == 0) return {out};
    const int64_t kv_cols = op.attrs.i("kv_heads") * head_dim;
    const auto [first, last] = key_rows(op, out);
    return {Box{first, last, kv_head * head_dim, (kv_head + 1) * head_dim},
            Box{first, last, kv_cols + kv_head * head_dim, kv_cols + (kv_head + 1) * head_dim}};
  }

  TileCost tile_cost(const Op& op, const Graph&, const Box& out) const override {
    const int64_t head_dim = op.attrs.i("head_dim");
    const int64_t heads = out.cols() / head_dim;
    const int64_t seq_len = op.attrs.i("seq_len");
    const int64_t past = op.attrs.i("past_len");
    const int64_t window = op.attrs.has("window") ? op.attrs.i("window") : 0;
    int64_t key_reads = 0;  // (query, key) pairs the tile scores
    int64_t longest = 0;
    for (int64_t r = out.row_begin; r < out.row_end; ++r) {
      int64_t keys = past + r % seq_len + 1;
      if (window > 0) keys = std::min(keys, window);
      key_reads += keys;
      longest = std::max(longest, keys);
    }
    const int64_t elements = out.rows() * out.cols();
    return {elements * kBf16 + 2 * longest * head_dim * kBf16, elements * kBf16,
            4 * heads * head_dim * key_reads};
  }

 private:
  // Rows of the new keys (kv-append's output) that the tile's queries see.
  static std::pair<int64_t, int64_t> key_rows(const Op& op, const Box& out) {
    const int64_t seq_len = op.attrs.i("seq_len");
    const int64_t sequence_start = (out.row_begin / seq_len) * seq_len;
    int64_t first = sequence_start;
    if (op.attrs.has("window") && op.attrs.i("window") > 0) {
      // Query at row r sees new keys from r - window + 1 (earlier ones are cached).
      first = std::max(sequence_start, out.row_begin - op.attrs.i("window") + 1);
    }
    return {first, out.row_end};
  }
};

// qkv-attention (decode, one new row a sequence): attention straight from the qkv output. A
// tile (one row, one query head) takes its query head and its KV head's new key and value from
// qkv (input 0), applies qk-norm (weights q_norm and k_norm, where the op has them) and rope to
// the query and the key as those ops would, rounding where they round, and attends over the
// cached positions (input 1, the KV cache: a state tensor no op of the stage writes) and the new
// one; the tile of the KV head's first query head also writes the new key and value into the
// cache. rope, kv-append (and qk-norm) and attention in one op: two dependency hops fewer
// (three with qk-norm).
class QkvAttention final : public Kind {
 public:
  QkvAttention() : Kind("qkv-attention", {Access::head_grouped, Access::windowed}) {}

  std::vector<Box> input_boxes(const Op& op, const Graph&, int input,
                               const Box& out) const override {
    if (input != 0) return {};  // the cache: positions before the stage, written by none of its ops
    const int64_t head_dim = op.attrs.i("head_dim"), heads = op.attrs.i("heads");
    const int64_t kv_heads = op.attrs.i("kv_heads");
    const int64_t kv_head = out.col_begin / head_dim / (heads / kv_heads);
    const int64_t k = (heads + kv_head) * head_dim, v = (heads + kv_heads + kv_head) * head_dim;
    return {out, Box{out.row_begin, out.row_end, k, k + head_dim},
            Box{out.row_begin, out.row_end, v, v + head_dim}};
  }

  TileCost tile_cost(const Op& op, const Graph&, const Box& out) const override {
    const int64_t head_dim = op.attrs.i("head_dim");
    const int64_t heads = out.cols() / head_dim;
    const int64_t group = op.attrs.i("heads") / op.attrs.i("kv_heads");
    const int64_t window = op.attrs.has("window") ? op.attrs.i("window") : 0;
    int64_t keys = op.attrs.i("past_len") + 1;
    if (window > 0) keys = std::min(keys, window);
    const int64_t elements = out.rows() * out.cols();
    // The query, the new key and value, the cached keys and values (streamed); the output, and
    // the new key and value once per KV head (a share of them a query head).
    const int64_t cached = 2 * out.rows() * (keys - 1) * head_dim * kBf16;
    TileCost c{3 * elements * kBf16 + cached, elements * kBf16 + 2 * elements * kBf16 / group,
               4 * heads * head_dim * out.rows() * keys + 20 * elements};
    c.stream_bytes = cached;
    return c;
  }
};

// silu-mul: y = silu(gate) * up, with gate and up the two halves of the fused gate_up output.
class SiluMul final : public Kind {
 public:
  SiluMul() : Kind("silu-mul", {Access::one_to_one}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    const int64_t half = cols_of(graph, op.output);
    return {out, Box{out.row_begin, out.row_end, half + out.col_begin, half + out.col_end}};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {2 * elements * kBf16, elements * kBf16, 5 * elements};
  }
};

// residual-add: y = a + b.
class ResidualAdd final : public Kind {
 public:
  ResidualAdd() : Kind("residual-add", {Access::one_to_one, Access::one_to_one}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    const int64_t elements = out.rows() * out.cols();
    return {2 * elements * kBf16, elements * kBf16, elements};
  }
};

// The collectives of tensor parallel (attr "ranks": the GPUs a stage is sliced over). A tile
// moves its box between the ranks as a ring collective does (ring_link_bytes).
int64_t ring_bytes(const Op& op, int64_t box_bytes) {
  return ring_link_bytes(op.kind->name(), box_bytes, op.attrs.i("ranks"));
}

// all-reduce: y = the sum over the ranks of x. all-reduce-residual: y = r + that sum (input 1,
// r, is the same on every rank): a row-parallel linear's partial sums and the residual add
// after it.
class AllReduce final : public Kind {
 public:
  explicit AllReduce(bool residual)
      : Kind(residual ? "all-reduce-residual" : "all-reduce",
             residual ? std::vector<Access>{Access::one_to_one, Access::one_to_one}
                      : std::vector<Access>{Access::one_to_one}),
        residual_(residual) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int, const Box& out) const override {
    return {out};
  }
  TileCost tile_cost(const Op& op, const Graph&, const Box& out) const override {
    const int64_t bytes = out.rows() * out.cols() * kBf16;
    return {(residual_ ? 2 : 1) * bytes, bytes, out.rows() * out.cols(), ring_bytes(op, bytes)};
  }

 private:
  bool residual_;
};

// all-gather: y = the ranks' x side by side along the features (rank r's x in columns
// [r * cols(x), (r + 1) * cols(x))); a tile reads the rows of this rank's x.
class AllGather final : public Kind {
 public:
  AllGather() : Kind("all-gather", {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t element = dtype_bytes(graph.tensor(op.output).dtype);
    const int64_t bytes = out.rows() * out.cols() * element;
    return {bytes / op.attrs.i("ranks"), bytes, 0, ring_bytes(op, bytes)};
  }
};

// step-embedding and step-head: a code predictor's per-step embedding tables and heads,
// stacked along rows (steps * entries, hidden); input 1 is the step s (i32, one value, a stage
// input) that picks rows [s * entries, (s + 1) * entries). step-embedding: out[t, :] =
// table[s * entries + ids[t] % entries, :], input 0 the ids (i32; a talker's control codes, at
// or above entries, wrap). step-head: logits = h W_s^T (f32),
// input 0 the hidden states; only the chosen head's rows are read.
//
// embedding-shard: one rank's lookup in a table sliced by vocabulary under tensor parallel (attr
// "ranks"; the rank's `rows` consecutive ids of the full table, from rank * rows): out[t, :] =
// table[ids[t] - rank * rows, :] where that falls in the rank's rows, zeros elsewhere, so that an
// all-reduce of the ranks' outputs is the full lookup. Input 1 is the rank (i32, one value, a
// stage input): every rank runs the same graph.
//
// Both are lookups of ids (input 0) whose rows a one-value stage input (input 1) selects.
class SelectedLookup final : public Kind {
 public:
  explicit SelectedLookup(std::string_view name)
      : Kind(name, {Access::one_to_one, Access::full_row}) {}
  std::vector<Box> input_boxes(const Op&, const Graph&, int input, const Box& out) const override {
    if (input == 1) return {Box{0, 1, 0, 1}};
    return {Box{out.row_begin, out.row_end, 0, 1}};
  }
  TileCost tile_cost(const Op&, const Graph&, const Box& out) const override {
    return {4 + out.rows() * 4 + out.rows() * out.cols() * kBf16, out.rows() * out.cols() * kBf16,
            0};
  }
};

class StepHead final : public Kind {
 public:
  StepHead() : Kind("step-head", {Access::full_row, Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int input,
                               const Box& out) const override {
    if (input == 1) return {Box{0, 1, 0, 1}};
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const int64_t k = cols_of(graph, op.inputs[0]);
    TileCost c = product_cost(out, k, 4);
    c.bytes_read += 4;  // the step
    return c;
  }
};

// argmax: the index of the largest logit of each row (greedy next token).
class Argmax final : public Kind {
 public:
  Argmax() : Kind("argmax", {Access::full_row}) {}
  std::vector<Box> input_boxes(const Op& op, const Graph& graph, int,
                               const Box& out) const override {
    return {all_cols(graph, op.inputs[0], out.row_begin, out.row_end)};
  }
  TileCost tile_cost(const Op& op, const Graph& graph, const Box& out) const override {
    const Tensor& logits = graph.tensor(op.inputs[0]);
    const int64_t elements = out.rows() * logits.shape.back();
    return {elements * dtype_bytes(logits.dtype), out.rows() * 4, elements};
  }
};

}  // namespace

bool norm_linear_glu(const Op& op) { return op.attrs.has("glu") && op.attrs.i("glu") == 1; }

bool is_collective(const Op& op) {
  const std::string_view kind = op.kind->name();
  return kind == "all-reduce" || kind == "all-reduce-residual" || kind == "all-gather";
}

int64_t ring_link_bytes(std::string_view kind, int64_t message_bytes, int64_t ranks) {
  const int64_t passes = kind == "all-gather" ? 1 : 2;
  return passes * message_bytes * (ranks - 1) / ranks;
}

int64_t step_entries(const Graph& graph, const Op& op) {
  return op.attrs.has("entries") ? op.attrs.i("entries") : cols_of(graph, op.output);
}

void register_builtin_op_kinds(std::vector<std::unique_ptr<OpKind>>& kinds) {
  kinds.push_back(std::make_unique<Embedding>());
  kinds.push_back(std::make_unique<SelectedLookup>("embedding-shard"));
  kinds.push_back(std::make_unique<RmsNorm>());
  kinds.push_back(std::make_unique<Linear>("linear"));
  kinds.push_back(std::make_unique<QkNorm>());
  kinds.push_back(std::make_unique<Rope>());
  kinds.push_back(std::make_unique<KvAppend>());
  kinds.push_back(std::make_unique<Attention>());
  kinds.push_back(std::make_unique<QkvAttention>());
  kinds.push_back(std::make_unique<SiluMul>());
  kinds.push_back(std::make_unique<ResidualAdd>());
  kinds.push_back(std::make_unique<NormLinear>());
  kinds.push_back(std::make_unique<LinearResidual>());
  kinds.push_back(std::make_unique<Linear>("lm-head"));
  kinds.push_back(std::make_unique<Argmax>());
  kinds.push_back(std::make_unique<SelectedLookup>("step-embedding"));
  kinds.push_back(std::make_unique<StepHead>());
  kinds.push_back(std::make_unique<AllReduce>(false));
  kinds.push_back(std::make_unique<AllReduce>(true));
  kinds.push_back(std::make_unique<AllGather>());
}

}  // namespace megacut::model
