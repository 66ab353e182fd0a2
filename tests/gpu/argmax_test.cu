// argmax's tile body on the rows greedy decoding meets and on the ones it should not: ties (the
// first index wins), NaN (the first NaN wins), rows of -inf, -0 against +0, +inf, the maximum
// at either end or in a row's unaligned head, rising and falling rows; vocabularies below,
// at and around multiples of the block width and of its loads, with rows starting at every
// 4-byte offset from 16-byte alignment. The conventional kernel and a wider persistent block
// (as in a megakernel region: more threads than the body's, several rows one after another)
// must both give reference::argmax exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "executor/conventional.h"
#include "executor/reference/op_reference.h"
#include "executor/tile_layouts.cuh"
#include "tests/gpu/gpu_support.h"

namespace megacut::testing {
namespace {

using tiles::ArgmaxTile;

template <int kBlockThreads>
__global__ void __launch_bounds__(kBlockThreads, 1)
    persistent_argmax(const ArgmaxTile::Layout layout) {
  extern __shared__ __align__(128) char smem[];
  for (long long tile = blockIdx.x; tile < layout.grid.count(); tile += gridDim.x) {
    ArgmaxTile::run(layout, tile, smem);
  }
}

model::Graph argmax_graph(int64_t rows, int64_t vocab) {
  model::Graph g("decode", rows);
  const int logits =
      g.add_tensor({"logits", model::TensorRole::activation, model::DType::f32, {rows, vocab}});
  const int next =
      g.add_tensor({"next_token", model::TensorRole::activation, model::DType::i32, {rows, 1}});
  g.add_op("argmax", "argmax", {logits}, {}, next, model::Tiling{rows, 1, 1, 1});
  g.finalize();
  return g;
}

constexpr int kPatterns = 15;

// Row r of a (rows, vocab) matrix: pattern r % kPatterns, positions from the row's own seed.
void fill_row(float* row, int64_t vocab, int64_t r) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const uint64_t seed = static_cast<uint64_t>(vocab * 1000 + r);
  auto position = [&](uint64_t k) {
    return static_cast<int64_t>(uniform(seed, 1u << 30 | k, 0.f, 1.f) * vocab) % vocab;
  };
  const int64_t a = position(0), b = position(1);
  for (int64_t i = 0; i < vocab; ++i) row[i] = uniform(seed, i, -10.f, 10.f);
  switch (r % kPatterns) {
    case 0:  // random
      break;
    case 1:  // a tie far apart
      row[a] = row[b] = 50.f;
      break;
    case 2:  // all equal
      for (int64_t i = 0; i < vocab; ++i) row[i] = 1.5f;
      break;
    case 3:  // all -inf
      for (int64_t i = 0; i < vocab; ++i) row[i] = -inf;
      break;
    case 4:  // -inf here and there, the maximum last
      row[a] = row[b] = -inf;
      row[vocab - 1] = 60.f;
      break;
    case 5:  // the maximum first
      row[0] = 60.f;
      break;
    case 6:  // two NaN (the first wins) and +inf elsewhere
      row[a] = row[b] = nan;
      row[position(2)] = inf;
      break;
    case 7:  // -0 at a, +0 at b, everything else negative: equal, the first wins
      for (int64_t i = 0; i < vocab; ++i) row[i] = -std::abs(row[i]) - 1.f;
      row[a] = -0.f;
      row[b] = 0.f;
      break;
    case 8:  // +inf twice
      row[a] = row[b] = inf;
      break;
    case 9:  // rising: every element beats the ones before it
      for (int64_t i = 0; i < vocab; ++i) row[i] = static_cast<float>(i) - 1e4f;
      break;
    case 10:  // falling
      for (int64_t i = 0; i < vocab; ++i) row[i] = -static_cast<float>(i);
      break;
    case 11:  // -inf but one NaN at the end
      for (int64_t i = 0; i < vocab; ++i) row[i] = -inf;
      row[vocab - 1] = nan;
      break;
    case 12:  // the maximum early, in the unaligned head where there is one
      row[std::min<int64_t>(2, vocab - 1)] = 60.f;
      break;
    case 13:  // a tie of neighbours, inside one 16-byte load or across two threads
      row[a] = 50.f;
      row[std::min(a + 1, vocab - 1)] = 50.f;
      break;
    case 14:  // -inf but one number: most threads see nothing but -inf
      for (int64_t i = 0; i < vocab; ++i) row[i] = -inf;
      row[b] = -3.f;
      break;
  }
}

struct ArgmaxCase {
  int64_t vocab;
  int shift;  // floats between 16-byte alignment and the first row
};

void PrintTo(const ArgmaxCase& c, std::ostream* os) {
  *os << "vocab " << c.vocab << ", rows shifted " << c.shift << " floats";
}

class ArgmaxTest : public ::testing::TestWithParam<ArgmaxCase> {};

TEST_P(ArgmaxTest, MatchesReferenceInKernelAndWideBlock) {
  MEGACUT_REQUIRE_GPU();
  const ArgmaxCase c = GetParam();
  constexpr int64_t kRows = 2 * kPatterns;
  const model::Graph g = argmax_graph(kRows, c.vocab);
  std::vector<float> logits(static_cast<size_t>(kRows * c.vocab));
  for (int64_t r = 0; r < kRows; ++r) fill_row(&logits[r * c.vocab], c.vocab, r);
  const std::vector<int32_t> want = reference::argmax(logits, c.vocab);

  std::vector<float> shifted(static_cast<size_t>(c.shift), 0.f);
  shifted.insert(shifted.end(), logits.begin(), logits.end());
  const DeviceBuffer input = upload<float>(shifted);
  const DeviceBuffer conventional(kRows * sizeof(int32_t)), wide(kRows * sizeof(int32_t));
  executor::StageBuffers b;
  b.tensors = {static_cast<float*>(input.get()) + c.shift, conventional.get()};
  b.op_weights.assign(1, nullptr);
  executor::launch_op(g, 0, b, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download<int32_t>(conventional, kRows), want) << "conventional kernel";

  b.tensors[1] = wide.get();
  const ArgmaxTile::Layout layout = executor::argmax_layout(g, g.op(0), b);
  constexpr int kBlockThreads = ArgmaxTile::kThreads + 96;
  persistent_argmax<kBlockThreads><<<3, kBlockThreads, ArgmaxTile::smem_bytes(layout)>>>(layout);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download<int32_t>(wide, kRows), want) << "wide persistent block";
}

std::vector<ArgmaxCase> argmax_cases() {
  std::vector<ArgmaxCase> cases;
  for (int64_t vocab : {1,    2,    3,    4,    5,    7,     8,     255,   256,    257,   1023,
                        1024, 1025, 4095, 4096, 4097, 16383, 16385, 65537, 128256, 151936}) {
    for (int shift = 0; shift < 4; ++shift) cases.push_back({vocab, shift});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ArgmaxTest, ::testing::ValuesIn(argmax_cases()),
                         [](const auto& info) {
                           return "vocab" + std::to_string(info.param.vocab) + "_shift" +
                                  std::to_string(info.param.shift);
                         });

}  // namespace
}  // namespace megacut::testing
