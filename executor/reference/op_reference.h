// float64 references of the op kinds: each computes an op's whole output in double precision
// from float inputs (bf16 values widened), with the semantics of the tile bodies and of Hugging
// Face transformers (PyTorch for the audio ops). Plain C++ with no CUDA: they check the kernels,
// and chained (rounding each output with round_bf16) they make a whole-model reference.
//
// Conventions, as in the graph: activations are row-major (rows, cols) with rows = tokens (time
// steps for the audio ops), sequence-major (row = sequence * seq_len + position), cols = hidden
// units or channels; weights are row-major (n, k) unless stated otherwise; a KV cache is (batch,
// capacity, 2 * kv_heads * head_dim), keys then values in each row. Shapes are explicit
// arguments; a span whose size does not match them throws megacut::Error.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace megacut::reference {

// The bf16 value nearest to x (round to nearest even), as a double.
double round_bf16(double x);
std::vector<float> round_bf16(std::span<const double> values);

struct HeadShape {
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads (heads is a multiple)
  int64_t head_dim = 0;
};

// Which positions a stage's query rows sit at: row t is position past_len + t % seq_len of
// sequence t / seq_len.
struct StageShape {
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t past_len = 0;
};

struct RopeParams {
  double theta = 10000.0;
  bool llama3 = false;  // Llama-3 frequency scaling with the fields below
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position = 8192.0;
};

// out[t, :] = table[ids[t], :]; table (vocab, hidden). Ids must be in [0, vocab).
std::vector<double> embedding(std::span<const int32_t> ids, std::span<const float> table,
                              int64_t hidden);

// One rank's lookup in a table sliced by vocabulary over `ranks` ranks (embedding-shard): the
// table holds ids [rank * rows, (rank + 1) * rows) of the full vocabulary of ranks * rows; other
// ids give zeros. Throws for a rank outside [0, ranks) or an id outside the full vocabulary.
std::vector<double> embedding_shard(std::span<const int32_t> ids, std::span<const float> table,
                                    int64_t hidden, int32_t rank, int64_t ranks);

// HF RMSNorm: y = round_bf16(x * rsqrt(mean(x^2) + eps)) * w per row of x (rows_in, cols).
// With select_stride S > 1, output row r normalizes input row r*S + S-1 (rows_in / S rows out).
std::vector<double> rmsnorm(std::span<const float> x, int64_t cols, std::span<const float> weight,
                            double eps, int64_t select_stride = 1);

// y = x W^T: x (rows, k), w (n, k), y (rows, n).
std::vector<double> linear(std::span<const float> x, std::span<const float> w, int64_t k);

// norm-linear: y[r, c] = rsqrt(mean(x[r]^2) + eps) * sum_k round_bf16(x[r, k] scale[k]) W[c, k]:
// the rmsnorm's row scale applied after the product, as the fused body does.
std::vector<double> norm_linear(std::span<const float> x, std::span<const float> w,
                                std::span<const float> scale, int64_t k, double eps);

// A code predictor's per-step tables and heads, stacked along rows: step s owns rows
// [s * entries, (s + 1) * entries) of tables (steps * entries, hidden) and heads (steps * entries,
// k). The step must be in [0, steps).
//
// step-embedding: out[t, :] = tables[step * entries + ids[t] % entries, :]. Ids at or above
// entries (a talker's control codes) are taken modulo entries; ids must not be negative.
std::vector<double> step_embedding(std::span<const int32_t> ids, std::span<const float> tables,
                                   int64_t entries, int64_t hidden, int32_t step);
// step-head: logits = x W_s^T with W_s rows [step * entries, (step + 1) * entries) of heads;
// x (rows, k), logits (rows, entries).
std::vector<double> step_head(std::span<const float> x, std::span<const float> heads,
                              int64_t entries, int64_t k, int32_t step);

// RMSNorm of each query and key head of qkv (rows, qkv_cols): query heads with q_norm, key
// heads with k_norm (each (head_dim)). Output (rows, (heads + kv_heads) * head_dim).
std::vector<double> qk_norm(std::span<const float> qkv, int64_t qkv_cols, const HeadShape& shape,
                            std::span<const float> q_norm, std::span<const float> k_norm,
                            double eps);

// inv_freq[i] for i < head_dim / 2: theta^(-2i/head_dim), rescaled as HF's
// _compute_llama3_parameters when params.llama3.
std::vector<double> rope_inv_freq(int64_t head_dim, const RopeParams& params);

// Rotary embedding (HF rotate_half) of the first (heads + kv_heads) * head_dim columns of x
// (rows, x_cols). Output (rows, (heads + kv_heads) * head_dim).
std::vector<double> rope(std::span<const float> x, int64_t x_cols, const HeadShape& shape,
                         const StageShape& stage, const RopeParams& params);

// The rows kv-append writes: (rows, 2 * kv_heads * head_dim), keys from rope_out (rows,
// (heads + kv_heads) * head_dim) after the query heads, values from qkv (rows, (heads + 2 *
// kv_heads) * head_dim) after queries and keys. Row t goes to cache row (t / seq_len,
// past_len + t % seq_len).
std::vector<double> kv_append(std::span<const float> rope_out, std::span<const float> qkv,
                              const HeadShape& shape);

// Grouped-query causal attention, scale 1/sqrt(head_dim): queries are the first heads *
// head_dim columns of q (rows, q_cols); keys and values come from the cache (batch, capacity,
// 2 * kv_heads * head_dim), positions [lo, pos] for a query at pos, lo = max(0, pos - window
// + 1) when window > 0, else 0. Output (rows, heads * head_dim).
std::vector<double> attention(std::span<const float> q, int64_t q_cols,
                              std::span<const float> cache, int64_t capacity,
                              const HeadShape& shape, const StageShape& stage, int64_t window = 0);

// y[r, c] = silu(gate_up[r, c]) * gate_up[r, cols + c]; gate_up (rows, 2 * cols).
std::vector<double> silu_mul(std::span<const float> gate_up, int64_t cols);

// y = a + b.
std::vector<double> residual_add(std::span<const float> a, std::span<const float> b);

// First index of the largest value of each row of logits (rows, vocab); NaN counts as largest.
std::vector<int32_t> argmax(std::span<const float> logits, int64_t vocab);

// Audio decoding ops (codec decoder and vocoder). Each sequence is len time steps; the
// convolutions run over time within a sequence and never across sequences.

struct Conv1dShape {
  int64_t batch = 0;
  int64_t len = 0;  // rows (time steps) per sequence
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel = 0;
  int64_t dilation = 1;
  int64_t groups = 1;     // divides both channel counts; groups = in = out is depthwise
  int64_t lookahead = 0;  // future rows each output sees, 0 (causal) to (kernel - 1) * dilation
};

struct ConvTranspose1dShape {
  int64_t batch = 0;
  int64_t len = 0;  // input rows per sequence; each gives stride output rows
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel = 0;  // at least stride
  int64_t stride = 1;
};

// Dilated convolution over time of x (batch * len, in_channels) with a look-ahead, K = kernel,
// D = dilation, L = lookahead, I = in_channels / groups, and g = o / (out_channels / groups) the
// group of o:
//   y[t, o] = bias[o] + sum_{i < I, j < K} W[o, i, j] * x[t - (K - 1 - j) * D + L, g * I + i]
// with x = 0 at a time outside the sequence's rows: row t sees rows t - (K - 1) * D + L .. t + L
// of its own sequence. This is PyTorch's Conv1d on F.pad(x, ((K - 1) * D - L, L)) per sequence:
// L = 0 is causal (left padding only), L = (K - 1) * D / 2 the centred "same" padding. Weight in
// Conv1d layout (out_channels, I, K); bias (out_channels), or empty for none. Output (batch *
// len, out_channels). Throws unless 0 <= L <= (K - 1) * D.
std::vector<double> conv1d(std::span<const float> x, std::span<const float> weight,
                           std::span<const float> bias, const Conv1dShape& shape);

// Causal transposed convolution over time (upsampling by S = stride) of x (batch * len,
// in_channels), K = kernel >= S, groups 1. The full transposed convolution of a sequence,
//   z[t, o] = sum_c sum over (i, j) with i * S + j = t, i < len, j < K of x[i, c] * W[c, o, j],
// has (len - 1) * S + K rows; its last K - S are trimmed, leaving len * S rows, and y[t, o] =
// bias[o] + z[t, o]. Row t depends only on inputs i <= t / S. This is PyTorch's
// ConvTranspose1d (padding 0) with the last K - S outputs of each sequence dropped. Weight in
// ConvTranspose1d layout (in_channels, out_channels, K); bias (out_channels), or empty for
// none. Output (batch * len * S, out_channels).
std::vector<double> conv_transpose1d(std::span<const float> x, std::span<const float> weight,
                                     std::span<const float> bias,
                                     const ConvTranspose1dShape& shape);

// BigVGAN SnakeBeta with log-scale parameters, per channel c of x (rows, channels):
// y = x + 1 / (exp(beta_log[c]) + 1e-9) * sin(exp(alpha_log[c]) * x)^2; alpha_log and beta_log
// (channels).
std::vector<double> snake_beta(std::span<const float> x, std::span<const float> alpha_log,
                               std::span<const float> beta_log, int64_t channels);

// y = x >= 0 ? x : slope * x, element-wise.
std::vector<double> leaky_relu(std::span<const float> x, double slope);

// y = tanh(x), element-wise.
std::vector<double> tanh_activation(std::span<const float> x);

// y = x (1 + erf(x / sqrt 2)) / 2 (exact GELU), element-wise.
std::vector<double> gelu(std::span<const float> x);

// y = (a + b) * scale, element-wise.
std::vector<double> add_scaled(std::span<const float> a, std::span<const float> b, double scale);

// Sum of one embedding per codebook: codes (rows, codebooks), tables (codebooks * entries, dim)
// with codebook q's table in rows [q * entries, (q + 1) * entries);
// y[r, :] = sum_q tables[q * entries + codes[r, q], :]. Codes must be in [0, entries).
std::vector<double> codebook_sum(std::span<const int32_t> codes, std::span<const float> tables,
                                 int64_t codebooks, int64_t entries, int64_t dim);

}  // namespace megacut::reference
