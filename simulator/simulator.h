// The simulator: predicts a composition's stage times, TTFO and decode step from a profile.
//
//   Simulator sim(read_profile("llama.json"));
//   Prediction p = sim.simulate(parse_composition("decode: mk[0:40] conv[40:]",
//                                                 sim.stage_shapes(8)), 8);
//
// A region's time depends only on its ops, its stage and batch, and what kind of region ran
// before its boundary (a kernel boundary is a full barrier), so region results are cached by
// exactly that: the planner calls simulate_region for many cut points and pays once for each.
//
// The stage time is an estimate of its median. A conv region adds up hundreds of terms (each
// kernel's duration and the gap after it), so it adds their means: the mean of a sum is the sum
// of the means, and the sum of so many terms is near symmetric, its median near its mean; a sum
// of medians misses every term's right tail (reports/h200/replay.md). Task durations are means
// too: their samples mix tiles of one op and must add up
// to its total work. Terms that stand alone or a few to a region (the graph launch, region
// launch and drain, the micro-benchmarks' kernel gaps, the counter latency) are medians: a rare
// slow sample moves one term's mean away from what a typical run pays.
//
// The stage's CUDA graph takes longer to launch the more nodes it holds (cost.h: fixed + per
// node; graph_launch says from which measurements). The fixed part is charged at the stage
// start, and each region's nodes (one per conventional kernel, one per mk region:
// executor::MegakernelRegion::launch) at its own start, so that a region's time still depends
// on its own ops alone; the stage adds up to the same time as the whole graph's launch charged
// up front.
//
// Not thread-safe: give each thread its own Simulator.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "model/composition.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/linear_provider.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "model/schedule.h"
#include "simulator/cost.h"
#include "simulator/megakernel.h"
#include "simulator/prediction.h"

namespace megacut::simulator {

struct SimOptions {
  // Fill a batch size the profile lacks linearly between the measured neighbours (no
  // extrapolation); the prediction says so. Without it, a missing batch is an error.
  bool allow_interpolate = false;
  // Our kernels (mk regions, tile kernels) launch with Programmatic Dependent Launch, as
  // `megacut run --pdl` launches them: a kernel of ours after one of ours adds the step the
  // profile's PDL trace measured (ConvKernel::pdl_step_ns: the previous end to its end, which
  // counts what it overlapped), where the profile has it; else the boundary before each pays the
  // PDL kernel gap of the micro-benchmarks. A boundary before a cuBLASLt kernel pays what it
  // would without PDL (the traced gap, or the plain kernel gap). A tile region's first kernel
  // follows this; its others launch with PDL whatever it says (simulator/tile_region.h).
  bool pdl = false;
  // Which kernel runs each linear and lm-head op of a conv region (model/linear_provider.h): by
  // policy, the profile's kernels in the all-conventional graph deciding `fastest` per op; or,
  // where set, exactly this choice (a plan's), whatever the policy. An op whose chosen provider
  // the profile did not measure is an error. Tile regions run our kernels whatever the choice.
  model::ProviderPolicy linear_provider = model::ProviderPolicy::ours;
  std::optional<model::ProviderChoice> provider_choice;
  // Keep every kernel and task span for the Chrome trace (memory grows with the task count).
  bool record_spans = false;
};

class Simulator {
 public:
  explicit Simulator(model::Profile profile, SimOptions options = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const model::Profile& profile() const { return profile_; }
  const SimOptions& options() const { return options_; }
  const model::ModelSpec& model() const { return model_; }
  model::Scenario scenario(int64_t batch) const;
  std::vector<model::StageShape> stage_shapes(int64_t batch);

  // The stage graph rebuilt from the profile's model config, with the profile's op names and
  // kinds checked against it.
  const model::Graph& graph(std::string_view stage, int64_t batch);
  // The profile's data for a stage: measured, or interpolated when allowed.
  const model::StageProfile& stage_profile(std::string_view stage, int64_t batch);
  std::optional<Interpolation> interpolation(int64_t batch) const;
  // The provider each op of every stage at `batch` runs on in conv regions, as the options
  // decide it: the ops on cuBLASLt listed.
  model::ProviderChoice provider_choice(int64_t batch);

  // "profile <file>: batch <b>, stage <s>, <kind>[a:b]", for errors about a region: a caller
  // that runs the region's megakernel itself adds it to the TimeOverflow it may throw.
  std::string where(std::string_view stage, int64_t batch, const model::Region& region);

  // One region from its boundary to its end. Cached by content.
  std::shared_ptr<const RegionResult> simulate_region(std::string_view stage, int64_t batch,
                                                      const model::Region& region, Boundary before);
  Prediction simulate(const model::Composition& composition, int64_t batch);

  // The per-task costs an mk region runs with (task id minus the region's first task id), its
  // tasks placed by `schedule` (the region's model::make_schedule): a task checks the
  // dependencies model::task_waits leaves it.
  TaskCosts region_task_costs(std::string_view stage, int64_t batch, const model::Region& region,
                              const model::Schedule& schedule);
  // The same, placed by model::make_schedule over the device's SMs.
  TaskCosts region_task_costs(std::string_view stage, int64_t batch, const model::Region& region);
  // The fit of an op's standalone task benchmark.
  TaskFit task_fit(std::string_view stage, int64_t batch, int op);
  model::RegionConfig region_config(std::string_view stage, int64_t batch,
                                    const model::Region& region);
  // The device parameters every mk region runs with (bandwidth, counter signal latency, and in a
  // tensor-parallel profile with collective benchmarks the links' bandwidth: the fastest kind's
  // fit, collective_fits).
  MegakernelParams megakernel_params() const;
  // Per collective kind the profile benchmarked (model::MicroBenchmarks::collectives), its fit.
  const std::vector<std::pair<std::string, CollectiveFit>>& collective_fits() const {
    return collective_fits_;
  }

  // The launch of a stage graph at `batch` as a function of its nodes: from the sweep run
  // alongside that batch's replays (mixed linearly between the measured neighbours of an
  // interpolated batch), else from the micro-benchmarks.
  GraphLaunchFit graph_launch(int64_t batch) const;

  struct CacheStats {
    int64_t hits = 0;
    int64_t misses = 0;
  };
  CacheStats cache_stats() const { return cache_stats_; }

 private:
  struct OpModel;
  struct StageState;
  using RegionKey = std::tuple<std::string, int64_t, int, int, model::RegionKind, Boundary>;

  StageState& state(std::string_view stage, int64_t batch);
  std::unique_ptr<model::StageProfile> interpolate(std::string_view stage, int64_t batch,
                                                   const model::Graph& target);
  const OpModel& op_model(StageState& s, int op, const model::Region& region);
  const OpModel& collective_model(StageState& s, int op, const model::Region& region);
  // The op's tasks' bytes and schedule estimates (StageState::task_bytes, task_estimate), and
  // their means into m.
  void measure_tasks(StageState& s, int op, OpModel& m);
  // An mk region's runtime startup before its first task, at `ctas` CTAs (TaskBenchmark::
  // startup_ns of its first op, or for a collective the stage's nearest op that is not one);
  // none where not measured.
  std::optional<double> region_startup(StageState& s, const model::Region& region, int ctas);
  const model::ConvKernel& conv_kernel(StageState& s, int op, const model::Region& region);
  // The kernel the options choose for op `op` of the stage; null where the profile did not
  // measure it (conv_kernel says why when a region needs it).
  const model::ConvKernel* chosen_kernel(const StageState& s, int op) const;
  // What op `op` adds to its stage with kernel `k`, as ProviderPolicy::fastest compares them:
  // its mean duration, or with PDL (options_.pdl) its part between kernels of ours.
  double fastest_cost(const StageState& s, int op, const model::ConvKernel& k) const;
  TimeNs gap_before(StageState& s, const model::Region& region, Boundary before);
  TimeNs sequence_ns(const Prediction& p, const model::Scenario& scenario,
                     model::Sequence which) const;
  // The gap from conventional op `op`'s kernel to op + 1's, both in `region`'s stage; with
  // `ours_before`, op's kernel is ours whatever the provider choice (a tile region's last).
  TimeNs conv_gap(StageState& s, int op, const model::Region& region, bool ours_before = false);
  // With PDL, the step the profile's PDL trace measured from op - 1's end to op's end, where
  // both run kernels of ours; none otherwise.
  std::optional<TimeNs> pdl_step(StageState& s, int op, const model::Region& region,
                                 bool ours_before = false);
  // Op `op`'s kernel of ours, where the profile measured one.
  const model::ConvKernel* our_kernel(const StageState& s, int op) const;
  std::string where(const StageState& s, int op) const;
  // A conv or tile region: one kernel per op.
  void simulate_kernels(StageState& s, RegionResult& r);
  void simulate_mk(StageState& s, RegionResult& r);
  // What op `op` adds after op - 1 in a tile region (simulator/tile_region.h). Cached.
  TimeNs tile_step(StageState& s, int op, const model::Region& region);

  model::Profile profile_;
  SimOptions options_;
  GraphLaunchFit micro_launch_;
  bool region_startup_measured_ = false;  // some task benchmark holds startup_ns
  std::vector<std::pair<std::string, CollectiveFit>> collective_fits_;
  double link_bytes_per_ns_ = 0;  // the fastest of collective_fits_
  model::ModelSpec model_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<StageState>, std::less<>> stages_;
  std::map<RegionKey, std::shared_ptr<const RegionResult>> regions_;
  CacheStats cache_stats_;
};

}  // namespace megacut::simulator
