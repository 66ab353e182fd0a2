// The profile sweep (profiler.h says what is measured, and how): each batch's replays, traces
// and task benchmarks, then its graphs again on cuBLASLt's linears and with PDL.
#include "profiler/profiler.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/stats.h"
#include "model/text.h"
#include "model/trace_events.h"
#include "profiler/nvtx.h"

namespace megacut::profiler {
namespace {

// Each stage's ops with the provider each runs on, as launch_op decides it.
std::vector<StageOps> stage_ops(const executor::ScenarioRunner& runner,
                                const model::Scenario& scenario) {
  std::vector<StageOps> stages;
  for (int s = 0; s < runner.stage_count(); ++s) {
    const model::Graph& graph = runner.stage_graph(s);
    if (graph.stage() != scenario.stages[s].name) {
      throw Error("profile: runner stage " + std::to_string(s) + " is " + graph.stage() +
                  ", the scenario's " + scenario.stages[s].name);
    }
    StageOps ops;
    ops.stage = graph.stage();
    for (const model::Op& op : graph.ops()) {
      const std::string kind(op.kind->name());
      const bool cublas =
          model::cublaslt_can_run(kind) &&
          runner.providers().of(graph.stage(), op.index) == model::LinearProvider::cublaslt;
      ops.ops.push_back({op.name, kind, cublas ? "cublas" : "ours"});
    }
    stages.push_back(std::move(ops));
  }
  return stages;
}

// The duration of each of `runs` launches of one op (each `per_launch` kernels, in start order):
// its first kernel's start to its last kernel's end.
model::LatencyStats standalone_stats(const std::vector<KernelRecord>& kernels, size_t per_launch,
                                     int runs, const std::string& what) {
  if (per_launch == 0 || kernels.size() != per_launch * static_cast<size_t>(runs)) {
    throw Error(what + ": " + std::to_string(kernels.size()) + " kernels in " +
                std::to_string(runs) + " launches alone, expected " + std::to_string(per_launch) +
                " each");
  }
  std::vector<double> ns;
  for (size_t i = 0; i < kernels.size(); i += per_launch) {
    uint64_t end = 0;
    for (size_t k = i; k < i + per_launch; ++k) end = std::max(end, kernels[k].end_ns);
    ns.push_back(static_cast<double>(end - kernels[i].start_ns));
  }
  return model::compute_stats(ns, "ns");
}

using Progress = std::function<void(const std::string& phase, int done, int total)>;

// Every stage's graph replayed in scenario order, as in serving (a decode step follows the
// prefill that filled its cache), each timed alone; the first output's time adds each stage's
// replay as often as the first output runs it. (A TTS pipeline's runs replayed back to back, as
// `megacut run` times them, take less: the host launches each graph while the GPU runs the one
// before.) The graph-launch sweep runs a round beside each iteration, so that it meets the host
// as the replays do.
struct StageReplays {
  StageReplays(executor::ScenarioRunner& runner, const model::Scenario& scenario,
               const BatchOptions& options, Progress progress)
      : runner(runner),
        scenario(scenario),
        options(options),
        progress(std::move(progress)),
        graph_ns(runner.stage_count()),
        traced_graph_ns(runner.stage_count()) {}

  int iterations() const { return options.warmup + options.runs; }

  // Warm-up and timed iterations; traced ones tagged Tag{TagKind::replay, stage, iteration}.
  void run(bool traced) {
    std::vector<double>& ttfo_ms = traced ? ttfo_traced : ttfo_untraced;
    for (int it = 0; it < iterations(); ++it) {
      double first_output_ms = 0;
      for (int s = 0; s < runner.stage_count(); ++s) {
        double ms;
        if (traced) {
          NvtxRange range(scenario.stages[s].name + " replay");
          CuptiTracer::Scope tag(Tag{TagKind::replay, s, it});
          ms = runner.time_replay_ms(s);
        } else {
          ms = runner.time_replay_ms(s);
        }
        if (it >= options.warmup) (traced ? traced_graph_ns : graph_ns)[s].push_back(ms * 1e6);
        first_output_ms += ms * static_cast<double>(scenario.stages[s].runs_to_first_output);
      }
      if (traced) {
        sweep.trace_round(it);
      } else {
        sweep.time_round();
      }
      if (it >= options.warmup) ttfo_ms.push_back(first_output_ms);
      progress(traced ? "traced replays" : "replays (untraced)", it + 1, iterations());
    }
  }

  executor::ScenarioRunner& runner;
  const model::Scenario& scenario;
  const BatchOptions& options;
  Progress progress;
  std::vector<std::vector<double>> graph_ns, traced_graph_ns;  // by stage, timed iterations
  std::vector<double> ttfo_untraced, ttfo_traced;              // ms
  LaunchSweep sweep;
};

// Inside a trace window: each op launched eagerly (the kernels it runs), the traced replays,
// then each op's kernel alone, cold (after an L2 flush) and warm, each call tagged.
void launch_traced(StageReplays& replays, const std::vector<StageOps>& stage_ops, L2Flush& flush) {
  executor::ScenarioRunner& runner = replays.runner;
  const model::Scenario& scenario = replays.scenario;
  const std::string batch_text = "batch " + std::to_string(scenario.batch);
  for (int s = 0; s < runner.stage_count(); ++s) {
    NvtxRange stage_range(scenario.stages[s].name + " (" + batch_text + ", eager)");
    const StageOps& ops = stage_ops[s];
    for (int op = 0; op < static_cast<int>(ops.ops.size()); ++op) {
      NvtxRange op_range(ops.ops[op].name);
      CuptiTracer::Scope tag(Tag{TagKind::op, s, op});
      runner.launch_op(s, op);
    }
  }
  runner.synchronize();
  replays.run(/*traced=*/true);
  for (int s = 0; s < runner.stage_count(); ++s) {
    const int ops = static_cast<int>(stage_ops[s].ops.size());
    for (int op = 0; op < ops; ++op) {
      for (int r = 0; r < replays.options.standalone_runs; ++r) {
        {
          CuptiTracer::Scope tag(Tag{TagKind::flush, s, op});
          flush.run(runner.stream());
        }
        {
          CuptiTracer::Scope tag(Tag{TagKind::standalone_cold, s, op});
          runner.launch_op(s, op);
        }
        CuptiTracer::Scope tag(Tag{TagKind::standalone_warm, s, op});
        runner.launch_op(s, op);
      }
      replays.progress("kernels alone (" + scenario.stages[s].name + ")", op + 1, ops);
    }
  }
  runner.synchronize();
}

// Each stage's traced replays mapped to its ops (checked against its eager launches, warm-up
// replays too), with each op's kernel alone and the untraced graph time, into result.profile,
// result.stages and result.summary. Returns how many of the window's kernels it accounted for.
int64_t map_traces(const TaggedKernels& tagged, const StageReplays& replays, BatchResult& result) {
  const BatchOptions& options = replays.options;
  const std::string batch_text = "batch " + std::to_string(replays.scenario.batch);
  int64_t mapped = 0;
  for (int s = 0; s < static_cast<int>(result.ops.size()); ++s) {
    const StageOps& ops = result.ops[s];
    std::vector<std::vector<KernelRecord>> eager;
    for (int op = 0; op < static_cast<int>(ops.ops.size()); ++op) {
      eager.push_back(tagged.of(Tag{TagKind::op, s, op}));
      mapped += static_cast<int64_t>(eager.back().size());
      mapped += static_cast<int64_t>(tagged.of(Tag{TagKind::flush, s, op}).size());
    }
    std::vector<std::vector<KernelRecord>> warmup, timed;
    for (int it = 0; it < replays.iterations(); ++it) {
      const std::vector<KernelRecord>& kernels = tagged.of(Tag{TagKind::replay, s, it});
      mapped += static_cast<int64_t>(kernels.size());
      (it < options.warmup ? warmup : timed).push_back(kernels);
    }
    // Warm-up replays are checked like the rest, and left out of the statistics.
    if (!warmup.empty()) map_stage(ops, eager, std::move(warmup));
    StageTrace trace = map_stage(ops, eager, std::move(timed));
    trace.profile.graph_ns = model::compute_stats(replays.graph_ns[s], "ns");
    for (model::OpProfile& op : trace.profile.ops) {
      const size_t per_launch = eager.at(op.index).size();
      auto alone = [&](TagKind kind) {
        const std::vector<KernelRecord>& kernels = tagged.of(Tag{kind, s, op.index});
        mapped += static_cast<int64_t>(kernels.size());
        result.summary.standalone_kernels += static_cast<int64_t>(kernels.size());
        return standalone_stats(
            kernels, per_launch, options.standalone_runs,
            batch_text + " " + ops.stage + " op " + std::to_string(op.index) + " " + op.name);
      };
      op.conv->standalone_cold_ns = alone(TagKind::standalone_cold);
      op.conv->standalone_warm_ns = alone(TagKind::standalone_warm);
    }

    StageSummary summary;
    summary.stage = ops.stage;
    summary.ops = static_cast<int>(ops.ops.size());
    summary.kernels_per_replay = static_cast<int>(trace.op_of_position.size());
    summary.graph_ns = *trace.profile.graph_ns;
    summary.traced_graph_ns = model::compute_stats(replays.traced_graph_ns[s], "ns");
    summary.span_ns = trace.span_ns();
    summary.clamped_gaps = trace.clamped_gaps;
    summary.max_overlap_ns = trace.max_overlap_ns;
    for (const model::OpProfile& op : trace.profile.ops) {
      summary.kernels_p50_ns += op.conv->duration_ns.p50;
      if (op.conv->gap_to_next_ns) summary.gaps_p50_ns += op.conv->gap_to_next_ns->p50;
    }
    result.summary.stages.push_back(std::move(summary));
    result.profile.stages.push_back(trace.profile);
    result.stages.push_back(std::move(trace));
  }
  return mapped;
}

// Untraced, each op alone as a persistent region at several CTA counts (task_bench.h).
void benchmark_tasks(executor::ScenarioRunner& runner, const BatchOptions& options, L2Flush& flush,
                     const Progress& progress, BatchResult& result) {
  const auto start = std::chrono::steady_clock::now();
  TaskBenchOptions tasks = options.tasks;
  if (tasks.ctas.empty()) tasks.ctas = default_task_ctas(executor::current_device().sm_count);
  int total = 0, done = 0;
  for (const StageOps& ops : result.ops) total += static_cast<int>(ops.ops.size());
  for (int s = 0; s < runner.stage_count(); ++s) {
    for (model::OpProfile& op : result.profile.stages[s].ops) {
      OpTasks measured = benchmark_op_tasks(runner, s, op.index, tasks, flush);
      result.summary.task_regions += measured.regions;
      result.summary.task_kernels_compiled += measured.compiled;
      result.summary.task_compile_seconds += measured.compile_ms / 1e3;
      op.task_region = measured.region;
      op.tasks = std::move(measured.tasks);
      op.tiles = runner.stage_graph(s).op(op.index).tiling.count();
      const executor::RegionBody body = runner.region_body(s, op.index);
      op.flagged_words = model::FlaggedWordsSupport{body.takes_flagged_x, body.gives_flagged_y};
      progress("task benchmarks", ++done, total);
    }
  }
  result.summary.task_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BatchResult profile_batch(executor::ScenarioRunner& runner, const model::Scenario& scenario,
                          CuptiTracer& tracer, const BatchOptions& options,
                          const ProfileListener& listener) {
  if (options.runs < 1) throw Error("profile: need at least one timed run");
  if (options.warmup < 0) throw Error("profile: warm-up runs must not be negative");
  if (options.standalone_runs < 1)
    throw Error("profile: need at least one launch of each op alone");
  if (runner.stage_count() != static_cast<int>(scenario.stages.size())) {
    throw Error("profile: the runner has " + std::to_string(runner.stage_count()) +
                " stages, the scenario " + std::to_string(scenario.stages.size()));
  }
  BatchResult result;
  result.profile.batch = scenario.batch;
  result.summary.batch = scenario.batch;
  result.ops = stage_ops(runner, scenario);
  const std::string batch_text = "batch " + std::to_string(scenario.batch);
  const Progress progress = [&](const std::string& phase, int done, int total) {
    if (listener.progress) listener.progress(phase, done, total);
  };

  StageReplays replays(runner, scenario, options, progress);
  for (int s = 0; s < runner.stage_count(); ++s) runner.capture(s);
  replays.run(/*traced=*/false);
  L2Flush flush;
  TraceWindow window;
  const TaggedKernels tagged = tracer.trace(
      batch_text, [&] { launch_traced(replays, result.ops, flush); }, &window);
  result.summary.kernel_records = static_cast<int64_t>(window.kernels.size());
  result.summary.dropped_records = window.dropped_records;

  int64_t mapped = map_traces(tagged, replays, result);
  mapped += replays.sweep.traced_kernels();
  result.summary.launch_sweep_kernels = replays.sweep.traced_kernels();
  result.profile.graph_launch_by_nodes = replays.sweep.points(tagged, options.warmup);
  if (listener.note) {
    listener.note(batch_text + ": graph launch by nodes beside the replays, p50: " +
                  LaunchSweep::describe(result.profile.graph_launch_by_nodes));
  }
  if (mapped != result.summary.kernel_records) {
    throw Error(batch_text + ": " + std::to_string(result.summary.kernel_records) +
                " kernel records, of which " + std::to_string(mapped) +
                " belong to the profiler's launches");
  }
  result.summary.ttfo_untraced_ms = model::compute_stats(replays.ttfo_untraced, "ms");
  result.summary.ttfo_traced_ms = model::compute_stats(replays.ttfo_traced, "ms");
  if (options.task_benchmarks) benchmark_tasks(runner, options, flush, progress, result);
  return result;
}

namespace {

// The all-conventional graph of every stage again, as the runner now launches it (other
// providers, PDL), traced as profile_batch traces its replays: one eager launch of each op,
// options.warmup replays checked and dropped, options.runs mapped (map_stage, with `pdl`).
std::vector<StageTrace> trace_again(executor::ScenarioRunner& runner,
                                    const model::Scenario& scenario, CuptiTracer& tracer,
                                    const BatchOptions& options, const ProfileListener& listener,
                                    const std::string& how, bool pdl) {
  const std::vector<StageOps> ops = stage_ops(runner, scenario);
  const std::string where = "batch " + std::to_string(scenario.batch) + ", " + how;
  const int iterations = options.warmup + options.runs;
  for (int s = 0; s < runner.stage_count(); ++s) runner.capture(s);
  TraceWindow window;
  const TaggedKernels tagged = tracer.trace(
      where,
      [&] {
        for (int s = 0; s < runner.stage_count(); ++s) {
          NvtxRange stage_range(scenario.stages[s].name + " (" + where + ", eager)");
          for (int op = 0; op < static_cast<int>(ops[s].ops.size()); ++op) {
            NvtxRange op_range(ops[s].ops[op].name);
            CuptiTracer::Scope tag(Tag{TagKind::op, s, op});
            runner.launch_op(s, op);
          }
        }
        runner.synchronize();
        for (int it = 0; it < iterations; ++it) {
          for (int s = 0; s < runner.stage_count(); ++s) {
            NvtxRange range(scenario.stages[s].name + " replay (" + how + ")");
            CuptiTracer::Scope tag(Tag{TagKind::replay, s, it});
            runner.time_replay_ms(s);
          }
          if (listener.progress) listener.progress("traced replays, " + how, it + 1, iterations);
        }
        runner.synchronize();
      },
      &window);
  std::vector<StageTrace> traces;
  size_t mapped = 0;
  for (int s = 0; s < runner.stage_count(); ++s) {
    std::vector<std::vector<KernelRecord>> eager, warmup, timed;
    for (int op = 0; op < static_cast<int>(ops[s].ops.size()); ++op) {
      eager.push_back(tagged.of(Tag{TagKind::op, s, op}));
      mapped += eager.back().size();
    }
    for (int it = 0; it < iterations; ++it) {
      (it < options.warmup ? warmup : timed).push_back(tagged.of(Tag{TagKind::replay, s, it}));
      mapped += tagged.of(Tag{TagKind::replay, s, it}).size();
    }
    if (!warmup.empty()) map_stage(ops[s], eager, std::move(warmup), pdl);
    traces.push_back(map_stage(ops[s], eager, std::move(timed), pdl));
  }
  if (mapped != window.kernels.size()) {
    throw Error(where + ": " + std::to_string(window.kernels.size()) +
                " kernel records, of which " + std::to_string(mapped) +
                " belong to the profiler's launches");
  }
  return traces;
}

// Op `index` of a profiled stage.
model::OpProfile& profiled_op(model::StageProfile& stage, int index) {
  for (model::OpProfile& op : stage.ops) {
    if (op.index == index) return op;
  }
  throw Error("profile: stage " + stage.stage + " has no op " + std::to_string(index));
}

// The runner's providers and PDL setting while it lives, put back when it goes (however the
// trace ends).
class RunnerSettings {
 public:
  RunnerSettings(executor::ScenarioRunner& runner, model::ProviderChoice providers, bool pdl)
      : runner_(runner), providers_(runner.providers()), pdl_(runner.pdl()) {
    runner_.set_providers(std::move(providers));
    runner_.set_pdl(pdl);
  }
  ~RunnerSettings() {
    try {
      runner_.set_providers(providers_);
      runner_.set_pdl(pdl_);
    } catch (...) {
      // Already unwinding from the trace's own error, or the device is gone: that error says why.
    }
  }
  RunnerSettings(const RunnerSettings&) = delete;
  RunnerSettings& operator=(const RunnerSettings&) = delete;

 private:
  executor::ScenarioRunner& runner_;
  model::ProviderChoice providers_;
  bool pdl_;
};

void check_stages(const executor::ScenarioRunner& runner, const model::BatchProfile& profile) {
  if (profile.stages.size() != static_cast<size_t>(runner.stage_count())) {
    throw Error("profile: " + std::to_string(profile.stages.size()) +
                " stages profiled, the runner has " + std::to_string(runner.stage_count()));
  }
}

}  // namespace

int trace_cublaslt(executor::ScenarioRunner& runner, const model::Scenario& scenario,
                   CuptiTracer& tracer, const BatchOptions& options, model::BatchProfile& profile,
                   const ProfileListener& listener) {
  check_stages(runner, profile);
  std::vector<const model::Graph*> graphs;
  for (int s = 0; s < runner.stage_count(); ++s) graphs.push_back(&runner.stage_graph(s));
  const model::ProviderChoice cublaslt = model::ProviderChoice::every(graphs);
  if (cublaslt.listed() == 0) return 0;
  std::vector<StageTrace> traces;
  {
    const RunnerSettings settings(runner, cublaslt, /*pdl=*/false);
    traces = trace_again(runner, scenario, tracer, options, listener, "cuBLASLt linears", false);
  }
  int measured = 0;
  for (size_t s = 0; s < traces.size(); ++s) {
    const model::StageProfile& traced = traces[s].profile;
    for (size_t i = 0; i < traced.ops.size(); ++i) {
      const model::OpProfile& op = traced.ops[i];
      if (!op.conv || op.conv->provider != "cublas") continue;
      model::ConvKernel k = *op.conv;
      if (i > 0 && traced.ops[i - 1].conv) k.gap_before_ns = traced.ops[i - 1].conv->gap_to_next_ns;
      profiled_op(profile.stages[s], op.index).conv_cublaslt = std::move(k);
      ++measured;
    }
  }
  return measured;
}

int trace_pdl(executor::ScenarioRunner& runner, const model::Scenario& scenario,
              CuptiTracer& tracer, const BatchOptions& options, model::BatchProfile& profile,
              const ProfileListener& listener) {
  check_stages(runner, profile);
  std::vector<StageTrace> traces;
  {
    const RunnerSettings settings(runner, model::ProviderChoice{}, /*pdl=*/true);
    traces = trace_again(runner, scenario, tracer, options, listener, "PDL", true);
  }
  int measured = 0;
  for (size_t s = 0; s < traces.size(); ++s) {
    for (const model::OpProfile& op : traces[s].profile.ops) {
      if (!op.conv || !op.conv->pdl_step_ns) continue;
      model::OpProfile& target = profiled_op(profile.stages[s], op.index);
      if (!target.conv || target.conv->provider != "ours") continue;
      target.conv->pdl_step_ns = op.conv->pdl_step_ns;
      ++measured;
    }
  }
  return measured;
}

model::Profile run_profile(const ProfileOptions& options, const ProfileListener& listener) {
  auto note = [&](const std::string& text) {
    if (listener.note) listener.note(text);
  };
  if (options.batches.empty()) throw Error("--batch: give at least one batch size");
  for (size_t i = 0; i < options.batches.size(); ++i) {
    if (options.batches[i] < 1) throw Error("--batch: batch sizes must be positive");
    if (i > 0 && options.batches[i] <= options.batches[i - 1]) {
      throw Error("--batch: batch sizes must increase");
    }
  }
  if (options.out.empty()) throw Error("--out: the profile needs a file to go to");
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    throw Error(std::string("no CUDA GPU to profile on (cudaGetDeviceCount: ") +
                (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  CuptiTracer& tracer = CuptiTracer::instance();

  const model::ModelSpec spec = model::load_model(options.model);
  const executor::HostWeights weights = executor::HostWeights::random(spec, options.seed);
  model::Profile profile;
  profile.model_name = spec.name;
  profile.model_config = spec.config;
  profile.prompt_len = options.prompt_len;
  profile.source = options.out.string();
  note(tracer.describe());

  const MicroResult micro = run_micro_benchmarks(tracer, options.micro);
  profile.device = micro.device;
  profile.micro = micro.micro;
  for (const std::string& text : micro.notes) note(text);
  if (listener.micro_done) listener.micro_done(micro);
  model::write_profile(profile, options.out);

  for (const int64_t batch : options.batches) {
    try {
      const model::Scenario scenario =
          model::make_scenario(spec, batch, options.prompt_len, options.frames);
      profile.frames = scenario.frames;
      executor::RunOptions run;
      run.warmup = options.batch.warmup;
      run.runs = options.batch.runs;
      executor::ScenarioRunner runner(spec, scenario, weights, run);
      BatchResult result = profile_batch(runner, scenario, tracer, options.batch, listener);
      const int cublaslt =
          trace_cublaslt(runner, scenario, tracer, options.batch, result.profile, listener);
      const int stepped =
          trace_pdl(runner, scenario, tracer, options.batch, result.profile, listener);
      note("batch " + std::to_string(batch) + ": the all-conventional graphs traced again, " +
           std::to_string(cublaslt) + " linear ops on cuBLASLt, then our kernels with PDL (" +
           std::to_string(stepped) + " ops' steps)");
      profile.batches.push_back(result.profile);
      model::write_profile(profile, options.out);
      if (!options.trace.empty() && batch == options.batches.front()) {
        const int iteration = median_iteration(result.stages);
        // Each stage starts where its untraced graph launch would: its event-timed time less
        // the traced span of its kernels.
        std::vector<int64_t> lead_ns;
        for (const StageSummary& s : result.summary.stages) {
          lead_ns.push_back(static_cast<int64_t>(std::max(0.0, s.graph_ns.p50 - s.span_ns.p50)));
        }
        const nlohmann::json other = {
            {"generator", "megacut profile"},
            {"model", spec.name},
            {"batch", batch},
            {"prompt_len", options.prompt_len},
            {"device", profile.device.name},
            {"provider", "ours"},
            {"replay", iteration},
            {"what",
             "one measured iteration (the median of the timed ones): each stage's CUDA graph "
             "replay as CUPTI recorded its kernels, the first one launch_lead_ns after the "
             "stage's start: the stage's untraced event-timed time less its kernels' span "
             "(p50s)"}};
        model::write_text_file(
            options.trace, model::trace_text(measured_trace(result.stages, result.ops, iteration,
                                                            lead_ns, other)));
        note("trace of batch " + std::to_string(batch) + " (replay " + std::to_string(iteration) +
             ") written to " + options.trace.string());
      }
      if (listener.batch_done) listener.batch_done(result.summary);
    } catch (const std::exception& e) {
      const std::string kept =
          profile.batches.empty()
              ? options.out.string() + " keeps the device and micro-benchmarks, no batch"
              : options.out.string() + " keeps batches " + model::comma_list(profile.batch_sizes());
      throw Error("batch " + std::to_string(batch) + ": " + e.what() + "\n" + kept);
    }
  }

  const model::Profile written = model::read_profile(options.out);
  if (!written.same_content(profile)) {
    throw Error(options.out.string() + ": the profile read back differs from the one measured");
  }
  return written;
}

}  // namespace megacut::profiler
