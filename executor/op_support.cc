#include "executor/op_support.h"

#include <string>
#include <string_view>
#include <vector>

#include "executor/op_checks.h"
#include "model/error.h"
#include "model/text.h"

namespace megacut::executor {
namespace {

using model::attr_int;
using model::cols_of;
using model::DType;
using model::Graph;
using model::Op;
using model::str;
using model::Tensor;

bool is_pow2_width(int64_t c) { return c == 16 || c == 32 || c == 64 || c == 128; }

// Each check returns an empty string when the op is supported, else why not.
std::string check_dtypes(const Graph& g, const Op& op, std::initializer_list<DType> inputs,
                         DType output) {
  int i = 0;
  for (DType want : inputs) {
    const Tensor& t = g.tensor(op.inputs.at(i++));
    if (t.dtype != want) {
      return "input '" + t.name + "' is " + std::string(model::dtype_name(t.dtype)) +
             ", the tile body reads " + std::string(model::dtype_name(want));
    }
  }
  const Tensor& out = g.tensor(op.output);
  if (out.dtype != output) {
    return "output '" + out.name + "' is " + std::string(model::dtype_name(out.dtype)) +
           ", the tile body writes " + std::string(model::dtype_name(output));
  }
  return {};
}

std::string check_multiple(const char* what, int64_t value, int64_t of) {
  if (value % of == 0) return {};
  return what + std::string(" = ") + str(value) + " is not a multiple of " + str(of);
}

std::string check_heads(const Op& op) {
  const int64_t heads = op.attrs.i("heads"), kv_heads = op.attrs.i("kv_heads");
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0) {
    return "heads = " + str(heads) + " is not a positive multiple of kv_heads = " + str(kv_heads);
  }
  return {};
}

std::string first_failure(std::initializer_list<std::string> checks) {
  for (const std::string& c : checks) {
    if (!c.empty()) return c;
  }
  return {};
}

using model::shape_text;

std::string check_shape(const Tensor& t, const std::vector<int64_t>& want) {
  if (t.shape == want) return {};
  return "'" + t.name + "' has shape " + shape_text(t.shape) + ", expected " + shape_text(want);
}

std::string check_positive(const char* what, int64_t value) {
  if (value > 0) return {};
  return what + std::string(" = ") + str(value) + " is not positive";
}

int64_t rows_of(const Graph& g, int tensor) {
  const Tensor& t = g.tensor(tensor);
  return t.shape.empty() || t.shape.back() == 0 ? 0 : t.elements() / t.shape.back();
}

// step-embedding and step-head: the step is one value, the weights whole steps of entries rows
// as wide as the output (tables) or the input (heads), and a head writes entries logits.
std::string why_not_step(const Graph& g, const Op& op) {
  const bool head = op.kind->name() == "step-head";
  if (op.inputs.size() != 2) {
    return "has " + str(static_cast<int64_t>(op.inputs.size())) +
           " inputs, expected two (the step second)";
  }
  const Tensor& step = g.tensor(op.inputs[1]);
  if (step.elements() != 1) {
    return "step '" + step.name + "' has shape " + shape_text(step.shape) + ", expected one value";
  }
  if (op.weights.size() != 1) {
    return "has " + str(static_cast<int64_t>(op.weights.size())) +
           " weights, expected the stacked " + (head ? "heads" : "tables");
  }
  const Tensor& w = g.tensor(op.weights[0]);
  const int64_t entries = model::step_entries(g, op);
  const int64_t width = cols_of(g, head ? op.inputs[0] : op.output);
  if (entries <= 0 || w.shape.size() != 2 || w.shape[0] == 0 || w.shape[0] % entries != 0 ||
      w.shape[1] != width) {
    return "'" + w.name + "' has shape " + shape_text(w.shape) + ", expected (steps * " +
           str(entries) + ", " + str(width) + ")";
  }
  if (head && cols_of(g, op.output) != entries) {
    return "output has " + str(cols_of(g, op.output)) + " columns, entries = " + str(entries);
  }
  return {};
}

// embedding and step-embedding: the row lookup, given its dtype check.
std::string lookup(const Graph& g, const Op& op, std::string dtypes) {
  const model::Tiling& t = op.tiling;
  return first_failure({std::move(dtypes), check_multiple("hidden", t.cols, 8),
                        check_multiple("tile_cols", t.tile_cols, 8)});
}

// linear, lm-head and step-head: the weight-streaming body up to 64 rows a tile, the tensor-core
// GEMM at 128.
std::string plain_linear(const Graph& g, const Op& op, DType out, bool step) {
  const model::Tiling& t = op.tiling;
  if (!is_pow2_width(t.tile_cols)) {
    return "tile_cols = " + str(t.tile_cols) + " is none of 16, 32, 64, 128";
  }
  if (t.tile_rows > 64 && t.tile_rows != 128) {
    return "tile_rows = " + str(t.tile_rows) + " is neither at most 64 nor 128";
  }
  if (cols_of(g, op.inputs[0]) != g.tensor(op.weights.at(0)).shape.back()) {
    return "input features differ from the weights' " +
           str(g.tensor(op.weights.at(0)).shape.back());
  }
  return first_failure({step ? check_dtypes(g, op, {DType::bf16, DType::i32}, out)
                             : check_dtypes(g, op, {DType::bf16}, out),
                        check_multiple("k", cols_of(g, op.inputs[0]), 8)});
}

// norm-linear and linear-residual: the weight-streaming body only.
std::string fused_linear(const Graph& g, const Op& op, bool norm) {
  const model::Tiling& t = op.tiling;
  const std::string_view kind = op.kind->name();
  const bool glu = norm && model::norm_linear_glu(op);
  if (!is_pow2_width(glu ? 2 * t.tile_cols : t.tile_cols)) {
    return "tile_cols = " + str(t.tile_cols) + " is none of " +
           (glu ? "8, 16, 32, 64 (glu: a gate and an up row a feature)" : "16, 32, 64, 128");
  }
  if (t.tile_rows > 64) {
    return "tile_rows = " + str(t.tile_rows) + " is over 64: " + std::string(kind) +
           " runs on the weight-streaming body only";
  }
  const int64_t k = cols_of(g, op.inputs[0]);
  const int matrices = static_cast<int>(op.weights.size()) - (norm ? 1 : 0);
  if (matrices < 1) return "has no weight matrix";
  int64_t weight_rows = 0;
  for (int j = 0; j < matrices; ++j) {
    if (g.tensor(op.weights[j]).shape.back() != k) {
      return "the product's k = " + str(k) + " differs from the " +
             str(g.tensor(op.weights[j]).shape.back()) + " columns of weight '" +
             g.tensor(op.weights[j]).name + "'";
    }
    weight_rows += g.tensor(op.weights[j]).elements() / k;
  }
  const int64_t features = cols_of(g, op.output);
  if (weight_rows != (glu ? 2 : 1) * features) {
    return "its weight matrices have " + str(weight_rows) + " rows, the output " + str(features) +
           " features" + (glu ? " (glu reads a gate and an up row each)" : "");
  }
  if (norm) {
    if (std::string e = check_shape(g.tensor(op.weights.back()), {k}); !e.empty()) {
      return "norm weight " + e;
    }
    if (!op.attrs.has("eps")) return "has no attr 'eps'";
  } else if (std::string e = check_shape(g.tensor(op.inputs.at(1)), g.tensor(op.output).shape);
             !e.empty()) {
    return "residual " + e;
  }
  return first_failure({norm ? check_dtypes(g, op, {DType::bf16}, DType::bf16)
                             : check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16),
                        check_multiple("k", k, 8)});
}

// silu-mul and residual-add: `inputs_wide` times as many input columns as output ones.
std::string elementwise_pair(const Graph& g, const Op& op, std::string dtypes, int inputs_wide) {
  const model::Tiling& t = op.tiling;
  const int64_t in_cols = inputs_wide * t.cols;
  if (cols_of(g, op.inputs[0]) != in_cols) {
    return "input has " + str(cols_of(g, op.inputs[0])) + " columns, expected " + str(in_cols);
  }
  return first_failure(
      {dtypes, check_multiple("cols", t.cols, 8), check_multiple("tile_cols", t.tile_cols, 8)});
}

}  // namespace

namespace checks {

std::string embedding(const Graph& g, const Op& op) {
  return lookup(g, op, check_dtypes(g, op, {DType::i32}, DType::bf16));
}

std::string step_embedding(const Graph& g, const Op& op) {
  if (std::string e = why_not_step(g, op); !e.empty()) return e;
  return lookup(g, op, check_dtypes(g, op, {DType::i32, DType::i32}, DType::bf16));
}

std::string rmsnorm(const Graph& g, const Op& op) {
  const model::Tiling& t = op.tiling;
  if (t.tile_cols != t.cols) return "tile_cols = " + str(t.tile_cols) + " must be all columns";
  return first_failure(
      {check_dtypes(g, op, {DType::bf16}, DType::bf16), check_multiple("cols", t.cols, 8)});
}

std::string linear(const Graph& g, const Op& op) { return plain_linear(g, op, DType::bf16, false); }

std::string lm_head(const Graph& g, const Op& op) { return plain_linear(g, op, DType::f32, false); }

std::string step_head(const Graph& g, const Op& op) {
  if (std::string e = why_not_step(g, op); !e.empty()) return e;
  return plain_linear(g, op, DType::f32, true);
}

std::string norm_linear(const Graph& g, const Op& op) { return fused_linear(g, op, true); }

std::string linear_residual(const Graph& g, const Op& op) { return fused_linear(g, op, false); }

std::string qk_norm(const Graph& g, const Op& op) {
  const int64_t hd = op.attrs.i("head_dim");
  if (hd > 256) return "head_dim = " + str(hd) + " is over 256";
  return first_failure({check_dtypes(g, op, {DType::bf16}, DType::bf16), check_heads(op),
                        check_multiple("head_dim", hd, 8),
                        check_multiple("tile_cols", op.tiling.tile_cols, hd)});
}

std::string rope(const Graph& g, const Op& op) {
  const int64_t hd = op.attrs.i("head_dim");
  return first_failure({check_dtypes(g, op, {DType::bf16}, DType::bf16),
                        check_multiple("head_dim", hd, 16),
                        check_multiple("tile_cols", op.tiling.tile_cols, hd)});
}

std::string kv_append(const Graph& g, const Op& op) {
  const int64_t hd = op.attrs.i("head_dim");
  const Tensor& cache = g.tensor(op.output);
  if (cache.shape.size() != 3) return "KV cache '" + cache.name + "' is not 3-D";
  return first_failure({check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16),
                        check_heads(op), check_multiple("head_dim", hd, 8),
                        check_multiple("tile_cols", op.tiling.tile_cols, 8)});
}

std::string attention(const Graph& g, const Op& op) {
  const model::Tiling& t = op.tiling;
  const int64_t hd = op.attrs.i("head_dim");
  if (!is_pow2_width(hd)) return "head_dim = " + str(hd) + " is none of 16, 32, 64, 128";
  if (std::string h = check_heads(op); !h.empty()) return h;
  const int64_t group = op.attrs.i("heads") / op.attrs.i("kv_heads");
  if (t.tile_rows == 1 && t.tile_cols != hd) {
    return "tile_cols = " + str(t.tile_cols) + " is not one query head (" + str(hd) +
           "), as one-row tiles take";
  }
  if (t.tile_rows > 1 && t.tile_cols != group * hd) {
    return "tile_cols = " + str(t.tile_cols) + " is not one KV head's query heads (" +
           str(group * hd) + ")";
  }
  if (op.attrs.i("seq_len") % t.tile_rows != 0) {
    return "tile_rows = " + str(t.tile_rows) +
           " does not divide seq_len = " + str(op.attrs.i("seq_len"));
  }
  return check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16);
}

std::string qkv_attention(const Graph& g, const Op& op) {
  const model::Tiling& t = op.tiling;
  const int64_t hd = op.attrs.i("head_dim");
  if (!is_pow2_width(hd)) return "head_dim = " + str(hd) + " is none of 16, 32, 64, 128";
  if (std::string h = check_heads(op); !h.empty()) return h;
  if (t.tile_rows != 1 || t.tile_cols != hd) {
    return "tiles of " + str(t.tile_rows) + " x " + str(t.tile_cols) +
           " are not one row of one query head (1 x " + str(hd) + ")";
  }
  if (op.attrs.i("seq_len") != 1) {
    return "seq_len = " + str(op.attrs.i("seq_len")) + ": one new row a sequence only";
  }
  const int64_t qkv_cols = (op.attrs.i("heads") + 2 * op.attrs.i("kv_heads")) * hd;
  if (cols_of(g, op.inputs[0]) != qkv_cols) {
    return "input has " + str(cols_of(g, op.inputs[0])) + " columns, not qkv's " + str(qkv_cols);
  }
  const Tensor& cache = g.tensor(op.inputs[1]);
  if (cache.shape.size() != 3) return "KV cache '" + cache.name + "' is not 3-D";
  if (!op.weights.empty()) {
    if (op.weights.size() != 2) return "has " + str(op.weights.size()) + " weights, not 0 or 2";
    for (int w : op.weights) {
      if (std::string e = check_shape(g.tensor(w), {hd}); !e.empty()) return "qk-norm weight " + e;
    }
    if (!op.attrs.has("eps")) return "has no attr 'eps'";
  }
  if (!op.attrs.has("rope_theta")) return "has no attr 'rope_theta'";
  return check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16);
}

std::string silu_mul(const Graph& g, const Op& op) {
  return elementwise_pair(g, op, check_dtypes(g, op, {DType::bf16}, DType::bf16), 2);
}

std::string residual_add(const Graph& g, const Op& op) {
  return elementwise_pair(g, op, check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16), 1);
}

std::string argmax(const Graph& g, const Op& op) {
  if (op.tiling.cols != 1) {
    return "cols = " + str(op.tiling.cols) + ", argmax writes one index per row";
  }
  return check_dtypes(g, op, {DType::f32}, DType::i32);
}

// conv1d and conv-transpose1d: the attrs, the weights in the checkpoint's layout and the rows
// the attrs imply. Any tiling: the direct body takes what the tensor-core one does not.
std::string conv(const Graph& g, const Op& op) {
  const bool transpose = op.kind->name() == "conv-transpose1d";
  const int64_t in = cols_of(g, op.inputs[0]), out = cols_of(g, op.output);
  const int64_t in_rows = rows_of(g, op.inputs[0]);
  const int64_t kernel = op.attrs.i("kernel"), len = op.attrs.i("len");
  if (std::string e = first_failure({check_dtypes(g, op, {DType::bf16}, DType::bf16),
                                     check_positive("kernel", kernel), check_positive("len", len),
                                     check_multiple("input rows", in_rows, len)});
      !e.empty()) {
    return e;
  }
  if (op.weights.empty() || op.weights.size() > 2) {
    return "has " + str(static_cast<int64_t>(op.weights.size())) +
           " weights, expected the kernel and an optional bias";
  }
  if (op.tiling.cols != out) {
    return "tiling has " + str(op.tiling.cols) + " columns, the output " + str(out);
  }
  std::vector<int64_t> weight_shape;
  int64_t out_rows = in_rows;
  if (transpose) {
    const int64_t stride = op.attrs.i("stride");
    if (std::string e = check_positive("stride", stride); !e.empty()) return e;
    if (kernel < stride) return "kernel = " + str(kernel) + " is less than stride = " + str(stride);
    weight_shape = {in, out, kernel};
    out_rows = in_rows * stride;
  } else {
    const int64_t dilation = op.attrs.i("dilation"), groups = op.attrs.i("groups");
    const int64_t lookahead = op.attrs.has("lookahead") ? op.attrs.i("lookahead") : 0;
    if (std::string e =
            first_failure({check_positive("dilation", dilation), check_positive("groups", groups)});
        !e.empty()) {
      return e;
    }
    if (in % groups != 0 || out % groups != 0) {
      return "groups = " + str(groups) + " does not divide in_channels = " + str(in) +
             " and out_channels = " + str(out);
    }
    if (lookahead < 0 || lookahead > (kernel - 1) * dilation) {
      return "lookahead = " + str(lookahead) +
             " is outside [0, (kernel - 1) * dilation = " + str((kernel - 1) * dilation) + "]";
    }
    weight_shape = {out, in / groups, kernel};
  }
  if (op.tiling.rows != out_rows) {
    return "tiling has " + str(op.tiling.rows) + " rows, the input's " + str(in_rows) +
           " rows make " + str(out_rows);
  }
  return first_failure(
      {check_shape(g.tensor(op.weights[0]), weight_shape),
       op.weights.size() > 1 ? check_shape(g.tensor(op.weights[1]), {out}) : std::string()});
}

std::string codebook_sum(const Graph& g, const Op& op) {
  const Tensor& codes = g.tensor(op.inputs[0]);
  if (op.weights.size() != 1) {
    return "has " + str(static_cast<int64_t>(op.weights.size())) +
           " weights, expected the stacked tables";
  }
  const Tensor& tables = g.tensor(op.weights[0]);
  if (codes.shape.size() != 2 || codes.shape[0] != op.tiling.rows) {
    return "codes '" + codes.name + "' have shape " + shape_text(codes.shape) + ", expected (" +
           str(op.tiling.rows) + ", codebooks)";
  }
  const int64_t codebooks = codes.shape[1];
  if (tables.shape.size() != 2 || codebooks <= 0 || tables.shape[0] % codebooks != 0 ||
      tables.shape[1] != op.tiling.cols) {
    return "tables '" + tables.name + "' have shape " + shape_text(tables.shape) + ", expected (" +
           str(codebooks) + " * entries, " + str(op.tiling.cols) + ")";
  }
  return check_dtypes(g, op, {DType::i32}, DType::bf16);
}

// snake-beta, leaky-relu, tanh, gelu, add-scaled: any width (the bodies fall back to one element at
// a time where rows are not whole 8-channel chunks).
std::string elementwise(const Graph& g, const Op& op) {
  const std::string_view kind = op.kind->name();
  const bool two = kind == "add-scaled";
  if (std::string e = two ? check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16)
                          : check_dtypes(g, op, {DType::bf16}, DType::bf16);
      !e.empty()) {
    return e;
  }
  for (int input : op.inputs) {
    if (g.tensor(input).shape != g.tensor(op.output).shape) {
      return "input '" + g.tensor(input).name + "' has shape " + shape_text(g.tensor(input).shape) +
             ", the output " + shape_text(g.tensor(op.output).shape);
    }
  }
  if (op.tiling.cols != cols_of(g, op.output)) {
    return "tiling has " + str(op.tiling.cols) + " columns, the output " +
           str(cols_of(g, op.output));
  }
  if (kind == "snake-beta") {
    if (op.weights.size() != 2) {
      return "has " + str(static_cast<int64_t>(op.weights.size())) +
             " weights, expected alpha_log and beta_log";
    }
    return first_failure({check_shape(g.tensor(op.weights[0]), {op.tiling.cols}),
                          check_shape(g.tensor(op.weights[1]), {op.tiling.cols})});
  }
  if (kind == "leaky-relu" && !op.attrs.has("slope")) return "attr slope is missing";
  if (kind == "add-scaled" && !op.attrs.has("scale")) return "attr scale is missing";
  return {};
}

}  // namespace checks

LinearShape linear_shape(const Op& op) {
  const model::Tiling& t = op.tiling;
  LinearShape s;
  // The body's tile width counts weight rows: glu streams a gate and an up row a feature.
  const bool glu = op.kind->name() == "norm-linear" && model::norm_linear_glu(op);
  s.cols = static_cast<int>(glu ? 2 * t.tile_cols : t.tile_cols);
  s.mma = t.tile_rows == 128;
  s.n8 = s.mma ? 0 : t.tile_rows <= 8 ? 1 : t.tile_rows <= 16 ? 2 : t.tile_rows <= 32 ? 4 : 8;
  return s;
}

AttentionShape attention_shape(const Op& op) {
  AttentionShape s;
  s.decode = op.tiling.tile_rows == 1;
  s.head_dim = attr_int(op, "head_dim");
  return s;
}

ConvShape conv_shape(const Graph& graph, const Op& op) {
  const model::Tiling& t = op.tiling;
  const bool transpose = op.kind->name() == "conv-transpose1d";
  const int64_t in = cols_of(graph, op.inputs[0]), kernel = op.attrs.i("kernel");
  const int64_t stride = transpose ? op.attrs.i("stride") : 1;
  ConvShape s;
  if (!transpose && op.attrs.i("groups") != 1) return s;
  if (in % 8 != 0 || !is_pow2_width(t.tile_cols) || t.tile_rows > 128) return s;
  // conv-transpose1d: each phase's rows, ceil(tile_rows / stride), padded to whole m16 blocks,
  // stride blocks of them in the 128 GEMM rows.
  const int64_t phase_rows = ((t.tile_rows + stride - 1) / stride + 15) / 16 * 16;
  if (transpose && stride * phase_rows > 128) return s;
  // ConvMmaTile::smem_bytes: the input window's rows, then kernel taps of tile_cols rows, each
  // tap 16 bytes apart; rows of chunk bf16 and 16 bytes.
  const int64_t window = transpose ? (t.tile_rows + stride - 1) / stride + 1 + (kernel - 1) / stride
                                   : 128 + (kernel - 1) * op.attrs.i("dilation");
  for (int chunk : {64, 32, 16}) {
    const int64_t row_bytes = 2 * chunk + 16;
    if (window * row_bytes + kernel * (t.tile_cols * row_bytes + 16) <= kConvMmaSmemBytes) {
      s.mma = true;
      s.cols = static_cast<int>(t.tile_cols);
      s.chunk = chunk;
      return s;
    }
  }
  return s;
}

}  // namespace megacut::executor
