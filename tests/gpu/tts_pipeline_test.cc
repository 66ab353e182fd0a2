// Every stage of the tiny streaming TTS pipelines on the GPU: tiny-qwen3-tts (prefill, decode,
// code-predictor, codec) and tiny-llama-hifigan-tts (prefill, decode, vocoder), batch 1 and 2,
// an 8-token prompt and chunks of 2 frames. Weights are the model's random bf16 weights
// (HostWeights::random); inputs are random and valid: ids below the table their op reads, a
// code predictor's step 1, bf16 inputs ~N(0, 1); the KV cache of a stage that starts past
// position 0 holds random values before it, the same on both sides. Each stage runs op by op
// (launch_op) against the float64 graph interpreter, then as one megakernel region and as two
// (mk then conv, conv then mk) against that conventional run.
//
// Tolerances. The interpreter rounds every op's output to bf16 as the device stores it, so the
// two sides part only where an f32 sum or a fast intrinsic lands across a bf16 rounding
// boundary: that element moves one bf16 step (2^-8 of it) and the ops after it carry the step
// on, through up to ~60 ops. Every op's output is held to |got - ref| <= 2e-2 * max|ref| +
// 2e-2 * |ref|, about five bf16 steps of the tensor's largest value, measured against the
// largest so that the small values deep in a codec (convolutions of 0.02-scale weights) are
// held to the same standard; 2e-2 is the bound model_gpu_test puts on whole-model logits.
// A greedy token must be the reference's or tie with it within the logits' tolerance.
//
// Megakernel regions run the very tile bodies on the same tiles in the same per-tile order, so
// their outputs are expected bitwise equal to the conventional run's; as megakernel_gpu_test
// does for decoder stages, each sequence's final output (logits, frame, audio) and every op's
// output are held to a relative L2 error of 5e-3, leaving room for a different FMA contraction
// in the larger kernel, the bitwise count is printed, and greedy tokens must be equal where
// the logits are bitwise equal.
//
// Every op must have a tile body that takes its shape (can_implement): a refusal fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <ostream>
#include <string>
#include <vector>

#include "executor/conventional.h"
#include "executor/op_support.h"
#include "executor/reference/graph_reference.h"
#include "executor/stage_launcher.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/scenario.h"
#include "tests/gpu/gpu_support.h"

namespace megacut::testing {
namespace {

using model::DType;
using model::Graph;
using model::Op;
using model::TensorRole;

constexpr int64_t kPromptLen = 8;
constexpr int64_t kFrames = 2;
constexpr uint64_t kWeightSeed = 7;
// Against float64: see the header.
constexpr double kPeakTol = 2e-2;
constexpr double kRelTol = 2e-2;
// Megakernel against conventional: see the header.
constexpr double kRelL2Limit = 5e-3;

struct StageCase {
  const char* model;
  int64_t batch;
  const char* stage;
};

std::string case_name(const StageCase& c) {
  std::string s = std::string(c.model) + "_b" + std::to_string(c.batch) + "_" + c.stage;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

void PrintTo(const StageCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<StageCase> stage_cases() {
  std::vector<StageCase> cases;
  for (int64_t batch : {1, 2}) {
    for (const char* stage : {"prefill", "decode", "code-predictor", "codec"}) {
      cases.push_back({"tiny-qwen3-tts", batch, stage});
    }
    for (const char* stage : {"prefill", "decode", "vocoder"}) {
      cases.push_back({"tiny-llama-hifigan-tts", batch, stage});
    }
  }
  return cases;
}

// ~N(0, 1) by Box-Muller over two hashed uniforms, rounded to bf16.
float normal_bf16(uint64_t seed, uint64_t i) {
  const double u1 = 1.0 - uniform(seed, 2 * i, 0.f, 1.f);  // (0, 1]
  const double u2 = uniform(seed, 2 * i + 1, 0.f, 1.f);
  return bf16_round(
      static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2)));
}

// What an i32 input may hold: ids below the rows every consuming op reads (an embedding
// table's rows, a codebook's or a step's entries), or the step (1) of a code predictor.
struct IdRange {
  bool step = false;
  int64_t bound = std::numeric_limits<int64_t>::max();
};

IdRange id_range(const Graph& g, int tensor) {
  IdRange r;
  for (const Op& op : g.ops()) {
    const std::string_view kind = op.kind->name();
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != tensor) continue;
      if (i == 1 && (kind == "step-embedding" || kind == "step-head")) r.step = true;
      if (i == 0 && kind == "embedding") {
        r.bound = std::min(r.bound, g.tensor(op.weights.at(0)).shape.at(0));
      }
      if (i == 0 && (kind == "codebook-sum" || kind == "step-embedding")) {
        r.bound = std::min(r.bound, op.attrs.i("entries"));
      }
    }
  }
  return r;
}

// One stage: its graph, the host values both sides start from, and its device buffers.
class StageRun {
 public:
  explicit StageRun(const StageCase& c)
      : spec_(model::load_model(c.model)),
        scenario_(model::make_scenario(spec_, c.batch, kPromptLen, kFrames)),
        graph_(model::build_graph(spec_, scenario_, c.stage)),
        host_weights_(executor::HostWeights::random(spec_, kWeightSeed)) {
    for (const auto& [name, tensor] : host_weights_.tensors()) {
      std::vector<float>& values = weights_[name];
      for (uint16_t v : tensor.values()) values.push_back(from_bf16(v));
    }
    const int64_t past_len = scenario_.stage(c.stage).past_len;
    buffers_.tensors.assign(graph_.tensors().size(), nullptr);
    for (int id = 0; id < static_cast<int>(graph_.tensors().size()); ++id) {
      const model::Tensor& t = graph_.tensor(id);
      const uint64_t seed = 1000 + static_cast<uint64_t>(id);
      if (t.role == TensorRole::input) {
        make_input(id, seed);
      } else if (t.role == TensorRole::state) {
        // (batch, capacity, row): positions before past_len filled, the rest poisoned.
        const int64_t row = t.shape.at(2), capacity = t.shape.at(1);
        std::vector<float>& v = state_values_[id];
        v.resize(t.elements());
        for (int64_t i = 0; i < t.elements(); ++i) {
          v[i] = i / row % capacity < past_len ? normal_bf16(seed, i) : std::nanf("");
        }
        state_[t.name].assign(v.begin(), v.end());
        place(id, upload_bf16(v));
      } else if (t.role == TensorRole::activation) {
        activations_.push_back(id);
        place(id, DeviceBuffer(t.bytes()));
      }
    }
    const executor::WeightArenaPlan plan = executor::plan_weight_arena(graph_);
    const std::vector<std::byte> arena = executor::pack_weight_arena(plan, host_weights_);
    owned_.push_back(upload<std::byte>(arena));
    buffers_.op_weights = executor::op_weight_pointers(plan, 0, owned_.back().get());
  }

  const Graph& graph() const { return graph_; }
  const executor::StageBuffers& buffers() const { return buffers_; }

  // Why an op of the stage has no tile body that takes it, or "" when every op has one.
  std::string refusal() const {
    for (int op = 0; op < graph_.op_count(); ++op) {
      if (const executor::Support s = executor::can_implement(graph_, op); !s) return s.reason;
    }
    return "";
  }

  reference::TensorValues evaluate() const {
    return reference::evaluate_graph(graph_, weights_, inputs_, state_);
  }

  // The KV caches as they were before the stage, every activation poisoned.
  void reset() {
    for (const auto& [id, v] : state_values_) {
      std::vector<uint16_t> bits(v.size());
      for (size_t i = 0; i < v.size(); ++i) bits[i] = to_bf16(v[i]);
      CUDA_CHECK(
          cudaMemcpy(buffers_.tensors[id], bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
    for (int id : activations_) buffer(id).poison();
    CUDA_CHECK(cudaDeviceSynchronize());  // the stage's stream does not wait for the memsets
  }

  void run_conventional(cudaStream_t stream) {
    for (int op = 0; op < graph_.op_count(); ++op) {
      executor::launch_op(graph_, op, buffers_, stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // A tensor as the device holds it: bf16 and f32 as float, i32 as exact floats.
  std::vector<float> read(int id) {
    const model::Tensor& t = graph_.tensor(id);
    if (t.dtype == DType::bf16) return download_bf16(buffer(id), t.elements());
    if (t.dtype == DType::f32) return download<float>(buffer(id), t.elements());
    const std::vector<int32_t> ids = download<int32_t>(buffer(id), t.elements());
    return {ids.begin(), ids.end()};
  }

 private:
  void make_input(int id, uint64_t seed) {
    const model::Tensor& t = graph_.tensor(id);
    std::vector<double>& v = inputs_[t.name];
    v.resize(t.elements());
    if (t.dtype == DType::bf16) {
      std::vector<float> f(t.elements());
      for (int64_t i = 0; i < t.elements(); ++i) v[i] = f[i] = normal_bf16(seed, i);
      place(id, upload_bf16(f));
      return;
    }
    const IdRange r = id_range(graph_, id);
    if (!r.step && r.bound == std::numeric_limits<int64_t>::max()) {
      throw Error("no op of stage " + graph_.stage() + " says what '" + t.name + "' may hold");
    }
    std::vector<int32_t> ids(t.elements());
    for (int64_t i = 0; i < t.elements(); ++i) {
      if (r.step) {
        ids[i] = 1;
      } else {
        const auto pick = static_cast<int64_t>(uniform(seed, i, 0.f, 1.f) * float(r.bound));
        ids[i] = static_cast<int32_t>(std::min(pick, r.bound - 1));
      }
      v[i] = ids[i];
    }
    place(id, upload<int32_t>(ids));
  }

  void place(int id, DeviceBuffer d) {
    owned_.push_back(std::move(d));
    buffers_.tensors[id] = owned_.back().get();
    by_tensor_[id] = &owned_.back();
  }
  DeviceBuffer& buffer(int id) { return *by_tensor_.at(id); }

  model::ModelSpec spec_;
  model::Scenario scenario_;
  Graph graph_;
  executor::HostWeights host_weights_;
  std::map<std::string, std::vector<float>> weights_;  // widened, for the interpreter
  reference::TensorValues inputs_, state_;
  std::map<int, std::vector<float>> state_values_;  // by tensor id, NaN past the cached rows
  executor::StageBuffers buffers_;
  std::deque<DeviceBuffer> owned_;  // stable addresses
  std::map<int, DeviceBuffer*> by_tensor_;
  std::vector<int> activations_;
};

class TtsPipelineTest : public ::testing::TestWithParam<StageCase> {
 protected:
  void SetUp() override {
    MEGACUT_REQUIRE_GPU();
    run_ = std::make_unique<StageRun>(GetParam());
    ASSERT_EQ(run_->refusal(), "") << "stage " << GetParam().stage;
    executor::prepare_kernels();
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) CUDA_CHECK(cudaStreamDestroy(stream_));
  }

  std::unique_ptr<StageRun> run_;
  cudaStream_t stream_ = nullptr;
};

// Whether each row's greedy token is the reference's, or one the reference scores within
// `margin` of its best.
::testing::AssertionResult same_token_or_tie(const std::vector<float>& tokens,
                                             const std::vector<double>& logits, int64_t vocab,
                                             double margin) {
  for (size_t row = 0; row < tokens.size(); ++row) {
    const double* l = &logits[row * vocab];
    const int64_t best = std::max_element(l, l + vocab) - l;
    const auto mine = static_cast<int64_t>(tokens[row]);
    if (mine < 0 || mine >= vocab || l[best] - l[mine] > margin) {
      return ::testing::AssertionFailure()
             << "row " << row << ": token " << mine << ", the reference's " << best << " (logits "
             << (mine >= 0 && mine < vocab ? l[mine] : NAN) << " and " << l[best] << ", margin "
             << margin << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

double peak(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::isfinite(x) ? std::max(m, std::abs(x)) : m;
  return m;
}

TEST_P(TtsPipelineTest, ConventionalRunMatchesFloat64Interpreter) {
  StageRun& run = *run_;
  const Graph& g = run.graph();
  run.reset();
  run.run_conventional(stream_);
  const reference::TensorValues want = run.evaluate();
  int failures = 0;
  double worst = 0;  // largest |got - ref| / max|ref| over every op
  for (const Op& op : g.ops()) {
    const model::Tensor& out = g.tensor(op.output);
    const std::vector<float> got = run.read(op.output);
    const std::vector<double>& ref = want.at(out.name);
    ::testing::AssertionResult ok = ::testing::AssertionSuccess();
    if (out.dtype == DType::i32) {
      const model::Tensor& logits = g.tensor(op.inputs.at(0));
      const std::vector<double>& l = want.at(logits.name);
      ok = same_token_or_tie(got, l, logits.shape.back(), 2 * (kPeakTol + kRelTol) * peak(l));
    } else {
      const double top = peak(ref);
      ok = close_to(got, ref, {kPeakTol * top, kRelTol}, out.shape.back());
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::abs(got[i] - ref[i]) / std::max(top, 1e-30));
      }
    }
    // The ops after a mismatch inherit it: the first three are reported, and the stage's output.
    if (!ok && (++failures <= 3 || op.index >= g.op_count() - 2)) {
      ADD_FAILURE() << "op " << op.index << " " << op.name << " (" << op.kind->name()
                    << "): " << ok.message();
    }
  }
  EXPECT_EQ(failures, 0) << "ops outside the tolerance";
  std::printf("%s: %d ops, largest error %.3g of the tensor's largest value\n",
              case_name(GetParam()).c_str(), g.op_count(), worst);
}

// "mk[0:15] conv[15:30]".
std::string composition_text(const std::vector<model::Region>& regions) {
  std::string text;
  for (const model::Region& r : regions) {
    if (!text.empty()) text += ' ';
    text += model::region_kind_name(r.kind);
    text += '[';
    text += std::to_string(r.begin);
    text += ':';
    text += std::to_string(r.end);
    text += ']';
  }
  return text;
}

TEST_P(TtsPipelineTest, MegakernelRegionsMatchConventionalRun) {
  StageRun& run = *run_;
  const Graph& g = run.graph();
  const int n = g.op_count(), mid = n / 2;
  run.reset();
  run.run_conventional(stream_);
  std::vector<std::vector<float>> want;
  for (const Op& op : g.ops()) want.push_back(run.read(op.output));
  // The stage's output: the last op's, and the logits an argmax reads.
  const Op& last = g.ops().back();
  const bool greedy = g.tensor(last.output).dtype == DType::i32;
  const int final_op = greedy ? g.producer(last.inputs.at(0)) : last.index;

  using model::RegionKind;
  const std::vector<std::vector<model::Region>> compositions = {
      {{RegionKind::mk, 0, n}},
      {{RegionKind::mk, 0, mid}, {RegionKind::conv, mid, n}},
      {{RegionKind::conv, 0, mid}, {RegionKind::mk, mid, n}},
  };
  for (const std::vector<model::Region>& regions : compositions) {
    const std::string what = composition_text(regions);
    executor::StageLauncher launcher(g, run.buffers(), regions, executor::LinearProvider::ours,
                                     nullptr);
    run.reset();
    launcher.launch(stream_);
    launcher.check(stream_);
    int bitwise = 0;
    bool final_bitwise = false;
    for (const Op& op : g.ops()) {
      const std::vector<float> got = run.read(op.output);
      const std::vector<float>& ref = want[op.index];
      const bool same = std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)) == 0;
      bitwise += same;
      if (op.index == final_op) {
        final_bitwise = same;
        // Each sequence's output: a row of logits or of a frame, a sequence's audio.
        const size_t per_sequence = got.size() / g.batch();
        for (int64_t s = 0; s < g.batch(); ++s) {
          EXPECT_LE(rel_l2(got, ref, s * per_sequence, per_sequence), kRelL2Limit)
              << what << ": op " << op.name << ", sequence " << s;
        }
      } else if (op.index == last.index && greedy) {
        if (final_bitwise) {
          EXPECT_EQ(got, ref) << what << ": greedy tokens";
        }
      } else {
        EXPECT_LE(rel_l2(got, ref, 0, got.size()), kRelL2Limit) << what << ": op " << op.name;
      }
    }
    std::printf("%s, %s: %d of %d ops bitwise equal to conventional%s\n",
                case_name(GetParam()).c_str(), what.c_str(), bitwise, n,
                final_bitwise ? "" : " (final output not bitwise)");
  }
}

INSTANTIATE_TEST_SUITE_P(TtsStages, TtsPipelineTest, ::testing::ValuesIn(stage_cases()),
                         [](const auto& info) { return case_name(info.param); });

// Host only: every op of every tiny TTS stage has a tile body that takes its shape.
TEST(TtsPipelineSupport, EveryOpHasATileBody) {
  for (const StageCase& c : stage_cases()) {
    const model::ModelSpec spec = model::load_model(c.model);
    const Graph g =
        model::build_graph(spec, model::make_scenario(spec, c.batch, kPromptLen, kFrames), c.stage);
    for (int op = 0; op < g.op_count(); ++op) {
      const executor::Support s = executor::can_implement(g, op);
      EXPECT_TRUE(s) << case_name(c) << ": " << s.reason;
    }
  }
}

}  // namespace
}  // namespace megacut::testing
