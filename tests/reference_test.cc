// The float64 op references on cases small enough to work out by hand: what the GPU suites and
// the whole-model reference trust.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "executor/reference/op_reference.h"
#include "model/error.h"
#include "tests/support/error_of.h"

namespace megacut::reference {
namespace {

using megacut::testing::error_of;

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

TEST(Reference, StepEmbeddingGathersFromTheStepsTableModuloEntries) {
  // 3 steps of 2 entries, hidden 2: step s, entry e is (10 s + e, -(10 s + e)).
  const std::vector<float> tables = {0, 0, 1, -1, 10, -10, 11, -11, 20, -20, 21, -21};
  EXPECT_EQ(step_embedding(std::vector<int32_t>{1, 0}, tables, 2, 2, 0),
            (std::vector<double>{1, -1, 0, 0}));
  // Step 2's table; ids 5 and 4 are control codes past the 2 entries: 5 % 2 = 1, 4 % 2 = 0.
  EXPECT_EQ(step_embedding(std::vector<int32_t>{0, 5, 4}, tables, 2, 2, 2),
            (std::vector<double>{20, -20, 21, -21, 20, -20}));
  EXPECT_THROW(step_embedding(std::vector<int32_t>{0}, tables, 2, 2, 3), Error);  // no step 3
  EXPECT_THROW(step_embedding(std::vector<int32_t>{0}, tables, 2, 2, -1), Error);
  EXPECT_THROW(step_embedding(std::vector<int32_t>{-1}, tables, 2, 2, 0), Error);
  EXPECT_THROW(step_embedding(std::vector<int32_t>{0}, tables, 4, 2, 0), Error);  // 6 rows
}

TEST(Reference, StepHeadMultipliesByTheStepsRows) {
  const std::vector<float> x = {1, 2, 3, 4};  // (2, 2)
  // 2 steps of 3 entries, k 2: step 0 is the identity and a sum, step 1 their negations.
  const std::vector<float> heads = {1, 0, 0, 1, 1, 1, -1, 0, 0, -1, -1, -1};
  EXPECT_EQ(step_head(x, heads, 3, 2, 0), (std::vector<double>{1, 2, 3, 3, 4, 7}));
  EXPECT_EQ(step_head(x, heads, 3, 2, 1), (std::vector<double>{-1, -2, -3, -3, -4, -7}));
  try {
    step_head(x, heads, 3, 2, 2);
    ADD_FAILURE() << "step 2 of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "reference: step_head step 2 outside [0, 2)");
  }
  EXPECT_THROW(step_head(x, heads, 4, 2, 0), Error);  // 6 rows are not whole steps of 4
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

std::vector<float> random_values(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Reference, CausalConv1dPadsOnTheLeftAndNeverLooksAhead) {
  // K 2, D 2, one channel, W = (1, 10), bias 0.5: tap j = 0 reads x[t - 2], tap j = 1 reads
  // x[t], so y[t] = 0.5 + x[t - 2] + 10 x[t]. Two sequences (1, 2, 3) and (4, 5, 6):
  //   sequence 0: 0.5 + 10 = 10.5, 0.5 + 20 = 20.5, 0.5 + 1 + 30 = 31.5
  //   sequence 1: 0.5 + 40 = 40.5, 0.5 + 50 = 50.5, 0.5 + 4 + 60 = 64.5
  // (rows 0 and 1 of sequence 1 see zeros, not the end of sequence 0).
  const Conv1dShape shape{
      .batch = 2, .len = 3, .in_channels = 1, .out_channels = 1, .kernel = 2, .dilation = 2};
  const std::vector<float> w = {1, 10}, bias = {0.5f};
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(conv1d(x, w, bias, shape), (std::vector<double>{10.5, 20.5, 31.5, 40.5, 50.5, 64.5}));
  // A later input never reaches an earlier output: x[2] = 100 changes only y[2] (0.5 + 1 + 1000).
  x[2] = 100;
  EXPECT_EQ(conv1d(x, w, bias, shape), (std::vector<double>{10.5, 20.5, 1001.5, 40.5, 50.5, 64.5}));
}

TEST(Reference, Conv1dDepthwiseAndFull) {
  // K 2, D 1, two channels, x rows (1, 2), (3, 4); y[t, o] = sum_i W[o, i, 0] x[t - 1, i] +
  // W[o, i, 1] x[t, i] over the input channels i of o's group.
  const std::vector<float> x = {1, 2, 3, 4};
  // Depthwise (groups 2), W[o, 0, :] = (1, 2) and (3, 4): channel o sees only channel o.
  //   t 0: 2 * 1 = 2,          4 * 2 = 8
  //   t 1: 1 * 1 + 2 * 3 = 7,  3 * 2 + 4 * 4 = 22
  const Conv1dShape depthwise{
      .batch = 1, .len = 2, .in_channels = 2, .out_channels = 2, .kernel = 2, .groups = 2};
  EXPECT_EQ(conv1d(x, std::vector<float>{1, 2, 3, 4}, {}, depthwise),
            (std::vector<double>{2, 8, 7, 22}));
  // Full (groups 1), W[0] = ((1, 2), (0, 1)), W[1] = ((1, 0), (3, 4)):
  //   t 0: 2 * 1 + 1 * 2 = 4,                      0 * 1 + 4 * 2 = 8
  //   t 1: (1 * 1 + 0 * 2) + (2 * 3 + 1 * 4) = 11,  (1 * 1 + 3 * 2) + (0 * 3 + 4 * 4) = 23
  Conv1dShape full = depthwise;
  full.groups = 1;
  EXPECT_EQ(conv1d(x, std::vector<float>{1, 2, 0, 1, 1, 0, 3, 4}, {}, full),
            (std::vector<double>{4, 8, 11, 23}));
}

TEST(Reference, Conv1dRejectsMismatchedSizes) {
  const Conv1dShape shape{.batch = 1, .len = 2, .in_channels = 2, .out_channels = 2, .kernel = 2};
  const std::vector<float> x(4), w(8);
  // Weight (2, 2, 2) has 8 values; 6 names the function and both sizes.
  EXPECT_EQ(error_of([&] { conv1d(x, std::vector<float>(6), {}, shape); }),
            "reference: conv1d weight has 6 values, expected 8");
  EXPECT_THROW(conv1d(std::vector<float>(5), w, {}, shape), Error);
  EXPECT_THROW(conv1d(x, w, std::vector<float>(3), shape), Error);  // bias
  Conv1dShape odd_groups = shape;
  odd_groups.groups = 3;
  EXPECT_THROW(conv1d(x, w, {}, odd_groups), Error);
  Conv1dShape no_kernel = shape;
  no_kernel.kernel = 0;
  EXPECT_THROW(conv1d(x, w, {}, no_kernel), Error);
  // K 2, D 1: the look-ahead may be 0 or 1, nothing else.
  Conv1dShape too_far = shape;
  too_far.lookahead = 2;
  EXPECT_EQ(error_of([&] { conv1d(x, w, {}, too_far); }),
            "reference: conv1d lookahead 2 is outside [0, (kernel - 1) * dilation = 1]");
  too_far.lookahead = -1;
  EXPECT_THROW(conv1d(x, w, {}, too_far), Error);
}

TEST(Reference, CentredConv1dPadsBothSidesWithinEachSequence) {
  // K 3, D 1, lookahead 1 ("same" padding), one channel, W = (1, 10, 100), bias 0.5: taps read
  // x[t - 1], x[t], x[t + 1], so y[t] = 0.5 + x[t - 1] + 10 x[t] + 100 x[t + 1]. Two sequences
  // (1, 2, 3) and (4, 5, 6), zeros past either end of each:
  //   sequence 0: 0.5 + 0 + 10 + 200 = 210.5, 0.5 + 1 + 20 + 300 = 321.5, 0.5 + 2 + 30 + 0 = 32.5
  //   sequence 1: 0.5 + 0 + 40 + 500 = 540.5, 0.5 + 4 + 50 + 600 = 654.5, 0.5 + 5 + 60 + 0 = 65.5
  const Conv1dShape shape{.batch = 2,
                          .len = 3,
                          .in_channels = 1,
                          .out_channels = 1,
                          .kernel = 3,
                          .dilation = 1,
                          .lookahead = 1};
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {1, 10, 100}, bias = {0.5f};
  EXPECT_EQ(conv1d(x, w, bias, shape),
            (std::vector<double>{210.5, 321.5, 32.5, 540.5, 654.5, 65.5}));
  // D 2, lookahead 2 over one sequence 1..5: taps read x[t - 2], x[t], x[t + 2]:
  //   t 0: 0 + 10 + 300 = 310; t 1: 0 + 20 + 400 = 420; t 2: 1 + 30 + 500 = 531;
  //   t 3: 2 + 40 + 0 = 42; t 4: 3 + 50 + 0 = 53.
  const Conv1dShape dilated{.batch = 1,
                            .len = 5,
                            .in_channels = 1,
                            .out_channels = 1,
                            .kernel = 3,
                            .dilation = 2,
                            .lookahead = 2};
  EXPECT_EQ(conv1d(std::vector<float>{1, 2, 3, 4, 5}, w, {}, dilated),
            (std::vector<double>{310, 420, 531, 42, 53}));
  // The whole reach ahead (K 2, lookahead 1): y[t] = x[t] + 10 x[t + 1], W = (1, 10).
  const Conv1dShape ahead{.batch = 1,
                          .len = 3,
                          .in_channels = 1,
                          .out_channels = 1,
                          .kernel = 2,
                          .dilation = 1,
                          .lookahead = 1};
  EXPECT_EQ(conv1d(std::vector<float>{1, 2, 3}, std::vector<float>{1, 10}, {}, ahead),
            (std::vector<double>{21, 32, 3}));
}

TEST(Reference, ConvTransposeAddsOverlapsAndTrimsTheTail) {
  // S 2, K 4, one channel, W = (1, 10, 100, 1000), x = (1, 2, 3): input i adds x[i] W to rows
  // 2i .. 2i + 3 of the full output ((3 - 1) * 2 + 4 = 8 rows):
  //   i 0: rows 0-3 += 1, 10, 100, 1000
  //   i 1: rows 2-5 += 2, 20, 200, 2000
  //   i 2: rows 4-7 += 3, 30, 300, 3000
  //   full: 1, 10, 102, 1020, 203, 2030, 300, 3000
  // The last K - S = 2 rows (300, 3000) are trimmed, leaving 3 * 2 = 6; bias 0.5 on each.
  const ConvTranspose1dShape shape{
      .batch = 1, .len = 3, .in_channels = 1, .out_channels = 1, .kernel = 4, .stride = 2};
  const std::vector<float> x = {1, 2, 3}, w = {1, 10, 100, 1000};
  EXPECT_EQ(conv_transpose1d(x, w, {}, shape), (std::vector<double>{1, 10, 102, 1020, 203, 2030}));
  EXPECT_EQ(conv_transpose1d(x, w, std::vector<float>{0.5f}, shape),
            (std::vector<double>{1.5, 10.5, 102.5, 1020.5, 203.5, 2030.5}));
  // Two input channels into one output, W[c, 0, :] = (1, 1, 1, 1) and (2, 2, 2, 2), one input
  // row (1, 10): both outputs 1 * 1 + 10 * 2 = 21.
  const ConvTranspose1dShape two{
      .batch = 1, .len = 1, .in_channels = 2, .out_channels = 1, .kernel = 4, .stride = 2};
  EXPECT_EQ(conv_transpose1d(std::vector<float>{1, 10}, std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2},
                             {}, two),
            (std::vector<double>{21, 21}));
}

TEST(Reference, ConvTransposeRejectsMismatchedSizes) {
  const ConvTranspose1dShape shape{
      .batch = 1, .len = 3, .in_channels = 1, .out_channels = 1, .kernel = 4, .stride = 2};
  const std::vector<float> x(3), w(4);
  EXPECT_EQ(error_of([&] { conv_transpose1d(x, std::vector<float>(3), {}, shape); }),
            "reference: conv_transpose1d weight has 3 values, expected 4");
  EXPECT_THROW(conv_transpose1d(std::vector<float>(4), w, {}, shape), Error);
  ConvTranspose1dShape short_kernel = shape;
  short_kernel.kernel = 1;  // K < S would leave rows no input reaches
  EXPECT_THROW(conv_transpose1d(x, std::vector<float>(1), {}, short_kernel), Error);
}

// The same convolution another way: pad each sequence with (K - 1) * D - L zero rows before it
// and L after it, lay the receptive field of each output row out as one im2col row of (I, K)
// values, and multiply by each output channel's (I, K) weight block.
std::vector<double> im2col_conv(const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& bias, const Conv1dShape& s) {
  const int64_t reach = (s.kernel - 1) * s.dilation, left = reach - s.lookahead;
  const int64_t group_in = s.in_channels / s.groups;
  const int64_t group_out = s.out_channels / s.groups, block = group_in * s.kernel;
  std::vector<double> y(s.batch * s.len * s.out_channels);
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<double> padded((reach + s.len) * s.in_channels, 0.0);  // (reach + len, in)
    for (int64_t t = 0; t < s.len * s.in_channels; ++t) {
      padded[left * s.in_channels + t] = x[b * s.len * s.in_channels + t];
    }
    for (int64_t g = 0; g < s.groups; ++g) {
      std::vector<double> cols(s.len * block);  // (len, I * K)
      for (int64_t t = 0; t < s.len; ++t) {
        for (int64_t i = 0; i < group_in; ++i) {
          for (int64_t j = 0; j < s.kernel; ++j) {
            cols[t * block + i * s.kernel + j] =
                padded[(t + j * s.dilation) * s.in_channels + g * group_in + i];
          }
        }
      }
      for (int64_t t = 0; t < s.len; ++t) {
        for (int64_t o = g * group_out; o < (g + 1) * group_out; ++o) {
          double sum = bias[o];
          for (int64_t e = 0; e < block; ++e) sum += cols[t * block + e] * w[o * block + e];
          y[(b * s.len + t) * s.out_channels + o] = sum;
        }
      }
    }
  }
  return y;
}

TEST(Reference, Conv1dMatchesIm2colOnRandomInputs) {
  std::mt19937 rng(20240611);
  // (in, out, K, D, groups, lookahead): a plain conv, a dilated one, depthwise, grouped,
  // pointwise; then centred ones (HiFi-GAN's K 3 D 5 and K 11 D 1), one looking ahead its whole
  // reach and one off centre.
  const int64_t cases[][6] = {{3, 4, 3, 1, 1, 0},  {3, 2, 3, 3, 1, 0}, {4, 4, 7, 1, 4, 0},
                              {4, 6, 2, 5, 2, 0},  {5, 3, 1, 1, 1, 0}, {3, 4, 3, 5, 1, 5},
                              {2, 3, 11, 1, 1, 5}, {4, 4, 3, 2, 4, 4}, {3, 2, 4, 1, 1, 1}};
  for (const auto& c : cases) {
    const Conv1dShape s{.batch = 2,
                        .len = 11,
                        .in_channels = c[0],
                        .out_channels = c[1],
                        .kernel = c[2],
                        .dilation = c[3],
                        .groups = c[4],
                        .lookahead = c[5]};
    const std::vector<float> x = random_values(rng, s.batch * s.len * s.in_channels);
    const std::vector<float> w = random_values(rng, s.out_channels * c[0] / c[4] * s.kernel);
    const std::vector<float> bias = random_values(rng, s.out_channels);
    const std::vector<double> got = conv1d(x, w, bias, s);
    const std::vector<double> want = im2col_conv(x, w, bias, s);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "K " << c[2] << " D " << c[3] << " groups " << c[4]
                                          << " lookahead " << c[5] << " at " << i;
    }
  }
}

// The textbook transposed convolution: each input row scatters x[i, c] W[c, o, :] onto full
// rows i * S .. i * S + K - 1; then keep the first len * S rows and add the bias.
std::vector<double> scatter_conv_transpose(const std::vector<float>& x, const std::vector<float>& w,
                                           const std::vector<float>& bias,
                                           const ConvTranspose1dShape& s) {
  const int64_t full_len = (s.len - 1) * s.stride + s.kernel, out_len = s.len * s.stride;
  std::vector<double> y(s.batch * out_len * s.out_channels);
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<double> full(full_len * s.out_channels, 0.0);  // (full_len, out)
    for (int64_t i = 0; i < s.len; ++i) {
      for (int64_t c = 0; c < s.in_channels; ++c) {
        const double v = x[(b * s.len + i) * s.in_channels + c];
        for (int64_t o = 0; o < s.out_channels; ++o) {
          for (int64_t j = 0; j < s.kernel; ++j) {
            full[(i * s.stride + j) * s.out_channels + o] +=
                v * w[(c * s.out_channels + o) * s.kernel + j];
          }
        }
      }
    }
    for (int64_t t = 0; t < out_len; ++t) {
      for (int64_t o = 0; o < s.out_channels; ++o) {
        y[(b * out_len + t) * s.out_channels + o] = full[t * s.out_channels + o] + bias[o];
      }
    }
  }
  return y;
}

TEST(Reference, ConvTransposeMatchesScatterOnRandomInputs) {
  std::mt19937 rng(20240612);
  // (in, out, K, S): K = 2S as in HiFi-GAN, K = S (no overlap), odd K, S = 1.
  const int64_t cases[][4] = {{3, 2, 16, 8}, {2, 3, 4, 4}, {4, 3, 11, 5}, {2, 2, 3, 1}};
  for (const auto& c : cases) {
    const ConvTranspose1dShape s{.batch = 2,
                                 .len = 6,
                                 .in_channels = c[0],
                                 .out_channels = c[1],
                                 .kernel = c[2],
                                 .stride = c[3]};
    const std::vector<float> x = random_values(rng, s.batch * s.len * s.in_channels);
    const std::vector<float> w = random_values(rng, s.in_channels * s.out_channels * s.kernel);
    const std::vector<float> bias = random_values(rng, s.out_channels);
    const std::vector<double> got = conv_transpose1d(x, w, bias, s);
    const std::vector<double> want = scatter_conv_transpose(x, w, bias, s);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "K " << c[2] << " S " << c[3] << " at " << i;
    }
  }
}

TEST(Reference, SnakeBetaUsesExpOfItsLogParameters) {
  // Channel 0: alpha_log = beta_log = 0, so alpha = beta = 1; channel 1: alpha_log = ln 2,
  // beta_log = ln 4, so alpha = 2, beta = 4. Row 0 is x = 0: sin(0) = 0, so y = 0.
  // Row 1, x = (1, 0.5): y0 = 1 + sin(1)^2 / (1 + 1e-9) = 1 + 0.70807341827 / (1 + 1e-9)
  // = 1.70807341757; y1 = 0.5 + sin(2 * 0.5)^2 / (4 + 1e-9) = 0.5 + 0.17701835457 = 0.67701835457.
  const std::vector<float> x = {0, 0, 1, 0.5f};
  const std::vector<float> alpha_log = {0, std::log(2.0f)}, beta_log = {0, std::log(4.0f)};
  const std::vector<double> y = snake_beta(x, alpha_log, beta_log, 2);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 0);
  EXPECT_DOUBLE_EQ(y[2], 1 + std::sin(1.0) * std::sin(1.0) / (1 + 1e-9));
  EXPECT_NEAR(y[2], 1.70807341757, 1e-10);
  EXPECT_NEAR(y[3], 0.67701835457, 1e-7);  // ln 2 and ln 4 rounded to float
  EXPECT_THROW(snake_beta(x, std::vector<float>{0}, beta_log, 2), Error);
  EXPECT_THROW(snake_beta(std::vector<float>{0, 0, 0}, alpha_log, beta_log, 2), Error);
}

TEST(Reference, LeakyReluAndTanh) {
  // Slope 0.1: -2 -> -0.2; 0 and 3 pass through.
  EXPECT_EQ(leaky_relu(std::vector<float>{-2, 0, 3}, 0.1), (std::vector<double>{-0.2, 0, 3}));
  // tanh(0) = 0, tanh(+-1) = +-0.76159415596.
  const std::vector<double> t = tanh_activation(std::vector<float>{0, 1, -1});
  EXPECT_EQ(t[0], 0);
  EXPECT_NEAR(t[1], 0.76159415596, 1e-11);
  EXPECT_EQ(t[2], -t[1]);
}

TEST(Reference, Gelu) {
  // GELU(0) = 0; GELU(1) = Phi(1) = 0.841344746069; GELU(-1) = -(1 - Phi(1)) = -0.158655253931.
  const std::vector<double> g = gelu(std::vector<float>{0, 1, -1});
  EXPECT_EQ(g[0], 0);
  EXPECT_NEAR(g[1], 0.841344746069, 1e-11);
  EXPECT_NEAR(g[2], -0.158655253931, 1e-11);
}

TEST(Reference, AddScaled) {
  // (1 + 2) / 4 = 0.75, (-1 + 0.5) / 4 = -0.125.
  EXPECT_EQ(add_scaled(std::vector<float>{1, -1}, std::vector<float>{2, 0.5f}, 0.25),
            (std::vector<double>{0.75, -0.125}));
  EXPECT_THROW(add_scaled(std::vector<float>{1, 2}, std::vector<float>{1}, 1.0), Error);
}

TEST(Reference, CodebookSumAddsOneEntryPerCodebook) {
  // 2 codebooks of 3 entries, dim 2: codebook 0 is (0, 0), (1, 2), (3, 4); codebook 1 is
  // (10, 20), (30, 40), (50, 60). Codes (1, 2) -> (1 + 50, 2 + 60); (0, 0) -> (0 + 10, 0 + 20).
  const std::vector<float> tables = {0, 0, 1, 2, 3, 4, 10, 20, 30, 40, 50, 60};
  EXPECT_EQ(codebook_sum(std::vector<int32_t>{1, 2, 0, 0}, tables, 2, 3, 2),
            (std::vector<double>{51, 62, 10, 20}));
  EXPECT_EQ(error_of([&] {
              codebook_sum(std::vector<int32_t>{1, 2, 0, 3}, tables, 2, 3, 2);
            }),
            "reference: codebook_sum row 1 codebook 1: code 3 outside [0, 3)");
  EXPECT_THROW(codebook_sum(std::vector<int32_t>{-1, 0}, tables, 2, 3, 2), Error);
  EXPECT_THROW(codebook_sum(std::vector<int32_t>{0, 0}, tables, 2, 3, 3), Error);  // tables
}

}  // namespace
}  // namespace megacut::reference
