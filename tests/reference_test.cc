// The float64 op references on cases small enough to work out by hand: what the GPU suites and
// the whole-model reference trust.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "executor/reference/op_reference.h"
#include "model/error.h"

namespace megacut::reference {
namespace {

TEST(Reference, RoundBf16IsNearestEven) {
  EXPECT_EQ(round_bf16(1.0), 1.0);
  EXPECT_EQ(round_bf16(1.0 + 1.0 / 256), 1.0);              // halfway: to even (1.0)
  EXPECT_EQ(round_bf16(1.0 + 3.0 / 256), 1.0 + 4.0 / 256);  // halfway: to even (1 + 2^-6)
  EXPECT_EQ(round_bf16(1.0 + 1.1 / 256), 1.0 + 2.0 / 256);
}

TEST(Reference, EmbeddingGathersRows) {
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};  // vocab 3, hidden 2
  EXPECT_EQ(embedding(std::vector<int32_t>{2, 0}, table, 2), (std::vector<double>{20, 21, 0, 1}));
  EXPECT_THROW(embedding(std::vector<int32_t>{3}, table, 2), Error);
}

TEST(Reference, RmsNormRoundsTheNormalizedValueThenScales) {
  // x = (3, 4): mean square 12.5, so x / rms = (0.8485.., 1.1313..), rounded to bf16 first.
  const std::vector<float> x = {3, 4};
  const std::vector<double> y = rmsnorm(x, 2, std::vector<float>{2, 0.5f}, 0.0);
  EXPECT_EQ(y[0], round_bf16(3 / std::sqrt(12.5)) * 2);
  EXPECT_EQ(y[1], round_bf16(4 / std::sqrt(12.5)) * 0.5);
  // select_stride 2 over rows (1,1), (3,4): only the second row, the last of its sequence.
  const std::vector<float> two = {1, 1, 3, 4};
  EXPECT_EQ(rmsnorm(two, 2, std::vector<float>{2, 0.5f}, 0.0, 2), y);
}

TEST(Reference, LinearIsXTimesWTransposed) {
  const std::vector<float> x = {1, 2, 3, 4};        // (2, 2)
  const std::vector<float> w = {1, 0, 0, 1, 1, 1};  // (3, 2)
  EXPECT_EQ(linear(x, w, 2), (std::vector<double>{1, 2, 3, 3, 4, 7}));
}

TEST(Reference, RopeRotatesHalvesByPositionTimesFrequency) {
  // head_dim 4, theta 100: inv_freq = (1, 0.1). One head, position 2 (past 1, row 1).
  const HeadShape shape{1, 0, 4};
  const RopeParams params{.theta = 100};
  const std::vector<float> x = {0, 0, 0, 0, 1, 2, 3, 4};  // rows 0 and 1
  const std::vector<double> y = rope(x, 4, shape, StageShape{1, 2, 1}, params);
  EXPECT_EQ(y[0], 0);
  EXPECT_NEAR(y[4], 1 * std::cos(2.0) - 3 * std::sin(2.0), 1e-12);
  EXPECT_NEAR(y[5], 2 * std::cos(0.2) - 4 * std::sin(0.2), 1e-12);
  EXPECT_NEAR(y[6], 3 * std::cos(2.0) + 1 * std::sin(2.0), 1e-12);
  EXPECT_NEAR(y[7], 4 * std::cos(0.2) + 2 * std::sin(0.2), 1e-12);
}

TEST(Reference, Llama3FrequenciesMatchTransformers) {
  // Llama-3.2-1B: theta 5e5, factor 32, low 1, high 4, original 8192, head_dim 64. High
  // frequencies (wavelength < 2048) stay, low ones (> 8192) divide by 32, and in between
  // interpolate: i = 20 has wavelength 2 pi 5e5^(40/64) = 23,275, so it is a low frequency.
  const RopeParams p{500000, true, 32, 1, 4, 8192};
  const std::vector<double> inv = rope_inv_freq(64, p);
  const auto plain = [](int i) { return 1 / std::pow(500000.0, 2.0 * i / 64); };
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_DOUBLE_EQ(inv[5], plain(5));  // wavelength 2 pi 5e5^(10/64): 49, high
  EXPECT_DOUBLE_EQ(inv[20], plain(20) / 32);
  EXPECT_DOUBLE_EQ(inv[31], plain(31) / 32);
  // i = 16: wavelength 2 pi 5e5^(1/2) = 4,443, medium: smooth = (8192 / 4443 - 1) / 3.
  const double wavelen = 2 * std::numbers::pi / plain(16);
  const double smooth = (8192 / wavelen - 1) / 3;
  EXPECT_DOUBLE_EQ(inv[16], (1 - smooth) * plain(16) / 32 + smooth * plain(16));
}

TEST(Reference, KvAppendTakesKeysFromRopeAndValuesFromQkv) {
  const HeadShape shape{2, 1, 2};                           // q 4 cols, kv 2 cols
  const std::vector<float> rope_out = {0, 0, 0, 0, 5, 6};   // (1, 6): q q q q k k
  const std::vector<float> qkv = {0, 0, 0, 0, 9, 9, 7, 8};  // (1, 8): q q q q k k v v
  EXPECT_EQ(kv_append(rope_out, qkv, shape), (std::vector<double>{5, 6, 7, 8}));
}

TEST(Reference, AttentionIsCausalGroupedAndWindowed) {
  // One sequence, two query rows at positions 1 and 2 (past 1), 2 query heads on 1 KV head,
  // head_dim 1. Cache rows: (key, value) = (0, 10), (0, 20), (0, 30): equal scores, so each
  // query averages the values it may see.
  const HeadShape shape{2, 1, 1};
  const std::vector<float> q = {1, 1, 1, 1};                       // (2 rows, 2 heads)
  const std::vector<float> cache = {0, 10, 0, 20, 0, 30, 99, 99};  // capacity 4
  const StageShape stage{1, 2, 1};
  const std::vector<double> y = attention(q, 2, cache, 4, shape, stage);
  EXPECT_DOUBLE_EQ(y[0], 15);  // positions 0, 1
  EXPECT_DOUBLE_EQ(y[1], 15);
  EXPECT_DOUBLE_EQ(y[2], 20);  // positions 0, 1, 2
  const std::vector<double> w = attention(q, 2, cache, 4, shape, stage, 1);
  EXPECT_DOUBLE_EQ(w[0], 20);  // window 1: only the query's own position
  EXPECT_DOUBLE_EQ(w[3], 30);
}

TEST(Reference, SiluMulAndResidualAdd) {
  const std::vector<float> gate_up = {1, 2, 3, 4};  // (1, 4): gate (1, 2), up (3, 4)
  const std::vector<double> y = silu_mul(gate_up, 2);
  EXPECT_DOUBLE_EQ(y[0], 1 / (1 + std::exp(-1.0)) * 3);
  EXPECT_DOUBLE_EQ(y[1], 2 / (1 + std::exp(-2.0)) * 4);
  EXPECT_EQ(residual_add(std::vector<float>{1, 2}, std::vector<float>{3, 4}),
            (std::vector<double>{4, 6}));
}

TEST(Reference, ArgmaxTakesTheFirstMaximumAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {1, 5, 5, 2, 1, nan, 3, nan};  // (2, 4)
  EXPECT_EQ(argmax(logits, 4), (std::vector<int32_t>{1, 1}));
}

}  // namespace
}  // namespace megacut::reference
