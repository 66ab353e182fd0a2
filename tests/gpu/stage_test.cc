// A whole stage through launch_op: every op of a small graph, eagerly and then replayed from a
// captured CUDA graph, which must give the same bits (launch_op neither allocates nor
// synchronizes); the logits must be finite everywhere and next_token their argmax.
#include <gtest/gtest.h>

#include <deque>
#include <ostream>
#include <string>
#include <vector>

#include "executor/conventional.h"
#include "executor/reference/op_reference.h"
#include "tests/gpu/gpu_support.h"
#include "tests/gpu/op_cases.h"

namespace megacut::testing {
namespace {

using executor::LinearProvider;

class StageRun {
 public:
  StageRun(model::Graph graph, int64_t past_len) : g_(std::move(graph)) {
    b_.tensors.assign(g_.tensors().size(), nullptr);
    b_.op_weights.assign(g_.op_count(), nullptr);
    for (int id = 0; id < static_cast<int>(g_.tensors().size()); ++id) {
      const model::Tensor& t = g_.tensor(id);
      if (t.role == model::TensorRole::weight) continue;
      if (t.role == model::TensorRole::input) {  // token ids
        std::vector<int32_t> ids(t.elements());
        const int64_t vocab = g_.tensor(g_.op(0).weights.at(0)).shape.at(0);
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 7919 % vocab);
        place(id, upload<int32_t>(ids));
      } else if (t.role == model::TensorRole::state) {  // KV cache: earlier positions filled
        const std::vector<float> v = random_bf16(id, t.elements());
        std::vector<float> filled(v.size(), std::nanf(""));
        const int64_t row = t.shape.at(2), capacity = t.shape.at(1);
        for (size_t i = 0; i < v.size(); ++i) {
          if (static_cast<int64_t>(i) / row % capacity < past_len) filled[i] = v[i];
        }
        place(id, upload_bf16(filled));
      } else {
        activations_.push_back(&place(id, DeviceBuffer(t.bytes())));
      }
    }
    for (const model::Op& op : g_.ops()) {
      if (op.weights.empty()) continue;
      int64_t count = 0, k = 1;
      for (int w : op.weights) count += g_.tensor(w).elements(), k = g_.tensor(w).shape.back();
      const bool norm = op.kind->name() == "rmsnorm" || op.kind->name() == "qk-norm";
      const float scale = norm ? 1.f : 1.f / std::sqrt(static_cast<float>(k));
      const std::vector<float> w = random_bf16(op.index + 100, count, norm ? 0.5f : -scale, scale);
      owned_.push_back(upload_bf16(w));
      b_.op_weights[op.index] = owned_.back().get();
    }
  }

  void poison_activations() {
    for (DeviceBuffer* d : activations_) d->poison();
  }

  void launch_all(cudaStream_t stream, LinearProvider provider, executor::KernelContext& context) {
    for (int op = 0; op < g_.op_count(); ++op) {
      executor::launch_op(g_, op, b_, stream, provider, &context);
    }
  }

  std::vector<float> logits() const {
    const int id = g_.ops().at(g_.op_count() - 2).output;
    return download<float>(*buffer(id), g_.tensor(id).elements());
  }
  std::vector<int32_t> next_token() const {
    const int id = g_.ops().back().output;
    return download<int32_t>(*buffer(id), g_.tensor(id).elements());
  }
  int64_t vocab() const { return g_.tensor(g_.ops().back().inputs[0]).shape.back(); }

 private:
  DeviceBuffer& place(int id, DeviceBuffer d) {
    owned_.push_back(std::move(d));
    b_.tensors[id] = owned_.back().get();
    return owned_.back();
  }
  const DeviceBuffer* buffer(int id) const {
    for (const DeviceBuffer& d : owned_) {
      if (d.get() == b_.tensors[id]) return &d;
    }
    return nullptr;
  }

  model::Graph g_;
  executor::StageBuffers b_;
  std::deque<DeviceBuffer> owned_;
  std::vector<DeviceBuffer*> activations_;
};

struct StageCase {
  const char* model;
  int64_t seq_len, past_len, batch;
  LinearProvider provider;
};

std::string stage_name(const StageCase& c) {
  return std::string(c.model) + "_seq" + std::to_string(c.seq_len) + "_past" +
         std::to_string(c.past_len) + "_b" + std::to_string(c.batch) + "_" +
         std::string(executor::provider_name(c.provider));
}

// Names the case where gtest prints a parameter (test lists, failures), not its bytes.
void PrintTo(const StageCase& c, std::ostream* os) { *os << stage_name(c); }

class StageTest : public ::testing::TestWithParam<StageCase> {};

TEST_P(StageTest, GraphReplayMatchesEagerRun) {
  MEGACUT_REQUIRE_GPU();
  const StageCase& c = GetParam();
  executor::KernelContext context;
  executor::prepare_kernels();
  StageRun run(build_stage(c.model, c.seq_len, c.past_len, c.batch), c.past_len);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  run.launch_all(stream, c.provider, context);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> eager_logits = run.logits();
  const std::vector<int32_t> eager_next = run.next_token();
  for (size_t i = 0; i < eager_logits.size(); ++i) {
    ASSERT_TRUE(std::isfinite(eager_logits[i])) << "logit " << i << " = " << eager_logits[i];
  }
  EXPECT_EQ(eager_next, reference::argmax(eager_logits, run.vocab()));

  run.poison_activations();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  run.launch_all(stream, c.provider, context);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  EXPECT_EQ(run.logits(), eager_logits);
  EXPECT_EQ(run.next_token(), eager_next);
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(Stages, StageTest,
                         ::testing::Values(StageCase{"odd", 37, 0, 3, LinearProvider::ours},
                                           StageCase{"odd", 37, 0, 3, LinearProvider::cublaslt},
                                           StageCase{"odd", 1, 50, 3, LinearProvider::ours},
                                           StageCase{"oddqwen", 128, 0, 1, LinearProvider::ours},
                                           StageCase{"oddqwen", 1, 40, 8, LinearProvider::cublaslt},
                                           StageCase{"llama1b", 1, 128, 1, LinearProvider::ours}),
                         [](const auto& info) { return stage_name(info.param); });

}  // namespace
}  // namespace megacut::testing
