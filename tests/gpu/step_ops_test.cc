// step-embedding and step-head, a code predictor's per-step tables and heads stacked along rows,
// against their float64 references on one-op graphs built by hand: one graph per shape run at
// steps 0, 1 and the last (the step is a device input, so the same launch serves every step),
// batch 1 and 3 (and 40 and 130 rows, the other linear bodies), hidden 64 to 1024, entries 32 to
// 2048, ids at and above entries (a talker's control codes, taken modulo entries). Inputs are
// random (never zeros), outputs poisoned with NaN before each run; the gather must be exact and
// the logits within atol + rtol * |ref|. Then tiny-qwen3-tts's code predictor stage runs
// conventionally and as one megakernel region at each of those steps: the two must agree, and
// its embedding and logits match the references at that step. A throughput test prints
// step-head's GB/s beside lm-head's at Qwen3-TTS-12Hz-0.6B's head.
//
// Host only (run everywhere): the body each shape gets, the shapes can_implement refuses and
// why, and the code predictor's region schedule and kernel (NVRTC).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "executor/conventional.h"
#include "executor/megakernel.h"
#include "executor/megakernel_codegen.h"
#include "executor/megakernel_schedule.h"
#include "executor/op_support.h"
#include "executor/reference/op_reference.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/graph.h"
#include "model/scenario.h"
#include "model/schedule.h"
#include "tests/gpu/gpu_support.h"
#include "tests/gpu/op_harness.h"

namespace megacut::testing {
namespace {

using model::DType;
using model::Graph;
using model::TensorRole;

constexpr Tolerance kExact{0, 0};         // a gather copies bf16 values
constexpr Tolerance kLogits{1e-3, 1e-3};  // f32 accumulation of exact bf16 products

uint64_t hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

int tensor(Graph& g, const std::string& name, TensorRole role, std::vector<int64_t> shape,
           DType dtype = DType::bf16) {
  return g.add_tensor({name, role, dtype, std::move(shape)});
}

// The steps each shape runs at: the first two and the last.
std::vector<int32_t> steps_to_run(int64_t steps) { return {0, 1, static_cast<int32_t>(steps - 1)}; }

// ids for one run: random in [0, 3 * entries) with the first at the edge of the table (entries
// - 1), the first control code (entries) or one two tables past it, by run.
std::vector<int32_t> make_ids(uint64_t seed, int64_t rows, int64_t entries, int run) {
  std::vector<int32_t> ids(rows);
  for (int64_t t = 0; t < rows; ++t) {
    ids[t] = static_cast<int32_t>(hash(std::to_string(seed + 977 * run + t)) % (3 * entries));
  }
  const int64_t first[] = {entries - 1, entries, 2 * entries + 5};
  ids[0] = static_cast<int32_t>(first[run % 3]);
  return ids;
}

// ---- One-op graphs -------------------------------------------------------------------------

struct StepCase {
  bool head;  // step-head, else step-embedding
  int64_t rows, hidden, entries, steps, tile_rows, tile_cols;
  bool entries_attr;  // step-head: carry "entries" (else the output's columns say it)
};

std::string case_name(const StepCase& c) {
  return std::string(c.head ? "head" : "embed") + "_r" + std::to_string(c.rows) + "_h" +
         std::to_string(c.hidden) + "_e" + std::to_string(c.entries) + "_s" +
         std::to_string(c.steps) + "_tile" + std::to_string(c.tile_rows) + "x" +
         std::to_string(c.tile_cols) + (c.head && c.entries_attr ? "_attr" : "");
}

void PrintTo(const StepCase& c, std::ostream* os) { *os << case_name(c); }

Graph step_graph(const StepCase& c) {
  Graph g("code-predictor", c.rows);
  const int in = c.head ? tensor(g, "final_norm", TensorRole::input, {c.rows, c.hidden})
                        : tensor(g, "token_ids", TensorRole::input, {c.rows}, DType::i32);
  const int step = tensor(g, "step", TensorRole::input, {1}, DType::i32);
  const int w = tensor(g, c.head ? "lm_head.weight" : "codec_embedding.weight", TensorRole::weight,
                       {c.steps * c.entries, c.hidden});
  const int64_t cols = c.head ? c.entries : c.hidden;
  const int y = tensor(g, c.head ? "logits" : "embed", TensorRole::activation, {c.rows, cols},
                       c.head ? DType::f32 : DType::bf16);
  model::Attrs attrs;
  if (!c.head || c.entries_attr) attrs.set("entries", double(c.entries));
  g.add_op(c.head ? "head" : "embed", c.head ? "step-head" : "step-embedding", {in, step}, {w}, y,
           {c.rows, cols, c.tile_rows, c.tile_cols}, attrs);
  g.finalize();
  return g;
}

std::vector<StepCase> step_cases() {
  // head, rows, hidden, entries, steps, tile_rows, tile_cols, entries attr
  return {
      // step-embedding: tiny-qwen3-tts's and Qwen3-TTS-0.6B's shapes (row_tiling: all columns),
      // partial row and column tiles, hidden not a multiple of 64.
      {false, 1, 64, 32, 3, 1, 64, true},
      {false, 3, 64, 32, 3, 1, 64, true},
      {false, 1, 1024, 2048, 15, 1, 1024, true},
      {false, 3, 1024, 2048, 15, 2, 256, true},
      {false, 3, 136, 100, 4, 2, 136, true},
      {false, 37, 512, 512, 5, 8, 128, true},
      // step-head, few rows (the matrix-vector body): lm-head's 64-wide tiles, narrower ones,
      // entries not whole tiles, heads with and without the "entries" attr.
      {true, 1, 64, 32, 3, 1, 64, false},
      {true, 3, 64, 32, 3, 3, 16, true},
      {true, 1, 1024, 2048, 15, 1, 64, false},
      {true, 3, 1024, 2048, 15, 3, 128, true},
      {true, 3, 136, 100, 4, 3, 32, false},
      {true, 40, 512, 512, 5, 40, 32, false},
      // step-head, many rows (the tensor-core body).
      {true, 130, 64, 96, 3, 128, 16, false},
      {true, 130, 1024, 2048, 15, 128, 128, true},
  };
}

void set_i32(DeviceBuffer& d, std::span<const int32_t> values) {
  CUDA_CHECK(cudaMemcpy(d.get(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
}

class StepOpTest : public ::testing::TestWithParam<StepCase> {};

// Host only: the embedding body, or lm-head's linear bodies with float logits.
TEST_P(StepOpTest, RunsTheEmbeddingOrLmHeadBody) {
  const StepCase& c = GetParam();
  const Graph g = step_graph(c);
  ASSERT_TRUE(executor::can_implement(g, 0)) << executor::can_implement(g, 0).reason;
  EXPECT_EQ(model::step_entries(g, g.op(0)), c.entries);
  const std::string name = executor::tile_body_name(g, 0);
  if (!c.head) {
    EXPECT_EQ(name, "megacut::tiles::EmbeddingTile");
    return;
  }
  EXPECT_NE(name.find(", float"), std::string::npos) << name;  // float logits
  EXPECT_EQ(name.find("LinearMmaTile") != std::string::npos, c.tile_rows == 128) << name;
}

TEST_P(StepOpTest, MatchesFloat64ReferenceAtEachStep) {
  MEGACUT_REQUIRE_GPU();
  const StepCase& c = GetParam();
  const Graph g = step_graph(c);
  ASSERT_TRUE(executor::can_implement(g, 0)) << executor::can_implement(g, 0).reason;
  const uint64_t seed = hash(case_name(c));
  const float scale = c.head ? 1.f / std::sqrt(static_cast<float>(c.hidden)) : 1.f;
  const std::vector<float> w = random_bf16(seed, c.steps * c.entries * c.hidden, -scale, scale);
  const std::vector<float> x = random_bf16(seed + 1, c.rows * c.hidden);
  OpBuffers b(g);
  b.set_weights(0, w);
  DeviceBuffer& in = c.head ? b.place(0, upload_bf16(x)) : b.poisoned(0);
  DeviceBuffer& step = b.poisoned(1);
  DeviceBuffer& out = b.poisoned(g.op(0).output);
  const int64_t cols = c.head ? c.entries : c.hidden;
  int run = 0;
  for (const int32_t s : steps_to_run(c.steps)) {
    SCOPED_TRACE("step " + std::to_string(s));
    const std::vector<int32_t> ids = make_ids(seed, c.rows, c.entries, run++);
    if (!c.head) set_i32(in, ids);
    set_i32(step, std::span<const int32_t>(&s, 1));
    out.poison();
    executor::launch_op(g, 0, b.buffers, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (c.head) {
      EXPECT_TRUE(close_to(download<float>(out, c.rows * cols),
                           reference::step_head(x, w, c.entries, c.hidden, s), kLogits, cols));
    } else {
      EXPECT_TRUE(close_to(download_bf16(out, c.rows * cols),
                           reference::step_embedding(ids, w, c.entries, c.hidden, s), kExact,
                           cols));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(StepOps, StepOpTest, ::testing::ValuesIn(step_cases()),
                         [](const auto& info) { return case_name(info.param); });

// ---- What can_implement refuses --------------------------------------------------------------

TEST(StepOpSupport, RefusesBadShapesNamingTheOpAndTheValue) {
  {  // A step of two values.
    Graph g("code-predictor", 1);
    const int ids = tensor(g, "ids", TensorRole::input, {1}, DType::i32);
    const int step = tensor(g, "step", TensorRole::input, {2}, DType::i32);
    const int w = tensor(g, "tables", TensorRole::weight, {3 * 32, 64});
    g.add_op("embed", "step-embedding", {ids, step}, {w},
             tensor(g, "y", TensorRole::activation, {1, 64}), {1, 64, 1, 64}, {{"entries", 32}});
    g.finalize();
    EXPECT_EQ(refusal(g),
              "op embed (step-embedding): step 'step' has shape [2], expected one value");
  }
  {  // A step as bf16.
    Graph g("code-predictor", 1);
    const int ids = tensor(g, "ids", TensorRole::input, {1}, DType::i32);
    const int step = tensor(g, "step", TensorRole::input, {1});
    const int w = tensor(g, "tables", TensorRole::weight, {3 * 32, 64});
    g.add_op("embed", "step-embedding", {ids, step}, {w},
             tensor(g, "y", TensorRole::activation, {1, 64}), {1, 64, 1, 64}, {{"entries", 32}});
    g.finalize();
    EXPECT_EQ(refusal(g),
              "op embed (step-embedding): input 'step' is bf16, the tile body reads i32");
  }
  {  // Tables that are not whole steps of entries rows.
    Graph g("code-predictor", 1);
    const int ids = tensor(g, "ids", TensorRole::input, {1}, DType::i32);
    const int step = tensor(g, "step", TensorRole::input, {1}, DType::i32);
    const int w = tensor(g, "tables", TensorRole::weight, {100, 64});
    g.add_op("embed", "step-embedding", {ids, step}, {w},
             tensor(g, "y", TensorRole::activation, {1, 64}), {1, 64, 1, 64}, {{"entries", 32}});
    g.finalize();
    EXPECT_EQ(refusal(g),
              "op embed (step-embedding): 'tables' has shape [100, 64], expected (steps * 32, 64)");
  }
  {  // A head whose logits are not one step's entries.
    Graph g("code-predictor", 1);
    const int h = tensor(g, "h", TensorRole::input, {1, 64});
    const int step = tensor(g, "step", TensorRole::input, {1}, DType::i32);
    const int w = tensor(g, "heads", TensorRole::weight, {3 * 32, 64});
    g.add_op("head", "step-head", {h, step}, {w},
             tensor(g, "logits", TensorRole::activation, {1, 48}, DType::f32), {1, 48, 1, 16},
             {{"entries", 32}});
    g.finalize();
    EXPECT_EQ(refusal(g), "op head (step-head): output has 48 columns, entries = 32");
  }
  {  // Heads as wide as something else than the hidden states.
    Graph g("code-predictor", 1);
    const int h = tensor(g, "h", TensorRole::input, {1, 64});
    const int step = tensor(g, "step", TensorRole::input, {1}, DType::i32);
    const int w = tensor(g, "heads", TensorRole::weight, {3 * 32, 128});
    g.add_op("head", "step-head", {h, step}, {w},
             tensor(g, "logits", TensorRole::activation, {1, 32}, DType::f32), {1, 32, 1, 16});
    g.finalize();
    EXPECT_EQ(refusal(g),
              "op head (step-head): 'heads' has shape [96, 128], expected (steps * 32, 64)");
  }
}

// ---- Throughput at Qwen3-TTS-12Hz-0.6B's code predictor head ---------------------------------

// Milliseconds per launch of op 0 of `g`, over kRuns launches after a warm-up.
double launch_ms(const Graph& g, const executor::StageBuffers& buffers) {
  constexpr int kRuns = 50;
  executor::launch_op(g, 0, buffers, nullptr);
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < kRuns; ++i) executor::launch_op(g, 0, buffers, nullptr);
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / kRuns;
}

// Prints achieved GB/s of step-head (the last of 15 stacked heads, 2048 x 1024) beside lm-head
// over one such head, the same body without a step: the step should cost nothing measurable.
// Both stream one head's 4 MB of weights; an H200's HBM ceiling is about 4.8 TB/s.
TEST(StepOpsThroughput, StepHeadBesideLmHead) {
  MEGACUT_REQUIRE_GPU();
  constexpr int64_t kHidden = 1024, kEntries = 2048, kSteps = 15;
  for (int64_t rows : {1, 8}) {
    const Graph step = step_graph({true, rows, kHidden, kEntries, kSteps, rows, 64, false});
    Graph plain("decode", rows);
    const int x = tensor(plain, "final_norm", TensorRole::input, {rows, kHidden});
    plain.add_op("head", "lm-head", {x},
                 {tensor(plain, "lm_head.weight", TensorRole::weight, {kEntries, kHidden})},
                 tensor(plain, "logits", TensorRole::activation, {rows, kEntries}, DType::f32),
                 {rows, kEntries, rows, 64});
    plain.finalize();
    const std::vector<float> w = random_bf16(3, kSteps * kEntries * kHidden);
    const std::vector<float> in = random_bf16(4, rows * kHidden);
    const int32_t last = kSteps - 1;
    OpBuffers s(step), p(plain);
    s.set_weights(0, w);
    p.set_weights(0, std::span<const float>(w).last(kEntries * kHidden));
    s.place(0, upload_bf16(in));
    p.place(0, upload_bf16(in));
    s.place(1, upload<int32_t>(std::span<const int32_t>(&last, 1)));
    s.poisoned(step.op(0).output);
    p.poisoned(plain.op(0).output);
    const double bytes_moved =
        2.0 * kEntries * kHidden + 2.0 * rows * kHidden + 4.0 * rows * kEntries;
    auto report = [&](const Graph& g, const executor::StageBuffers& buffers) {
      const double ms = launch_ms(g, buffers);
      std::printf("%-9s rows %2lld %-44s %8.2f us %8.0f GB/s\n",
                  std::string(g.op(0).kind->name()).c_str(), static_cast<long long>(rows),
                  executor::tile_body_name(g, 0).c_str(), 1e3 * ms,
                  bytes_moved / (ms * 1e-3) / 1e9);
    };
    report(step, s.buffers);
    report(plain, p.buffers);
  }
}

// ---- tiny-qwen3-tts's code predictor stage ---------------------------------------------------

model::Graph code_predictor(int64_t batch) {
  const model::ModelSpec spec = model::load_model("tiny-qwen3-tts");
  return model::build_graph(spec, model::make_scenario(spec, batch, 8), "code-predictor");
}

const model::Op& op_of_kind(const Graph& g, std::string_view kind) {
  for (const model::Op& op : g.ops()) {
    if (op.kind->name() == kind) return op;
  }
  throw std::runtime_error("no " + std::string(kind) + " op");
}

const model::Op& producer(const Graph& g, int tensor) {
  for (const model::Op& op : g.ops()) {
    if (op.output == tensor) return op;
  }
  throw std::runtime_error("no op writes " + g.tensor(tensor).name);
}

// Host only: its schedule as one region cannot deadlock, and its kernel compiles with NVRTC.
TEST(CodePredictorRegion, ScheduleAndKernelAreSound) {
  const std::string cache = ::testing::TempDir() + "megacut_step_mk_cache";
  std::filesystem::remove_all(cache);
  setenv("MEGACUT_CACHE_DIR", cache.c_str(), 1);
  for (int64_t batch : {1, 3}) {
    const Graph g = code_predictor(batch);
    for (int queues : {1, 5, 132}) {
      const executor::TaskTable t =
          executor::make_task_table(g, model::make_schedule(g, 0, g.op_count(), queues));
      EXPECT_EQ(executor::find_deadlock(t), "") << "batch " << batch << ", " << queues << " queues";
    }
    const std::vector<std::string> bodies = executor::region_body_names(g, 0, g.op_count());
    EXPECT_NE(std::find(bodies.begin(), bodies.end(), "megacut::tiles::EmbeddingTile"),
              bodies.end());
    const executor::CompiledKernel k = executor::compile_region_kernel(
        executor::region_kernel_source(bodies, false), 90, "code predictor");
    EXPECT_GT(k.cubin.size(), 1000u);
  }
  unsetenv("MEGACUT_CACHE_DIR");
}

// The stage's device buffers: token ids from the talker's vocabulary (control codes included),
// the step, KV caches holding random keys and values before past_len (NaN after), random
// weights (norms near 1, the rest scaled by their fan-in) and poisoned activations.
class CodePredictorBuffers {
 public:
  CodePredictorBuffers(const Graph& g, int64_t talker_vocab) : g_(g) {
    buffers.tensors.assign(g.tensors().size(), nullptr);
    buffers.op_weights.assign(g.op_count(), nullptr);
    const int64_t past_len = g.op(0).attrs.i("past_len");
    for (int id = 0; id < static_cast<int>(g.tensors().size()); ++id) {
      const model::Tensor& t = g.tensor(id);
      if (t.role == TensorRole::weight) continue;
      if (t.name == "token_ids") {
        ids_.resize(t.elements());
        for (size_t i = 0; i < ids_.size(); ++i) {
          ids_[i] = static_cast<int32_t>(hash("id" + std::to_string(i)) % talker_vocab);
        }
        ids_[0] = static_cast<int32_t>(talker_vocab - 1);  // a control code, past the entries
        place(id, upload<int32_t>(ids_));
      } else if (t.name == "step") {
        step_ = &place(id, DeviceBuffer(4));
      } else if (t.role == TensorRole::state) {
        const std::vector<float> v = random_bf16(id, t.elements());
        std::vector<float> filled(v.size(), std::nanf(""));
        const int64_t row = t.shape.at(2), capacity = t.shape.at(1);
        for (size_t i = 0; i < v.size(); ++i) {
          if (static_cast<int64_t>(i) / row % capacity < past_len) filled[i] = v[i];
        }
        caches_.emplace_back(&place(id, DeviceBuffer(t.bytes())), filled);
      } else {
        activations_.push_back(&place(id, DeviceBuffer(t.bytes())));
      }
    }
    for (const model::Op& op : g.ops()) {
      if (op.weights.empty()) continue;
      int64_t count = 0, k = 1;
      for (int w : op.weights) count += g.tensor(w).elements(), k = g.tensor(w).shape.back();
      const bool norm = op.kind->name() == "rmsnorm" || op.kind->name() == "qk-norm";
      const float scale = norm ? 1.f : 1.f / std::sqrt(static_cast<float>(k));
      weights_[op.index] = random_bf16(op.index + 100, count, norm ? 0.5f : -scale, scale);
      owned_.push_back(upload_bf16(weights_[op.index]));
      buffers.op_weights[op.index] = owned_.back().get();
    }
  }

  // Sets the step, restores the caches and poisons every activation.
  void reset(int32_t step) {
    set_i32(*step_, std::span<const int32_t>(&step, 1));
    for (auto& [d, values] : caches_) {
      std::vector<uint16_t> h(values.size());
      for (size_t i = 0; i < values.size(); ++i) h[i] = to_bf16(values[i]);
      CUDA_CHECK(cudaMemcpy(d->get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    }
    for (DeviceBuffer* d : activations_) d->poison();
    executor::wait_for_legacy_stream();  // the step's and the caches' copies too
  }

  // Every op's output as raw bytes, by op.
  std::vector<std::vector<char>> outputs() const {
    std::vector<std::vector<char>> v;
    for (const model::Op& op : g_.ops()) {
      std::vector<char> bytes(g_.tensor(op.output).bytes());
      CUDA_CHECK(cudaMemcpy(bytes.data(), buffers.tensors[op.output], bytes.size(),
                            cudaMemcpyDeviceToHost));
      v.push_back(std::move(bytes));
    }
    return v;
  }

  const std::vector<int32_t>& ids() const { return ids_; }
  const std::vector<float>& weights(int op) const { return weights_.at(op); }

  executor::StageBuffers buffers;

 private:
  DeviceBuffer& place(int id, DeviceBuffer d) {
    owned_.push_back(std::move(d));
    buffers.tensors[id] = owned_.back().get();
    return owned_.back();
  }

  const Graph& g_;
  std::deque<DeviceBuffer> owned_;
  std::vector<int32_t> ids_;
  DeviceBuffer* step_ = nullptr;
  std::vector<std::pair<DeviceBuffer*, std::vector<float>>> caches_;
  std::vector<DeviceBuffer*> activations_;
  std::map<int, std::vector<float>> weights_;  // by op
};

// Values of one op's output bytes as floats: bf16 widened, f32 and i32 as they are.
std::vector<float> as_floats(const model::Tensor& t, const std::vector<char>& bytes) {
  std::vector<float> v(t.elements());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::bf16) {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      v[i] = from_bf16(h);
    } else if (t.dtype == DType::f32) {
      std::memcpy(&v[i], &bytes[4 * i], 4);
    } else {
      int32_t n;
      std::memcpy(&n, &bytes[4 * i], 4);
      v[i] = static_cast<float>(n);
    }
  }
  return v;
}

// Regions run the very tile bodies on the same tiles, so outputs are expected bitwise equal;
// as in megakernel_gpu_test.cc each op is held to a relative L2 error of 5e-3 and the bitwise
// count printed, greedy codes equal where logits are.
TEST(CodePredictorStage, OneRegionMatchesConventionalAtEachStep) {
  MEGACUT_REQUIRE_GPU();
  const model::ModelSpec spec = model::load_model("tiny-qwen3-tts");
  const model::CodePredictorConfig& cp = *spec.tts->code_predictor;
  const int64_t entries = cp.decoder.vocab_size, hidden = cp.decoder.hidden_size;
  ASSERT_GT(spec.decoder.vocab_size, entries) << "the talker's codes must reach past the entries";
  for (int64_t batch : {1, 3}) {
    const Graph g = code_predictor(batch);
    for (const model::Op& op : g.ops()) {
      ASSERT_TRUE(executor::can_implement(g, op.index))
          << executor::can_implement(g, op.index).reason;
    }
    const model::Op& embed = op_of_kind(g, "step-embedding");
    const model::Op& head = op_of_kind(g, "step-head");
    CodePredictorBuffers b(g, spec.decoder.vocab_size);
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    executor::MegakernelRegion region(g, 0, g.op_count(), b.buffers);  // serves every step
    std::vector<float> first_logits;
    for (const int32_t step : steps_to_run(cp.steps())) {
      SCOPED_TRACE("batch " + std::to_string(batch) + ", step " + std::to_string(step));
      b.reset(step);
      for (int op = 0; op < g.op_count(); ++op) executor::launch_op(g, op, b.buffers, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<std::vector<char>> want = b.outputs();

      // The step's table and head, against their references.
      const std::vector<float> x = as_floats(g.tensor(embed.output), want[embed.index]);
      EXPECT_TRUE(close_to(
          x, reference::step_embedding(b.ids(), b.weights(embed.index), entries, hidden, step),
          kExact, hidden));
      const std::vector<float> h =
          as_floats(g.tensor(head.inputs[0]), want[producer(g, head.inputs[0]).index]);
      const std::vector<float> logits = as_floats(g.tensor(head.output), want[head.index]);
      EXPECT_TRUE(close_to(logits,
                           reference::step_head(h, b.weights(head.index), entries, hidden, step),
                           kLogits, entries));
      const std::vector<float> next = as_floats(g.tensor(g.ops().back().output), want.back());
      const std::vector<int32_t> argmax = reference::argmax(logits, entries);
      for (size_t r = 0; r < next.size(); ++r) EXPECT_EQ(next[r], argmax[r]) << "row " << r;
      if (first_logits.empty()) {
        first_logits = logits;
      } else {
        EXPECT_NE(logits, first_logits) << "the step changed nothing";
      }

      b.reset(step);
      region.launch(stream);
      region.check(stream);
      const std::vector<std::vector<char>> got = b.outputs();
      int bitwise = 0;
      for (const model::Op& op : g.ops()) {
        const model::Tensor& t = g.tensor(op.output);
        const std::vector<float> a = as_floats(t, got[op.index]), w = as_floats(t, want[op.index]);
        double diff = 0, norm = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          diff += (double(a[i]) - w[i]) * (double(a[i]) - w[i]);
          norm += double(w[i]) * w[i];
        }
        const double rel = std::isfinite(diff) ? std::sqrt(diff / std::max(norm, 1e-30)) : INFINITY;
        EXPECT_LE(rel, 5e-3) << "op " << op.name;
        bitwise += got[op.index] == want[op.index];
      }
      if (got[head.index] == want[head.index]) {
        EXPECT_EQ(got.back(), want.back());
      }
      std::printf("batch %lld step %d: %d of %d ops bitwise equal to conventional (%d tasks)\n",
                  static_cast<long long>(batch), step, bitwise, g.op_count(),
                  region.config().tasks);
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
  }
}

}  // namespace
}  // namespace megacut::testing
