// The audio decoder op kinds on small hand-built graphs: the input rows each output tile reads
// (receptive fields that stop at sequence boundaries, upsampling maps), per-tile costs worked
// out by hand, and the tile-graph edges of a short chain.
#include <gtest/gtest.h>

#include <boost/graph/graph_traits.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/graph.h"

namespace megacut::model {
namespace {

int activation(Graph& g, const std::string& name, int64_t rows, int64_t cols) {
  return g.add_tensor({name, TensorRole::activation, DType::bf16, {rows, cols}});
}

int weight(Graph& g, const std::string& name, std::vector<int64_t> shape) {
  return g.add_tensor({name, TensorRole::weight, DType::bf16, std::move(shape)});
}

std::vector<Box> reads(const Graph& g, int op, const Box& out, int input = 0) {
  return g.op(op).kind->input_boxes(g.op(op), g, input, out);
}

// A dense causal conv over 2 sequences of 16 steps, 4 -> 6 channels, kernel 3, dilation 2:
// output step t reads steps [t - 4, t]. Tiles of 8 rows x 3 channels.
struct DenseConv {
  Graph g{"decode", 2};
  int op = 0;
  DenseConv() {
    const int x = g.add_tensor({"x", TensorRole::input, DType::bf16, {32, 4}});
    const int w = weight(g, "conv.weight", {6, 4, 3});
    const int b = weight(g, "conv.bias", {6});
    op = g.add_op("conv", "conv1d", {x}, {w, b}, activation(g, "y", 32, 6), {32, 6, 8, 3},
                  {{"kernel", 3}, {"dilation", 2}, {"groups", 1}, {"len", 16}});
    g.finalize();
  }
};

TEST(AudioOpKindsTest, RegistryKnowsEveryAudioKind) {
  for (const char* kind : {"codebook-sum", "conv1d", "conv-transpose1d", "snake-beta", "leaky-relu",
                           "tanh", "add-scaled"}) {
    EXPECT_NE(find_op_kind(kind), nullptr) << kind;
    EXPECT_NO_THROW(op_kind(kind)) << kind;
  }
  EXPECT_EQ(op_kind("conv1d").access(0), Access::windowed);
  EXPECT_EQ(op_kind("conv-transpose1d").access(0), Access::windowed);
  EXPECT_EQ(op_kind("add-scaled").input_count(), 2);
}

TEST(AudioOpKindsTest, CausalConv1dReadsItsReceptiveFieldWithinTheSequence) {
  const DenseConv c;
  // Rows [8, 16) of sequence 0 read steps [4, 16); every input channel, whatever the tile's
  // output channels.
  EXPECT_EQ(reads(c.g, c.op, {8, 16, 3, 6}), (std::vector<Box>{{4, 16, 0, 4}}));
  // Rows [16, 24) start sequence 1: steps 12..15 belong to sequence 0 and are not read.
  EXPECT_EQ(reads(c.g, c.op, {16, 24, 0, 3}), (std::vector<Box>{{16, 24, 0, 4}}));
  // Rows [24, 32): steps [20, 32).
  EXPECT_EQ(reads(c.g, c.op, {24, 32, 0, 3}), (std::vector<Box>{{20, 32, 0, 4}}));
  // A tile across the boundary, rows [12, 20): [8, 16) of sequence 0 and [16, 20) of sequence 1.
  EXPECT_EQ(reads(c.g, c.op, {12, 20, 0, 6}), (std::vector<Box>{{8, 16, 0, 4}, {16, 20, 0, 4}}));
}

// A centred conv (HiFi-GAN's "same" padding) over 2 sequences of 16 steps, 4 -> 4 channels,
// kernel 3, dilation 3, lookahead 3: output step t reads steps [t - 3, t + 3] of its sequence.
struct CentredConv {
  Graph g{"decode", 2};
  int op = 0;
  explicit CentredConv(int64_t lookahead = 3) {
    const int x = g.add_tensor({"x", TensorRole::input, DType::bf16, {32, 4}});
    const int w = weight(g, "conv.weight", {4, 4, 3});
    op = g.add_op("conv", "conv1d", {x}, {w}, activation(g, "y", 32, 4), {32, 4, 8, 4},
                  {{"kernel", 3},
                   {"dilation", 3},
                   {"groups", 1},
                   {"len", 16},
                   {"lookahead", double(lookahead)}});
    g.finalize();
  }
};

TEST(AudioOpKindsTest, CentredConv1dReadsAheadButNotPastItsSequence) {
  const CentredConv c;
  // Rows [0, 8): steps [0, 11) (nothing before step 0).
  EXPECT_EQ(reads(c.g, c.op, {0, 8, 0, 4}), (std::vector<Box>{{0, 11, 0, 4}}));
  // Rows [8, 16), the end of sequence 0: steps [5, 16), not into sequence 1.
  EXPECT_EQ(reads(c.g, c.op, {8, 16, 0, 4}), (std::vector<Box>{{5, 16, 0, 4}}));
  // Rows [16, 24) start sequence 1: steps [16, 27), none of sequence 0.
  EXPECT_EQ(reads(c.g, c.op, {16, 24, 0, 4}), (std::vector<Box>{{16, 27, 0, 4}}));
  // A tile across the boundary, rows [12, 20): [9, 16) of sequence 0 and [16, 23) of sequence 1.
  EXPECT_EQ(reads(c.g, c.op, {12, 20, 0, 4}), (std::vector<Box>{{9, 16, 0, 4}, {16, 23, 0, 4}}));
  // Cost of rows [0, 8): 11 input rows x 4 channels = 88 B and weights 4 x 4 x 3 x 2 = 96 B
  // read; 2 * 8 * 4 * 3 * 4 = 768 FLOPs, as for a causal conv.
  const TileCost first = c.g.task_cost(c.g.task_id(c.op, 0));
  EXPECT_EQ(first.bytes_read, 88 + 96);
  EXPECT_EQ(first.flops, 768);
}

TEST(AudioOpKindsTest, Conv1dRejectsALookaheadPastItsReach) {
  // Kernel 3, dilation 3: reach 6. Lookahead 6 looks only ahead; 7 or -1 is an error.
  const CentredConv ahead(6);
  EXPECT_EQ(reads(ahead.g, ahead.op, {8, 16, 0, 4}), (std::vector<Box>{{8, 16, 0, 4}}));
  EXPECT_EQ(reads(ahead.g, ahead.op, {0, 8, 0, 4}), (std::vector<Box>{{0, 14, 0, 4}}));
  // The input here is no op's output, so finalize asks for no boxes; asking throws.
  const CentredConv too_far(7);
  try {
    reads(too_far.g, too_far.op, {0, 8, 0, 4});
    ADD_FAILURE() << "lookahead 7 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "op conv: conv1d lookahead 7 is outside [0, (kernel - 1) * dilation = 6]");
  }
  const CentredConv behind(-1);
  EXPECT_THROW(reads(behind.g, behind.op, {0, 8, 0, 4}), Error);
  EXPECT_THROW(behind.g.task_cost(behind.g.task_id(behind.op, 0)), Error);
}

TEST(AudioOpKindsTest, CentredConv1dChainWaitsForTheTileAhead) {
  // tanh -> centred conv (kernel 3, dilation 1, lookahead 1) over one sequence of 32 steps,
  // 8-row tiles: conv tile [8, 16) reads steps [7, 17), so it waits for tanh tiles 0, 1 and 2
  // (a causal conv would wait for 0 and 1 only); the last conv tile [24, 32) reads [23, 32):
  // tiles 2 and 3.
  Graph g("decode", 1);
  const int x = g.add_tensor({"x", TensorRole::input, DType::bf16, {32, 4}});
  const int act = g.add_op("act", "tanh", {x}, {}, activation(g, "a", 32, 4), {32, 4, 8, 4});
  const int conv =
      g.add_op("conv", "conv1d", {g.op(act).output}, {weight(g, "conv.weight", {4, 4, 3})},
               activation(g, "c", 32, 4), {32, 4, 8, 4},
               {{"kernel", 3}, {"dilation", 1}, {"groups", 1}, {"len", 32}, {"lookahead", 1}});
  g.finalize();
  EXPECT_EQ(g.task_deps(g.task_id(conv, 1)),
            (std::vector<TaskId>{g.task_id(act, 0), g.task_id(act, 1), g.task_id(act, 2)}));
  EXPECT_EQ(g.task_deps(g.task_id(conv, 3)),
            (std::vector<TaskId>{g.task_id(act, 2), g.task_id(act, 3)}));
}

TEST(AudioOpKindsTest, DepthwiseConvReadsOnlyItsOwnChannels) {
  // 64 channels, groups 64, kernel 7, dilation 1, len 32: channels [16, 32) of rows [40, 48)
  // read channels [16, 32) of steps [34, 48) (sequence 1 starts at row 32).
  Graph g("decode", 2);
  const int x = activation(g, "x", 64, 64);
  const int w = weight(g, "dw.weight", {64, 1, 7});
  const int op = g.add_op("dw", "conv1d", {x}, {w}, activation(g, "y", 64, 64), {64, 64, 8, 16},
                          {{"kernel", 7}, {"dilation", 1}, {"groups", 64}, {"len", 32}});
  g.finalize();
  EXPECT_EQ(reads(g, op, {40, 48, 16, 32}), (std::vector<Box>{{34, 48, 16, 32}}));
  // Rows [32, 40) of the same channels stop at the sequence start.
  EXPECT_EQ(reads(g, op, {32, 40, 16, 32}), (std::vector<Box>{{32, 40, 16, 32}}));
  // Cost of that tile (row tile 4 of 8, column tile 1 of 4): reads 8 x 16 input, 16 x 7 weights
  // (no bias); writes 8 x 16; 2 * 8 * 16 * 7 * 1 FLOPs.
  const TileCost cost = g.task_cost(g.task_id(op, 4 * 4 + 1));
  EXPECT_EQ(cost.bytes_read, 8 * 16 * 2 + 16 * 7 * 2);
  EXPECT_EQ(cost.bytes_written, 8 * 16 * 2);
  EXPECT_EQ(cost.flops, 2 * 8 * 16 * 7);
}

TEST(AudioOpKindsTest, CausalConv1dTileCost) {
  const DenseConv c;
  // Tile rows [24, 32) x channels [3, 6) (tile 7): input 12 rows x 4 channels = 96 B; weights of
  // 3 output channels, 3 x 4 x 3 x 2 = 72 B; bias 6 B: 174 B read. Writes 8 x 3 x 2 = 48 B.
  // FLOPs 2 * 8 * 3 * 3 taps * 4 inputs = 576.
  const TileCost last = c.g.task_cost(c.g.task_id(c.op, 7));
  EXPECT_EQ(last.bytes_read, 174);
  EXPECT_EQ(last.bytes_written, 48);
  EXPECT_EQ(last.flops, 576);
  // Tile rows [16, 24) (tile 4) reads only 8 input rows, 64 B: 142 B, same FLOPs.
  const TileCost first = c.g.task_cost(c.g.task_id(c.op, 4));
  EXPECT_EQ(first.bytes_read, 142);
  EXPECT_EQ(first.flops, 576);
}

// A transposed conv over 2 sequences of `len` input rows, 4 -> 2 channels.
struct Upsample {
  Graph g{"decode", 2};
  int op = 0;
  Upsample(int64_t stride, int64_t kernel, int64_t len, int64_t tile_rows) {
    const int x = g.add_tensor({"x", TensorRole::input, DType::bf16, {2 * len, 4}});
    const int w = weight(g, "up.weight", {4, 2, kernel});
    const int b = weight(g, "up.bias", {2});
    const int64_t rows = 2 * len * stride;
    op = g.add_op("up", "conv-transpose1d", {x}, {w, b}, activation(g, "y", rows, 2),
                  {rows, 2, tile_rows, 2},
                  {{"stride", double(stride)}, {"kernel", double(kernel)}, {"len", double(len)}});
    g.finalize();
  }
};

TEST(AudioOpKindsTest, TransposedConvStride2Kernel4MapsRowsAtSequenceBoundaries) {
  // len 8: 16 output rows per sequence. Output step t reads input steps
  // [ceil((t - 3) / 2) clamped to 0, floor(t / 2)].
  const Upsample u(2, 4, 8, 4);
  // Rows [16, 20) are steps 0..3 of sequence 1: input steps [0, 1], rows [8, 10).
  EXPECT_EQ(reads(u.g, u.op, {16, 20, 0, 2}), (std::vector<Box>{{8, 10, 0, 4}}));
  // Rows [20, 24), steps 4..7: ceil(1 / 2) = 1 to 3, rows [9, 12).
  EXPECT_EQ(reads(u.g, u.op, {20, 24, 0, 2}), (std::vector<Box>{{9, 12, 0, 4}}));
  // Rows [12, 20) cross the boundary: steps 12..15 of sequence 0 read [5, 7], rows [5, 8);
  // steps 0..3 of sequence 1 read rows [8, 10).
  EXPECT_EQ(reads(u.g, u.op, {12, 20, 0, 2}), (std::vector<Box>{{5, 8, 0, 4}, {8, 10, 0, 4}}));
  // The last rows of sequence 1, [28, 32), steps 12..15: rows [13, 16), not past the input.
  EXPECT_EQ(reads(u.g, u.op, {28, 32, 0, 2}), (std::vector<Box>{{13, 16, 0, 4}}));
}

TEST(AudioOpKindsTest, TransposedConvStride8Kernel16MapsRowsAtSequenceBoundaries) {
  // len 4: 32 output rows per sequence. Output step t reads input steps
  // [ceil((t - 15) / 8) clamped to 0, floor(t / 8)].
  const Upsample u(8, 16, 4, 8);
  // Rows [32, 40), steps 0..7 of sequence 1: input step 0 only, row 4.
  EXPECT_EQ(reads(u.g, u.op, {32, 40, 0, 2}), (std::vector<Box>{{4, 5, 0, 4}}));
  // Rows [40, 48), steps 8..15: ceil(-7 / 8) -> 0 to 1, rows [4, 6).
  EXPECT_EQ(reads(u.g, u.op, {40, 48, 0, 2}), (std::vector<Box>{{4, 6, 0, 4}}));
  // Rows [24, 40): steps 24..31 of sequence 0 read [ceil(9 / 8), 3] = rows [2, 4); then row 4.
  EXPECT_EQ(reads(u.g, u.op, {24, 40, 0, 2}), (std::vector<Box>{{2, 4, 0, 4}, {4, 5, 0, 4}}));
}

// Every output row's true inputs, by brute force over (input step, tap) pairs, against the union
// of the boxes its tile reads: they must be equal, for tiles that do not align with sequences.
class TransposedConvMap : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(TransposedConvMap, BoxesAreExactlyTheContributingRows) {
  const auto& [stride, kernel, tile_rows] = GetParam();
  constexpr int64_t len = 6;
  const Upsample u(stride, kernel, len, tile_rows);
  const Tiling& tiling = u.g.op(u.op).tiling;
  for (int64_t tile = 0; tile < tiling.count(); ++tile) {
    const Box out = tiling.tile_box(tile);
    std::set<int64_t> expected;
    for (int64_t r = out.row_begin; r < out.row_end; ++r) {
      const int64_t s = r / (len * stride), t = r % (len * stride);
      for (int64_t i = 0; i < len; ++i) {
        if (i * stride <= t && t < i * stride + kernel) expected.insert(s * len + i);
      }
    }
    std::set<int64_t> read;
    for (const Box& box : reads(u.g, u.op, out)) {
      EXPECT_EQ(box.col_begin, 0);
      EXPECT_EQ(box.col_end, 4);
      for (int64_t r = box.row_begin; r < box.row_end; ++r) read.insert(r);
    }
    EXPECT_EQ(read, expected) << "tile " << tile;
  }
}

INSTANTIATE_TEST_SUITE_P(StridesAndKernels, TransposedConvMap,
                         ::testing::Values(std::make_tuple(2, 4, 4), std::make_tuple(2, 4, 5),
                                           std::make_tuple(8, 16, 7), std::make_tuple(5, 11, 9),
                                           std::make_tuple(4, 4, 3)));

TEST(AudioOpKindsTest, TransposedConvTileCost) {
  // Stride 2, kernel 4, len 8; tile rows [20, 24) (tile 5) reads input rows [9, 12):
  // 3 x 4 x 2 = 24 B, weights 4 x 2 x 4 x 2 = 64 B, bias 4 B: 92 B. Writes 4 x 2 x 2 = 16 B.
  // FLOPs 2 * 4 rows * 2 channels * 4 inputs * (4 / 2) taps = 128.
  const Upsample u(2, 4, 8, 4);
  const TileCost cost = u.g.task_cost(u.g.task_id(u.op, 5));
  EXPECT_EQ(cost.bytes_read, 92);
  EXPECT_EQ(cost.bytes_written, 16);
  EXPECT_EQ(cost.flops, 128);
}

TEST(AudioOpKindsTest, ElementwiseKindsAndTheirCosts) {
  // Tiles of 8 rows x 16 channels: 128 elements, 256 B in and out.
  Graph g("decode", 1);
  const int x = activation(g, "x", 8, 64);
  const int alpha = weight(g, "snake.alpha", {64});
  const int beta = weight(g, "snake.beta", {64});
  const Tiling tiling{8, 64, 8, 16};
  const int snake =
      g.add_op("snake", "snake-beta", {x}, {alpha, beta}, activation(g, "s", 8, 64), tiling);
  const int leaky = g.add_op("leaky", "leaky-relu", {g.op(snake).output}, {},
                             activation(g, "l", 8, 64), tiling, {{"slope", 0.1}});
  const int tanh =
      g.add_op("tanh", "tanh", {g.op(leaky).output}, {}, activation(g, "t", 8, 64), tiling);
  const int add = g.add_op("mrf", "add-scaled", {g.op(snake).output, g.op(tanh).output}, {},
                           activation(g, "a", 8, 64), tiling, {{"scale", 1.0 / 3}});
  EXPECT_THROW(g.add_op("bad", "add-scaled", {x}, {}, activation(g, "b", 8, 64), tiling), Error);
  g.finalize();
  const Box out{0, 8, 16, 32};
  for (int op : {snake, leaky, tanh}) EXPECT_EQ(reads(g, op, out), std::vector<Box>{out});
  EXPECT_EQ(reads(g, add, out, 1), std::vector<Box>{out});
  // snake-beta also reads 16 alphas and 16 betas (64 B); 5 FLOPs per element.
  const TileCost s = g.task_cost(g.task_id(snake, 1));
  EXPECT_EQ(s.bytes_read, 256 + 64);
  EXPECT_EQ(s.bytes_written, 256);
  EXPECT_EQ(s.flops, 5 * 128);
  const TileCost l = g.task_cost(g.task_id(leaky, 1));
  EXPECT_EQ(l.bytes_read, 256);
  EXPECT_EQ(l.flops, 2 * 128);
  EXPECT_EQ(g.task_cost(g.task_id(tanh, 1)).flops, 128);
  // add-scaled reads two inputs; add and multiply per element.
  const TileCost a = g.task_cost(g.task_id(add, 1));
  EXPECT_EQ(a.bytes_read, 512);
  EXPECT_EQ(a.bytes_written, 256);
  EXPECT_EQ(a.flops, 256);
  // Each elementwise tile waits for exactly the same tile of its producer(s).
  EXPECT_EQ(g.task_deps(g.task_id(leaky, 1)), std::vector<TaskId>{g.task_id(snake, 1)});
  EXPECT_EQ(g.task_deps(g.task_id(add, 1)),
            (std::vector<TaskId>{g.task_id(snake, 1), g.task_id(tanh, 1)}));
}

TEST(AudioOpKindsTest, CodebookSumReadsEveryCodebookOfItsRows) {
  // 8 codebooks of 1024 entries, dim 64; tiles of 4 rows x 32 columns. Tile rows [4, 8) x
  // [32, 64) reads codes rows [4, 8), all 8 codebooks: 4 x 8 x 4 = 128 B; gathers 8 table rows
  // of 32 columns per output row: 8 x 4 x 32 x 2 = 2048 B. Writes 4 x 32 x 2 = 256 B.
  // FLOPs 4 x 32 x 7 additions = 896.
  Graph g("decode", 2);
  const int codes = g.add_tensor({"codes", TensorRole::input, DType::i32, {8, 8}});
  const int tables = weight(g, "quantizer.codebooks", {8 * 1024, 64});
  const int op = g.add_op("codes", "codebook-sum", {codes}, {tables}, activation(g, "e", 8, 64),
                          {8, 64, 4, 32});
  g.finalize();
  EXPECT_EQ(reads(g, op, {4, 8, 32, 64}), (std::vector<Box>{{4, 8, 0, 8}}));
  const TileCost cost = g.task_cost(g.task_id(op, 3));
  EXPECT_EQ(cost.bytes_read, 128 + 2048);
  EXPECT_EQ(cost.bytes_written, 256);
  EXPECT_EQ(cost.flops, 896);
}

TEST(AudioOpKindsTest, ChainEdgesStopAtSequenceBoundaries) {
  // snake-beta -> causal conv1d (kernel 3, dilation 2: reach 4) -> conv-transpose (stride 2,
  // kernel 4), 2 sequences of 16 steps, 4 channels, 8-row tiles throughout (one column tile).
  // Conv tiles [0,8) [8,16) [16,24) [24,32) read [0,8) [4,16) [16,24) [20,32): 1 + 2 + 1 + 2 = 6
  // snake tiles. Upsampled steps [0,8) [8,16) [16,24) [24,32) of a sequence read input steps
  // [0,3] [3,7] [7,11] [11,15]: conv tiles 1 + 1 + 2 + 1 = 5 per sequence, 10 in all.
  // 16 edges; sequence 1's first tiles never wait for sequence 0.
  Graph g("decode", 2);
  const int x = g.add_tensor({"x", TensorRole::input, DType::bf16, {32, 4}});
  const int snake = g.add_op("snake", "snake-beta", {x},
                             {weight(g, "snake.alpha", {4}), weight(g, "snake.beta", {4})},
                             activation(g, "s", 32, 4), {32, 4, 8, 4});
  const int conv =
      g.add_op("conv", "conv1d", {g.op(snake).output}, {weight(g, "conv.weight", {4, 4, 3})},
               activation(g, "c", 32, 4), {32, 4, 8, 4},
               {{"kernel", 3}, {"dilation", 2}, {"groups", 1}, {"len", 16}});
  const int up = g.add_op("up", "conv-transpose1d", {g.op(conv).output},
                          {weight(g, "up.weight", {4, 2, 4}), weight(g, "up.bias", {2})},
                          activation(g, "u", 64, 2), {64, 2, 8, 2},
                          {{"stride", 2}, {"kernel", 4}, {"len", 16}});
  g.finalize();
  EXPECT_EQ(boost::num_edges(g.tiles()), 16u);
  EXPECT_EQ(g.task_deps(g.task_id(conv, 2)), std::vector<TaskId>{g.task_id(snake, 2)});
  EXPECT_EQ(g.task_deps(g.task_id(up, 4)), std::vector<TaskId>{g.task_id(conv, 2)});
  EXPECT_EQ(g.task_deps(g.task_id(up, 6)),
            (std::vector<TaskId>{g.task_id(conv, 2), g.task_id(conv, 3)}));
}

}  // namespace
}  // namespace megacut::model
