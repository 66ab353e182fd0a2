// megacut run: a scenario on the GPU, each stage captured in a CUDA graph and replayed, with a
// trtexec-like summary of time to first output, decode step and throughput.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "app/commands.h"
#include "app/composition_arg.h"
#include "app/format.h"
#include "executor/runner.h"
#include "model/batch_list.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/output_file.h"
#include "planner/plan.h"
#include "profiler/micro.h"
#include "profiler/task_bench.h"

namespace megacut::app {
namespace {

struct RunCommandOptions {
  std::string model;
  std::string batch = "1";
  int64_t prompt_len = model::kDefaultPromptLen;
  int64_t frames = 0;
  std::string composition = "conv";
  int runs = 50;
  int warmup = 5;
  std::string provider;  // empty: a plan.json's choice for the batch, else ours
  bool pdl = false;
  std::string weights_dir;
  uint64_t seed = 0;
  std::string json_path;
  std::string save_weights_dir;
  std::string dump_path;
  int dump_steps = 8;
  std::string task_timing_path;
  bool counter_hops = false;
};

void print_stats(const char* label, const model::LatencyStats& s) {
  std::printf(
      "%-12s mean %.4f ms, p50 %.4f, p90 %.4f, p95 %.4f, p99 %.4f, min %.4f, max %.4f, "
      "stdev %.4f (CV %.1f%%)\n",
      label, s.mean, s.p50, s.p90, s.p95, s.p99, s.min, s.max, s.stdev,
      100 * s.coefficient_of_variation());
  if (s.high_variation()) {
    std::printf(
        "warning: %s varies by %.1f%% of its mean across runs; the GPU may be shared or "
        "throttling\n",
        label, 100 * s.coefficient_of_variation());
  }
}

void dump_outputs(const std::string& path, const executor::ScenarioRunner& runner,
                  const model::Scenario& scenario, int64_t vocab, int steps) {
  using executor::safetensors::Dtype;
  using executor::safetensors::TensorData;
  const auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  const int64_t b = scenario.batch;
  const std::vector<TensorData> tensors = {
      {"prompt_tokens", Dtype::I32, {b, scenario.prompt_len}, bytes(runner.prompt_tokens())},
      {"prefill_logits", Dtype::F32, {b, vocab}, bytes(runner.prefill_logits())},
      {"decode_logits", Dtype::F32, {steps, b, vocab}, bytes(runner.decode_logits())},
      {"decode_tokens", Dtype::I32, {steps, b}, bytes(runner.decode_tokens())}};
  executor::safetensors::write_file(path, tensors);
}

void print_region_configs(const executor::ScenarioRunner& runner) {
  for (int s = 0; s < runner.stage_count(); ++s) {
    for (const executor::MegakernelRegion* region : runner.mk_regions(s)) {
      const executor::RegionConfig& c = region->config();
      std::printf(
          "region %s mk[%d:%d]: %d tasks on %d CTAs x %d threads, %d registers, %d B "
          "local (spills), %d B shared, %d blocks/SM possible, %d bodies, weight ring of %d "
          "slots, %d inputs handed over as flagged words%s\n",
          runner.stage_graph(s).stage().c_str(), c.op_begin, c.op_end, c.tasks, c.grid,
          c.block_threads, c.registers, c.local_bytes, c.dynamic_smem_bytes + c.static_smem_bytes,
          c.blocks_per_sm, c.bodies, c.ring_slots, c.flagged_inputs,
          c.cache_hit ? ", cached kernel" : "");
    }
  }
}

// --task-timing: every task of the last launch of each mk region (the last timed run) to
// `path`, and where each op's tasks ran printed per region.
void write_task_timing(const std::string& path, const executor::ScenarioRunner& runner,
                       const executor::Measurement& m) {
  const std::vector<profiler::RegionTaskTiming> timings = profiler::read_task_timings(runner);
  for (const profiler::RegionTaskTiming& timing : timings) {
    const model::Graph& graph = runner.stage_graph(timing.stage);
    const executor::RegionConfig& c = timing.region->config();
    std::printf("task timing, region %s mk[%d:%d] on %d CTAs, from its first CTA's start:\n",
                graph.stage().c_str(), c.op_begin, c.op_end, c.grid);
    std::printf("  %4s %-28s %6s %12s %12s %12s %12s %12s %8s\n", "op", "name", "tasks",
                "first start", "last end", "mean task", "mean wait", "mean signal", "GB/s");
    double before_end_ns = 0;  // the latest last end of the ops before
    for (const profiler::OpTimeline& t : timing.ops) {
      const std::string signal =
          t.signaled > 0 ? format_ns(std::llround(t.signal_ns / t.signaled)) : "-";
      // The op's bytes (TileCost: its weights, mostly, in a decode step) over its step of the
      // region, from the ops before's last end (the region's first op: its first start) to its
      // own: its hop included; bytes its weight stream fetched while they ran count all the same.
      const model::TileCost cost = graph.op_cost(t.op);
      const double from_ns = &t == &timing.ops.front() ? t.first_start_ns : before_end_ns;
      const double step_ns = t.last_end_ns - from_ns;
      const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
      const std::string rate =
          step_ns > 0 ? format_count(static_cast<int64_t>(std::llround(bytes / step_ns))) : "-";
      before_end_ns = std::max(before_end_ns, t.last_end_ns);
      std::printf(
          "  %4d %-28s %6d %12s %12s %12s %12s %12s %8s\n", t.op, graph.op(t.op).name.c_str(),
          t.tasks, format_ns(std::llround(t.first_start_ns)).c_str(),
          format_ns(std::llround(t.last_end_ns)).c_str(),
          format_ns(std::llround(t.busy_ns / t.tasks)).c_str(),
          format_ns(std::llround(t.wait_ns / t.tasks)).c_str(), signal.c_str(), rate.c_str());
    }
  }
  model::write_text_file(path, profiler::task_timing_to_json(runner, timings, m).dump(1) + "\n");
  std::printf("task timing records of %zu mk regions written to %s%s\n", timings.size(),
              path.c_str(), timings.empty() ? " (the composition has none)" : "");
}

void run(const RunCommandOptions& o) {
  const int64_t batch = model::parse_batch(o.batch);
  if (!o.provider.empty() && o.provider != "ours" && o.provider != "cublaslt") {
    throw Error("--provider: '" + o.provider +
                "' is not a provider to run (ours, cublaslt; a plan.json carries its choice per "
                "op)");
  }
  if (o.runs < 1) throw Error("--runs: must be at least 1");
  if (o.warmup < 0) throw Error("--warmup: must not be negative");

  executor::LoadedCheckpoint checkpoint;
  if (!o.weights_dir.empty()) {
    checkpoint = executor::load_checkpoint(o.weights_dir);
  } else {
    checkpoint.model = model::load_model(o.model);
    checkpoint.weights = executor::HostWeights::random(checkpoint.model, o.seed);
  }
  const model::ModelSpec& spec = checkpoint.model;
  const model::Scenario scenario = model::make_scenario(spec, batch, o.prompt_len, o.frames);
  std::vector<model::StageShape> shapes;
  for (const model::Stage& s : scenario.stages) {
    shapes.push_back({s.name, model::build_graph(spec, scenario, s.name).op_count()});
  }
  const planner::PlannedRun planned = read_composition(o.composition, batch, scenario.tp, shapes);
  if (planned.pdl && !o.pdl) {
    std::printf("the plan launches this batch with Programmatic Dependent Launch (as --pdl)\n");
  }
  // Of the plan's choice, the ops in this composition's conv regions (mk regions run ours).
  model::ProviderChoice providers = planned.providers.in_conv_regions(planned.composition);
  if (!o.provider.empty()) {
    providers = model::ProviderChoice::uniform(
        o.provider == "cublaslt" ? model::LinearProvider::cublaslt : model::LinearProvider::ours);
  } else if (!providers.all_ours()) {
    std::printf("the plan runs these linear ops of conv regions on cuBLASLt: %s\n",
                providers.describe().c_str());
  }
  if (!o.save_weights_dir.empty()) {
    executor::save_checkpoint(o.save_weights_dir, spec, checkpoint.weights);
    std::printf("weights saved to %s\n", o.save_weights_dir.c_str());
  }

  executor::RunOptions options;
  options.runs = o.runs;
  options.warmup = o.warmup;
  options.providers = providers;
  options.pdl = o.pdl || planned.pdl;
  options.composition = planned.composition;
  options.decode_steps = o.dump_path.empty() ? 1 : o.dump_steps;
  options.task_timing = !o.task_timing_path.empty();
  options.counter_hops = o.counter_hops;
  executor::ScenarioRunner runner(spec, scenario, checkpoint.weights, options);

  if (!o.dump_path.empty()) {
    runner.generate(o.dump_steps);
    dump_outputs(o.dump_path, runner, scenario, spec.decoder.vocab_size, o.dump_steps);
    std::printf("outputs of a %d-step greedy generation written to %s\n", o.dump_steps,
                o.dump_path.c_str());
  }

  executor::Measurement m = runner.measure();
  m.composition = planned.composition.to_string();
  m.copy_bytes_per_s = profiler::measure_copy_bandwidth();
  std::printf("megacut run: %s, batch %lld, prompt %lld tokens, composition %s\n",
              spec.name.c_str(), static_cast<long long>(batch),
              static_cast<long long>(o.prompt_len), o.composition.c_str());
  std::printf("device: %s; linear provider: %s; weights: %s (%s); device memory %s\n",
              m.device.c_str(), m.provider.c_str(), checkpoint.weights.source().c_str(),
              format_bytes(checkpoint.weights.total_bytes()).c_str(),
              format_bytes(runner.device_bytes()).c_str());
  std::printf(
      "each stage one CUDA graph; Programmatic Dependent Launch %s; %d warm-up runs, %d timed "
      "runs (CUDA events)\n",
      m.pdl ? "on" : "off", m.warmup, o.runs);
  print_region_configs(runner);
  if (options.task_timing) {
    std::printf(
        "mk regions compiled with task timing records (--task-timing): each task also stores "
        "its times\n");
  }
  if (scenario.frames > 0) {
    std::printf(
        "TTS pipeline: a chunk of %lld frames; TTFA runs %zu stage graphs back to back, a "
        "streaming step %zu\n",
        static_cast<long long>(scenario.frames),
        model::stage_sequence(scenario, model::Sequence::first_output).size(),
        model::stage_sequence(scenario, model::Sequence::step).size());
    print_stats("TTFA", m.ttfo);
    print_stats("step", m.decode_step);
  } else {
    print_stats("TTFO", m.ttfo);
    print_stats("decode step", m.decode_step);
  }
  std::printf("throughput   %.2f %s/s (batch x outputs per step / step p50)\n", m.outputs_per_s,
              m.output_unit.c_str());
  if (!o.json_path.empty()) {
    model::write_text_file(o.json_path, m.to_json().dump(2) + "\n");
  }
  if (!o.task_timing_path.empty()) write_task_timing(o.task_timing_path, runner, m);
}

}  // namespace

void add_run_command(CLI::App& root) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* cmd = root.add_subcommand("run", "Run and time a scenario on the GPU");
  cmd->add_option("--model,-m", o->model, "Bundled model name, config.json, or checkpoint dir");
  cmd->add_option("--weights", o->weights_dir,
                  "Checkpoint directory (config.json + safetensors); default: random weights");
  cmd->add_option("--seed", o->seed, "Seed of the random weights")->capture_default_str();
  cmd->add_option("--batch,-b", o->batch, "Batch size")->type_name("INT")->capture_default_str();
  cmd->add_option("--prompt-len,-p", o->prompt_len, "Prompt length in tokens")
      ->capture_default_str();
  add_frames_option(cmd, o->frames);
  cmd->add_option("--composition,-c", o->composition,
                  "Composition to run: text, plan.json (this batch's) or a composition .json")
      ->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed runs")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up runs")->capture_default_str();
  cmd->add_option("--provider", o->provider,
                  "Linear ops of conv regions run on: ours or cublaslt (default: a plan.json's "
                  "choice for the batch, else ours)");
  cmd->add_flag("--pdl", o->pdl,
                "Launch our kernels with Programmatic Dependent Launch (cuBLASLt's stay plain)");
  cmd->add_option("--json", o->json_path, "Write measurement.json here");
  cmd->add_option("--save-weights", o->save_weights_dir,
                  "Save the weights as a Hugging Face checkpoint directory");
  cmd->add_option("--dump", o->dump_path,
                  "Write the prompt and the logits of a greedy generation (safetensors)");
  cmd->add_option("--dump-steps", o->dump_steps, "Decode steps of the dumped generation")
      ->capture_default_str();
  cmd->add_flag("--counter-hops", o->counter_hops,
                "mk regions hand every activation over through counters, none as flagged words "
                "(for comparison)");
  cmd->add_option("--task-timing", o->task_timing_path,
                  "Compile mk regions with task timing records and write the last run's here "
                  "(JSON), with where each op's tasks ran");
  cmd->callback([o] {
    if (o->model.empty() == o->weights_dir.empty()) {
      throw Error("run: give exactly one of --model and --weights");
    }
    run(*o);
  });
}

}  // namespace megacut::app
