// linear, many rows (prefill: tile_rows == 128): y[128, C] = x[128, K] W[C, K]^T for one
// tile on Hopper's warpgroup MMA (tiles/wgmma.cuh), fed by the copy engine.
//
// 64-wide K blocks of x and W come into a ring of kStages shared-memory stages by bulk tensor
// copies (cp.async.bulk.tensor) through the two tensor maps operand_maps(layout) describes, in
// the 128-byte swizzle wgmma reads (16-byte chunk c of row r at c ^ (r % 8)); the copy engine
// fills what lies past the matrices' rows and K with zeros. One thread issues the copies, each
// stage's completing on its mbarrier; no thread copies a byte itself, so nothing passes between
// the generic and the async proxy. While block b is multiplied, blocks b + 1 .. b + kStages - 1
// are in flight; a stage is refilled once both warpgroups' wgmma of its block are done. Each of
// the two warpgroups multiplies 64 of the 128 rows by all C columns (m64nCk16, four k16 steps a
// block) into f32 accumulators in registers, which the threads store straight to y.
#pragma once

#include "executor/tiles/linear_layout.cuh"
#include "executor/tiles/stream.cuh"
#include "executor/tiles/wgmma.cuh"

namespace megacut::tiles {

template <int kCols, typename OutT>
struct LinearMmaTile {
  using Layout = LinearLayout<OutT>;

  static constexpr int kThreads = 256;  // two warpgroups: rows [0, 64) and [64, 128)
  static constexpr int kRows = 128;
  static constexpr int kBlockK = 64;  // one 128-byte swizzled row per tile row
  static constexpr int kXBytes = kRows * kBlockK * 2;
  static constexpr int kStageBytes = kXBytes + kCols * kBlockK * 2;  // x rows, then W rows
  // Stages, the fastest of a sweep over stage counts at the Llama prefill shapes on the H200: five
  // of 32 KB (128 columns), four of 24 KB (64: two CTAs then fit an SM), eight of 20 or 18 KB (32,
  // 16).
  static constexpr int kStages = kStageBytes >= 32768 ? 5 : kStageBytes >= 24576 ? 4 : 8;
  static constexpr int kAccumulators = WarpgroupMma<kCols>::kAccumulators;
  static_assert(kCols == 16 || kCols == 32 || kCols == 64 || kCols == 128, "tile width");
  static_assert(kStageBytes % 1024 == 0, "stages keep the swizzle's 1024-byte alignment");
  static_assert(kStages * kStageBytes + 1024 + 8 * kStages <= 227 * 1024, "shared memory");

  // The stages, room to align the first to 1024 bytes, then a `full` mbarrier a stage.
  __host__ __device__ static int smem_bytes(const Layout&) {
    return kStages * kStageBytes + 1024 + 8 * kStages;
  }

  // x's rows and the weight rows (step-head: every step's heads), in boxes of one K block by the
  // tile's rows or columns, 128-byte swizzled.
  __host__ __device__ static OperandMaps operand_maps(const Layout& l) {
    const long long w_rows = l.step != nullptr ? static_cast<long long>(l.steps) * l.n : l.n;
    OperandMaps m;
    m.map[0] = TensorMapShape{l.x, l.k, l.grid.rows, kBlockK, kRows, 128};
    m.map[1] = TensorMapShape{l.w, l.k, w_rows, kBlockK, kCols, 128};
    return m;
  }

  // maps: operand_maps(l)'s two tensor maps, one after the other (kernel-parameter or global
  // memory).
  __device__ static void run(const Layout& l, long long tile, char* smem, const char* maps) {
    if (threadIdx.x >= kThreads) return;
    const TileBox box = l.grid.box(tile);
    char* const stages = smem + ((1024 - (shared_address(smem) & 1023)) & 1023);
    unsigned long long* const full =
        reinterpret_cast<unsigned long long*>(stages + kStages * kStageBytes);
    const int group = threadIdx.x / 128;  // warpgroup: rows [64 group, 64 group + 64)
    const int blocks = (l.k + kBlockK - 1) / kBlockK;
    const int x_row = static_cast<int>(box.row_begin);
    const int w_row = static_cast<int>((weight_rows(l) - l.w) / l.k + box.col_begin);

    auto issue = [&](int kb) {  // thread 0: stage kb % kStages <- K block kb
      char* stage = stages + (kb % kStages) * kStageBytes;
      const unsigned bar = shared_address(full + kb % kStages);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                   "n"(kStageBytes)
                   : "memory");
      bulk_tensor_copy(stage, maps, kb * kBlockK, x_row, bar);
      bulk_tensor_copy(stage + kXBytes, maps + kTensorMapBytes, kb * kBlockK, w_row, bar);
    };
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(full + s)));
      }
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    tile_sync<kThreads>();
    if (threadIdx.x == 0) {
      // x may have been written by the tasks this one waited for, through the generic proxy; the
      // copy engine reads it through the async proxy.
      asm volatile("fence.proxy.async.global;" ::: "memory");
      for (int kb = 0; kb < kStages && kb < blocks; ++kb) issue(kb);
    }

    float acc[kAccumulators];
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.f;

    for (int kb = 0; kb < blocks; ++kb) {
      const int s = kb % kStages;
      const unsigned parity = (kb / kStages) & 1;
      if (!wait_phase(full + s, parity,
                      [](unsigned long long ns) { return ns > kCopyTimeoutNs; })) {
        __trap();  // a copy that never lands: a bad tensor map, a defect of ours
      }
      const char* stage = stages + s * kStageBytes;
      const char* a = stage + group * 64 * 128;
      const char* b = stage + kXBytes;
      wgmma_hold(acc);
      wgmma_fence();
#pragma unroll
      for (int t = 0; t < kBlockK / 16; ++t) {
        WarpgroupMma<kCols>::run(acc, wgmma_desc_sw128(a + 32 * t), wgmma_desc_sw128(b + 32 * t));
      }
      wgmma_commit();
      wgmma_wait<1>();  // this warpgroup's wgmma of block kb - 1 are done
      wgmma_hold(acc);
      if (kb >= 1 && kb - 1 + kStages < blocks) {
        tile_sync<kThreads>();  // and the other warpgroup's: block kb - 1's stage is free
        if (threadIdx.x == 0) issue(kb - 1 + kStages);
      }
    }
    wgmma_wait<0>();
    wgmma_hold(acc);
    tile_sync<kThreads>();  // every copy landed and was read: shared memory is free again
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(shared_address(full + s)));
      }
    }

    const bool pair_aligned = l.n % 2 == 0;
    const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kCols / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = box.row_begin + group * 64 + warp * 16 + lane / 4 + 8 * h;
        const long long c = box.col_begin + j * 8 + 2 * (lane % 4);
        if (r >= box.row_end || c >= box.col_end) continue;
        OutT* y = l.y + r * l.n + c;
        const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
        if (c + 1 < box.col_end) {
          store_out2(y, v0, v1, pair_aligned);
        } else {
          store_out(y, v0);
        }
      }
  }
};

}  // namespace megacut::tiles
