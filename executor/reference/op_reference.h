// float64 references of the decoder op kinds: each computes an op's whole output in double
// precision from float inputs (bf16 values widened), with the semantics of the tile bodies and
// of Hugging Face transformers. Plain C++ with no CUDA: they check the kernels, and chained
// (rounding each output with round_bf16) they make a whole-model reference.
//
// Conventions, as in the graph: activations are row-major (rows, cols) with rows = tokens,
// sequence-major (row = sequence * seq_len + position); weights are row-major (n, k); a KV
// cache is (batch, capacity, 2 * kv_heads * head_dim), keys then values in each row. Shapes
// are explicit arguments; a span whose size does not match them throws megacut::Error.
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

// HF RMSNorm: y = round_bf16(x * rsqrt(mean(x^2) + eps)) * w per row of x (rows_in, cols).
// With select_stride S > 1, output row r normalizes input row r*S + S-1 (rows_in / S rows out).
std::vector<double> rmsnorm(std::span<const float> x, int64_t cols, std::span<const float> weight,
                            double eps, int64_t select_stride = 1);

// y = x W^T: x (rows, k), w (n, k), y (rows, n).
std::vector<double> linear(std::span<const float> x, std::span<const float> w, int64_t k);

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

}  // namespace megacut::reference
