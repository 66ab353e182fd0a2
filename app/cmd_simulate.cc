// megacut simulate: a composition's predicted TTFO and decode step from a profile, with the
// per-stage and per-region breakdown, the critical path and per-SM utilization.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/composition_arg.h"
#include "app/format.h"
#include "model/batch_list.h"
#include "model/composition.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "model/trace_events.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"

namespace megacut::app {
namespace {

using simulator::TimeNs;

struct SimulateOptions {
  std::string profile;
  std::string batch = "1";
  std::string composition = "conv";
  std::string json_path;
  std::string trace_path;
  bool allow_interpolate = false;
  bool pdl = false;
  std::string provider;  // empty: a plan.json's choice for the batch, else ours
  int64_t tp = 0;        // 0: the profile's
};

void print_stage(const simulator::StagePrediction& s, const simulator::Prediction& p,
                 std::optional<TimeNs> replay_ns) {
  std::printf("\nstage %s: %s", s.stage.c_str(), format_ns(s.time_ns).c_str());
  if (s.measured_conv_graph_ns && replay_ns) {
    const double error = 100.0 * static_cast<double>(*replay_ns - *s.measured_conv_graph_ns) /
                         static_cast<double>(*s.measured_conv_graph_ns);
    std::printf("   (replay check: all-conv simulated %s, measured %s, %+.1f%%)",
                format_ns(*replay_ns).c_str(), format_ns(*s.measured_conv_graph_ns).c_str(), error);
  }
  std::printf("\n  %-14s %-12s %10s %10s %10s %10s %10s %7s %7s %7s\n", "region", "before", "time",
              "gap", "launch", "work", "drain", "kernels", "tasks", "SM use");
  for (const auto& r : s.regions) {
    TimeNs busy = 0;
    for (TimeNs b : r->sm_busy_ns) busy += b;
    const std::string name = std::string(model::region_kind_name(r->region.kind)) + "[" +
                             std::to_string(r->region.begin) + ":" + std::to_string(r->region.end) +
                             "]";
    std::printf("  %-14s %-12s %s %s %s %s %s %7lld %7lld %6.1f%%\n", name.c_str(),
                std::string(simulator::boundary_name(r->before)).c_str(),
                right_align(format_ns(r->time_ns), 10).c_str(),
                right_align(format_ns(r->gap_ns), 10).c_str(),
                right_align(format_ns(r->launch_ns), 10).c_str(),
                right_align(format_ns(r->work_ns), 10).c_str(),
                right_align(format_ns(r->drain_ns), 10).c_str(), static_cast<long long>(r->kernels),
                static_cast<long long>(r->tasks),
                100.0 * static_cast<double>(busy) /
                    (static_cast<double>(std::max<TimeNs>(1, r->time_ns)) * p.sm_count));
    if (r->config && !r->register_limited_ops.empty()) {
      std::printf("  %-14s predicted %d threads, %d registers: %zu op(s) register-limited\n", "",
                  r->config->threads, r->config->registers, r->register_limited_ops.size());
    }
  }
  std::printf("  critical path: %s in kernels and tasks, %s in gaps, launches, drains and waits\n",
              format_ns(s.path_work_ns).c_str(), format_ns(s.path_overhead_ns).c_str());
  for (size_t i = 0; i < std::min<size_t>(5, s.path_by_op.size()); ++i) {
    const auto& o = s.path_by_op[i];
    std::printf("    %4d  %-28s %s  %5.1f%%  (%lld %s)\n", o.op, o.name.c_str(),
                right_align(format_ns(o.time_ns), 10).c_str(),
                100.0 * static_cast<double>(o.time_ns) / static_cast<double>(s.time_ns),
                static_cast<long long>(o.steps),
                o.steps == 1 ? "kernel or task" : "kernels or tasks");
  }
  const auto [lo, hi] = std::minmax_element(s.sm_utilization.begin(), s.sm_utilization.end());
  double mean = 0;
  for (double u : s.sm_utilization) mean += u;
  mean /= static_cast<double>(std::max<size_t>(1, s.sm_utilization.size()));
  std::printf("  SM utilization: mean %.1f%%, min %.1f%% (SM %td), max %.1f%% (SM %td)\n",
              100 * mean, 100 * *lo, lo - s.sm_utilization.begin(), 100 * *hi,
              hi - s.sm_utilization.begin());
}

void run(const SimulateOptions& opt) {
  const int64_t batch = model::parse_batch(opt.batch);
  simulator::SimOptions options;
  options.allow_interpolate = opt.allow_interpolate;
  options.pdl = opt.pdl;
  options.record_spans = !opt.trace_path.empty();
  if (!opt.provider.empty())
    options.linear_provider = model::parse_policy(opt.provider, "--provider");
  const model::Profile profile = model::read_profile(opt.profile);
  if (opt.tp != 0) model::check_tp(profile, opt.tp);
  auto sim = std::make_unique<simulator::Simulator>(profile, options);
  const auto shapes = sim->stage_shapes(batch);
  const planner::PlannedRun planned = read_composition(opt.composition, batch, profile.tp, shapes);
  // A plan.json's launch and linear providers for this batch, unless the options say otherwise.
  const bool planned_pdl = planned.pdl && !options.pdl;
  const bool planned_providers = opt.provider.empty() && !planned.providers.all_ours();
  if (planned_pdl || planned_providers) {
    options.pdl = options.pdl || planned.pdl;
    if (planned_providers) options.provider_choice = planned.providers;
    sim = std::make_unique<simulator::Simulator>(profile, options);
  }
  const model::Composition& composition = planned.composition;
  const simulator::Prediction p = sim->simulate(composition, batch);
  const simulator::Prediction replay =
      sim->simulate(model::uniform_composition(shapes, model::RegionKind::conv), batch);

  std::printf("%s on %s (%d SMs) · batch %lld · prompt %lld\n", p.model.c_str(), p.device.c_str(),
              p.sm_count, static_cast<long long>(p.batch), static_cast<long long>(p.prompt_len));
  if (profile.tp > 1) {
    std::printf("tensor parallel over %lld GPUs: one rank's graphs, all ranks alike\n",
                static_cast<long long>(profile.tp));
  }
  std::printf("composition: %s\n", p.composition.c_str());
  if (options.pdl) {
    std::printf("launch: with Programmatic Dependent Launch%s\n",
                opt.pdl ? "" : " (the plan's choice for this batch)");
  }
  std::printf("linear providers in conv regions: %s%s\n", p.providers.describe().c_str(),
              planned_providers ? " (as --composition gives them)" : "");
  for (const std::string& note : p.notes) std::printf("note: %s\n", note.c_str());
  if (p.frames > 0) {
    std::printf("\npredicted TTFA  %s  (time to first audio: %lld frames)\n",
                format_ns(p.ttfo_ns).c_str(), static_cast<long long>(p.frames));
    std::printf("streaming step  %s  (the next %lld frames)\n", format_ns(p.decode_step_ns).c_str(),
                static_cast<long long>(p.frames));
  } else {
    std::printf("\npredicted TTFO  %s\n", format_ns(p.ttfo_ns).c_str());
    std::printf("decode step     %s\n", format_ns(p.decode_step_ns).c_str());
  }
  std::printf("throughput      %s %s/s\n", format_rate(p.throughput_per_s).c_str(),
              p.output_unit.c_str());
  for (size_t i = 0; i < p.stages.size(); ++i) {
    print_stage(p.stages[i], p, replay.stages[i].time_ns);
  }
  if (!opt.json_path.empty()) {
    model::write_text_file(opt.json_path, simulator::prediction_to_json(p).dump(1) + "\n");
  }
  if (!opt.trace_path.empty()) {
    model::write_text_file(opt.trace_path, model::trace_text(simulator::chrome_trace(p, *sim)));
  }
}

}  // namespace

void add_simulate_command(CLI::App& root) {
  auto opt = std::make_shared<SimulateOptions>();
  CLI::App* cmd = root.add_subcommand(
      "simulate", "Predict a composition's TTFO and decode step from a profile");
  cmd->add_option("--profile", opt->profile, "profile.json (megacut.profile/1)")->required();
  cmd->add_option("--batch,-b", opt->batch, "Batch size")->type_name("INT")->capture_default_str();
  cmd->add_option("--composition,-c", opt->composition,
                  "Composition text (e.g. 'prefill: conv; decode: mk[0:40] conv[40:]'), a "
                  "composition JSON file, or plan.json (the batch's settled composition, with "
                  "PDL where it launches with it)")
      ->capture_default_str();
  cmd->add_option("--tp", opt->tp,
                  "Tensor-parallel degree the profile must hold (default: the profile's)");
  cmd->add_option("--json", opt->json_path, "Write the prediction (megacut.prediction/2) here");
  cmd->add_option("--trace", opt->trace_path, "Write a Chrome trace of the simulated run here");
  cmd->add_flag("--allow-interpolate", opt->allow_interpolate,
                "Interpolate batch sizes between measured ones (linear in batch)");
  cmd->add_flag("--pdl", opt->pdl,
                "Our kernels launch with Programmatic Dependent Launch (as megacut run --pdl)");
  cmd->add_option("--provider", opt->provider,
                  "Linear ops of conv regions run on: ours, cublaslt, or fastest (per op, the "
                  "kernel the profile measured faster); default: a plan.json's choice for the "
                  "batch, else ours");
  cmd->callback([opt] { run(*opt); });
}

}  // namespace megacut::app
