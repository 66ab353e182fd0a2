// One stage of a composition: its regions in order, conv regions as one launch_op per op, mk
// regions as one MegakernelRegion launch each and tile regions as a TileRegion's kernels, conv
// regions' linear ops on the provider `providers` chooses (cuBLASLt's need `context`; tile
// regions run ours). launch() allocates nothing and never waits, so the runner captures a whole
// stage into one CUDA graph; check() reports a region whose watchdog fired (mk_options'
// watchdog_ns holds for tile regions too). With `pdl` every kernel of ours (tile kernels,
// regions) is launched with Programmatic Dependent Launch; cuBLASLt's are not; a tile region's
// kernels after its first always are.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "executor/conventional.h"
#include "executor/megakernel.h"
#include "executor/tile_region.h"
#include "model/composition.h"

namespace megacut::executor {

class StageLauncher {
 public:
  // `graph`, `buffers` and `context` must outlive the launcher. Compiles every mk region now.
  StageLauncher(const model::Graph& graph, const StageBuffers& buffers,
                std::vector<model::Region> regions, model::ProviderChoice providers,
                KernelContext* context, bool pdl = false, RegionOptions mk_options = {});
  ~StageLauncher();

  void launch(cudaStream_t stream);
  // Waits for `stream`; throws megacut::Error if a megakernel region's watchdog fired.
  void check(cudaStream_t stream);
  // The mk regions, in stage order.
  std::vector<const MegakernelRegion*> mk_regions() const;

 private:
  const model::Graph& graph_;
  const StageBuffers& buffers_;
  std::vector<model::Region> regions_;
  model::ProviderChoice providers_;
  KernelContext* context_;
  bool pdl_;
  std::vector<std::unique_ptr<MegakernelRegion>> mk_;  // by region; null for other kinds
  std::vector<std::unique_ptr<TileRegion>> tile_;      // by region; null for other kinds
};

}  // namespace megacut::executor
