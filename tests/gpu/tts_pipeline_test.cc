// Every stage of the tiny streaming TTS pipelines on the GPU: tiny-qwen3-tts (prefill, decode,
// code-predictor, codec) and tiny-llama-hifigan-tts (prefill, decode, vocoder), batch 1 and 2,
// an 8-token prompt and chunks of 2 frames. Weights are the model's random bf16 weights
// (HostWeights::random); inputs are random and valid: ids below the table their op reads, a
// code predictor's step 1, bf16 inputs ~N(0, 1); the KV cache of a stage that starts past
// position 0 holds random values before it, the same on both sides. Each stage runs op by op
// (launch_op) against the float64 graph interpreter, then as one megakernel region, as two
// (mk then conv, conv then mk) and as 4 random compositions (model::random_regions, seeded by
// the case) against that conventional run.
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
//
// Then the first audio chunk end to end, run after run with the KV caches carried (see
// TtsChunkTest below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "executor/conventional.h"
#include "executor/op_support.h"
#include "executor/reference/graph_reference.h"
#include "executor/stage_launcher.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/random_composition.h"
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
      : StageRun(model::load_model(c.model), c.batch, c.stage, std::nullopt) {}

  // The stage built at `past_len` instead of the scenario's own position, where given.
  StageRun(model::ModelSpec spec, int64_t batch, const std::string& stage,
           std::optional<int64_t> past_len)
      : spec_(std::move(spec)),
        scenario_(
            at_position(model::make_scenario(spec_, batch, kPromptLen, kFrames), stage, past_len)),
        graph_(model::build_graph(spec_, scenario_, stage)),
        host_weights_(executor::HostWeights::random(spec_, kWeightSeed)) {
    for (const auto& [name, tensor] : host_weights_.tensors()) {
      std::vector<float>& values = weights_[name];
      for (uint16_t v : tensor.values()) values.push_back(from_bf16(v));
    }
    const int64_t cached = scenario_.stage(stage).past_len;  // positions already in the caches
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
          v[i] = i / row % capacity < cached ? normal_bf16(seed, i) : std::nanf("");
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
      const std::vector<uint16_t> bits = to_bits(v);
      CUDA_CHECK(
          cudaMemcpy(buffers_.tensors[id], bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
    for (int id : activations_) buffer(id).poison();
    executor::wait_for_legacy_stream();  // the caches' copies too
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

  // An input's values on both sides (ids as exact values, bf16 ones already rounded).
  void set_input(const std::string& name, const std::vector<double>& values) {
    const int id = tensor_id(name, TensorRole::input, values.size());
    inputs_[name] = values;
    if (graph_.tensor(id).dtype == DType::i32) {
      const std::vector<int32_t> ids(values.begin(), values.end());
      CUDA_CHECK(cudaMemcpy(buffers_.tensors[id], ids.data(), ids.size() * sizeof(int32_t),
                            cudaMemcpyHostToDevice));
    } else {
      const std::vector<float> f(values.begin(), values.end());
      const std::vector<uint16_t> bits = to_bits(f);
      CUDA_CHECK(
          cudaMemcpy(buffers_.tensors[id], bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
    executor::wait_for_legacy_stream();
  }

  // A KV cache as each side left it: the interpreter's for the interpreter, the device's for
  // the device; reset() writes it.
  void set_state(const std::string& name, const std::vector<double>& reference,
                 const std::vector<float>& device) {
    const int id = tensor_id(name, TensorRole::state, reference.size());
    state_[name] = reference;
    state_values_[id] = device;
  }

 private:
  static model::Scenario at_position(model::Scenario sc, const std::string& stage,
                                     std::optional<int64_t> past_len) {
    for (model::Stage& s : sc.stages) {
      if (s.name == stage && past_len) s.past_len = *past_len;
    }
    return sc;
  }

  static std::vector<uint16_t> to_bits(const std::vector<float>& v) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits[i] = to_bf16(v[i]);
    return bits;
  }

  // The graph's tensor of that name, which must have that role and size.
  int tensor_id(const std::string& name, TensorRole role, size_t elements) const {
    int id = 0;
    while (id < static_cast<int>(graph_.tensors().size()) && graph_.tensor(id).name != name) ++id;
    if (id == static_cast<int>(graph_.tensors().size())) {
      throw Error("stage " + graph_.stage() + " has no tensor '" + name + "'");
    }
    const model::Tensor& t = graph_.tensor(id);
    if (t.role != role || static_cast<size_t>(t.elements()) != elements) {
      throw Error("stage " + graph_.stage() + ": '" + name + "' is not a " +
                  (role == TensorRole::input ? "input" : "state") + " of " +
                  std::to_string(elements) + " elements");
    }
    return id;
  }

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
  std::vector<std::vector<model::Region>> compositions = {
      {{RegionKind::mk, 0, n}},
      {{RegionKind::mk, 0, mid}, {RegionKind::conv, mid, n}},
      {{RegionKind::conv, 0, mid}, {RegionKind::mk, mid, n}},
  };
  // And random ones, cut at layer starts and attention ops, seeded per stage.
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(case_name(GetParam()))));
  for (int i = 0; i < 4; ++i) compositions.push_back(model::random_regions(g, rng));
  for (const std::vector<model::Region>& regions : compositions) {
    const std::string what = composition_text(regions);
    executor::StageLauncher launcher(g, run.buffers(), regions, model::ProviderChoice{}, nullptr);
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

// The first audio chunk of a tiny pipeline end to end: every run stage_sequence orders (the
// prompt's prefill; per frame the code predictor's steps and the talker's step to the next
// frame; the codec or vocoder over the chunk), each on a graph built for its own positions, on
// the GPU op by op and through the float64 interpreter alike. Each side keeps its own KV caches
// from run to run, which a stage alone does not check: a cache that one graph writes is read by
// graphs built for later positions. What a run hands the next (a code, a frame's codes, a frame)
// is the interpreter's on both sides, so that a greedy tie cannot part the two runs. A talker
// code past the codebooks (in the real vocabulary, special tokens a sampler leaves out) is
// folded into them; the code predictor's first position, the talker's hidden state in the real
// model, holds random values on both sides, as in the stage test. Tolerances as the stage test's.
struct ChunkCase {
  const char* model;
  int64_t batch;
};

std::string chunk_name(const ChunkCase& c) {
  std::string s = std::string(c.model) + "_b" + std::to_string(c.batch);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

void PrintTo(const ChunkCase& c, std::ostream* os) { *os << chunk_name(c); }

class TtsChunkTest : public ::testing::TestWithParam<ChunkCase> {
 protected:
  void SetUp() override {
    MEGACUT_REQUIRE_GPU();
    executor::prepare_kernels();
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) CUDA_CHECK(cudaStreamDestroy(stream_));
  }

  using Values = std::vector<double>;

  // Runs `stage` (at `past_len`, where given) with these inputs and the caches as each side
  // left them, checks its output against the interpreter's, keeps each side's caches, and
  // returns the interpreter's output (a run's tokens, frame or audio).
  Values run(const model::ModelSpec& spec, const std::string& stage,
             std::optional<int64_t> past_len, const std::map<std::string, Values>& inputs) {
    StageRun r(spec, GetParam().batch, stage, past_len);
    const Graph& g = r.graph();
    EXPECT_EQ(r.refusal(), "") << stage;
    for (const auto& [name, values] : inputs) r.set_input(name, values);
    std::vector<int> caches;
    for (int id = 0; id < static_cast<int>(g.tensors().size()); ++id) {
      const model::Tensor& t = g.tensor(id);
      if (t.role != TensorRole::state) continue;
      caches.push_back(id);
      if (reference_caches_.contains(t.name)) {
        const int64_t capacity = t.shape.at(1), row = t.shape.at(2);
        r.set_state(t.name, with_capacity(reference_caches_.at(t.name), capacity, row),
                    with_capacity(device_caches_.at(t.name), capacity, row));
      }
    }
    r.reset();
    r.run_conventional(stream_);
    const reference::TensorValues want = r.evaluate();
    const std::string what = "run " + std::to_string(++runs_) + ", " + stage +
                             (past_len ? " at position " + std::to_string(*past_len) : "");
    const Op& last = g.ops().back();
    const model::Tensor& out = g.tensor(last.output);
    const std::vector<float> got = r.read(last.output);
    if (out.dtype == DType::i32) {
      const model::Tensor& logits = g.tensor(last.inputs.at(0));
      const Values& l = want.at(logits.name);
      EXPECT_TRUE(close_to(r.read(last.inputs.at(0)), l, {kPeakTol * peak(l), kRelTol},
                           logits.shape.back()))
          << what << ": logits";
      EXPECT_TRUE(
          same_token_or_tie(got, l, logits.shape.back(), 2 * (kPeakTol + kRelTol) * peak(l)))
          << what << ": tokens";
    } else {
      const Values& ref = want.at(out.name);
      // A frame or audio of zeros or NaNs would pass any tolerance.
      EXPECT_TRUE(std::all_of(ref.begin(), ref.end(), [](double x) { return std::isfinite(x); }))
          << what << ": " << out.name;
      EXPECT_GT(peak(ref), 0) << what << ": " << out.name;
      peak_ = peak(ref);
      EXPECT_TRUE(close_to(got, ref, {kPeakTol * peak(ref), kRelTol}, out.shape.back()))
          << what << ": " << out.name;
      for (size_t i = 0; i < got.size(); ++i) {
        worst_ = std::max(worst_, std::abs(got[i] - ref[i]) / std::max(peak(ref), 1e-30));
      }
    }
    for (int id : caches) {
      const std::string& name = g.tensor(id).name;
      reference_caches_[name] = want.at(name);
      device_caches_[name] = r.read(id);
    }
    return want.at(out.name);
  }

  // A cache (batch, capacity, row) laid out again for a graph of another capacity (a graph's
  // caches hold the positions it reaches): the positions both hold kept, the rest unwritten.
  template <class T>
  std::vector<T> with_capacity(const std::vector<T>& cache, int64_t capacity, int64_t row) const {
    const int64_t batch = GetParam().batch;
    const int64_t had = static_cast<int64_t>(cache.size()) / (batch * row);
    std::vector<T> out(batch * capacity * row, std::numeric_limits<T>::quiet_NaN());
    for (int64_t b = 0; b < batch; ++b) {
      std::copy_n(cache.begin() + b * had * row, std::min(had, capacity) * row,
                  out.begin() + b * capacity * row);
    }
    return out;
  }

  // A new frame's code predictor starts from its first position again.
  void forget_caches(std::string_view prefix) {
    std::erase_if(reference_caches_, [&](const auto& e) { return e.first.starts_with(prefix); });
    std::erase_if(device_caches_, [&](const auto& e) { return e.first.starts_with(prefix); });
  }

  cudaStream_t stream_ = nullptr;
  std::map<std::string, Values> reference_caches_;
  std::map<std::string, std::vector<float>> device_caches_;
  int runs_ = 0;
  double worst_ = 0;  // largest |got - ref| / max|ref| of a frame or the audio
  double peak_ = 0;   // max|ref| of the last frame or audio
};

TEST_P(TtsChunkTest, FirstChunkMatchesFloat64Interpreter) {
  const ChunkCase c = GetParam();
  const model::ModelSpec spec = model::load_model(c.model);
  const model::TtsConfig& tts = *spec.tts;
  const int64_t batch = c.batch;
  std::vector<std::string> order;
  if (tts.codec) {
    const int64_t groups = tts.code_predictor->code_groups;
    const int64_t steps = tts.code_predictor->steps();
    const int64_t book = tts.codec->codebook_size;
    auto folded = [&](const Values& tokens) {
      Values codes(tokens.size());
      for (size_t i = 0; i < tokens.size(); ++i)
        codes[i] = std::fmod(tokens[i], static_cast<double>(book));
      return codes;
    };
    Values codes(batch * kFrames * groups);  // the codec's input: (batch, frames, groups)
    Values first = folded(run(spec, "prefill", std::nullopt, {}));
    order.push_back("prefill");
    for (int64_t f = 0; f < kFrames; ++f) {
      Values frame(batch * groups);  // the talker's next input: (batch, groups)
      Values previous = first;
      forget_caches("code_predictor.");
      for (int64_t s = 0; s <= steps; ++s) {
        if (s > 0) {
          previous = run(spec, "code-predictor", s,
                         {{"token_ids", previous}, {"step", {static_cast<double>(s - 1)}}});
          order.push_back("code-predictor");
        }
        for (int64_t b = 0; b < batch; ++b) {
          frame[b * groups + s] = previous[b];
          codes[(b * kFrames + f) * groups + s] = previous[b];
        }
      }
      if (f + 1 < kFrames) {
        first = folded(run(spec, "decode", kPromptLen + f, {{"frame_codes", frame}}));
        order.push_back("decode");
      }
    }
    run(spec, "codec", std::nullopt, {{"frame_codes", codes}});
    order.push_back("codec");
  } else {
    const int64_t dim = tts.frame_dim;
    Values frames(batch * kFrames * dim);  // the vocoder's input: (batch, frames, dim)
    Values frame = run(spec, "prefill", std::nullopt, {});
    order.push_back("prefill");
    for (int64_t f = 0; f < kFrames; ++f) {
      if (f > 0) {
        frame = run(spec, "decode", kPromptLen + f - 1, {{"prev_frame", frame}});
        order.push_back("decode");
      }
      for (int64_t b = 0; b < batch; ++b) {
        std::copy_n(frame.begin() + b * dim, dim, frames.begin() + (b * kFrames + f) * dim);
      }
    }
    run(spec, "vocoder", std::nullopt, {{"frames", frames}});
    order.push_back("vocoder");
  }
  // The runs are the ones the runner times, in its order.
  EXPECT_EQ(order, model::stage_sequence(model::make_scenario(spec, batch, kPromptLen, kFrames),
                                         model::Sequence::first_output));
  std::printf(
      "%s: %d runs, largest error of a frame or the audio %.3g of its largest value; the "
      "audio's largest value %.3g\n",
      chunk_name(c).c_str(), runs_, worst_, peak_);
}

INSTANTIATE_TEST_SUITE_P(TtsChunk, TtsChunkTest,
                         ::testing::Values(ChunkCase{"tiny-qwen3-tts", 1},
                                           ChunkCase{"tiny-qwen3-tts", 2},
                                           ChunkCase{"tiny-llama-hifigan-tts", 1},
                                           ChunkCase{"tiny-llama-hifigan-tts", 2}),
                         [](const auto& info) { return chunk_name(info.param); });

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
