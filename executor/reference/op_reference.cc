#include "executor/reference/op_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "executor/bf16.h"
#include "model/error.h"

namespace megacut::reference {
namespace {

int64_t rows_of(std::span<const float> values, int64_t cols, const char* what) {
  if (cols <= 0 || values.size() % cols != 0) {
    throw Error(std::string("reference: ") + what + " has " + std::to_string(values.size()) +
                " values, not a multiple of " + std::to_string(cols) + " columns");
  }
  return static_cast<int64_t>(values.size()) / cols;
}

void expect_size(std::span<const float> values, int64_t size, const char* what) {
  if (static_cast<int64_t>(values.size()) != size) {
    throw Error(std::string("reference: ") + what + " has " + std::to_string(values.size()) +
                " values, expected " + std::to_string(size));
  }
}

void expect_positive(int64_t value, const char* op, const char* field) {
  if (value <= 0) {
    throw Error(std::string("reference: ") + op + " " + field + " is " + std::to_string(value) +
                ", not positive");
  }
}

// The fields both convolution shapes have, each positive.
template <class Shape>
void expect_conv_shape(const Shape& s, const char* op) {
  expect_positive(s.batch, op, "batch");
  expect_positive(s.len, op, "len");
  expect_positive(s.in_channels, op, "in_channels");
  expect_positive(s.out_channels, op, "out_channels");
  expect_positive(s.kernel, op, "kernel");
}

// A bias is optional: empty, or one value per output channel.
void expect_bias(std::span<const float> bias, int64_t channels, const char* op) {
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != channels) {
    throw Error(std::string("reference: ") + op + " bias has " + std::to_string(bias.size()) +
                " values, expected " + std::to_string(channels) + " or none");
  }
}

double bias_of(std::span<const float> bias, int64_t channel) {
  return bias.empty() ? 0.0 : double(bias[channel]);
}

// Rows [step * entries, (step + 1) * entries) of `stacked` (steps * entries, cols).
std::span<const float> step_rows(std::span<const float> stacked, int64_t entries, int64_t cols,
                                 int32_t step, const char* op) {
  const int64_t rows = rows_of(stacked, cols, op);
  if (rows % entries != 0) {
    throw Error(std::string("reference: ") + op + " has " + std::to_string(rows) +
                " rows, not whole steps of " + std::to_string(entries) + " entries");
  }
  if (step < 0 || step >= rows / entries) {
    throw Error(std::string("reference: ") + op + " step " + std::to_string(step) +
                " outside [0, " + std::to_string(rows / entries) + ")");
  }
  return stacked.subspan(step * entries * cols, entries * cols);
}

// HF RMSNorm of one vector: the normalized value is cast to bf16 before the weight multiplies.
void rms_normalize(const float* x, const float* w, int64_t n, double eps, double* y) {
  double sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) sum_sq += double(x[i]) * x[i];
  const double inv_rms = 1.0 / std::sqrt(sum_sq / n + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = round_bf16(x[i] * inv_rms) * w[i];
}

}  // namespace

double round_bf16(double x) { return executor::round_to_bf16(static_cast<float>(x)); }

std::vector<float> round_bf16(std::span<const double> values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(round_bf16(values[i]));
  return out;
}

std::vector<double> embedding(std::span<const int32_t> ids, std::span<const float> table,
                              int64_t hidden) {
  const int64_t vocab = rows_of(table, hidden, "embedding table");
  std::vector<double> out(ids.size() * hidden);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      throw Error("reference: token id " + std::to_string(ids[t]) + " outside [0, " +
                  std::to_string(vocab) + ")");
    }
    std::copy_n(table.begin() + ids[t] * hidden, hidden, out.begin() + t * hidden);
  }
  return out;
}

std::vector<double> embedding_shard(std::span<const int32_t> ids, std::span<const float> table,
                                    int64_t hidden, int32_t rank, int64_t ranks) {
  const int64_t rows = rows_of(table, hidden, "embedding table");
  if (rank < 0 || rank >= ranks) {
    throw Error("reference: rank " + std::to_string(rank) + " outside [0, " +
                std::to_string(ranks) + ")");
  }
  std::vector<double> out(ids.size() * hidden, 0.0);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= rows * ranks) {
      throw Error("reference: token id " + std::to_string(ids[t]) + " outside [0, " +
                  std::to_string(rows * ranks) + ")");
    }
    const int64_t row = ids[t] - rank * rows;
    if (row >= 0 && row < rows) {
      std::copy_n(table.begin() + row * hidden, hidden, out.begin() + t * hidden);
    }
  }
  return out;
}

std::vector<double> rmsnorm(std::span<const float> x, int64_t cols, std::span<const float> weight,
                            double eps, int64_t select_stride) {
  const int64_t rows_in = rows_of(x, cols, "rmsnorm input");
  expect_size(weight, cols, "rmsnorm weight");
  const int64_t rows = rows_in / select_stride;
  std::vector<double> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t in_row = r * select_stride + select_stride - 1;
    rms_normalize(&x[in_row * cols], weight.data(), cols, eps, &out[r * cols]);
  }
  return out;
}

std::vector<double> linear(std::span<const float> x, std::span<const float> w, int64_t k) {
  const int64_t rows = rows_of(x, k, "linear input");
  const int64_t n = rows_of(w, k, "linear weight");
  std::vector<double> y(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = &x[r * k];
    for (int64_t c = 0; c < n; ++c) {
      const float* wc = &w[c * k];
      double sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += double(xr[i]) * wc[i];
      y[r * n + c] = sum;
    }
  }
  return y;
}

std::vector<double> norm_linear(std::span<const float> x, std::span<const float> w,
                                std::span<const float> scale, int64_t k, double eps) {
  const int64_t rows = rows_of(x, k, "norm-linear input");
  expect_size(scale, k, "norm-linear scale");
  std::vector<double> scaled(x.size());
  for (size_t i = 0; i < x.size(); ++i) scaled[i] = double(x[i]) * scale[i % k];
  std::vector<double> y = linear(round_bf16(scaled), w, k);
  const int64_t n = static_cast<int64_t>(y.size()) / std::max<int64_t>(rows, 1);
  for (int64_t r = 0; r < rows; ++r) {
    double sum_sq = 0;
    for (int64_t i = 0; i < k; ++i) sum_sq += double(x[r * k + i]) * x[r * k + i];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / k + eps);
    for (int64_t c = 0; c < n; ++c) y[r * n + c] *= inv_rms;
  }
  return y;
}

std::vector<double> step_embedding(std::span<const int32_t> ids, std::span<const float> tables,
                                   int64_t entries, int64_t hidden, int32_t step) {
  expect_positive(entries, "step_embedding", "entries");
  const std::span<const float> table = step_rows(tables, entries, hidden, step, "step_embedding");
  std::vector<double> out(ids.size() * hidden);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0) {
      throw Error("reference: step_embedding id " + std::to_string(ids[t]) + " is negative");
    }
    std::copy_n(table.begin() + ids[t] % entries * hidden, hidden, out.begin() + t * hidden);
  }
  return out;
}

std::vector<double> step_head(std::span<const float> x, std::span<const float> heads,
                              int64_t entries, int64_t k, int32_t step) {
  expect_positive(entries, "step_head", "entries");
  return linear(x, step_rows(heads, entries, k, step, "step_head"), k);
}

std::vector<double> qk_norm(std::span<const float> qkv, int64_t qkv_cols, const HeadShape& s,
                            std::span<const float> q_norm, std::span<const float> k_norm,
                            double eps) {
  const int64_t rows = rows_of(qkv, qkv_cols, "qk-norm input");
  expect_size(q_norm, s.head_dim, "q_norm weight");
  expect_size(k_norm, s.head_dim, "k_norm weight");
  const int64_t heads = s.heads + s.kv_heads, out_cols = heads * s.head_dim;
  std::vector<double> out(rows * out_cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* w = h < s.heads ? q_norm.data() : k_norm.data();
      rms_normalize(&qkv[r * qkv_cols + h * s.head_dim], w, s.head_dim, eps,
                    &out[r * out_cols + h * s.head_dim]);
    }
  }
  return out;
}

std::vector<double> rope_inv_freq(int64_t head_dim, const RopeParams& p) {
  std::vector<double> inv(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    inv[i] = 1.0 / std::pow(p.theta, double(2 * i) / double(head_dim));
    if (!p.llama3) continue;
    // transformers' _compute_llama3_parameters, element by element.
    const double low_freq_wavelen = p.original_max_position / p.low_freq_factor;
    const double high_freq_wavelen = p.original_max_position / p.high_freq_factor;
    const double wavelen = 2 * std::numbers::pi / inv[i];
    const double scaled = wavelen > low_freq_wavelen ? inv[i] / p.factor : inv[i];
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const double smooth = (p.original_max_position / wavelen - p.low_freq_factor) /
                            (p.high_freq_factor - p.low_freq_factor);
      inv[i] = (1 - smooth) * scaled / p.factor + smooth * scaled;
    } else {
      inv[i] = scaled;
    }
  }
  return inv;
}

std::vector<double> rope(std::span<const float> x, int64_t x_cols, const HeadShape& s,
                         const StageShape& stage, const RopeParams& params) {
  const int64_t rows = rows_of(x, x_cols, "rope input");
  const int64_t out_cols = (s.heads + s.kv_heads) * s.head_dim, half = s.head_dim / 2;
  const std::vector<double> inv = rope_inv_freq(s.head_dim, params);
  std::vector<double> out(rows * out_cols);
  for (int64_t r = 0; r < rows; ++r) {
    const double pos = double(stage.past_len + r % stage.seq_len);
    for (int64_t h = 0; h < s.heads + s.kv_heads; ++h) {
      const float* in = &x[r * x_cols + h * s.head_dim];
      double* y = &out[r * out_cols + h * s.head_dim];
      for (int64_t i = 0; i < half; ++i) {
        const double c = std::cos(pos * inv[i]), sn = std::sin(pos * inv[i]);
        y[i] = in[i] * c - in[i + half] * sn;
        y[i + half] = in[i + half] * c + in[i] * sn;
      }
    }
  }
  return out;
}

std::vector<double> kv_append(std::span<const float> rope_out, std::span<const float> qkv,
                              const HeadShape& s) {
  const int64_t q_cols = s.heads * s.head_dim, kv_cols = s.kv_heads * s.head_dim;
  const int64_t rope_cols = q_cols + kv_cols, qkv_cols = q_cols + 2 * kv_cols;
  const int64_t rows = rows_of(rope_out, rope_cols, "kv-append keys");
  expect_size(qkv, rows * qkv_cols, "kv-append values");
  std::vector<double> out(rows * 2 * kv_cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < kv_cols; ++c) {
      out[r * 2 * kv_cols + c] = rope_out[r * rope_cols + q_cols + c];
      out[r * 2 * kv_cols + kv_cols + c] = qkv[r * qkv_cols + q_cols + kv_cols + c];
    }
  }
  return out;
}

std::vector<double> attention(std::span<const float> q, int64_t q_cols,
                              std::span<const float> cache, int64_t capacity, const HeadShape& s,
                              const StageShape& stage, int64_t window) {
  const int64_t rows = rows_of(q, q_cols, "attention queries");
  const int64_t kv_cols = s.kv_heads * s.head_dim, group = s.heads / s.kv_heads;
  expect_size(cache, stage.batch * capacity * 2 * kv_cols, "attention KV cache");
  const int64_t out_cols = s.heads * s.head_dim;
  const double scale = 1.0 / std::sqrt(double(s.head_dim));
  std::vector<double> out(rows * out_cols), scores;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t seq = r / stage.seq_len, pos = stage.past_len + r % stage.seq_len;
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    const float* base = &cache[seq * capacity * 2 * kv_cols];
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kv_head = h / group;
      const float* query = &q[r * q_cols + h * s.head_dim];
      scores.assign(pos - lo + 1, 0.0);
      double max_score = -std::numeric_limits<double>::infinity();
      for (int64_t j = lo; j <= pos; ++j) {
        const float* key = base + j * 2 * kv_cols + kv_head * s.head_dim;
        double dot = 0;
        for (int64_t d = 0; d < s.head_dim; ++d) dot += double(query[d]) * key[d];
        scores[j - lo] = dot * scale;
        max_score = std::max(max_score, scores[j - lo]);
      }
      double total = 0;
      for (double& score : scores) total += (score = std::exp(score - max_score));
      double* y = &out[r * out_cols + h * s.head_dim];
      for (int64_t j = lo; j <= pos; ++j) {
        const float* value = base + j * 2 * kv_cols + kv_cols + kv_head * s.head_dim;
        const double p = scores[j - lo] / total;
        for (int64_t d = 0; d < s.head_dim; ++d) y[d] += p * value[d];
      }
    }
  }
  return out;
}

std::vector<double> silu_mul(std::span<const float> gate_up, int64_t cols) {
  const int64_t rows = rows_of(gate_up, 2 * cols, "silu-mul input");
  std::vector<double> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double g = gate_up[r * 2 * cols + c], u = gate_up[r * 2 * cols + cols + c];
      out[r * cols + c] = g / (1 + std::exp(-g)) * u;
    }
  }
  return out;
}

std::vector<double> residual_add(std::span<const float> a, std::span<const float> b) {
  expect_size(b, static_cast<int64_t>(a.size()), "residual-add second input");
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = double(a[i]) + b[i];
  return out;
}

std::vector<int32_t> argmax(std::span<const float> logits, int64_t vocab) {
  const int64_t rows = rows_of(logits, vocab, "argmax input");
  std::vector<int32_t> out(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &logits[r * vocab];
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i) {
      if (std::isnan(row[best])) break;
      if (std::isnan(row[i]) || row[i] > row[best]) best = i;
    }
    out[r] = static_cast<int32_t>(best);
  }
  return out;
}

std::vector<double> conv1d(std::span<const float> x, std::span<const float> weight,
                           std::span<const float> bias, const Conv1dShape& s) {
  constexpr const char* op = "conv1d";
  expect_conv_shape(s, op);
  expect_positive(s.dilation, op, "dilation");
  expect_positive(s.groups, op, "groups");
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0) {
    throw Error("reference: conv1d groups " + std::to_string(s.groups) +
                " does not divide in_channels " + std::to_string(s.in_channels) +
                " and out_channels " + std::to_string(s.out_channels));
  }
  const int64_t reach = (s.kernel - 1) * s.dilation;
  if (s.lookahead < 0 || s.lookahead > reach) {
    throw Error("reference: conv1d lookahead " + std::to_string(s.lookahead) +
                " is outside [0, (kernel - 1) * dilation = " + std::to_string(reach) + "]");
  }
  const int64_t group_in = s.in_channels / s.groups, group_out = s.out_channels / s.groups;
  const int64_t k = s.kernel;
  expect_size(x, s.batch * s.len * s.in_channels, "conv1d input");
  expect_size(weight, s.out_channels * group_in * k, "conv1d weight");
  expect_bias(bias, s.out_channels, op);
  std::vector<double> out(s.batch * s.len * s.out_channels);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t t = 0; t < s.len; ++t) {
      double* y = &out[(b * s.len + t) * s.out_channels];
      for (int64_t o = 0; o < s.out_channels; ++o) {
        const int64_t first_in = o / group_out * group_in;
        double sum = bias_of(bias, o);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = t - (k - 1 - j) * s.dilation + s.lookahead;
          if (src < 0 || src >= s.len) continue;  // the padding
          const float* xr = &x[(b * s.len + src) * s.in_channels + first_in];
          const float* wo = &weight[o * group_in * k + j];  // W[o, :, j], stride k
          for (int64_t i = 0; i < group_in; ++i) sum += double(wo[i * k]) * xr[i];
        }
        y[o] = sum;
      }
    }
  }
  return out;
}

std::vector<double> conv_transpose1d(std::span<const float> x, std::span<const float> weight,
                                     std::span<const float> bias, const ConvTranspose1dShape& s) {
  constexpr const char* op = "conv_transpose1d";
  expect_conv_shape(s, op);
  expect_positive(s.stride, op, "stride");
  if (s.kernel < s.stride) {
    throw Error("reference: conv_transpose1d kernel " + std::to_string(s.kernel) +
                " is less than stride " + std::to_string(s.stride));
  }
  const int64_t k = s.kernel, stride = s.stride, out_len = s.len * stride;
  expect_size(x, s.batch * s.len * s.in_channels, "conv_transpose1d input");
  expect_size(weight, s.in_channels * s.out_channels * k, "conv_transpose1d weight");
  expect_bias(bias, s.out_channels, op);
  std::vector<double> out(s.batch * out_len * s.out_channels);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t t = 0; t < out_len; ++t) {
      double* y = &out[(b * out_len + t) * s.out_channels];
      for (int64_t o = 0; o < s.out_channels; ++o) {
        double sum = bias_of(bias, o);
        // Taps j = t - i * S for the inputs i whose span [i * S, i * S + K) holds t.
        for (int64_t j = t % stride; j < k && j <= t; j += stride) {
          const float* xr = &x[(b * s.len + (t - j) / stride) * s.in_channels];
          for (int64_t c = 0; c < s.in_channels; ++c) {
            sum += double(xr[c]) * weight[(c * s.out_channels + o) * k + j];
          }
        }
        y[o] = sum;
      }
    }
  }
  return out;
}

std::vector<double> snake_beta(std::span<const float> x, std::span<const float> alpha_log,
                               std::span<const float> beta_log, int64_t channels) {
  const int64_t rows = rows_of(x, channels, "snake_beta input");
  expect_size(alpha_log, channels, "snake_beta alpha_log");
  expect_size(beta_log, channels, "snake_beta beta_log");
  std::vector<double> out(rows * channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double alpha = std::exp(double(alpha_log[c]));
    const double inv_beta = 1.0 / (std::exp(double(beta_log[c])) + 1e-9);
    for (int64_t r = 0; r < rows; ++r) {
      const double v = x[r * channels + c], sn = std::sin(alpha * v);
      out[r * channels + c] = v + inv_beta * sn * sn;
    }
  }
  return out;
}

std::vector<double> leaky_relu(std::span<const float> x, double slope) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] >= 0 ? double(x[i]) : slope * x[i];
  return out;
}

std::vector<double> tanh_activation(std::span<const float> x) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = std::tanh(double(x[i]));
  return out;
}

std::vector<double> gelu(std::span<const float> x) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    out[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  }
  return out;
}

std::vector<double> add_scaled(std::span<const float> a, std::span<const float> b, double scale) {
  expect_size(b, static_cast<int64_t>(a.size()), "add_scaled second input");
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = (double(a[i]) + b[i]) * scale;
  return out;
}

std::vector<double> codebook_sum(std::span<const int32_t> codes, std::span<const float> tables,
                                 int64_t codebooks, int64_t entries, int64_t dim) {
  expect_positive(codebooks, "codebook_sum", "codebooks");
  expect_positive(entries, "codebook_sum", "entries");
  expect_positive(dim, "codebook_sum", "dim");
  if (codes.size() % codebooks != 0) {
    throw Error("reference: codebook_sum codes has " + std::to_string(codes.size()) +
                " values, not a multiple of " + std::to_string(codebooks) + " codebooks");
  }
  expect_size(tables, codebooks * entries * dim, "codebook_sum tables");
  const int64_t rows = static_cast<int64_t>(codes.size()) / codebooks;
  std::vector<double> out(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    double* y = &out[r * dim];
    for (int64_t q = 0; q < codebooks; ++q) {
      const int32_t code = codes[r * codebooks + q];
      if (code < 0 || code >= entries) {
        throw Error("reference: codebook_sum row " + std::to_string(r) + " codebook " +
                    std::to_string(q) + ": code " + std::to_string(code) + " outside [0, " +
                    std::to_string(entries) + ")");
      }
      const float* e = &tables[(q * entries + code) * dim];
      for (int64_t d = 0; d < dim; ++d) y[d] += e[d];
    }
  }
  return out;
}

}  // namespace megacut::reference
