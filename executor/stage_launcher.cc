#include "executor/stage_launcher.h"

#include "executor/cuda_check.h"
#include "model/error.h"

namespace megacut::executor {

StageLauncher::StageLauncher(const model::Graph& graph, const StageBuffers& buffers,
                             std::vector<model::Region> regions, model::ProviderChoice providers,
                             KernelContext* context, bool pdl, RegionOptions mk_options)
    : graph_(graph),
      buffers_(buffers),
      regions_(std::move(regions)),
      providers_(std::move(providers)),
      context_(context),
      pdl_(pdl) {
  if (regions_.empty()) regions_.push_back({model::RegionKind::conv, 0, graph.op_count()});
  int next = 0;
  for (size_t i = 0; i < regions_.size(); ++i) {
    const model::Region& r = regions_[i];
    if (r.begin != next || r.end <= r.begin || r.end > graph.op_count()) {
      throw Error("stage " + graph.stage() + ": region " + std::to_string(i) + " [" +
                  std::to_string(r.begin) + ", " + std::to_string(r.end) +
                  ") does not continue the cover of its " + std::to_string(graph.op_count()) +
                  " ops at op " + std::to_string(next));
    }
    next = r.end;
    mk_.push_back(nullptr);
    tile_.push_back(nullptr);
    if (r.kind == model::RegionKind::mk) {
      RegionOptions o = mk_options;
      o.region_id = static_cast<int>(i);
      o.pdl = pdl;
      mk_.back() = std::make_unique<MegakernelRegion>(graph, r.begin, r.end, buffers, o);
    } else if (r.kind == model::RegionKind::tile) {
      TileRegionOptions o;
      o.region_id = static_cast<int>(i);
      o.watchdog_ns = mk_options.watchdog_ns;
      o.pdl = pdl;
      tile_.back() = std::make_unique<TileRegion>(graph, r.begin, r.end, buffers, o);
    }
  }
  if (next != graph.op_count()) {
    throw Error("stage " + graph.stage() + ": regions end at op " + std::to_string(next) + " of " +
                std::to_string(graph.op_count()));
  }
}

StageLauncher::~StageLauncher() = default;

void StageLauncher::launch(cudaStream_t stream) {
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (mk_[i]) {
      mk_[i]->launch(stream);
      continue;
    }
    if (tile_[i]) {
      tile_[i]->launch(stream);
      continue;
    }
    for (int op = regions_[i].begin; op < regions_[i].end; ++op) {
      launch_op(graph_, op, buffers_, stream, providers_.of(graph_.stage(), op), context_, pdl_);
    }
  }
}

void StageLauncher::check(cudaStream_t stream) {
  CUDA_CHECK(cudaStreamSynchronize(stream));  // also where no region has a watchdog
  for (const auto& region : mk_) {
    if (region) region->check(stream);
  }
  for (const auto& region : tile_) {
    if (region) region->check(stream);
  }
}

std::vector<const MegakernelRegion*> StageLauncher::mk_regions() const {
  std::vector<const MegakernelRegion*> out;
  for (const auto& region : mk_) {
    if (region) out.push_back(region.get());
  }
  return out;
}

}  // namespace megacut::executor
