// megacut profile: measures what the simulator may use (profile.json, "megacut.profile/1") for a
// model on this GPU: the all-conventional stage graphs traced with CUPTI at each batch size, each
// op alone (its kernel, and its tasks in persistent regions), and the micro-benchmarks of
// boundaries and counters. A progress line shows where the sweep is when stdout is a terminal.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/format.h"
#include "app/terminal.h"
#include "model/batch_list.h"
#include "model/error.h"
#include "model/text.h"
#include "profiler/profiler.h"

namespace megacut::app {
namespace {

struct ProfileCommandOptions {
  std::string model;
  std::string batches;
  int64_t prompt_len = model::kDefaultPromptLen;
  int64_t frames = 0;
  std::string out;
  std::string trace;
  int runs = 100;
  int warmup = 10;
  int micro_launches = 50;
  uint64_t seed = 0;
  int standalone_runs = 5;
  std::vector<int> task_ctas;
  bool no_task_benchmarks = false;
};

void print_micro(Terminal& t, const profiler::MicroResult& m) {
  const model::DeviceProfile& d = m.device;
  t.line(printf_string("device: %s, %d SMs, L2 %s, %lld registers per SM, copy %.1f GB/s",
                       d.name.c_str(), d.sm_count, format_bytes(double(d.l2_bytes)).c_str(),
                       static_cast<long long>(d.registers_per_sm), d.copy_bandwidth_gb_per_s));
  t.line("micro-benchmarks (ns)                      p50       p95      mean     stdev  samples");
  const std::pair<const char*, const model::LatencyStats*> rows[] = {
      {"graph launch (events - kernel span)", &m.micro.graph_launch_ns},
      {"kernel gap in a CUDA graph", &m.micro.kernel_gap_ns},
      {"kernel gap with PDL (added)", &m.micro.kernel_gap_pdl_ns},
      {"region launch (start -> 1st task)", &m.micro.region_launch_ns},
      {"region drain (last task -> end)", &m.micro.region_drain_ns},
      {"counter signal -> wait (other SM)", &m.micro.counter_signal_to_wait_ns}};
  for (const auto& [label, s] : rows) {
    t.line(printf_string("  %-38s %8.0f  %8.0f  %8.0f  %8.0f  %7lld", label, s->p50, s->p95,
                         s->mean, s->stdev, static_cast<long long>(s->count)));
  }
  if (const auto& s = m.micro.flagged_word_hop_ns) {
    t.line(printf_string("  %-38s %8.0f  %8.0f  %8.0f  %8.0f  %7lld",
                         "flagged word store -> poll (other SM)", s->p50, s->p95, s->mean, s->stdev,
                         static_cast<long long>(s->count)));
  }
  if (const auto& s = m.micro.dependency_check_round_ns) {
    t.line(printf_string("  %-38s %8.0f  %8.0f  %8.0f  %8.0f  %7lld",
                         "dependency check, one round per block", s->p50, s->p95, s->mean, s->stdev,
                         static_cast<long long>(s->count)));
  }
  for (const model::GraphLaunchPoint& g : m.micro.graph_launch_by_nodes) {
    const model::LatencyStats& s = g.launch_ns;
    t.line(printf_string("  %-38s %8.0f  %8.0f  %8.0f  %8.0f  %7lld",
                         ("graph launch, " + std::to_string(g.nodes) + " nodes").c_str(), s.p50,
                         s.p95, s.mean, s.stdev, static_cast<long long>(s.count)));
  }
}

void print_batch(Terminal& t, const profiler::BatchSummary& b) {
  const double off = b.ttfo_untraced_ms.p50, on = b.ttfo_traced_ms.p50;
  const double added = off > 0 ? 100.0 * (on - off) / off : 0;
  t.line(printf_string(
      "batch %lld: TTFO (its stage runs, each replayed alone) p50 %.4f ms untraced, %.4f ms "
      "traced (%+.1f%%); %lld kernel records, "
      "%llu dropped",
      static_cast<long long>(b.batch), off, on, added, static_cast<long long>(b.kernel_records),
      static_cast<unsigned long long>(b.dropped_records)));
  for (const profiler::StageSummary& s : b.stages) {
    t.line(printf_string(
        "  %-8s %4d ops, %4d kernels/replay; graph p50 %9.1f us untraced (CV %4.1f%%), %9.1f "
        "traced; kernel span %9.1f us = kernels %9.1f + gaps %7.1f",
        s.stage.c_str(), s.ops, s.kernels_per_replay, s.graph_ns.p50 / 1e3,
        100 * s.graph_ns.coefficient_of_variation(), s.traced_graph_ns.p50 / 1e3,
        s.span_ns.p50 / 1e3, s.kernels_p50_ns / 1e3, s.gaps_p50_ns / 1e3));
    if (s.clamped_gaps > 0) {
      t.line(printf_string(
          "           %d gaps of up to -%llu ns (CUPTI timestamp jitter) counted as 0",
          s.clamped_gaps, static_cast<unsigned long long>(s.max_overlap_ns)));
    }
  }
  if (added > 3.0) {
    t.line(printf_string("  note: tracing added %.1f%% to TTFO p50 (goal: 3%% or less)", added));
  }
  if (b.task_regions > 0) {
    t.line(printf_string(
        "  task benchmarks: %d single-op regions in %.1f s (%d kernels compiled, %.1f s of NVRTC)",
        b.task_regions, b.task_seconds, b.task_kernels_compiled, b.task_compile_seconds));
  }
}

void run(const ProfileCommandOptions& o) {
  profiler::ProfileOptions options;
  options.model = o.model;
  options.batches = model::parse_batch_list(o.batches);
  options.prompt_len = o.prompt_len;
  options.frames = o.frames;
  if (o.runs < 1) throw Error("--runs: must be at least 1");
  if (o.warmup < 0) throw Error("--warmup: must not be negative");
  options.batch.runs = o.runs;
  options.batch.warmup = o.warmup;
  options.micro.launches = o.micro_launches;
  if (o.standalone_runs < 1) throw Error("--standalone-runs: must be at least 1");
  options.batch.standalone_runs = o.standalone_runs;
  options.batch.task_benchmarks = !o.no_task_benchmarks;
  for (size_t i = 0; i < o.task_ctas.size(); ++i) {
    if (o.task_ctas[i] < 1 || (i > 0 && o.task_ctas[i] <= o.task_ctas[i - 1])) {
      throw Error("--task-ctas: CTA counts must be positive and increase");
    }
  }
  options.batch.tasks.ctas = o.task_ctas;
  options.seed = o.seed;
  options.out = o.out;
  options.trace = o.trace;

  Terminal terminal;
  size_t batches_done = 0;
  profiler::ProfileListener listener;
  listener.note = [&](const std::string& text) { terminal.line(text); };
  listener.micro_done = [&](const profiler::MicroResult& m) { print_micro(terminal, m); };
  listener.progress = [&](const std::string& phase, int done, int total) {
    terminal.progress(
        printf_string("batch %lld (%zu of %zu): %s %d/%d",
                      static_cast<long long>(
                          options.batches.at(std::min(batches_done, options.batches.size() - 1))),
                      batches_done + 1, options.batches.size(), phase.c_str(), done, total));
  };
  listener.batch_done = [&](const profiler::BatchSummary& b) {
    print_batch(terminal, b);
    ++batches_done;
  };
  terminal.line("megacut profile: " + o.model + ", prompt " + std::to_string(o.prompt_len) +
                " tokens; each stage one CUDA graph, " + std::to_string(o.warmup) +
                " warm-up and " + std::to_string(o.runs) +
                " timed replays untraced (CUDA events), then traced (CUPTI); each op's kernel " +
                std::to_string(o.standalone_runs) + " times alone, cold and warm; " +
                (o.no_task_benchmarks ? std::string("no task benchmarks")
                                      : "each op's tasks alone in persistent regions of " +
                                            (o.task_ctas.empty() ? std::string("1, sm/4, sm/2, sm")
                                                                 : model::comma_list(o.task_ctas)) +
                                            " CTAs") +
                "; then the replays again, traced, with the linear ops on cuBLASLt");
  const model::Profile profile = profiler::run_profile(options, listener);
  terminal.line("profile written to " + o.out + " (" + std::string(model::kProfileSchema) +
                ", batches " + std::to_string(profile.batches.size()) +
                "); read back with model::read_profile and checked");
}

}  // namespace

void add_profile_command(CLI::App& root) {
  auto o = std::make_shared<ProfileCommandOptions>();
  CLI::App* cmd = root.add_subcommand(
      "profile",
      "Trace a model's conventional graphs, benchmark each op alone, run the micro-benchmarks "
      "(profile.json)");
  cmd->add_option("--model,-m", o->model, "Bundled model name, config.json, or checkpoint dir")
      ->required();
  cmd->add_option("--batch,-b", o->batches, "Batch sizes, e.g. 1,2,4,8,16,32")->required();
  cmd->add_option("--prompt-len,-p", o->prompt_len, "Prompt length in tokens")
      ->capture_default_str();
  add_frames_option(cmd, o->frames);
  cmd->add_option("--out,-o", o->out, "Write the profile (megacut.profile/1) here")->required();
  cmd->add_option("--trace", o->trace,
                  "Write the smallest batch's measured iteration as a Chrome trace (Perfetto)");
  cmd->add_option("--runs", o->runs, "Timed replays of each stage")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up replays of each stage")->capture_default_str();
  cmd->add_option("--micro-launches", o->micro_launches, "Traced launches of each micro-benchmark")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the random weights")->capture_default_str();
  cmd->add_option("--standalone-runs", o->standalone_runs,
                  "Launches of each op's kernel alone, cold (after an L2 flush) and warm")
      ->capture_default_str();
  cmd->add_option("--task-ctas", o->task_ctas,
                  "CTA counts of the task benchmarks (default: 1, a quarter, half, all SMs)")
      ->delimiter(',');
  cmd->add_flag("--no-task-benchmarks", o->no_task_benchmarks,
                "Leave out the task benchmarks (the simulator then predicts conv regions only)");
  cmd->callback([o] { run(*o); });
}

}  // namespace megacut::app
