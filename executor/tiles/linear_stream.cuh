// linear, few rows (decode: tile_rows <= 64): y[R, C] = x[R, K] W[C, K]^T for one tile, bound by
// reading the tile's C weight rows once. The weights come through the CTA's weight stream
// (tiles/stream.cuh): stage s holds k [s * kStageK, (s + 1) * kStageK) of the tile's C rows,
// zero past the matrix's edges, so the body never waits on device memory for them once the
// producer is ahead; only x, an activation, is loaded by the body itself. Where the tile's x
// rows fit kStagedXBytes (a decode step's one row a sequence), they are copied into shared
// memory once, before the first stage, and the stages read them there: a stage then costs its
// shared-memory reads and products alone, not an L2 round trip under the weight stream's load.
// Larger x is read from L2 into registers kAhead stages before its use. Plain x is staged by
// cp.async, every copy in flight at once; normed x through registers, for its arithmetic.
//
// The products run on tensor cores with the weights as the M side (m16n8k16: 16 weight rows by
// 8 rows of x), so a batch of one wastes 7/8 of N but none of the weight stream. Each lane reads
// 8 contiguous k of a weight row (16 bytes of the slot) and of an x row: the dot product over k
// may visit k in any order as long as W and x agree, so those 8 serve as the lane's fragment
// elements of two k16 steps (logical k 2q,2q+1 / 2q+8,2q+9 of step t = physical 8q+4t+0,1 /
// 8q+4t+2,3). A stage is 16 units of (16 weight rows, 32 k) whatever the tile width. Where x is
// staged and its rows few (a decode step), the warps take the stages apart (by_stage): pair p of
// warps waits for stages p, p + 4, ... and each of its warps takes 8 of a stage's 16 units, so a
// stage's wait, release and loop cost once a pair, not once a warp, and four stages are worked
// on at once. Otherwise each of the 8 warps takes two units of every stage, the same two, one
// chain of products per unit where x is one block of 8 rows. Either way the warps' sums meet in
// shared memory at the end and are summed in a fixed order: no atomics, so a tile's result does
// not depend on which warp finishes first.
//
// The fusions of a decode step (LinearFusion, tiles/linear_layout.cuh) change only what a lane
// makes of its x loads and what the store makes of the sums: normed multiplies each x by the
// norm's scale and sums the squares of the raw x (when staging x, once per element; else on the
// way, by the warps of the first 16-row block, which see every k of every row once), so the
// row's rsqrt(mean(x^2) + eps) scales the finished sum;
// normed_glu also streams, for the tile's output features c, the gate rows c and the up rows
// n + c as the two halves of one tile of weight rows, and stores silu(gate) * up, each rounded to
// bf16 first, as a gate_up linear and a silu-mul after it would; a residual is added to the sum
// rounded to bf16, the bits of a linear and a residual-add after it. Normed rounds once where
// rmsnorm and a linear after it round the normalized x twice.
#pragma once

#include "executor/tiles/flagged.cuh"
#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/mma.cuh"
#include "executor/tiles/stream.cuh"

namespace megacut::tiles {

// kCols: weight rows a tile (16, 32, 64, 128; normed_glu: gate rows, then as many up rows, for
// kCols / 2 output features); kN8: 8-row blocks of x covering tile_rows (1, 2, 4, 8); kFusion:
// what the body does besides the product.
template <int kCols, int kN8, typename OutT, LinearFusion kFusion = LinearFusion::plain>
struct LinearStreamTile {
  using Layout = LinearLayout<OutT>;

  static constexpr int kThreads = kStreamConsumerThreads;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kMBlocks = kCols / 16;                     // 16-row blocks of W
  static constexpr int kStageK = kStreamSlotBytes / (2 * kCols);  // 512, 256, 128, 64
  static constexpr int kBoxK = kStageK < 256 ? kStageK : 256;     // the copy engine's limit
  static constexpr int kBoxes = kStageK / kBoxK;                  // (kCols, kBoxK) boxes a stage
  static constexpr int kBoxBytes = kBoxK * kCols * 2;
  // Where a box row is 128 bytes (the widest tiles), the copy engine lays it out with its
  // 128-byte swizzle: 16-byte chunk c of row r at c ^ (r % 8), so the 8 rows a warp's lanes
  // read at the same k fall in 8 bank groups instead of one. Narrower tiles keep rows of 256 or
  // 512 bytes and their bank conflicts: cut into 128-byte boxes, their weights streamed slower
  // (on the H200, Llama-3.2-1B's decode down, 16 columns, took 13.5 us a task against 8.8).
  static constexpr bool kSwizzled = kBoxK * 2 == 128;
  static constexpr int kUnitsPerBlock = kStageK / 32;       // (16 rows, 32 k) units
  static constexpr int kWarpsPerBlock = kWarps / kMBlocks;  // 8, 4, 2, 1
  static constexpr bool kNormed = kFusion != LinearFusion::plain;
  static constexpr bool kGlu = kFusion == LinearFusion::normed_glu;
  // x of the stages ahead in registers where x is read from L2: 8 uint4 a lane at any row count.
  static constexpr int kAhead = kN8 == 1 ? 4 : kN8 <= 4 ? 2 : 1;
  // The tile's x rows (normed: already multiplied by the norm's scale) are copied into shared
  // memory before the first stage when they take at most this many bytes (a decode step's
  // usual tile: one row): the stages then read them there, with no L2 round trip between a
  // stage and its products and none of the norm's arithmetic in the loop.
  static constexpr int kStagedXBytes = 16384;
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kN8 == 1 || kN8 == 2 || kN8 == 4 || kN8 == 8, "row blocks");
  static_assert(kMBlocks * kUnitsPerBlock == 2 * kWarps, "two units per warp per stage");
  static_assert(!kSwizzled || (kBoxBytes / 2) % 1024 == 0, "swizzled boxes and parts");

  // Partial sums (kWarpsPerBlock, kN8 * 8, kCols); normed, the sums of squares (kWarpsPerBlock,
  // kN8 * 8). Staged x first keeps each chunk's sum of squares in the partial sums' room.
  __host__ __device__ static int partial_bytes() {
    return kWarpsPerBlock * kCols * kN8 * 8 * 4 + (kNormed ? kWarpsPerBlock * kN8 * 8 * 4 : 0);
  }
  // x staged in shared memory, (tile_rows, k) bf16; 0 where it does not fit kStagedXBytes.
  __host__ __device__ static int staged_x_bytes(const Layout& l) {
    const long long bytes = static_cast<long long>(l.grid.tile_rows) * l.k * 2;
    return bytes <= kStagedXBytes ? static_cast<int>(bytes) : 0;
  }
  __host__ __device__ static int smem_bytes(const Layout& l) {
    return partial_bytes() + staged_x_bytes(l);
  }

  // The matrix the tiles' rows come from: the op's weights (normed_glu: gate, then up); for
  // step-head every step's heads.
  __host__ __device__ static TensorMapShape map_shape(const Layout& l) {
    constexpr int swizzle = kSwizzled ? 128 : 0;
    if constexpr (kGlu) return {l.w, l.k, 2ll * l.n, kBoxK, kCols / 2, swizzle};
    const long long rows = l.step != nullptr ? static_cast<long long>(l.steps) * l.n : l.n;
    return {l.w, l.k, rows, kBoxK, kCols, swizzle};
  }

  // The tile's weight rows, every k; step-head's follow the step, a stage input; normed_glu's in
  // two parts, gate rows and up rows (the slot holds them as one box of kCols rows).
  __device__ static StreamPlan stream(const Layout& l, long long tile, const void* map) {
    const TileBox box = l.grid.box(tile);
    const long long first = weight_rows(l) - l.w;  // elements: a step's heads
    StreamPlan p{};
    p.map = map;
    p.row = static_cast<int>(first / l.k + box.col_begin);
    p.box_k = kBoxK;
    p.boxes = kBoxes;
    p.stages = (l.k + kStageK - 1) / kStageK;
    p.box_bytes = kBoxBytes;
    p.after_prior_grids = l.step != nullptr;
    if constexpr (kGlu) {
      p.parts = 2;
      p.part_rows = l.n;
      p.box_bytes /= 2;
    }
    return p;
  }

  // Whether the body takes x as flagged words (Layout::x_flagged) on this layout: where it stages
  // x, which it then reads once, before the first stage. And whether it can write y so (bf16 y,
  // in pairs of features).
  __host__ __device__ static bool takes_flagged_x(const Layout& l) { return staged_x_bytes(l) > 0; }
  __host__ __device__ static bool gives_flagged_y(const Layout& l) {
    return sizeof(OutT) == 2 && l.n % 2 == 0 && l.grid.tile_cols % 2 == 0;
  }

  // The tile's x rows into shared memory, (rows, k): normed, each multiplied by the norm's scale
  // and rounded to bf16 as the products would have it, and each row's sum of squares of the raw
  // x, summed in a fixed order, into squares[row] (the first of the kWarpsPerBlock partials;
  // the others zero) for the epilogue. From x's flagged words where the layout has them, once
  // they hold this run's values.
  __device__ static void stage_x(const Layout& l, const TileBox& box, bf16* staged,
                                 float* chunk_squares, float* squares,
                                 const StreamCursor& weights) {
    const int rows = box.rows(), chunks_per_row = l.k / 8, chunks = rows * chunks_per_row;
    const bf16* x = l.x + box.row_begin * l.k;
    if (l.x_flagged != nullptr) {
      constexpr int kPerThread = (kStagedXBytes / 16 + kThreads - 1) / kThreads;
      const unsigned long long* at[kPerThread];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int i = static_cast<int>(threadIdx.x) + j * kThreads;
        at[j] = i < chunks ? l.x_flagged + (box.row_begin * l.k + i * 8ll) / 2 : nullptr;
      }
      // The norm's scale depends on no activation: where a thread's chunks all take the same
      // chunk of it (one chunk a thread, or rows of a divisor of kThreads chunks), it is loaded
      // before the wait, its round trip passing under the wait's rather than after it.
      const bool one_scale = chunks <= kThreads || kThreads % chunks_per_row == 0;
      uint4 early_scale = make_uint4(0, 0, 0, 0);
      if (kNormed && one_scale && static_cast<int>(threadIdx.x) < chunks) {
        early_scale = *reinterpret_cast<const uint4*>(l.norm + threadIdx.x % chunks_per_row * 8);
      }
      uint4 v[kPerThread];
      const RegionRun& region = weights.region;
      check_flagged_wait(
          load_flagged_chunks<kPerThread>(at, region.run, region.stop, region.timeout_ns, v));
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int i = static_cast<int>(threadIdx.x) + j * kThreads;
        if (i >= chunks) break;
        if constexpr (kNormed) {
          const uint4 scale =
              one_scale ? early_scale
                        : *reinterpret_cast<const uint4*>(l.norm + (i % chunks_per_row) * 8);
          float sum = 0.f;
          v[j] = make_uint4(operand_word(v[j].x, scale.x, sum), operand_word(v[j].y, scale.y, sum),
                            operand_word(v[j].z, scale.z, sum), operand_word(v[j].w, scale.w, sum));
          chunk_squares[i] = sum;
        }
        *reinterpret_cast<uint4*>(staged + i * 8) = v[j];
      }
    } else if constexpr (kNormed) {
      for (int i = threadIdx.x; i < chunks; i += kThreads) {
        uint4 v = *reinterpret_cast<const uint4*>(x + i * 8);
        const uint4 scale = *reinterpret_cast<const uint4*>(l.norm + (i % chunks_per_row) * 8);
        float sum = 0.f;
        v = make_uint4(operand_word(v.x, scale.x, sum), operand_word(v.y, scale.y, sum),
                       operand_word(v.z, scale.z, sum), operand_word(v.w, scale.w, sum));
        chunk_squares[i] = sum;
        *reinterpret_cast<uint4*>(staged + i * 8) = v;
      }
    } else {
      // Copies straight to shared memory, all in flight at once (16 KB is 4 a thread): one L2
      // round trip, where loads through registers took one a chunk.
      for (int i = threadIdx.x; i < chunks; i += kThreads)
        cp_async16(staged + i * 8, x + i * 8, true);
      cp_async_commit();
      cp_async_wait<0>();
    }
    if constexpr (kNormed) {
      tile_sync<kThreads>();
      const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
      for (int r = warp; r < kN8 * 8; r += kWarps) {
        float sum = 0.f;
        if (r < rows) {
          for (int c = lane; c < chunks_per_row; c += 32)
            sum += chunk_squares[r * chunks_per_row + c];
        }
        sum = warp_sum(sum);
        if (lane < kWarpsPerBlock) squares[lane * kN8 * 8 + r] = lane == 0 ? sum : 0.f;
      }
    }
    tile_sync<kThreads>();
    if (l.x_flagged != nullptr) mark_inputs(weights.region);
  }

  // One word (two bf16 of k) of what multiplies W, from a word of x and of the norm's scale,
  // adding the raw x's squares to `squares`.
  __device__ static unsigned operand_word(unsigned x, unsigned scale, float& squares) {
    const float lo = bf16_low(x), hi = bf16_high(x);
    squares += lo * lo + hi * hi;
    return pack_bf16x2(lo * bf16_low(scale), hi * bf16_high(scale));
  }

  // The 8 k a lane (q = lane % 4) reads of (16-row, 32-k) unit u of a stage, from the stage's
  // first k. Swizzled, the lanes of a quarter warp (rows g, g + 1) read 8 different chunks of
  // their 128-byte rows: chunk 2q + u of each 64 k, before the swizzle.
  __device__ static int lane_k(int u, int q) {
    if constexpr (kSwizzled) return u / 2 * 64 + (2 * q + u % 2) * 8;
    return u * 32 + q * 8;
  }

  // 16 bytes of weight rows r and r + 8 (r = 16 b + g) at k (from the stage's first) in a stage
  // of kBoxes (kCols, kBoxK) boxes; swizzled, chunk c of box row r at c ^ (r % 8), and
  // (g + 8) % 8 == g.
  __device__ static void weights_of(const char* stage, int b, int k, int g, uint4& wa, uint4& wb) {
    const int chunk = kSwizzled ? (k % kBoxK) / 8 ^ g : (k % kBoxK) / 8;
    const char* w = stage + (k / kBoxK) * kBoxBytes + (b * 16 + g) * (kBoxK * 2) + chunk * 16;
    wa = *reinterpret_cast<const uint4*>(w);
    wb = *reinterpret_cast<const uint4*>(w + 8 * kBoxK * 2);
  }

  // The products of a unit's weights (rows g, g + 8 of a 16-row block) with x's 8 k (x[j]: row
  // j * 8 + g) as the operand.
  __device__ static void multiply(const uint4& wa, const uint4& wb, const uint4 (&x)[kN8],
                                  float (&sums)[kN8][4]) {
    const unsigned a0[4] = {word(wa, 0), word(wb, 0), word(wa, 1), word(wb, 1)};
    const unsigned a1[4] = {word(wa, 2), word(wb, 2), word(wa, 3), word(wb, 3)};
#pragma unroll
    for (int j = 0; j < kN8; ++j) {
      const unsigned b0[2] = {x[j].x, x[j].y}, b1[2] = {x[j].z, x[j].w};
      mma_bf16(sums[j], a0, b0);  // k16 step t = 0
      mma_bf16(sums[j], a1, b1);  // t = 1
    }
  }

  // Whether the warps take the tile's stages apart (by_stage): pair p of warps stages p, p + 4,
  // ..., each warp of the pair half of the stage's 16 units, rather than every warp a share of
  // every stage. A stage's waits, releases and loop then cost once a pair, not once a warp. Where
  // x is staged, its rows few enough that each warp's sums of every weight row fit the partial
  // sums' room, and the ring's slots a multiple of the pairs, more than one pair's worth:
  // - warps wait for stages out of order, and an mbarrier's parity tells only two uses of a slot
  //   apart: a wait for stage n is sure only once the slot's use before, stage n - slots, has
  //   landed, which a pair knows for its own stages (slots a multiple of the pairs);
  // - each pair holds a stage while it waits for its next (see StreamCursor), which the ring
  //   must then have room for.
  static constexpr int kPairs = kWarps / 2;
  __host__ __device__ static bool by_stage(const Layout& l, int slots) {
    return kN8 <= 2 && staged_x_bytes(l) > 0 && kMBlocks * l.grid.tile_rows <= kN8 * 8 &&
           slots > kPairs && slots % kPairs == 0;
  }

  // by_stage's products: this warp's sums of its half of the tile's stages pair, pair + kPairs,
  // ... into partial (kWarps, rows, kCols) (zero for the weight rows the half does not cover),
  // each stage released after the warp's next wait (the last once its sums are stored).
  // Independent chains of products: one per 16-row block, at least four.
  __device__ static void products_by_stage(const Layout& l, const bf16* staged, int rows,
                                           int stages, float* partial, StreamCursor& weights) {
    constexpr int kUnits = kStageK / 32;          // (16 rows, 32 k) units of a 16-row block a stage
    constexpr int kHalf = kMBlocks * kUnits / 2;  // units a warp: 8
    constexpr int kBlocks = kUnits >= kHalf ? 1 : kHalf / kUnits;  // 16-row blocks a warp
    constexpr int kUnitsK = kHalf / kBlocks;  // units of k a warp, in each of its blocks
    constexpr int kChains = kBlocks >= 4 ? 1 : 4 / kBlocks;
    static_assert(kUnitsK % kChains == 0, "whole rounds of chains");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int pair = warp / 2, half = warp % 2;
    const int first_block = half * kHalf / kUnits, first_unit = half * kHalf % kUnits;
    float acc[kBlocks][kChains][kN8][4];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b)
#pragma unroll
      for (int c = 0; c < kChains; ++c)
#pragma unroll
        for (int j = 0; j < kN8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[b][c][j][e] = 0.f;
    int held = -1;
    for (int s = pair; s < stages; s += kPairs) {
      const char* stage = weights.wait_at(s);
      if (held >= 0) weights.release_at(held, kStreamConsumerWarps / 2);
      held = s;
#pragma unroll
      for (int u0 = 0; u0 < kUnitsK; u0 += kChains) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) {
          const int kin = lane_k(first_unit + u0 + c, q), k = s * kStageK + kin;
          uint4 x[kN8];
#pragma unroll
          for (int j = 0; j < kN8; ++j) {
            const int r = j * 8 + g;
            x[j] = k < l.k && r < rows ? *reinterpret_cast<const uint4*>(staged + r * l.k + k)
                                       : make_uint4(0, 0, 0, 0);
          }
#pragma unroll
          for (int b = 0; b < kBlocks; ++b) {
            uint4 wa, wb;
            weights_of(stage, first_block + b, kin, g, wa, wb);
            multiply(wa, wb, x, acc[b][c]);
          }
        }
      }
    }
    // acc[b][c][j]: (weight row (first_block + b) * 16 + g (+8), x row j * 8 + 2q (+1)).
    float* mine = partial + warp * rows * kCols;
#pragma unroll
    for (int b = 0; b < kMBlocks; ++b) {
      if (b >= first_block && b < first_block + kBlocks) continue;
      for (int i = lane; i < rows * 16; i += 32) mine[i / 16 * kCols + b * 16 + i % 16] = 0.f;
    }
#pragma unroll
    for (int b = 0; b < kBlocks; ++b)
#pragma unroll
      for (int j = 0; j < kN8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = (first_block + b) * 16 + g + 8 * (e / 2), r = j * 8 + 2 * q + e % 2;
          float sum = 0.f;
#pragma unroll
          for (int ch = 0; ch < kChains; ++ch) sum += acc[b][ch][j][e];
          if (r < rows) mine[r * kCols + c] = sum;
        }
    if (held >= 0) weights.release_at(held, kStreamConsumerWarps / 2);
  }

  __device__ static void run(const Layout& l, long long tile, char* smem, StreamCursor& weights) {
    const TileBox box = l.grid.box(tile);
    float* partial = reinterpret_cast<float*>(smem);  // (kWarpsPerBlock, kN8 * 8, kCols)
    float* squares =
        partial + kWarpsPerBlock * kN8 * 8 * kCols;  // normed: (kWarpsPerBlock, kN8 * 8)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int block = warp / kWarpsPerBlock, wk = warp % kWarpsPerBlock;
    const int g = lane / 4, q = lane % 4;
    const int rows = box.rows(), cols = box.cols();
    const int stages = (l.k + kStageK - 1) / kStageK;
    const uint4 zero = make_uint4(0, 0, 0, 0);

    // Where the tile's outputs take one pass of the block (decode's usual case), the residual
    // each thread adds is loaded now, so its latency passes while the products run rather than
    // in the epilogue.
    const bool one_pass = rows * cols <= kThreads;
    float early_residual = 0.f;
    if (l.residual != nullptr && one_pass && static_cast<int>(threadIdx.x) < rows * cols) {
      const int r = threadIdx.x / cols, c = threadIdx.x % cols;
      early_residual = __bfloat162float(l.residual[(box.row_begin + r) * l.n + box.col_begin + c]);
    }

    // Two accumulators, one per unit of a stage: two independent chains of products.
    float acc[2][kN8][4];
#pragma unroll
    for (int u = 0; u < 2; ++u)
#pragma unroll
      for (int j = 0; j < kN8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[u][j][e] = 0.f;

    // Unit u's 16 bytes of weight rows g and g + 8: this warp's two units of each stage.
    auto unit_weights = [&](const char* stage, int u, uint4& wa, uint4& wb) {
      weights_of(stage, block, lane_k(2 * wk + u, q), g, wa, wb);
    };

    // The partial sums the epilogue adds up: `parts` of them for each output, (parts, part_rows,
    // kCols).
    const bool split = by_stage(l, weights.ring.slots);
    int parts = kWarpsPerBlock, part_rows = kN8 * 8;
    if (split) {
      bf16* staged = reinterpret_cast<bf16*>(smem + partial_bytes());  // (rows, k)
      stage_x(l, box, staged, partial, squares, weights);
      products_by_stage(l, staged, rows, stages, partial, weights);
      weights.skip(stages);
      parts = kWarps;
      part_rows = rows;
    } else if (staged_x_bytes(l) > 0) {
      bf16* staged = reinterpret_cast<bf16*>(smem + partial_bytes());  // (rows, k)
      stage_x(l, box, staged, partial, squares, weights);
      for (int s = 0; s < stages; ++s) {
        const char* stage = weights.wait();
        if (s > 0) weights.release();  // stage s - 1 (see StreamCursor)
        uint4 wa[2], wb[2], x[2][kN8];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          unit_weights(stage, u, wa[u], wb[u]);
          const int k = s * kStageK + lane_k(2 * wk + u, q);
#pragma unroll
          for (int j = 0; j < kN8; ++j) {
            const int r = j * 8 + g;
            x[u][j] =
                k < l.k && r < rows ? *reinterpret_cast<const uint4*>(staged + r * l.k + k) : zero;
          }
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) multiply(wa[u], wb[u], x[u], acc[u]);
      }
    } else {
      float sum_sq[kN8];  // normed: this lane's x^2 of row j * 8 + g
#pragma unroll
      for (int j = 0; j < kN8; ++j) sum_sq[j] = 0.f;
      // x for this warp's two units of stage s: 8 k of row j * 8 + g per lane; normed, the same
      // 8 k of the norm's scale. Plain arrays of registers, never an address taken: a struct of
      // them or a pointer cast to read one went to local memory.
      auto load_x = [&](int s, uint4(&x)[2][kN8], uint4(&scale)[2]) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int k = s * kStageK + lane_k(2 * wk + u, q);
          if constexpr (kNormed) {
            scale[u] = k < l.k ? *reinterpret_cast<const uint4*>(l.norm + k) : zero;
          }
#pragma unroll
          for (int j = 0; j < kN8; ++j) {
            const int r = j * 8 + g;
            const bool inside = k < l.k && r < rows;
            const bf16* p = l.x + (box.row_begin + r) * l.k + k;
            x[u][j] = inside ? *reinterpret_cast<const uint4*>(p) : zero;
          }
        }
      };
      uint4 x[kAhead][2][kN8];
      uint4 scale[kNormed ? kAhead : 1][2];
#pragma unroll
      for (int d = 0; d < kAhead; ++d) {
        if (d < stages) load_x(d, x[d], scale[kNormed ? d : 0]);
      }
      for (int s0 = 0; s0 < stages; s0 += kAhead) {
#pragma unroll
        for (int d = 0; d < kAhead; ++d) {
          const int s = s0 + d;
          if (s >= stages) break;
          const char* stage = weights.wait();
          if (s > 0) weights.release();  // stage s - 1 (see StreamCursor)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            uint4 wa, wb, operand[kN8];
            unit_weights(stage, u, wa, wb);
#pragma unroll
            for (int j = 0; j < kN8; ++j) {
              operand[j] = x[d][u][j];
              if constexpr (kNormed) {
                const uint4& sc = scale[d][u];
                const uint4& v = x[d][u][j];
                operand[j] = make_uint4(
                    operand_word(v.x, sc.x, sum_sq[j]), operand_word(v.y, sc.y, sum_sq[j]),
                    operand_word(v.z, sc.z, sum_sq[j]), operand_word(v.w, sc.w, sum_sq[j]));
              }
            }
            // One chain per unit where registers allow (a row block of x); one in all at more.
            multiply(wa, wb, operand, acc[kN8 == 1 ? u : 0]);
          }
          if (s + kAhead < stages) load_x(s + kAhead, x[d], scale[kNormed ? d : 0]);
        }
      }
      if constexpr (kNormed) {
#pragma unroll
        for (int j = 0; j < kN8; ++j) {
          const float sq = group_sum(sum_sq[j], 4);  // the row's lanes: q = 0..3
          if (block == 0 && q == 0) squares[wk * kN8 * 8 + j * 8 + g] = sq;
        }
      }
    }

    if (!split) {
      // acc[u][j]: (weight row block * 16 + g (+8), x row j * 8 + 2q (+1)).
#pragma unroll
      for (int j = 0; j < kN8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int c = block * 16 + g + 8 * h;
          const int r = j * 8 + 2 * q;
          float* p = partial + (wk * kN8 * 8 + r) * kCols + c;
          p[0] = acc[0][j][2 * h] + acc[1][j][2 * h];
          p[kCols] = acc[0][j][2 * h + 1] + acc[1][j][2 * h + 1];
        }
      if (stages > 0) weights.release();  // the last stage: its sums are stored
    }
    tile_sync<kThreads>();
    // normed_glu's tile (cols <= kCols / 2 features) has the gate sums of its features in weight
    // rows [0, kCols / 2) and their up sums in the rows after. Every thread takes every round,
    // so that y's flagged words can take a pair of outputs from two lanes.
    for (int base = 0; base < rows * cols; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const bool inside = i < rows * cols;
      const int r = inside ? i / cols : 0, c = inside ? i % cols : 0;
      auto total = [&](int row) {
        float sum = 0.f;
#pragma unroll
        for (int p = 0; p < parts; ++p) sum += partial[(p * part_rows + r) * kCols + row];
        return sum;
      };
      float sum = inside ? total(c) : 0.f;
      if (inside && kNormed) {
        float sq = 0.f;
#pragma unroll
        for (int k = 0; k < kWarpsPerBlock; ++k) sq += squares[k * kN8 * 8 + r];
        const float row_scale = rsqrtf(sq / l.k + l.eps);
        sum *= row_scale;
        if constexpr (kGlu) {  // silu-mul's arithmetic on gate_up's bf16 outputs
          const float gate = round_bf16(sum), up = round_bf16(total(c + kCols / 2) * row_scale);
          sum = gate / (1.0f + expf(-gate)) * up;
        }
      }
      const long long at = (box.row_begin + r) * l.n + box.col_begin + c;
      // As a linear's bf16 output and a residual-add after it would round: the same bits.
      if (inside && l.residual != nullptr) {
        sum = round_bf16(sum) + (one_pass ? early_residual : __bfloat162float(l.residual[at]));
      }
      if (inside) store_out(l.y + at, sum);
      if constexpr (sizeof(OutT) == 2) {
        if (l.y_flagged != nullptr) {
          // Outputs c and c + 1 (c even: cols and kThreads are) are this lane's and the next's.
          const float next = __shfl_down_sync(0xffffffffu, sum, 1);
          if (inside && c % 2 == 0) {
            store_flagged(l.y_flagged + at / 2, __float2bfloat16_rn(sum), __float2bfloat16_rn(next),
                          weights.region.run);
          }
        }
      }
    }
    tile_sync<kThreads>();  // shared memory is free again
  }
};

}  // namespace megacut::tiles
