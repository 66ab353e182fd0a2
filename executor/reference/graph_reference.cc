#include "executor/reference/graph_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <utility>

#include "executor/reference/op_reference.h"
#include "model/error.h"
#include "model/text.h"

namespace megacut::reference {
namespace {

using model::DType;
using model::Graph;
using model::Op;
using model::str;
using model::Tensor;
using model::TensorRole;

using Weights = std::map<std::string, std::vector<float>>;

// One tensor as the device holds it: float values (bf16 or f32) or int32 ones.
struct Value {
  std::vector<float> f;
  std::vector<int32_t> i;
  bool set = false;
};

// A value given as double, stored as `dtype` stores it; ids must be exact int32 values.
void store_given(const Tensor& t, std::span<const double> given, Value& v) {
  if (static_cast<int64_t>(given.size()) != t.elements()) {
    throw Error("reference: '" + t.name + "' is given " + str(static_cast<int64_t>(given.size())) +
                " values, its shape holds " + str(t.elements()));
  }
  if (t.dtype == DType::i32) {
    v.i.resize(given.size());
    for (size_t k = 0; k < given.size(); ++k) {
      const double x = given[k];
      if (!(x == std::floor(x)) || x < std::numeric_limits<int32_t>::min() ||
          x > std::numeric_limits<int32_t>::max()) {
        throw Error("reference: '" + t.name + "' is i32, value " + str(static_cast<int64_t>(k)) +
                    " (" + std::to_string(x) + ") is not an int32");
      }
      v.i[k] = static_cast<int32_t>(x);
    }
  } else if (t.dtype == DType::bf16) {
    v.f = round_bf16(given);
  } else {
    v.f.assign(given.begin(), given.end());
  }
  v.set = true;
}

class Interpreter {
 public:
  Interpreter(const Graph& g, const Weights& weights) : g_(g), weights_(weights) {
    values_.resize(g.tensors().size());
  }

  Value& value(int tensor) { return values_.at(tensor); }
  const std::string& input_name(const Op& op, int k) const {
    return g_.tensor(op.inputs.at(k)).name;
  }

  // The op's output from float64 values: rounded as its dtype is stored.
  void store(const Op& op, const std::vector<double>& out) {
    const Tensor& t = g_.tensor(op.output);
    expect_output_size(op, static_cast<int64_t>(out.size()));
    Value& v = values_[op.output];
    if (t.dtype == DType::bf16) {
      v.f = round_bf16(out);
    } else if (t.dtype == DType::f32) {
      v.f.assign(out.begin(), out.end());
    } else {
      throw Error("its output '" + t.name + "' is i32, the kind computes values");
    }
    v.set = true;
  }

  void store_ids(const Op& op, std::vector<int32_t> out) {
    const Tensor& t = g_.tensor(op.output);
    expect_output_size(op, static_cast<int64_t>(out.size()));
    if (t.dtype != DType::i32) {
      throw Error("its output '" + t.name + "' is " + std::string(model::dtype_name(t.dtype)) +
                  ", the kind computes i32 indices");
    }
    values_[op.output].i = std::move(out);
    values_[op.output].set = true;
  }

  // Input `k` of the op: float values, or int32 ids.
  std::span<const float> in(const Op& op, int k) {
    const Value& v = read(op, k);
    if (g_.tensor(op.inputs[k]).dtype == DType::i32) {
      throw Error("input '" + g_.tensor(op.inputs[k]).name + "' is i32, the kind reads values");
    }
    return v.f;
  }
  std::span<const int32_t> ids(const Op& op, int k) {
    const Value& v = read(op, k);
    const Tensor& t = g_.tensor(op.inputs[k]);
    if (t.dtype != DType::i32) {
      throw Error("input '" + t.name + "' is " + std::string(model::dtype_name(t.dtype)) +
                  ", the kind reads i32 ids");
    }
    return v.i;
  }

  // Columns (last dimension) of input `k`, or of the output; shape dimension `d` of a tensor.
  int64_t in_cols(const Op& op, int k) const { return g_.tensor(op.inputs.at(k)).shape.back(); }
  int64_t out_cols(const Op& op) const { return g_.tensor(op.output).shape.back(); }
  int64_t in_rows(const Op& op, int k) const {
    const Tensor& t = g_.tensor(op.inputs.at(k));
    return t.elements() / t.shape.back();
  }
  const Tensor& weight_tensor(const Op& op, int k) const {
    expect_weights(op, k + 1, -1);
    return g_.tensor(op.weights[k]);
  }

  // Weight `k` of the op, checked against its tensor's shape.
  std::span<const float> weight(const Op& op, int k) const {
    const Tensor& t = weight_tensor(op, k);
    const auto it = weights_.find(t.name);
    if (it == weights_.end()) throw Error("weight '" + t.name + "' is missing");
    if (static_cast<int64_t>(it->second.size()) != t.elements()) {
      throw Error("weight '" + t.name + "' has " + str(static_cast<int64_t>(it->second.size())) +
                  " values, its shape holds " + str(t.elements()));
    }
    return it->second;
  }
  std::span<const float> optional_weight(const Op& op, int k) const {
    return k < static_cast<int>(op.weights.size()) ? weight(op, k) : std::span<const float>{};
  }

  // The op's first `count` weights (all where count < 0) as one (N, K) matrix, concatenated
  // along rows in op.weights order.
  std::vector<float> stacked_weights(const Op& op, int64_t k, int count = -1) const {
    expect_weights(op, std::max(count, 1), -1);
    if (count < 0) count = static_cast<int>(op.weights.size());
    std::vector<float> w;
    for (int j = 0; j < count; ++j) {
      const Tensor& t = g_.tensor(op.weights[j]);
      if (t.shape.back() != k) {
        throw Error("weight '" + t.name + "' has " + str(t.shape.back()) + " columns, the input " +
                    str(k));
      }
      const std::span<const float> part = weight(op, j);
      w.insert(w.end(), part.begin(), part.end());
    }
    return w;
  }

  // At least `least` weights, and exactly `exact` where exact >= 0.
  void expect_weights(const Op& op, int least, int exact) const {
    const int n = static_cast<int>(op.weights.size());
    if (n < least || (exact >= 0 && n != exact)) {
      throw Error("has " + str(n) + " weights, the kind reads " +
                  (exact >= 0 ? str(exact) : "at least " + str(least)));
    }
  }

 private:
  const Value& read(const Op& op, int k) {
    const int id = op.inputs.at(k);
    const Value& v = values_.at(id);
    if (!v.set) throw Error("reads '" + g_.tensor(id).name + "' before anything writes it");
    return v;
  }

  void expect_output_size(const Op& op, int64_t n) const {
    const Tensor& t = g_.tensor(op.output);
    if (n != t.elements()) {
      throw Error("computes " + str(n) + " values, its output '" + t.name + "' holds " +
                  str(t.elements()));
    }
  }

  const Graph& g_;
  const Weights& weights_;
  std::vector<Value> values_;  // by tensor id
};

HeadShape head_shape(const Op& op) {
  return {op.attrs.i("heads"), op.attrs.i("kv_heads"), op.attrs.i("head_dim")};
}

// The stage's position attrs over `rows` query rows.
StageShape stage_shape(const Op& op, int64_t rows) {
  const int64_t seq_len = op.attrs.i("seq_len");
  if (seq_len <= 0 || rows % seq_len != 0) {
    throw Error(str(rows) + " rows are not whole sequences of seq_len " + str(seq_len));
  }
  return {rows / seq_len, seq_len, op.attrs.i("past_len")};
}

RopeParams rope_params(const Op& op) {
  RopeParams p;
  p.theta = op.attrs.f("rope_theta");
  p.llama3 = op.attrs.i("rope_llama3") == 1;
  if (p.llama3) {
    p.factor = op.attrs.f("rope_factor");
    p.low_freq_factor = op.attrs.f("rope_low_freq_factor");
    p.high_freq_factor = op.attrs.f("rope_high_freq_factor");
    p.original_max_position = op.attrs.f("rope_original_max_position");
  }
  return p;
}

// The sequences of a convolution's input: its rows over attr "len".
int64_t sequences(Interpreter& in, const Op& op) {
  const int64_t rows = in.in_rows(op, 0), len = op.attrs.i("len");
  if (len <= 0 || rows % len != 0) {
    throw Error("input rows = " + str(rows) + " are not whole sequences of len " + str(len));
  }
  return rows / len;
}

// Writes `rows`, kv-append's rows (new tokens, 2 * kv_heads * head_dim), into the cache tensor
// (batch, capacity, 2 * kv_heads * head_dim) at positions past_len + t % seq_len of sequence
// t / seq_len.
void append_to_cache(Interpreter& in, const Graph& g, const Op& op, int cache_tensor,
                     const std::vector<float>& rows, const HeadShape& heads) {
  const int64_t row_cols = 2 * heads.kv_heads * heads.head_dim;
  if (row_cols <= 0) throw Error("kv_heads * head_dim = 0");
  const Tensor& t = g.tensor(cache_tensor);
  const int64_t n = static_cast<int64_t>(rows.size()) / row_cols;
  const StageShape s = stage_shape(op, n);
  if (t.shape.size() != 3 || t.shape[0] != s.batch || t.shape[2] != row_cols ||
      t.shape[1] < s.past_len + s.seq_len) {
    throw Error("the cache '" + t.name + "' is not (" + str(s.batch) +
                ", >= " + str(s.past_len + s.seq_len) + ", " + str(row_cols) + ")");
  }
  Value& cache = in.value(cache_tensor);
  if (!cache.set) {  // a cache that is no state tensor starts empty, as one left out does
    cache.f.assign(t.elements(), std::numeric_limits<float>::quiet_NaN());
    cache.set = true;
  }
  for (int64_t r = 0; r < n; ++r) {
    const int64_t seq = r / s.seq_len, pos = s.past_len + r % s.seq_len;
    std::copy_n(rows.begin() + r * row_cols, row_cols,
                cache.f.begin() + (seq * t.shape[1] + pos) * row_cols);
  }
}

void kv_append_op(Interpreter& in, const Graph& g, const Op& op) {
  const HeadShape heads = head_shape(op);
  append_to_cache(in, g, op, op.output, round_bf16(kv_append(in.in(op, 0), in.in(op, 1), heads)),
                  heads);
}

// qkv-attention: qk-norm (with weights), rope, kv-append and attention, each rounded to bf16 as
// the four ops' outputs are.
void qkv_attention_op(Interpreter& in, const Graph& g, const Op& op) {
  const HeadShape heads = head_shape(op);
  const Tensor& cache = g.tensor(op.inputs.at(1));
  if (cache.shape.size() != 3) throw Error("the cache '" + cache.name + "' is not 3-D");
  const std::span<const float> qkv = in.in(op, 0);
  const int64_t qkv_cols = in.in_cols(op, 0);
  const int64_t qk_cols = (heads.heads + heads.kv_heads) * heads.head_dim;
  const StageShape s = stage_shape(op, in.in_rows(op, 0));
  std::vector<float> normed;
  if (!op.weights.empty()) {
    in.expect_weights(op, 2, 2);
    normed = round_bf16(
        qk_norm(qkv, qkv_cols, heads, in.weight(op, 0), in.weight(op, 1), op.attrs.f("eps")));
  }
  const std::vector<float> rotated =
      normed.empty() ? round_bf16(rope(qkv, qkv_cols, heads, s, rope_params(op)))
                     : round_bf16(rope(normed, qk_cols, heads, s, rope_params(op)));
  append_to_cache(in, g, op, op.inputs[1], round_bf16(kv_append(rotated, qkv, heads)), heads);
  const int64_t window = op.attrs.has("window") ? op.attrs.i("window") : 0;
  in.store(op,
           attention(rotated, qk_cols, in.value(op.inputs[1]).f, cache.shape[1], heads, s, window));
}

void attention_op(Interpreter& in, const Graph& g, const Op& op) {
  const Tensor& cache = g.tensor(op.inputs.at(1));
  if (cache.shape.size() != 3) throw Error("the cache '" + cache.name + "' is not 3-D");
  const StageShape s = stage_shape(op, in.in_rows(op, 0));
  const int64_t window = op.attrs.has("window") ? op.attrs.i("window") : 0;
  in.store(op, attention(in.in(op, 0), in.in_cols(op, 0), in.in(op, 1), cache.shape[1],
                         head_shape(op), s, window));
}

// step-embedding and step-head: the step (input 1, one i32 value) picks the rows of the
// stacked tables or heads; embedding-shard's input 1, the rank, its rows of the vocabulary.
int32_t step_of(Interpreter& in, const Op& op) {
  const std::span<const int32_t> step = in.ids(op, 1);
  if (step.size() != 1) {
    throw Error("input '" + in.input_name(op, 1) + "' holds " +
                str(static_cast<int64_t>(step.size())) + " values, the kind reads one");
  }
  return step[0];
}

// A collective across the ranks' interpreters (one each, the same graph): all-reduce sums input
// 0 over the ranks (all-reduce-residual then adds input 1, the same on every rank), in float64,
// each rank's output rounded as its dtype is stored; all-gather puts rank r's rows of input 0
// side by side, rank r's in columns [r * cols, (r + 1) * cols).
void evaluate_collective(std::span<Interpreter> ranks, const Op& op) {
  const std::string_view kind = op.kind->name();
  const std::span<const float> first = ranks.front().in(op, 0);
  const int64_t cols = ranks.front().in_cols(op, 0);
  const int64_t rows = static_cast<int64_t>(first.size()) / cols;
  std::vector<double> out;
  if (kind == "all-gather") {
    const int64_t n = static_cast<int64_t>(ranks.size());
    out.assign(rows * cols * n, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      const std::span<const float> x = ranks[r].in(op, 0);
      for (int64_t row = 0; row < rows; ++row) {
        std::copy_n(x.begin() + row * cols, cols, out.begin() + (row * n + r) * cols);
      }
    }
  } else {
    out.assign(first.size(), 0.0);
    for (Interpreter& rank : ranks) {
      const std::span<const float> x = rank.in(op, 0);
      for (size_t i = 0; i < x.size(); ++i) out[i] += x[i];
    }
    if (kind == "all-reduce-residual") {
      const std::span<const float> residual = ranks.front().in(op, 1);
      if (residual.size() != out.size()) {
        throw Error("residual holds " + str(static_cast<int64_t>(residual.size())) +
                    " values, the sum " + str(static_cast<int64_t>(out.size())));
      }
      for (size_t i = 0; i < out.size(); ++i) out[i] += residual[i];
    }
  }
  for (Interpreter& rank : ranks) rank.store(op, out);
}

void conv1d_op(Interpreter& in, const Op& op) {
  in.expect_weights(op, 1, op.weights.size() > 1 ? 2 : 1);
  in.store(op, conv1d(in.in(op, 0), in.weight(op, 0), in.optional_weight(op, 1),
                      {.batch = sequences(in, op),
                       .len = op.attrs.i("len"),
                       .in_channels = in.in_cols(op, 0),
                       .out_channels = in.out_cols(op),
                       .kernel = op.attrs.i("kernel"),
                       .dilation = op.attrs.i("dilation"),
                       .groups = op.attrs.i("groups"),
                       .lookahead = op.attrs.has("lookahead") ? op.attrs.i("lookahead") : 0}));
}

void conv_transpose1d_op(Interpreter& in, const Op& op) {
  in.expect_weights(op, 1, op.weights.size() > 1 ? 2 : 1);
  in.store(op, conv_transpose1d(in.in(op, 0), in.weight(op, 0), in.optional_weight(op, 1),
                                {.batch = sequences(in, op),
                                 .len = op.attrs.i("len"),
                                 .in_channels = in.in_cols(op, 0),
                                 .out_channels = in.out_cols(op),
                                 .kernel = op.attrs.i("kernel"),
                                 .stride = op.attrs.i("stride")}));
}

// Evaluates one op into the interpreter's values; throws for a kind it does not know.
void evaluate_op(Interpreter& in, const Graph& g, const Op& op) {
  const std::string_view kind = op.kind->name();
  if (kind == "embedding") {
    in.store(op, embedding(in.ids(op, 0), in.weight(op, 0), in.weight_tensor(op, 0).shape.back()));
  } else if (kind == "embedding-shard") {
    in.store(op,
             embedding_shard(in.ids(op, 0), in.weight(op, 0), in.weight_tensor(op, 0).shape.back(),
                             step_of(in, op), op.attrs.i("ranks")));
  } else if (model::is_collective(op)) {
    throw Error("a collective reads every rank's values: evaluate the ranks together");
  } else if (kind == "rmsnorm") {
    const int64_t stride = op.attrs.has("select_stride") ? op.attrs.i("select_stride") : 1;
    in.store(op,
             rmsnorm(in.in(op, 0), in.in_cols(op, 0), in.weight(op, 0), op.attrs.f("eps"), stride));
  } else if (kind == "linear" || kind == "lm-head") {
    const int64_t k = in.in_cols(op, 0);
    in.store(op, linear(in.in(op, 0), in.stacked_weights(op, k), k));
  } else if (kind == "norm-linear") {
    const int64_t k = in.in_cols(op, 0);
    in.expect_weights(op, 2, -1);
    const int matrices = static_cast<int>(op.weights.size()) - 1;
    std::vector<double> y = norm_linear(in.in(op, 0), in.stacked_weights(op, k, matrices),
                                        in.weight(op, matrices), k, op.attrs.f("eps"));
    // glu: the gate_up output rounded to bf16, then silu-mul's arithmetic.
    if (model::norm_linear_glu(op)) y = silu_mul(round_bf16(y), in.out_cols(op));
    in.store(op, y);
  } else if (kind == "linear-residual") {
    const int64_t k = in.in_cols(op, 0);
    std::vector<double> y = linear(in.in(op, 0), in.stacked_weights(op, k), k);
    const std::span<const float> residual = in.in(op, 1);
    if (residual.size() != y.size()) {
      throw Error("residual '" + g.tensor(op.inputs[1]).name + "' holds " +
                  str(static_cast<int64_t>(residual.size())) + " values, the product " +
                  str(static_cast<int64_t>(y.size())));
    }
    for (size_t i = 0; i < y.size(); ++i) y[i] = round_bf16(y[i]) + residual[i];
    in.store(op, y);
  } else if (kind == "qk-norm") {
    in.expect_weights(op, 2, 2);
    in.store(op, qk_norm(in.in(op, 0), in.in_cols(op, 0), head_shape(op), in.weight(op, 0),
                         in.weight(op, 1), op.attrs.f("eps")));
  } else if (kind == "rope") {
    in.store(op, rope(in.in(op, 0), in.in_cols(op, 0), head_shape(op),
                      stage_shape(op, in.in_rows(op, 0)), rope_params(op)));
  } else if (kind == "kv-append") {
    kv_append_op(in, g, op);
  } else if (kind == "attention") {
    attention_op(in, g, op);
  } else if (kind == "qkv-attention") {
    qkv_attention_op(in, g, op);
  } else if (kind == "silu-mul") {
    in.store(op, silu_mul(in.in(op, 0), in.out_cols(op)));
  } else if (kind == "residual-add") {
    in.store(op, residual_add(in.in(op, 0), in.in(op, 1)));
  } else if (kind == "argmax") {
    in.store_ids(op, argmax(in.in(op, 0), in.in_cols(op, 0)));
  } else if (kind == "step-embedding") {
    in.expect_weights(op, 1, 1);
    in.store(op, step_embedding(in.ids(op, 0), in.weight(op, 0), op.attrs.i("entries"),
                                in.weight_tensor(op, 0).shape.back(), step_of(in, op)));
  } else if (kind == "step-head") {
    // One head per step, each as wide as the logits.
    in.expect_weights(op, 1, 1);
    const int64_t entries = model::step_entries(g, op);
    in.store(
        op, step_head(in.in(op, 0), in.weight(op, 0), entries, in.in_cols(op, 0), step_of(in, op)));
  } else if (kind == "codebook-sum") {
    const Tensor& tables = in.weight_tensor(op, 0);
    const int64_t codebooks = in.in_cols(op, 0);
    const int64_t entries =
        op.attrs.has("entries") ? op.attrs.i("entries") : tables.shape.front() / codebooks;
    in.store(
        op, codebook_sum(in.ids(op, 0), in.weight(op, 0), codebooks, entries, tables.shape.back()));
  } else if (kind == "conv1d") {
    conv1d_op(in, op);
  } else if (kind == "conv-transpose1d") {
    conv_transpose1d_op(in, op);
  } else if (kind == "snake-beta") {
    in.expect_weights(op, 2, 2);
    in.store(op, snake_beta(in.in(op, 0), in.weight(op, 0), in.weight(op, 1), in.in_cols(op, 0)));
  } else if (kind == "leaky-relu") {
    in.store(op, leaky_relu(in.in(op, 0), op.attrs.f("slope")));
  } else if (kind == "tanh") {
    in.store(op, tanh_activation(in.in(op, 0)));
  } else if (kind == "gelu") {
    in.store(op, gelu(in.in(op, 0)));
  } else if (kind == "add-scaled") {
    in.store(op, add_scaled(in.in(op, 0), in.in(op, 1), op.attrs.f("scale")));
  } else {
    throw Error("the float64 interpreter has no reference for this kind");
  }
}

// The non-weight tensors by name, inputs and state stored as given: the interpreter's start.
std::map<std::string_view, int> start(Interpreter& in, const Graph& graph,
                                      const TensorValues& inputs, const TensorValues& state) {
  std::map<std::string_view, int> names;  // non-weight tensors
  for (int id = 0; id < static_cast<int>(graph.tensors().size()); ++id) {
    const Tensor& t = graph.tensor(id);
    if (t.role == TensorRole::weight) continue;
    if (!names.emplace(t.name, id).second) {
      throw Error("reference: two tensors of stage " + graph.stage() + " are named '" + t.name +
                  "'");
    }
    if (t.role == TensorRole::input) {
      const auto it = inputs.find(t.name);
      if (it == inputs.end()) throw Error("reference: input '" + t.name + "' is not given");
      store_given(t, it->second, in.value(id));
    } else if (t.role == TensorRole::state) {
      const auto it = state.find(t.name);
      if (it != state.end()) {
        store_given(t, it->second, in.value(id));
      } else {
        in.value(id).f.assign(t.elements(), std::numeric_limits<float>::quiet_NaN());
        in.value(id).set = true;
      }
    }
  }
  for (const auto* given : {&inputs, &state}) {
    for (const auto& [name, values] : *given) {
      const auto it = names.find(name);
      const TensorRole role = given == &inputs ? TensorRole::input : TensorRole::state;
      if (it == names.end() || graph.tensor(it->second).role != role) {
        throw Error("reference: '" + name + "' is no " + std::string(model::role_name(role)) +
                    " tensor of stage " + graph.stage());
      }
    }
  }
  return names;
}

// Every named tensor's values once the graph ran.
TensorValues collect(Interpreter& in, const Graph& graph,
                     const std::map<std::string_view, int>& names) {
  TensorValues out;
  for (const auto& [name, id] : names) {
    const Value& v = in.value(id);
    if (!v.set) continue;
    std::vector<double>& values = out[std::string(name)];
    if (graph.tensor(id).dtype == DType::i32) {
      values.assign(v.i.begin(), v.i.end());
    } else {
      values.assign(v.f.begin(), v.f.end());
    }
  }
  return out;
}

// Runs `step` for op, naming the op in what it throws.
template <class Step>
void named(const Op& op, Step&& step) {
  try {
    step();
  } catch (const Error& e) {
    throw Error("reference: op " + op.name + " (" + std::string(op.kind->name()) +
                "): " + e.what());
  }
}

}  // namespace

TensorValues evaluate_graph(const Graph& graph, const Weights& weights, const TensorValues& inputs,
                            const TensorValues& state) {
  Interpreter in(graph, weights);
  const std::map<std::string_view, int> names = start(in, graph, inputs, state);
  for (const Op& op : graph.ops()) named(op, [&] { evaluate_op(in, graph, op); });
  return collect(in, graph, names);
}

std::vector<TensorValues> evaluate_ranks(const Graph& graph, std::span<const Weights> weights,
                                         std::span<const TensorValues> inputs,
                                         std::span<const TensorValues> state) {
  const size_t n = weights.size();
  if (n == 0 || inputs.size() != n || (!state.empty() && state.size() != n)) {
    throw Error("reference: the ranks' weights, inputs and state number " +
                str(static_cast<int64_t>(n)) + ", " + str(static_cast<int64_t>(inputs.size())) +
                " and " + str(static_cast<int64_t>(state.size())) +
                " (state may be left out: none)");
  }
  std::vector<Interpreter> ranks;
  ranks.reserve(n);
  std::vector<std::map<std::string_view, int>> names;
  const TensorValues none;
  for (size_t r = 0; r < n; ++r) {
    // The all-gather puts rank r's columns r-th: the ranks come in their order.
    const auto rank = inputs[r].find("tp_rank");
    if (rank != inputs[r].end() && rank->second != std::vector<double>{static_cast<double>(r)}) {
      throw Error("reference: the inputs given " + str(static_cast<int64_t>(r)) +
                  "th are not rank " + str(static_cast<int64_t>(r)) +
                  "'s (tp_rank): give the ranks in order");
    }
    ranks.emplace_back(graph, weights[r]);
    names.push_back(start(ranks[r], graph, inputs[r], state.empty() ? none : state[r]));
  }
  for (const Op& op : graph.ops()) {
    if (model::is_collective(op)) {
      if (op.attrs.i("ranks") != static_cast<int64_t>(n)) {
        throw Error("reference: op " + op.name + " is a collective of " + str(op.attrs.i("ranks")) +
                    " ranks, evaluated over " + str(static_cast<int64_t>(n)));
      }
      named(op, [&] { evaluate_collective(ranks, op); });
    } else {
      for (size_t r = 0; r < n; ++r) {
        try {
          evaluate_op(ranks[r], graph, op);
        } catch (const Error& e) {
          throw Error("reference: rank " + str(static_cast<int64_t>(r)) + ", op " + op.name + " (" +
                      std::string(op.kind->name()) + "): " + e.what());
        }
      }
    }
  }
  std::vector<TensorValues> out;
  for (size_t r = 0; r < n; ++r) out.push_back(collect(ranks[r], graph, names[r]));
  return out;
}

}  // namespace megacut::reference
