#include "tests/support/synthetic_profile.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "model/decoder.h"
#include "model/linear_provider.h"
#include "model/op.h"
#include "model/schedule.h"

namespace megacut::testing {
namespace {

using model::constant_stats;

// Standalone configurations by kind: GEMMs get wide blocks and shared memory, attention many
// registers, so regions that mix them exercise the register rule.
model::RegionConfig config_for(std::string_view kind) {
  if (kind == "linear" || kind == "lm-head") return {512, 96, 48 * 1024};
  if (kind == "attention" || kind == "qkv-attention") return {128, 168, 16 * 1024};
  return {128, 40, 0};
}

}  // namespace

model::Profile synthetic_profile(const std::string& name, const std::vector<int64_t>& batches,
                                 int64_t prompt_len, const SyntheticDevice& d) {
  const model::ModelSpec spec = model::load_model(name);
  model::Profile p;
  p.model_name = spec.name;
  p.model_config = spec.config;
  p.prompt_len = prompt_len;
  p.source = "synthetic " + name;
  p.tp = d.tp;
  p.device.name = d.name;
  p.device.sm_count = d.sm_count;
  p.device.l2_bytes = 8 << 20;
  p.device.registers_per_sm = d.registers_per_sm;
  p.device.copy_bandwidth_gb_per_s = d.bytes_per_ns;
  if (d.sm_limits) p.device.sm_limits = model::SmLimits{2048, 32, 233472, 1024};
  auto c = [](int64_t ns) { return constant_stats(static_cast<double>(ns)); };
  p.micro.graph_launch_ns = c(d.graph_launch_ns);
  p.micro.kernel_gap_ns = c(d.kernel_gap_ns);
  p.micro.kernel_gap_pdl_ns = c(d.kernel_gap_pdl_ns);
  p.micro.region_launch_ns = c(d.region_launch_ns);
  p.micro.region_drain_ns = c(d.region_drain_ns);
  p.micro.counter_signal_to_wait_ns = c(d.signal_latency_ns);
  if (d.dependency_check_round_ns > 0) {
    p.micro.dependency_check_round_ns = c(d.dependency_check_round_ns);
  }
  if (d.dependent_launch_ns > 0) p.micro.dependent_launch_ns = c(d.dependent_launch_ns);
  if (d.flagged_word_hop_ns > 0) p.micro.flagged_word_hop_ns = c(d.flagged_word_hop_ns);
  if (d.tp > 1 && d.collective_benchmarks) {
    for (const char* kind : {"all-reduce", "all-gather"}) {
      model::CollectiveBenchmark b{kind, {}};
      for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 4) {
        const double link_bytes = static_cast<double>(model::ring_link_bytes(kind, bytes, d.tp));
        b.points.push_back({bytes, constant_stats(static_cast<double>(d.link_latency_ns) +
                                                  link_bytes / d.link_bytes_per_ns)});
      }
      p.micro.collectives.push_back(std::move(b));
    }
  }

  std::set<int> cta_counts{1, std::max(1, d.sm_count / 4), std::max(1, d.sm_count / 2), d.sm_count};
  for (int64_t batch : batches) {
    const model::Scenario sc = model::make_scenario(spec, batch, prompt_len, 0, d.tp);
    p.frames = sc.frames;
    model::BatchProfile bp;
    bp.batch = batch;
    for (const model::Stage& stage : sc.stages) {
      const model::Graph g = model::build_graph(spec, sc, stage.name);
      model::StageProfile sp;
      sp.stage = stage.name;
      double graph_ns = static_cast<double>(d.graph_launch_ns);
      for (const model::Op& op : g.ops()) {
        const model::TileCost cost = g.op_cost(op.index);
        const int64_t tiles = op.tiling.count();
        model::OpProfile o;
        o.index = op.index;
        o.name = op.name;
        o.kind = std::string(op.kind->name());

        const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
        const double waves = std::ceil(static_cast<double>(tiles) / d.sm_count);
        const double per_tile_flops = static_cast<double>(cost.flops) / static_cast<double>(tiles);
        const bool collective = cost.link_bytes > 0;
        const double link_ns = collective
                                   ? static_cast<double>(d.link_latency_ns) +
                                         static_cast<double>(cost.link_bytes) / d.link_bytes_per_ns
                                   : 0.0;
        const double kernel_ns =
            static_cast<double>(d.kernel_overhead_ns) + link_ns +
            std::max(bytes / d.bytes_per_ns, waves * per_tile_flops / d.flops_per_ns_per_sm);
        model::ConvKernel k;
        k.kernel = "megacut::" + o.kind + "_kernel";
        k.duration_ns = constant_stats(std::round(kernel_ns));
        if (op.index + 1 < g.op_count()) k.gap_to_next_ns = c(d.kernel_gap_ns);
        k.launch.grid = {std::min<int64_t>(tiles, 65535), 1, 1};
        k.launch.block = {config_for(o.kind).threads, 1, 1};
        k.launch.registers = config_for(o.kind).registers;
        k.launch.smem_bytes = config_for(o.kind).smem_bytes;
        graph_ns += std::round(kernel_ns) + (op.index + 1 < g.op_count() ? d.kernel_gap_ns : 0);
        o.conv = k;
        if (d.cublaslt_ratio > 0 && model::cublaslt_can_run(o.kind)) {
          model::ConvKernel lt = k;
          lt.kernel = "sm90_xmma_gemm_bf16bf16_bf16f32";
          lt.provider = "cublas";
          lt.duration_ns = constant_stats(std::round(kernel_ns * d.cublaslt_ratio));
          o.conv_cublaslt = lt;
        }

        const double solo =
            static_cast<double>(d.task_overhead_ns) + per_tile_flops / d.flops_per_ns_per_sm;
        const double shared = bytes / static_cast<double>(tiles) / d.bytes_per_ns;
        for (int ctas : cta_counts) {
          if (collective) break;
          const double x = static_cast<double>(std::min<int64_t>(ctas, tiles));
          model::TaskBenchmark t{ctas, constant_stats(solo + shared * x), {}};
          if (d.region_startup_ns > 0) {
            t.startup_ns = constant_stats(static_cast<double>(d.region_startup_ns));
          }
          o.tasks.push_back(std::move(t));
        }
        if (!collective) o.task_region = config_for(o.kind);
        o.tiles = tiles;
        if (d.flagged_word_hop_ns > 0) {
          o.flagged_words = model::FlaggedWordsSupport{d.flagged_words, d.flagged_words};
        }
        sp.ops.push_back(std::move(o));
      }
      sp.graph_ns = constant_stats(graph_ns);
      bp.stages.push_back(std::move(sp));
    }
    p.batches.push_back(std::move(bp));
  }
  return p;
}

}  // namespace megacut::testing
