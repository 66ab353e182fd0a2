#include "simulator/simulator.h"

#include <algorithm>
#include <cmath>

#include "model/decoder.h"
#include "model/error.h"
#include "model/schedule.h"
#include "model/text.h"
#include "simulator/tile_region.h"

namespace megacut::simulator {
namespace {

TimeNs p50(const model::LatencyStats& s) { return time_from_ns(s.p50); }
TimeNs mean(const model::LatencyStats& s) { return time_from_ns(s.mean); }

// Whether any task benchmark of the profile holds a region startup (TaskBenchmark::startup_ns).
bool has_region_startup(const model::Profile& profile) {
  for (const auto& batch : profile.batches)
    for (const model::StageProfile& stage : batch.stages)
      for (const model::OpProfile& op : stage.ops)
        for (const model::TaskBenchmark& t : op.tasks)
          if (t.startup_ns) return true;
  return false;
}

// The executor launches an mk region as one kernel node (executor::MegakernelRegion::launch).
constexpr int64_t kMkRegionNodes = 1;
// A communication task's configuration (Simulator::collective_model): one warp that issues its
// transfers, few registers, no shared memory. Its tasks are charged no register slowdown.
constexpr model::RegionConfig kCommunicationConfig{32, 32, 0};

// The nodes a conventional op adds to its stage graph: one per kernel it runs.
int64_t conv_nodes(const model::ConvKernel& k) {
  int64_t nodes = 1;
  for (size_t at = k.kernel.find(" + "); at != std::string::npos; at = k.kernel.find(" + ", at + 3))
    ++nodes;
  return nodes;
}

// The traced span less the untraced back-to-back replay, per node, at the largest size measured
// both ways; never below 0. It assumes the GPU, not the host, set the back-to-back pace, as the
// profiler's chains are long enough for (profiler/micro.cu); a host-paced replay would show as a
// smaller excess, which the profile cannot tell apart. The replay also holds one graph-to-graph
// gap, which lowers the excess by that gap over the chain's nodes (a few ns).
double trace_excess_per_node(const std::vector<model::GraphLaunchPoint>& points) {
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (!it->span_ns || !it->back_to_back_ns) continue;
    return std::max(0.0,
                    (it->span_ns->p50 - it->back_to_back_ns->p50) / static_cast<double>(it->nodes));
  }
  return 0;
}

GraphLaunchFit fit_points(const std::vector<model::GraphLaunchPoint>& points) {
  std::vector<double> nodes, launch_ns;
  for (const model::GraphLaunchPoint& point : points) {
    nodes.push_back(static_cast<double>(point.nodes));
    launch_ns.push_back(point.launch_ns.p50);
  }
  GraphLaunchFit fit = fit_graph_launch(nodes, launch_ns);
  fit.trace_excess_per_node_ns = trace_excess_per_node(points);
  return fit;
}

// The graph-launch micro-benchmark at several sizes, or the one size older profiles measured.
GraphLaunchFit micro_launch_fit(const model::MicroBenchmarks& micro) {
  if (micro.graph_launch_by_nodes.empty()) return {micro.graph_launch_ns.p50, 0};
  return fit_points(micro.graph_launch_by_nodes);
}

// w = 0 gives a, w = 1 gives b; each side first scaled by its factor.
model::LatencyStats lerp(const model::LatencyStats& a, const model::LatencyStats& b, double w,
                         double scale_a = 1, double scale_b = 1) {
  model::LatencyStats s;
  s.unit = "ns";
  s.count = std::min(a.count, b.count);
  auto mix = [&](double x, double y) { return (1 - w) * x * scale_a + w * y * scale_b; };
  s.mean = mix(a.mean, b.mean);
  s.stdev = mix(a.stdev, b.stdev);
  s.min = mix(a.min, b.min);
  s.p50 = mix(a.p50, b.p50);
  s.p90 = mix(a.p90, b.p90);
  s.p95 = mix(a.p95, b.p95);
  s.p99 = mix(a.p99, b.p99);
  s.max = mix(a.max, b.max);
  return s;
}

std::string region_text(const model::Region& r) {
  return std::string(model::region_kind_name(r.kind)) + "[" + std::to_string(r.begin) + ":" +
         std::to_string(r.end) + "]";
}

// The mean over an op's tiles of the schedule's rough cost estimate: how big its tasks are.
double mean_estimate_ns(const model::Graph& g, int op) {
  const int64_t tiles = g.op(op).tiling.count();
  double sum = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    sum += static_cast<double>(model::schedule_cost_estimate_ns(g.task_cost(g.task_id(op, t))));
  }
  return sum / static_cast<double>(tiles);
}

}  // namespace

struct Simulator::OpModel {
  bool ready = false;
  TaskFit fit;
  // A collective's communication tasks: the fit of its kind's benchmark (the latency is
  // fit.solo_ns; no standalone task benchmark).
  std::optional<CollectiveFit> link;
  double mean_bytes = 0;       // per task: TileCost bytes read + written
  double mean_estimate = 0;    // per task: model::schedule_cost_estimate_ns
  model::RegionConfig config;  // its standalone region's
  // A region's startup when this op's tasks come first, by the standalone benchmark's CTA
  // count (TaskBenchmark::startup_ns p50); empty in profiles without it.
  std::vector<std::pair<int, double>> startup_ns;

  // At the benchmarked CTA count nearest `ctas`; none when not measured.
  std::optional<double> startup_at(int ctas) const {
    std::optional<double> best;
    int distance = 0;
    for (auto [c, ns] : startup_ns) {
      if (!best || std::abs(c - ctas) < distance) {
        best = ns;
        distance = std::abs(c - ctas);
      }
    }
    return best;
  }
};

struct Simulator::StageState {
  std::string stage;
  int64_t batch = 0;
  std::unique_ptr<model::Graph> graph;
  const model::StageProfile* profile = nullptr;
  std::unique_ptr<model::StageProfile> interpolated;
  // Per task of the stage, filled op by op as ops are first run in an mk region.
  std::vector<double> task_bytes;
  std::vector<double> task_stream_bytes;  // of task_bytes, what streams (TileCost::stream_bytes)
  std::vector<double> task_estimate;
  std::vector<OpModel> ops;
  // By op, the conventional kernel the provider choice takes (null: none measured).
  std::vector<const model::ConvKernel*> conv;
  // By op, its step after op - 1 in a tile region, once computed.
  std::vector<std::optional<TimeNs>> tile_steps;
  // The stage graph's launch: the fixed part, and each node's.
  TimeNs launch_fixed_ns = 0;
  TimeNs launch_node_ns = 0;
  TimeNs trace_excess_node_ns = 0;  // GraphLaunchFit::trace_excess_per_node_ns
};

std::string_view boundary_name(Boundary boundary) {
  switch (boundary) {
    case Boundary::stage_start:
      return "stage start";
    case Boundary::after_conv:
      return "after conv";
    case Boundary::after_mk:
      return "after mk";
    case Boundary::after_tile:
      return "after tile";
  }
  return "?";
}

Simulator::Simulator(model::Profile profile, SimOptions options)
    : profile_(std::move(profile)), options_(options) {
  micro_launch_ = micro_launch_fit(profile_.micro);
  region_startup_measured_ = has_region_startup(profile_);
  for (const model::CollectiveBenchmark& c : profile_.micro.collectives) {
    std::vector<double> link_bytes, time_ns;
    for (const model::CollectivePoint& point : c.points) {
      link_bytes.push_back(
          static_cast<double>(model::ring_link_bytes(c.kind, point.bytes, profile_.tp)));
      time_ns.push_back(point.time_ns.p50);
    }
    const CollectiveFit fit = fit_collective(link_bytes, time_ns);
    collective_fits_.emplace_back(c.kind, fit);
    link_bytes_per_ns_ = std::max(link_bytes_per_ns_, fit.link_bytes_per_ns);
  }
  model_ = model::parse_model(profile_.model_config, profile_.model_name,
                              profile_.source + " (model.config)");
}

Simulator::~Simulator() = default;

model::Scenario Simulator::scenario(int64_t batch) const {
  return model::make_scenario(model_, batch, profile_.prompt_len, profile_.frames, profile_.tp);
}

std::vector<model::StageShape> Simulator::stage_shapes(int64_t batch) {
  std::vector<model::StageShape> shapes;
  for (const model::Stage& s : scenario(batch).stages) {
    shapes.push_back({s.name, graph(s.name, batch).op_count()});
  }
  return shapes;
}

const model::Graph& Simulator::graph(std::string_view stage, int64_t batch) {
  return *state(stage, batch).graph;
}

const model::StageProfile& Simulator::stage_profile(std::string_view stage, int64_t batch) {
  return *state(stage, batch).profile;
}

GraphLaunchFit Simulator::graph_launch(int64_t batch) const {
  auto own = [&](int64_t b) -> std::optional<GraphLaunchFit> {
    const model::BatchProfile* p = profile_.batch(b);
    if (p == nullptr || p->graph_launch_by_nodes.empty()) return std::nullopt;
    return fit_points(p->graph_launch_by_nodes);
  };
  if (std::optional<GraphLaunchFit> fit = own(batch)) return *fit;
  if (const std::optional<Interpolation> in = interpolation(batch)) {
    const std::optional<GraphLaunchFit> lo = own(in->lower), hi = own(in->upper);
    if (lo && hi) {
      const double w =
          static_cast<double>(batch - in->lower) / static_cast<double>(in->upper - in->lower);
      return {(1 - w) * lo->fixed_ns + w * hi->fixed_ns,
              (1 - w) * lo->per_node_ns + w * hi->per_node_ns,
              (1 - w) * lo->trace_excess_per_node_ns + w * hi->trace_excess_per_node_ns};
    }
  }
  return micro_launch_;
}

std::optional<Interpolation> Simulator::interpolation(int64_t batch) const {
  if (profile_.batch(batch) != nullptr) return std::nullopt;
  Interpolation in{batch, 0, 0};
  for (int64_t b : profile_.batch_sizes()) {
    if (b < batch) in.lower = b;
    if (b > batch && in.upper == 0) in.upper = b;
  }
  if (in.lower == 0 || in.upper == 0) return std::nullopt;
  return in;
}

std::string Simulator::where(const StageState& s, int op) const {
  std::string text = "profile " + profile_.source + ": batch " + std::to_string(s.batch);
  if (s.interpolated) text += " (interpolated)";
  text += ", stage " + s.stage;
  if (op >= 0) text += ", op " + std::to_string(op) + " (" + s.graph->op(op).name + ")";
  return text;
}

std::string Simulator::where(std::string_view stage, int64_t batch, const model::Region& region) {
  return where(state(stage, batch), -1) + ", " + region_text(region);
}

Simulator::StageState& Simulator::state(std::string_view stage, int64_t batch) {
  const auto key = std::make_pair(std::string(stage), batch);
  if (auto it = stages_.find(key); it != stages_.end()) return *it->second;

  // Before the graph: a batch the profile cannot answer for may be one too large to build.
  model::check_batch(profile_, batch, options_.allow_interpolate);
  auto s = std::make_unique<StageState>();
  s->stage = std::string(stage);
  s->batch = batch;
  const model::Scenario sc = scenario(batch);
  s->graph = std::make_unique<model::Graph>(model::build_graph(model_, sc, stage));
  const model::BatchProfile* measured = profile_.batch(batch);
  if (measured == nullptr) {
    s->interpolated = interpolate(stage, batch, *s->graph);
    s->profile = s->interpolated.get();
  } else {
    s->profile = measured->stage(stage);
    if (s->profile == nullptr) {
      std::string known;
      for (const model::StageProfile& p : measured->stages)
        known += (known.empty() ? "" : ", ") + p.stage;
      throw Error("profile " + profile_.source + ": batch " + std::to_string(batch) +
                  " has no stage '" + std::string(stage) + "' (stages: " + known + ")");
    }
  }
  const model::Graph& g = *s->graph;
  for (const model::OpProfile& op : s->profile->ops) {
    if (op.index >= g.op_count()) {
      throw Error(where(*s, -1) + ": op " + std::to_string(op.index) + " (" + op.name +
                  ") is beyond the graph's " + std::to_string(g.op_count()) + " ops");
    }
    const model::Op& real = g.op(op.index);
    if (op.name != real.name || op.kind != real.kind->name()) {
      throw Error(where(*s, -1) + ", op " + std::to_string(op.index) + ": the profile has '" +
                  op.name + "' (" + op.kind + "), the graph rebuilt from model.config has '" +
                  real.name + "' (" + std::string(real.kind->name()) + ")");
    }
    if (op.tiles > 0 && op.tiles != real.tiling.count()) {
      throw Error(where(*s, op.index) + ": the profile measured its tasks as " +
                  std::to_string(op.tiles) + " tiles, the graph rebuilt now cuts it into " +
                  std::to_string(real.tiling.count()) +
                  " (the tiling changed since the profile was made): profile the model again");
    }
  }
  const GraphLaunchFit launch = graph_launch(batch);
  try {
    s->launch_fixed_ns = time_from_ns(launch.fixed_ns);
    s->launch_node_ns = time_from_ns(launch.per_node_ns);
    s->trace_excess_node_ns = time_from_ns(launch.trace_excess_per_node_ns);
  } catch (const TimeOverflow& e) {
    throw Error(where(*s, -1) + ", the graph launch fit: " + e.what());
  }
  s->task_bytes.assign(g.task_count(), 0);
  s->task_stream_bytes.assign(g.task_count(), 0);
  s->task_estimate.assign(g.task_count(), 0);
  s->ops.resize(g.op_count());
  if (options_.provider_choice) options_.provider_choice->check(g);
  s->conv.resize(g.op_count());
  for (int op = 0; op < g.op_count(); ++op) s->conv[op] = chosen_kernel(*s, op);
  s->tile_steps.resize(g.op_count());
  return *stages_.emplace(key, std::move(s)).first->second;
}

std::unique_ptr<model::StageProfile> Simulator::interpolate(std::string_view stage, int64_t batch,
                                                            const model::Graph& target) {
  const std::optional<Interpolation> in = interpolation(batch);
  if (!in) {
    throw Error("profile " + profile_.source + ": batch " + std::to_string(batch) +
                " is outside the measured batches (" + model::comma_list(profile_.batch_sizes()) +
                "); interpolation does not extrapolate");
  }
  const StageState& lo = state(stage, in->lower);
  const StageState& hi = state(stage, in->upper);
  const double w =
      static_cast<double>(batch - in->lower) / static_cast<double>(in->upper - in->lower);

  auto out = std::make_unique<model::StageProfile>();
  out->stage = std::string(stage);
  if (lo.profile->graph_ns && hi.profile->graph_ns) {
    out->graph_ns = lerp(*lo.profile->graph_ns, *hi.profile->graph_ns, w);
  }
  for (const model::OpProfile& b : hi.profile->ops) {
    const model::OpProfile* a = lo.profile->op(b.index);
    if (a == nullptr) continue;
    model::OpProfile op;
    op.index = b.index;
    op.name = b.name;
    op.kind = b.kind;
    // Name, provider and launch configuration of the larger batch.
    auto mix = [&](const std::optional<model::ConvKernel>& ka,
                   const std::optional<model::ConvKernel>& kb) -> std::optional<model::ConvKernel> {
      if (!ka || !kb || ka->provider != kb->provider) return std::nullopt;
      model::ConvKernel k = *kb;
      k.duration_ns = lerp(ka->duration_ns, kb->duration_ns, w);
      k.gap_to_next_ns.reset();
      if (ka->gap_to_next_ns && kb->gap_to_next_ns) {
        k.gap_to_next_ns = lerp(*ka->gap_to_next_ns, *kb->gap_to_next_ns, w);
      }
      k.pdl_step_ns.reset();
      if (ka->pdl_step_ns && kb->pdl_step_ns) {
        k.pdl_step_ns = lerp(*ka->pdl_step_ns, *kb->pdl_step_ns, w);
      }
      k.gap_before_ns.reset();
      if (ka->gap_before_ns && kb->gap_before_ns) {
        k.gap_before_ns = lerp(*ka->gap_before_ns, *kb->gap_before_ns, w);
      }
      return k;
    };
    op.conv = mix(a->conv, b.conv);
    op.conv_cublaslt = mix(a->conv_cublaslt, b.conv_cublaslt);
    if (a->task_region && b.task_region && !a->tasks.empty() && !b.tasks.empty()) {
      // Tiles can change size with the batch: scale each side's task times to the target's
      // tiles by the rough cost estimate before mixing.
      const double size = mean_estimate_ns(target, b.index);
      const double scale_a = size / mean_estimate_ns(*lo.graph, b.index);
      const double scale_b = size / mean_estimate_ns(*hi.graph, b.index);
      for (const model::TaskBenchmark& tb : b.tasks) {
        for (const model::TaskBenchmark& ta : a->tasks) {
          if (ta.ctas != tb.ctas) continue;
          model::TaskBenchmark t{
              tb.ctas, lerp(ta.duration_ns, tb.duration_ns, w, scale_a, scale_b), {}};
          if (ta.startup_ns && tb.startup_ns)
            t.startup_ns = lerp(*ta.startup_ns, *tb.startup_ns, w);
          op.tasks.push_back(std::move(t));
        }
      }
      op.task_region = b.task_region;
      if (op.tasks.empty()) op.task_region.reset();
    }
    // What the bodies of both batches can do with flagged words, which may change with the tiles.
    if (a->flagged_words && b.flagged_words) {
      op.flagged_words =
          model::FlaggedWordsSupport{a->flagged_words->takes_x && b.flagged_words->takes_x,
                                     a->flagged_words->gives_y && b.flagged_words->gives_y};
    }
    out->ops.push_back(std::move(op));
  }
  return out;
}

const model::ConvKernel* Simulator::chosen_kernel(const StageState& s, int op) const {
  const model::OpProfile* p = s.profile->op(op);
  if (p == nullptr || (!p->conv && !p->conv_cublaslt)) return nullptr;
  // A profile's `conv` is whichever provider it ran (ours, in profiles of today).
  auto measured = [&](model::LinearProvider provider) -> const model::ConvKernel* {
    const std::string_view name = provider == model::LinearProvider::ours ? "ours" : "cublas";
    if (p->conv && p->conv->provider == name) return &*p->conv;
    if (p->conv_cublaslt && name == "cublas") return &*p->conv_cublaslt;
    return nullptr;
  };
  if (!model::cublaslt_can_run(p->kind)) return p->conv ? &*p->conv : nullptr;
  model::LinearProvider want = model::LinearProvider::ours;
  if (options_.provider_choice) {
    want = options_.provider_choice->of(s.stage, op);
  } else if (options_.linear_provider == model::ProviderPolicy::cublaslt) {
    want = model::LinearProvider::cublaslt;
  } else if (options_.linear_provider == model::ProviderPolicy::fastest) {
    const model::ConvKernel* ours = measured(model::LinearProvider::ours);
    const model::ConvKernel* cublaslt = measured(model::LinearProvider::cublaslt);
    if (ours == nullptr || cublaslt == nullptr) return ours != nullptr ? ours : cublaslt;
    return fastest_cost(s, op, *cublaslt) < fastest_cost(s, op, *ours) ? cublaslt : ours;
  }
  return measured(want);
}

double Simulator::fastest_cost(const StageState& s, int op, const model::ConvKernel& k) const {
  const double d = k.duration_ns.mean;
  if (!options_.pdl) return d;
  // With PDL, what the op adds with this kernel between our kernels on either side (those the
  // profile's graphs ran around it): ours its PDL step, where measured; cuBLASLt's, launched
  // plainly, its duration and the boundary before it, and the step the next kernel of ours then
  // loses (it pays the PDL gap and all of its duration instead).
  const double pdl_gap = p50(profile_.micro.kernel_gap_pdl_ns);
  if (k.provider == "ours") return k.pdl_step_ns ? k.pdl_step_ns->mean : d + pdl_gap;
  double cost = d + (k.gap_before_ns ? k.gap_before_ns->mean : p50(profile_.micro.kernel_gap_ns));
  const model::OpProfile* next = s.profile->op(op + 1);
  if (next != nullptr && next->conv && next->conv->provider == "ours" && next->conv->pdl_step_ns) {
    cost += std::max(0.0, next->conv->duration_ns.mean + pdl_gap - next->conv->pdl_step_ns->mean);
  }
  return cost;
}

const model::ConvKernel& Simulator::conv_kernel(StageState& s, int op,
                                                const model::Region& region) {
  if (region.kind == model::RegionKind::tile && op >= region.begin && op < region.end) {
    if (model::is_collective(s.graph->op(op))) {
      throw Error(where(s, op) + ": a collective signals no tile counters (needed by " +
                  region_text(region) + ")");
    }
    // A tile region's kernels signal tile counters: ours, whatever the provider choice.
    if (const model::ConvKernel* k = our_kernel(s, op)) return *k;
    throw Error(where(s, op) + ": no conventional kernel of ours measured (needed by " +
                region_text(region) + ", whose kernels are ours)");
  }
  const model::ConvKernel* k = s.conv.at(op);
  if (k != nullptr) return *k;
  const model::OpProfile* p = s.profile->op(op);
  const std::string provider = options_.provider_choice
                                   ? options_.provider_choice->describe()
                                   : std::string(model::policy_name(options_.linear_provider));
  if (p != nullptr && p->conv && p->conv->provider == "cublas") {
    throw Error(
        where(s, op) + ": the profile measured it on cuBLASLt only (a profile made with " +
        "the former `megacut profile --provider cublaslt`), not with its linear provider (" +
        provider + "), needed by " + region_text(region) +
        ": predict it with --provider cublaslt, or profile the model again");
  }
  if (p != nullptr && p->conv) {
    throw Error(where(s, op) + ": no kernel measured for its linear provider (" + provider +
                "), needed by " + region_text(region) +
                "; profiles made before cuBLASLt's kernels were measured beside ours have ours "
                "only: profile the model again");
  }
  throw Error(where(s, op) + ": no conventional kernel measured (needed by " + region_text(region) +
              ")");
}

const model::ConvKernel* Simulator::our_kernel(const StageState& s, int op) const {
  const model::OpProfile* p = s.profile->op(op);
  return p != nullptr && p->conv && p->conv->provider == "ours" ? &*p->conv : nullptr;
}

model::ProviderChoice Simulator::provider_choice(int64_t batch) {
  model::ProviderChoice choice;
  for (const model::Stage& stage : scenario(batch).stages) {
    const StageState& s = state(stage.name, batch);
    std::vector<int> ops;
    for (int op = 0; op < s.graph->op_count(); ++op) {
      if (s.conv[op] != nullptr && s.conv[op]->provider == "cublas") ops.push_back(op);
    }
    if (!ops.empty()) choice.cublaslt_ops[s.stage] = std::move(ops);
  }
  return choice;
}

void Simulator::measure_tasks(StageState& s, int op, OpModel& m) {
  const model::Graph& g = *s.graph;
  const int64_t tiles = g.op(op).tiling.count();
  double bytes = 0, estimate = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const model::TaskId id = g.task_id(op, t);
    const model::TileCost c = g.task_cost(id);
    s.task_bytes[id] = static_cast<double>(c.bytes_read + c.bytes_written);
    s.task_stream_bytes[id] = static_cast<double>(c.stream_bytes);
    s.task_estimate[id] = static_cast<double>(model::schedule_cost_estimate_ns(c));
    bytes += s.task_bytes[id];
    estimate += s.task_estimate[id];
  }
  m.mean_bytes = bytes / static_cast<double>(tiles);
  m.mean_estimate = estimate / static_cast<double>(tiles);
}

const Simulator::OpModel& Simulator::op_model(StageState& s, int op, const model::Region& region) {
  OpModel& m = s.ops.at(op);
  if (m.ready) return m;
  if (model::is_collective(s.graph->op(op))) return collective_model(s, op, region);
  const model::OpProfile* p = s.profile->op(op);
  if (p == nullptr || p->tasks.empty() || !p->task_region) {
    throw Error(where(s, op) + ": no standalone task benchmark measured (needed by " +
                region_text(region) + ")");
  }
  const int64_t tiles = s.graph->op(op).tiling.count();
  measure_tasks(s, op, m);
  std::vector<double> x, d;
  for (const model::TaskBenchmark& b : p->tasks) {
    x.push_back(static_cast<double>(std::min<int64_t>(b.ctas, tiles)));
    d.push_back(b.duration_ns.mean);
    if (b.startup_ns) m.startup_ns.emplace_back(b.ctas, b.startup_ns->p50);
  }
  m.fit = fit_task_durations(x, d, m.mean_bytes / profile_.device.copy_bandwidth_gb_per_s);
  m.config = *p->task_region;
  m.ready = true;
  return m;
}

// A collective in an mk region runs as communication tasks, one per tile, each sending its
// tile's link bytes (TileCost::link_bytes) through the GPU's links and reading and writing its
// local bytes, after the latency of its kind's benchmark fit. The fit is of whole collectives of
// the tp GPUs, so a task is taken to pay a whole collective's latency: NCCL's, which a transfer
// issued from inside a region may undercut. Its tasks need one warp: kCommunicationConfig.
const Simulator::OpModel& Simulator::collective_model(StageState& s, int op,
                                                      const model::Region& region) {
  OpModel& m = s.ops.at(op);
  const std::string_view kind = s.graph->op(op).kind->name();
  const model::CollectiveBenchmark* benchmark = profile_.micro.collective(kind);
  if (benchmark == nullptr) {
    throw Error(where(s, op) + ": no " + std::string(kind == "all-gather" ? kind : "all-reduce") +
                " benchmark in the profile (micro.collectives; needed by " + region_text(region) +
                ", which runs the collective as communication tasks)");
  }
  const std::string_view timed = benchmark->kind;
  const auto it = std::find_if(collective_fits_.begin(), collective_fits_.end(),
                               [&](const auto& f) { return f.first == timed; });
  if (!(it->second.link_bytes_per_ns > 0)) {
    throw Error(where(s, op) + ": the profile's " + std::string(timed) +
                " benchmark (micro.collectives) fits no link bandwidth (one message size, or "
                "times that do not grow with it; needed by " +
                region_text(region) + ")");
  }
  measure_tasks(s, op, m);
  m.fit.solo_ns = it->second.latency_ns;
  m.fit.shared_ns = m.mean_bytes / profile_.device.copy_bandwidth_gb_per_s;
  m.link = it->second;
  m.config = kCommunicationConfig;
  m.ready = true;
  return m;
}

TaskFit Simulator::task_fit(std::string_view stage, int64_t batch, int op) {
  StageState& s = state(stage, batch);
  return op_model(s, op, model::Region{model::RegionKind::mk, op, op + 1}).fit;
}

model::RegionConfig Simulator::region_config(std::string_view stage, int64_t batch,
                                             const model::Region& region) {
  StageState& s = state(stage, batch);
  std::vector<model::RegionConfig> members;
  for (int op = region.begin; op < region.end; ++op)
    members.push_back(op_model(s, op, region).config);
  return predict_region_config(members, profile_.device.registers_per_sm);
}

TaskCosts Simulator::region_task_costs(std::string_view stage, int64_t batch,
                                       const model::Region& region) {
  const model::Graph& g = graph(stage, batch);
  return region_task_costs(
      stage, batch, region,
      model::make_schedule(g, region.begin, region.end, profile_.device.sm_count));
}

TaskCosts Simulator::region_task_costs(std::string_view stage, int64_t batch,
                                       const model::Region& region,
                                       const model::Schedule& schedule) {
  StageState& s = state(stage, batch);
  const model::RegionConfig config = region_config(stage, batch, region);
  const model::Graph& g = *s.graph;
  const model::TaskId first = g.first_task(region.begin);
  const model::TaskId last = g.first_task(region.end - 1) + g.op(region.end - 1).tiling.count();
  TaskCosts costs;
  costs.fixed_ns.resize(last - first);
  costs.bytes.resize(last - first);
  const double bandwidth = profile_.device.copy_bandwidth_gb_per_s;
  // Hops by flagged words where the ops' bodies can (the profile says which), and where the
  // profile can price them; not a counter wait.
  if (profile_.micro.flagged_word_hop_ns) {
    auto support = [&](int op) {
      const model::OpProfile* p = s.profile->op(op);
      return p != nullptr && p->flagged_words ? *p->flagged_words : model::FlaggedWordsSupport{};
    };
    costs.by_data = model::data_edges(
        g, region.begin, region.end, [&](int op) { return support(op).takes_x; },
        [&](int op) { return support(op).gives_y; });
  }
  // Before its body, a task checks the dependencies its queue has not already seen done (those
  // before the region were met at the kernel boundary, and its standalone benchmark had none):
  // config.threads per round.
  const std::vector<int32_t> waits = model::task_wait_counts(g, schedule, costs.by_data);
  const double round_ns = profile_.micro.dependency_check_round_ns
                              ? p50(*profile_.micro.dependency_check_round_ns)
                              : 0.0;
  for (int op = region.begin; op < region.end; ++op) {
    const OpModel& m = op_model(s, op, region);
    const double slowdown = config_slowdown(m.config, config);
    const model::TaskId begin = g.first_task(op);
    const model::TaskId end = begin + g.op(op).tiling.count();
    if (m.link && costs.link_bytes.empty()) costs.link_bytes.assign(last - first, 0.0);
    for (model::TaskId id = begin; id < end; ++id) {
      const int64_t deps = waits[id - first];
      const int64_t rounds = (deps + config.threads - 1) / config.threads;
      const double checks = static_cast<double>(rounds) * round_ns;
      if (m.link) {
        // Its latency, its local bytes, and its link bytes scaled to the links' bandwidth
        // (megakernel_params: the fastest kind's), so that alone they take link bytes / its own.
        costs.fixed_ns[id - first] = time_from_ns(m.fit.solo_ns + checks);
        costs.bytes[id - first] = s.task_bytes[id];
        costs.link_bytes[id - first] = static_cast<double>(g.task_cost(id).link_bytes) *
                                       link_bytes_per_ns_ / m.link->link_bytes_per_ns;
        continue;
      }
      const double size = s.task_estimate[id] / m.mean_estimate;
      const double share = m.mean_bytes > 0 ? s.task_bytes[id] / m.mean_bytes : 1.0;
      costs.fixed_ns[id - first] = time_from_ns(m.fit.solo_ns * size * slowdown + checks);
      costs.bytes[id - first] = m.fit.shared_ns * bandwidth * share;
      // What a streamed body streams, as much of it as the region's ring holds, loads ahead: that
      // share of the bytes its benchmark fit moves.
      if (m.config.ring_bytes > 0 && config.ring_bytes > 0 && s.task_bytes[id] > 0) {
        if (costs.ahead_bytes.empty()) costs.ahead_bytes.assign(last - first, 0.0);
        const double ahead =
            std::min(s.task_stream_bytes[id], static_cast<double>(config.ring_bytes));
        costs.ahead_bytes[id - first] = costs.bytes[id - first] * ahead / s.task_bytes[id];
      }
    }
  }
  return costs;
}

MegakernelParams Simulator::megakernel_params() const {
  MegakernelParams params;
  params.bandwidth_bytes_per_ns = profile_.device.copy_bandwidth_gb_per_s;
  params.signal_latency_ns = p50(profile_.micro.counter_signal_to_wait_ns);
  if (profile_.micro.flagged_word_hop_ns) {
    params.word_latency_ns = p50(*profile_.micro.flagged_word_hop_ns);
  }
  params.link_bytes_per_ns = link_bytes_per_ns_;
  return params;
}

TimeNs Simulator::gap_before(StageState& s, const model::Region& region, Boundary before) {
  const model::MicroBenchmarks& micro = profile_.micro;
  if (before == Boundary::stage_start) return s.launch_fixed_ns;
  if (region.kind != model::RegionKind::mk &&
      (before == Boundary::after_conv || before == Boundary::after_tile)) {
    return conv_gap(s, region.begin - 1, region, before == Boundary::after_tile);
  }
  // With PDL, our kernels (regions, tile kernels) launch early; cuBLASLt's do not.
  const bool early = options_.pdl && (region.kind == model::RegionKind::mk ||
                                      conv_kernel(s, region.begin, region).provider == "ours");
  return p50(early ? micro.kernel_gap_pdl_ns : micro.kernel_gap_ns);
}

std::optional<TimeNs> Simulator::pdl_step(StageState& s, int op, const model::Region& region,
                                          bool ours_before) {
  if (!options_.pdl || op == 0) return std::nullopt;
  const model::ConvKernel& k = conv_kernel(s, op, region);
  const model::ConvKernel* before = ours_before ? our_kernel(s, op - 1) : s.conv.at(op - 1);
  if (k.provider != "ours" || !k.pdl_step_ns || before == nullptr || before->provider != "ours") {
    return std::nullopt;
  }
  return mean(*k.pdl_step_ns);
}

TimeNs Simulator::conv_gap(StageState& s, int op, const model::Region& region, bool ours_before) {
  // With PDL and the profile's PDL trace, op + 1 adds its step from op's end to its own: the part
  // beyond its duration is the boundary (none where it started early enough to hide more).
  if (const std::optional<TimeNs> step = pdl_step(s, op + 1, region, ours_before)) {
    const TimeNs d = mean(conv_kernel(s, op + 1, region).duration_ns);
    return std::max<TimeNs>(0, *step - d);
  }
  // With PDL, a tile kernel of ours launches while the kernel before it drains: the boundary
  // costs what the PDL micro-benchmark measured, in place of the traced (plain) gap.
  if (options_.pdl && conv_kernel(s, op + 1, region).provider == "ours") {
    return p50(profile_.micro.kernel_gap_pdl_ns);
  }
  // Before a cuBLASLt kernel, the boundary the graph with cuBLASLt linears measured before it.
  if (const model::ConvKernel& next = conv_kernel(s, op + 1, region); next.gap_before_ns) {
    return mean(*next.gap_before_ns);
  }
  // Otherwise the same kernel boundary as in the conventional graph.
  const model::ConvKernel* before = ours_before ? our_kernel(s, op) : nullptr;
  const model::ConvKernel& k = before != nullptr ? *before : conv_kernel(s, op, region);
  if (!k.gap_to_next_ns) {
    throw Error(where(s, op) + ": conv.gap_to_next_ns missing (needed by " + region_text(region) +
                ")");
  }
  return mean(*k.gap_to_next_ns);
}

void Simulator::simulate_kernels(StageState& s, RegionResult& r) {
  const int sms = profile_.device.sm_count;
  const bool tile = r.region.kind == model::RegionKind::tile;
  r.sm_busy_ns.assign(sms, 0);
  TimeNs t = r.gap_ns;
  for (int op = r.region.begin; op < r.region.end; ++op) {
    const model::ConvKernel& k = conv_kernel(s, op, r.region);
    TimeNs d = mean(k.duration_ns);
    if (tile && op > r.region.begin) {
      // In a tile region, what the op adds after the one before (no gap between them).
      d = tile_step(s, op, r.region);
    } else if (op > r.region.begin || r.before == Boundary::after_conv ||
               r.before == Boundary::after_tile) {
      // After a kernel of the conventional graph, with PDL, what of the kernel's time its step
      // leaves beyond the boundary (conv_gap): the rest ran while the kernel before it did.
      const bool ours_before = op == r.region.begin && r.before == Boundary::after_tile;
      if (const std::optional<TimeNs> step = pdl_step(s, op, r.region, ours_before)) {
        d = std::min(d, *step);
      }
    }
    r.critical_path.push_back(PathStep{StepKind::kernel, op, -1, -1, t, t + d});
    if (options_.record_spans) r.spans.push_back(Span{op, -1, -1, t, t + d});
    // Which SMs a kernel occupies is the hardware's choice: count its CTAs on the first ones.
    const int64_t ctas = k.launch.grid[0] * k.launch.grid[1] * k.launch.grid[2];
    for (int sm = 0; sm < std::min<int64_t>(ctas, sms); ++sm) {
      r.sm_busy_ns[sm] = add_time(r.sm_busy_ns[sm], d);
    }
    t = add_time(t, d);
    if (!tile && op + 1 < r.region.end) {
      const TimeNs g = conv_gap(s, op, r.region);
      if (g > 0) r.critical_path.push_back(PathStep{StepKind::gap, op + 1, -1, -1, t, t + g});
      t = add_time(t, g);
    }
  }
  r.kernels = r.region.end - r.region.begin;
  r.work_ns = t - r.gap_ns;
  r.time_ns = t;
}

TimeNs Simulator::tile_step(StageState& s, int op, const model::Region& region) {
  std::optional<TimeNs>& cached = s.tile_steps.at(op);
  if (cached) return *cached;
  const model::DeviceProfile& d = profile_.device;
  if (!d.sm_limits) {
    throw Error("profile " + profile_.source + ": device.sm_limits missing, needed by " +
                region_text(region) +
                " (a tile region places its CTAs by them): profile the model again");
  }
  const model::Graph& g = *s.graph;
  auto kernel = [&](int i) {
    const model::ConvKernel& k = conv_kernel(s, i, region);
    TileKernel t;
    t.ctas = k.launch.grid[0] * k.launch.grid[1] * k.launch.grid[2];
    t.threads = static_cast<int>(k.launch.block[0] * k.launch.block[1] * k.launch.block[2]);
    t.registers = k.launch.registers;
    t.smem_bytes = k.launch.smem_bytes;
    t.tiling = g.op(i).tiling;
    // A kernel that reads through tensor maps (its name says so) takes its tiles grouped.
    t.grouped = k.kernel.find("::mapped_kernel<") != std::string::npos;
    t.duration_ns = k.duration_ns.mean;
    return t;
  };
  TileDevice device;
  device.sm_count = d.sm_count;
  device.registers_per_sm = d.registers_per_sm;
  device.limits = *d.sm_limits;
  const model::MicroBenchmarks& micro = profile_.micro;
  device.dependent_launch_ns =
      p50(micro.dependent_launch_ns ? *micro.dependent_launch_ns : micro.kernel_gap_ns);
  device.signal_latency_ns = p50(micro.counter_signal_to_wait_ns);
  if (micro.dependency_check_round_ns) {
    device.check_round_ns = p50(*micro.dependency_check_round_ns);
  }
  const int producer = op - 1;
  const model::TaskId producer_first = g.first_task(producer);
  const TileReadsFn reads = [&](int64_t tile, TileReads& out) {
    for (const int64_t e : g.dep_entries(g.task_id(op, tile))) {
      if (e < 0) {
        out.all = out.all || -(e + 1) == producer;
      } else if (g.task_op(e) == producer) {
        out.tiles.push_back(e - producer_first);
      }
    }
  };
  try {
    cached = simulate_tile_step(kernel(producer), kernel(op), reads, device).step_ns;
  } catch (const Error& e) {
    throw Error(where(s, op) + ", " + region_text(region) + ": " + e.what());
  }
  return *cached;
}

std::optional<double> Simulator::region_startup(StageState& s, const model::Region& region,
                                                int ctas) {
  // A CTA's startup (run index, its queue's first task and layout) is the runtime's, whatever
  // task comes first; a communication task has no benchmark of its own, so the stage's nearest
  // op after it (else before it) that is not a collective stands in for it. Never one chosen by
  // the region's end: the planner takes a region's overhead from its first op alone.
  const int n = s.graph->op_count();
  for (int op = region.begin; op < n; ++op) {
    if (!model::is_collective(s.graph->op(op))) return op_model(s, op, region).startup_at(ctas);
  }
  for (int op = region.begin - 1; op >= 0; --op) {
    if (!model::is_collective(s.graph->op(op))) return op_model(s, op, region).startup_at(ctas);
  }
  return std::nullopt;
}

void Simulator::simulate_mk(StageState& s, RegionResult& r) {
  const model::Graph& g = *s.graph;
  const model::MicroBenchmarks& micro = profile_.micro;
  const model::Schedule schedule =
      model::make_schedule(g, r.region.begin, r.region.end, profile_.device.sm_count);
  const TaskCosts costs = region_task_costs(s.stage, s.batch, r.region, schedule);
  r.config = region_config(s.stage, s.batch, r.region);
  for (int op = r.region.begin; op < r.region.end; ++op) {
    if (config_slowdown(s.ops[op].config, *r.config) > 1) r.register_limited_ops.push_back(op);
  }
  MegakernelParams params = megakernel_params();
  params.record_spans = options_.record_spans;
  MegakernelRun run = simulate_megakernel(g, schedule, costs, params);

  r.kernels = 1;
  r.tasks = schedule.task_count();
  // The trivial region's kernel start to its first task (micro-benchmark: mostly the launch, its
  // CTAs' own start being one barrier), then the runtime's startup before the first task,
  // measured with the region's first op: each CTA's start to its first task. The trivial
  // region's barrier, tens of ns, is so counted twice.
  const std::optional<double> startup = region_startup(s, r.region, schedule.queue_count());
  r.launch_ns = add_time(p50(micro.region_launch_ns), startup ? time_from_ns(*startup) : 0);
  r.drain_ns = p50(micro.region_drain_ns);
  r.work_ns = run.makespan_ns;
  r.events = run.events;
  const TimeNs offset = add_time(r.gap_ns, r.launch_ns);
  r.critical_path.push_back(PathStep{StepKind::launch, r.region.begin, -1, -1, r.gap_ns, offset});
  for (PathStep step : run.critical_path) {
    step.start_ns += offset;
    step.end_ns += offset;
    r.critical_path.push_back(step);
  }
  const TimeNs end = add_time(offset, r.work_ns);
  r.critical_path.push_back(
      PathStep{StepKind::drain, r.region.end - 1, -1, -1, end, end + r.drain_ns});
  r.spans = std::move(run.spans);
  for (Span& span : r.spans) {
    span.start_ns += offset;
    span.end_ns += offset;
  }
  r.sm_busy_ns = std::move(run.lane_busy_ns);
  r.time_ns = add_time(end, r.drain_ns);
}

std::shared_ptr<const RegionResult> Simulator::simulate_region(std::string_view stage,
                                                               int64_t batch,
                                                               const model::Region& region,
                                                               Boundary before) {
  RegionKey key{std::string(stage), batch, region.begin, region.end, region.kind, before};
  if (auto it = regions_.find(key); it != regions_.end()) {
    ++cache_stats_.hits;
    return it->second;
  }
  StageState& s = state(stage, batch);
  if (region.begin < 0 || region.end > s.graph->op_count() || region.begin >= region.end) {
    throw Error("region " + region_text(region) + " is not within stage " + s.stage + "'s " +
                std::to_string(s.graph->op_count()) + " ops");
  }
  if ((region.begin == 0) != (before == Boundary::stage_start)) {
    throw Error("region " + region_text(region) + ": a region follows the stage start exactly " +
                "when it begins at op 0 (given: " + std::string(boundary_name(before)) + ")");
  }
  auto r = std::make_shared<RegionResult>();
  r->stage = s.stage;
  r->batch = batch;
  r->region = region;
  r->before = before;
  if (region.kind == model::RegionKind::mk) {
    r->graph_nodes = kMkRegionNodes;
  } else {
    for (int op = region.begin; op < region.end; ++op) {
      r->graph_nodes += conv_nodes(conv_kernel(s, op, region));
    }
  }
  r->launch_fixed_ns = before == Boundary::stage_start ? s.launch_fixed_ns : 0;
  r->launch_node_ns = s.launch_node_ns;
  r->trace_excess_node_ns = s.trace_excess_node_ns;
  try {
    r->gap_ns = add_time(
        gap_before(s, region, before),
        time_from_ns(static_cast<double>(r->graph_nodes) * static_cast<double>(s.launch_node_ns)));
    if (r->gap_ns > 0) {
      r->critical_path.push_back(PathStep{StepKind::gap, region.begin, -1, -1, 0, r->gap_ns});
    }
    if (region.kind == model::RegionKind::mk) {
      simulate_mk(s, *r);
    } else {
      simulate_kernels(s, *r);
    }
  } catch (const TimeOverflow& e) {
    throw Error(where(s, -1) + ", " + region_text(region) + ": " + e.what());
  }
  ++cache_stats_.misses;
  regions_.emplace(std::move(key), r);
  return r;
}

// Stage runs replayed back to back (stage_sequence): the host launches each stage's graph in
// turn, while the GPU runs the graphs already launched; a stage starts on the GPU when the one
// before it has ended (plus one kernel gap) and the host has launched it, and then takes its
// time less its launch. One run alone (an LLM's prefill, or its decode step) takes its stage's
// time. The launch here is graph_launch_ns() plus trace_excess_ns(): the profile's kernels and gaps
// are traced, and its launch is the untraced replay less their traced span, so what tracing
// added to them is missing from the launch; on its own a run adds up either way, in a sequence
// the launch hides and the excess must not stay on the GPU's side.
TimeNs Simulator::sequence_ns(const Prediction& p, const model::Scenario& scenario,
                              model::Sequence which) const {
  const TimeNs graph_gap = p50(profile_.micro.kernel_gap_ns);
  TimeNs host = 0, gpu = 0;
  bool first = true;
  for (const std::string& name : model::stage_sequence(scenario, which)) {
    const StagePrediction& stage = p.stage(name);
    const TimeNs launch = stage.graph_launch_ns() + stage.trace_excess_ns();
    host = add_time(host, launch);
    gpu = add_time(std::max(first ? 0 : add_time(gpu, graph_gap), host), stage.time_ns - launch);
    first = false;
  }
  return gpu;
}

Prediction Simulator::simulate(const model::Composition& composition, int64_t batch) {
  const std::vector<model::StageShape> shapes = stage_shapes(batch);
  model::check_composition(composition, shapes);
  const model::Scenario sc = scenario(batch);
  const int sms = profile_.device.sm_count;

  Prediction p;
  p.model = profile_.model_name;
  p.device = profile_.device.name;
  p.sm_count = sms;
  p.batch = batch;
  p.prompt_len = profile_.prompt_len;
  p.frames = profile_.frames;
  p.tp = profile_.tp;
  p.composition = composition.to_string();
  p.providers = provider_choice(batch).in_conv_regions(composition);
  p.interpolated = interpolation(batch);
  if (p.interpolated) {
    p.notes.push_back("batch " + std::to_string(batch) +
                      ": profile data interpolated linearly between measured batches " +
                      std::to_string(p.interpolated->lower) + " and " +
                      std::to_string(p.interpolated->upper));
  }
  bool has_mk = false;
  for (const model::Stage& stage : sc.stages) {
    for (const model::Region& region : composition.regions(stage.name)) {
      has_mk = has_mk || region.kind == model::RegionKind::mk;
    }
  }
  if (has_mk && !profile_.micro.dependency_check_round_ns) {
    p.notes.push_back(
        "the profile has no dependency-check micro-benchmark (micro.dependency_check_round_ns): "
        "mk regions are predicted without the time their tasks spend checking dependencies");
  }
  if (has_mk && !profile_.micro.flagged_word_hop_ns) {
    p.notes.push_back(
        "the profile has no flagged-word micro-benchmark (micro.flagged_word_hop_ns): every hop "
        "in an mk region is predicted as a counter's, none by flagged words");
  }
  bool has_tile = false;
  for (const model::Stage& stage : sc.stages) {
    for (const model::Region& region : composition.regions(stage.name)) {
      has_tile =
          has_tile || (region.kind == model::RegionKind::tile && region.end - region.begin > 1);
    }
  }
  if (has_tile && !profile_.micro.dependent_launch_ns) {
    p.notes.push_back(
        "the profile has no dependent-launch micro-benchmark (micro.dependent_launch_ns): tile "
        "regions' kernels are charged the plain kernel gap (micro.kernel_gap_ns) to launch");
  }
  if (has_mk && !region_startup_measured_) {
    p.notes.push_back(
        "the profile's task benchmarks have no region startup (tasks[].startup_ns): mk regions "
        "are charged only the trivial region's launch (micro.region_launch_ns)");
  }
  for (const model::Stage& stage : sc.stages) {
    StagePrediction sp;
    sp.stage = stage.name;
    sp.runs_to_first_output = stage.runs_to_first_output;
    sp.runs_per_step = stage.runs_per_step;
    const model::Graph& g = graph(stage.name, batch);
    for (const model::Op& op : g.ops()) sp.op_names.push_back(op.name);
    std::vector<TimeNs> busy(sms, 0);
    std::vector<OpOnPath> by_op(g.op_count());
    TimeNs t = 0;
    Boundary before = Boundary::stage_start;
    for (const model::Region& region : composition.regions(stage.name)) {
      auto r = simulate_region(stage.name, batch, region, before);
      sp.region_start_ns.push_back(t);
      for (PathStep step : r->critical_path) {
        step.start_ns += t;
        step.end_ns += t;
        sp.critical_path.push_back(step);
        const TimeNs d = step.end_ns - step.start_ns;
        if (step.kind == StepKind::kernel || step.kind == StepKind::task) {
          sp.path_work_ns += d;
          by_op[step.op].time_ns += d;
          ++by_op[step.op].steps;
        } else {
          sp.path_overhead_ns += d;
        }
      }
      try {
        for (int sm = 0; sm < sms; ++sm) busy[sm] = add_time(busy[sm], r->sm_busy_ns[sm]);
        t = add_time(t, r->time_ns);
      } catch (const TimeOverflow& e) {
        throw Error(where(state(stage.name, batch), -1) + ": " + e.what());
      }
      before = region.kind == model::RegionKind::mk     ? Boundary::after_mk
               : region.kind == model::RegionKind::tile ? Boundary::after_tile
                                                        : Boundary::after_conv;
      sp.regions.push_back(std::move(r));
    }
    sp.time_ns = t;
    for (int sm = 0; sm < sms; ++sm) {
      sp.sm_utilization.push_back(t > 0 ? static_cast<double>(busy[sm]) / static_cast<double>(t)
                                        : 0.0);
    }
    for (int op = 0; op < g.op_count(); ++op) {
      if (by_op[op].steps == 0) continue;
      by_op[op].op = op;
      by_op[op].name = g.op(op).name;
      sp.path_by_op.push_back(by_op[op]);
    }
    std::stable_sort(sp.path_by_op.begin(), sp.path_by_op.end(),
                     [](const OpOnPath& a, const OpOnPath& b) { return a.time_ns > b.time_ns; });
    // Only a measured batch has a measurement to replay against, and only with the kernels it
    // ran (not cuBLASLt's where the profile measured them beside it).
    const StageState& st = state(stage.name, batch);
    const bool graph_kernels = std::ranges::all_of(st.profile->ops, [&](const model::OpProfile& o) {
      return !o.conv || st.conv[o.index] == &*o.conv;
    });
    if (const model::StageProfile& prof = *st.profile;
        prof.graph_ns && !p.interpolated && graph_kernels) {
      sp.measured_conv_graph_ns = p50(*prof.graph_ns);
    }
    p.stages.push_back(std::move(sp));
  }
  try {
    p.ttfo_ns = sequence_ns(p, sc, model::Sequence::first_output);
    p.decode_step_ns = sequence_ns(p, sc, model::Sequence::step);
  } catch (const TimeOverflow& e) {
    throw Error("profile " + profile_.source + ": batch " + std::to_string(batch) +
                ", the stages in sequence: " + e.what());
  }
  p.output_unit = sc.output_unit;
  if (p.decode_step_ns > 0) {
    p.throughput_per_s = static_cast<double>(batch) * sc.outputs_per_step * 1e9 /
                         static_cast<double>(p.decode_step_ns);
  }
  return p;
}

}  // namespace megacut::simulator
