#include "executor/op_support.h"

#include <string>

#include "model/error.h"

namespace megacut::executor {
namespace {

using model::DType;
using model::Graph;
using model::Op;
using model::Tensor;

std::string str(int64_t v) { return std::to_string(v); }

int64_t cols_of(const Graph& g, int tensor) { return g.tensor(tensor).shape.back(); }
int attr_int(const Op& op, const char* key) { return static_cast<int>(op.attrs.i(key)); }

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

std::string why_not(const Graph& g, const Op& op) {
  const std::string_view kind = op.kind->name();
  const model::Tiling& t = op.tiling;
  if (kind == "embedding") {
    return first_failure({check_dtypes(g, op, {DType::i32}, DType::bf16),
                          check_multiple("hidden", t.cols, 8),
                          check_multiple("tile_cols", t.tile_cols, 8)});
  }
  if (kind == "rmsnorm") {
    if (t.tile_cols != t.cols) return "tile_cols = " + str(t.tile_cols) + " must be all columns";
    return first_failure(
        {check_dtypes(g, op, {DType::bf16}, DType::bf16), check_multiple("cols", t.cols, 8)});
  }
  if (kind == "linear" || kind == "lm-head") {
    const DType out = kind == "linear" ? DType::bf16 : DType::f32;
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
    return first_failure({check_dtypes(g, op, {DType::bf16}, out),
                          check_multiple("k", cols_of(g, op.inputs[0]), 8)});
  }
  if (kind == "qk-norm") {
    const int64_t hd = op.attrs.i("head_dim");
    if (hd > 256) return "head_dim = " + str(hd) + " is over 256";
    return first_failure({check_dtypes(g, op, {DType::bf16}, DType::bf16), check_heads(op),
                          check_multiple("head_dim", hd, 8),
                          check_multiple("tile_cols", t.tile_cols, hd)});
  }
  if (kind == "rope") {
    const int64_t hd = op.attrs.i("head_dim");
    return first_failure({check_dtypes(g, op, {DType::bf16}, DType::bf16),
                          check_multiple("head_dim", hd, 16),
                          check_multiple("tile_cols", t.tile_cols, hd)});
  }
  if (kind == "kv-append") {
    const int64_t hd = op.attrs.i("head_dim");
    const Tensor& cache = g.tensor(op.output);
    if (cache.shape.size() != 3) return "KV cache '" + cache.name + "' is not 3-D";
    return first_failure({check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16),
                          check_heads(op), check_multiple("head_dim", hd, 8),
                          check_multiple("tile_cols", t.tile_cols, 8)});
  }
  if (kind == "attention") {
    const int64_t hd = op.attrs.i("head_dim");
    if (!is_pow2_width(hd)) return "head_dim = " + str(hd) + " is none of 16, 32, 64, 128";
    if (std::string h = check_heads(op); !h.empty()) return h;
    const int64_t group = op.attrs.i("heads") / op.attrs.i("kv_heads");
    if (t.tile_cols != group * hd) {
      return "tile_cols = " + str(t.tile_cols) + " is not one KV head's query heads (" +
             str(group * hd) + ")";
    }
    if (op.attrs.i("seq_len") % t.tile_rows != 0) {
      return "tile_rows = " + str(t.tile_rows) +
             " does not divide seq_len = " + str(op.attrs.i("seq_len"));
    }
    return check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16);
  }
  if (kind == "silu-mul" || kind == "residual-add") {
    const std::string dtypes = kind == "silu-mul"
                                   ? check_dtypes(g, op, {DType::bf16}, DType::bf16)
                                   : check_dtypes(g, op, {DType::bf16, DType::bf16}, DType::bf16);
    const int64_t in_cols = kind == "silu-mul" ? 2 * t.cols : t.cols;
    if (cols_of(g, op.inputs[0]) != in_cols) {
      return "input has " + str(cols_of(g, op.inputs[0])) + " columns, expected " + str(in_cols);
    }
    return first_failure(
        {dtypes, check_multiple("cols", t.cols, 8), check_multiple("tile_cols", t.tile_cols, 8)});
  }
  if (kind == "argmax") {
    if (t.cols != 1) return "cols = " + str(t.cols) + ", argmax writes one index per row";
    return check_dtypes(g, op, {DType::f32}, DType::i32);
  }
  return "no tile body for op kind '" + std::string(kind) + "'";
}

}  // namespace

Support can_implement(const Graph& graph, int op) {
  const Op& o = graph.op(op);
  std::string reason = why_not(graph, o);
  if (reason.empty()) return {};
  return {false, "op " + o.name + " (" + std::string(o.kind->name()) + "): " + reason};
}

LinearShape linear_shape(const Op& op) {
  const model::Tiling& t = op.tiling;
  LinearShape s;
  s.cols = static_cast<int>(t.tile_cols);
  s.mma = t.tile_rows == 128;
  s.m_tiles = s.mma ? 0 : t.tile_rows <= 16 ? 1 : t.tile_rows <= 32 ? 2 : 4;
  return s;
}

AttentionShape attention_shape(const Op& op) {
  AttentionShape s;
  s.decode = op.tiling.tile_rows == 1;
  s.head_dim = attr_int(op, "head_dim");
  const int64_t group = op.attrs.i("heads") / op.attrs.i("kv_heads");
  s.max_group = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
  return s;
}

std::string tile_body_name(const Graph& graph, int op) {
  if (Support s = can_implement(graph, op); !s) throw Error(s.reason);
  const Op& o = graph.op(op);
  const std::string_view kind = o.kind->name();
  const std::string ns = "megacut::tiles::";
  if (kind == "linear" || kind == "lm-head") {
    const LinearShape s = linear_shape(o);
    const std::string out = kind == "linear" ? "__nv_bfloat16" : "float";
    if (s.mma) return ns + "LinearMmaTile<" + str(s.cols) + ", " + out + ">";
    return ns + "LinearGemvTile<" + str(s.cols) + ", " + str(s.m_tiles) + ", " + out + ">";
  }
  if (kind == "attention") {
    const AttentionShape s = attention_shape(o);
    if (s.decode) {
      return ns + "AttentionDecodeTile<" + str(s.head_dim) + ", " + str(s.max_group) + ">";
    }
    return ns + "AttentionPrefillTile<" + str(s.head_dim) + ">";
  }
  if (kind == "embedding") return ns + "EmbeddingTile";
  if (kind == "rmsnorm") return ns + "RmsNormTile";
  if (kind == "qk-norm") return ns + "QkNormTile";
  if (kind == "rope") return ns + "RopeTile";
  if (kind == "kv-append") return ns + "KvAppendTile";
  if (kind == "silu-mul") return ns + "SiluMulTile";
  if (kind == "residual-add") return ns + "ResidualAddTile";
  return ns + "ArgmaxTile";
}

}  // namespace megacut::executor
