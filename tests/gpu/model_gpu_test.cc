// Whole models on the GPU against the float64 reference of the architecture: the runner's
// greedy generation (prefill, then decode steps) must give the reference's logits at every
// position and the same greedy tokens, for each linear provider. And a timed run must time
// what it says it does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "executor/bf16.h"
#include "executor/reference/model_reference.h"
#include "executor/runner.h"
#include "gpu_support.h"
#include "model/decoder.h"

namespace megacut::executor {
namespace {

// bf16 everywhere along a 2-layer chain: logits within 2% of the reference's norm per position.
constexpr double kRelErrorLimit = 2e-2;

std::map<std::string, std::vector<float>> widened(const HostWeights& weights) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, tensor] : weights.tensors()) {
    std::vector<float>& values = out[name];
    for (uint16_t v : tensor.values()) values.push_back(bf16_to_float(v));
  }
  return out;
}

// ||a - b|| / ||b|| over row `row` of (rows, cols) matrices.
double row_rel_error(const std::vector<float>& a, const std::vector<float>& b, int64_t row,
                     int64_t cols) {
  double diff = 0, norm = 0;
  for (int64_t c = 0; c < cols; ++c) {
    const double x = a[row * cols + c], y = b[row * cols + c];
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::isfinite(diff) ? std::sqrt(diff / norm) : INFINITY;
}

int64_t argmax_row(const std::vector<float>& v, int64_t row, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c) {
    if (v[row * cols + c] > v[row * cols + best]) best = c;
  }
  return best;
}

// Whether our greedy token for a row is the reference's, or ties with it within the noise
// measured on that row: the reference's logit at our token is within four RMS differences of
// the reference's maximum. Random tiny models have near-ties that bf16 rounding flips.
bool same_token_or_tie(const std::vector<float>& ours, const std::vector<float>& ref, int64_t row,
                       int64_t cols) {
  const int64_t mine = argmax_row(ours, row, cols);
  const int64_t theirs = argmax_row(ref, row, cols);
  if (mine == theirs) return true;
  double diff = 0;
  for (int64_t c = 0; c < cols; ++c) {
    const double d = ours[row * cols + c] - ref[row * cols + c];
    diff += d * d;
  }
  const double rms = std::sqrt(diff / static_cast<double>(cols));
  return ref[row * cols + theirs] - ref[row * cols + mine] <= 4 * rms;
}

struct Case {
  const char* model;
  int64_t batch;
  int64_t prompt_len;
  LinearProvider provider;
  // Every other linear and lm-head op of each stage on cuBLASLt, the rest on ours (`provider`
  // ignored): a plan's per-op choice.
  bool alternate = false;
};

class ModelGpuTest : public ::testing::TestWithParam<Case> {};

TEST_P(ModelGpuTest, GreedyGenerationMatchesFloat64Reference) {
  MEGACUT_REQUIRE_GPU();
  const Case c = GetParam();
  constexpr int kSteps = 4;
  const model::ModelSpec spec = model::load_model(c.model);
  const HostWeights weights = HostWeights::random(spec, 42);
  RunOptions options;
  options.providers = model::ProviderChoice::uniform(c.provider);
  options.decode_steps = kSteps;
  ScenarioRunner runner(spec, model::make_scenario(spec, c.batch, c.prompt_len), weights, options);
  if (c.alternate) {
    model::ProviderChoice every_other;
    for (int s = 0; s < runner.stage_count(); ++s) {
      const model::Graph& g = runner.stage_graph(s);
      int seen = 0;
      for (const model::Op& op : g.ops()) {
        if (model::cublaslt_can_run(op.kind->name()) && seen++ % 2 == 0) {
          every_other.cublaslt_ops[g.stage()].push_back(op.index);
        }
      }
    }
    ASSERT_GT(every_other.listed(), 1);
    runner.set_providers(every_other);
  }
  runner.generate(kSteps);

  const reference::GenerationLogits ref = reference::decoder_logits(
      spec.decoder, widened(weights), c.batch, runner.prompt_tokens(), runner.decode_tokens());
  const int64_t vocab = spec.decoder.vocab_size;
  ASSERT_EQ(runner.prefill_logits().size(), ref.prefill.size());
  ASSERT_EQ(runner.decode_logits().size(), ref.decode.size());
  for (int64_t b = 0; b < c.batch; ++b) {
    EXPECT_LE(row_rel_error(runner.prefill_logits(), ref.prefill, b, vocab), kRelErrorLimit)
        << "prefill, sequence " << b;
    EXPECT_TRUE(same_token_or_tie(runner.prefill_logits(), ref.prefill, b, vocab))
        << "prefill, sequence " << b << ": token " << argmax_row(runner.prefill_logits(), b, vocab)
        << ", reference " << argmax_row(ref.prefill, b, vocab);
  }
  for (int64_t row = 0; row < kSteps * c.batch; ++row) {
    EXPECT_LE(row_rel_error(runner.decode_logits(), ref.decode, row, vocab), kRelErrorLimit)
        << "decode step " << row / c.batch << ", sequence " << row % c.batch;
    EXPECT_TRUE(same_token_or_tie(runner.decode_logits(), ref.decode, row, vocab))
        << "decode step " << row / c.batch << ", sequence " << row % c.batch;
  }
  // Each step's input is the previous step's greedy token.
  for (int64_t row = c.batch; row < kSteps * c.batch; ++row) {
    EXPECT_EQ(runner.decode_tokens()[row],
              argmax_row(runner.decode_logits(), row - c.batch, vocab));
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, ModelGpuTest,
                         ::testing::Values(Case{"tiny-llama", 1, 13, LinearProvider::ours},
                                           Case{"tiny-llama", 3, 70, LinearProvider::ours},
                                           Case{"tiny-qwen3", 8, 29, LinearProvider::ours},
                                           Case{"tiny-qwen3", 32, 5, LinearProvider::ours},
                                           Case{"tiny-llama", 3, 70, LinearProvider::cublaslt},
                                           Case{"tiny-qwen3", 8, 29, LinearProvider::cublaslt},
                                           Case{"tiny-llama", 3, 70, LinearProvider::ours, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name =
                               std::string(info.param.model) + "_b" +
                               std::to_string(info.param.batch) + "_p" +
                               std::to_string(info.param.prompt_len) + "_" +
                               (info.param.alternate
                                    ? std::string("alternate")
                                    : std::string(provider_name(info.param.provider)));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(ModelGpuTimingTest, MeasureTimesEveryRun) {
  MEGACUT_REQUIRE_GPU();
  const model::ModelSpec spec = model::load_model("tiny-qwen3");
  RunOptions options;
  options.runs = 7;
  options.warmup = 2;
  ScenarioRunner runner(spec, model::make_scenario(spec, 2, 16), HostWeights::random(spec, 1),
                        options);
  const Measurement m = runner.measure();
  EXPECT_EQ(m.ttfo.count, 7);
  EXPECT_EQ(m.decode_step.count, 7);
  EXPECT_GT(m.ttfo.min, 0);
  EXPECT_GT(m.decode_step.min, 0);
  EXPECT_EQ(m.ttfo.unit, "ms");
  EXPECT_NEAR(m.outputs_per_s, 2 / (m.decode_step.p50 / 1e3), 1e-6 * m.outputs_per_s);
  EXPECT_EQ(m.to_json()["schema"], "megacut.measurement/1");
}

TEST(ModelGpuTimingTest, OutOfMemoryIsAClearError) {
  MEGACUT_REQUIRE_GPU();
  // Take all but 1 GB of the device, then ask for Llama-3.2-1B (2.47 GB of weights alone).
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  void* hog = nullptr;
  CUDA_CHECK(cudaMalloc(&hog, free_bytes - (size_t{1} << 30)));
  const model::ModelSpec spec = model::load_model("llama-3.2-1b");
  std::string message;
  try {
    ScenarioRunner runner(spec, model::make_scenario(spec, 1, 16), HostWeights::random(spec, 1),
                          RunOptions{});
  } catch (const Error& e) {
    message = e.what();
  }
  CUDA_CHECK(cudaFree(hog));
  EXPECT_NE(message.find("needs"), std::string::npos) << message;
  EXPECT_NE(message.find("of device memory"), std::string::npos) << message;
}

}  // namespace
}  // namespace megacut::executor
