// megacut profile: what the simulator may know about a model on a device (model/profile.h,
// "megacut.profile/1"), measured. Per batch size, every stage of the scenario runs
// all-conventional exactly as `megacut run` runs it (one CUDA graph per stage, replayed); its
// end-to-end time is taken with CUDA events and no tracing, then the same replays run under
// CUPTI kernel tracing, after one eager launch of each op inside NVTX ranges, and each kernel is
// mapped to its op (stage_trace.h). The micro-benchmarks come first (micro.h).
// Still in the trace window, each op's kernel is launched alone, cold and warm (task_bench.h);
// then, untraced, each op runs alone as a persistent region at several CTA counts (the task
// benchmarks, task_bench.h). Last, the replays again with the linear ops on cuBLASLt, traced
// (trace_cublaslt), so that the planner can choose either provider per op, and with our kernels
// launched with PDL (trace_pdl), so that the simulator knows what PDL overlaps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "executor/runner.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "profiler/cupti_tracer.h"
#include "profiler/micro.h"
#include "profiler/stage_trace.h"
#include "profiler/task_bench.h"

namespace megacut::profiler {

// How each batch is measured.
struct BatchOptions {
  int warmup = 10;  // replays of each stage before the timed ones, traced and untraced alike
  int runs = 100;   // timed replays of each stage, traced and untraced alike
  int standalone_runs = 5;  // cold and warm launches of each op's kernel alone
  bool task_benchmarks = true;
  TaskBenchOptions tasks;
};

struct ProfileOptions {
  std::string model;             // bundled name, config.json, or checkpoint directory
  std::vector<int64_t> batches;  // increasing
  int64_t prompt_len = model::kDefaultPromptLen;
  int64_t frames = 0;  // TTS: frames of the first audio chunk (0: the default)
  BatchOptions batch;
  uint64_t seed = 0;  // of the random weights
  std::filesystem::path out;
  std::filesystem::path trace;  // Chrome trace of the smallest batch's median iteration, if set
  MicroOptions micro;
};

// What the sweep shows of each batch.
struct StageSummary {
  std::string stage;
  int ops = 0;
  int kernels_per_replay = 0;
  model::LatencyStats graph_ns;         // CUDA events around cudaGraphLaunch, untraced
  model::LatencyStats traced_graph_ns;  // the same, traced
  model::LatencyStats span_ns;          // traced: first kernel start to last kernel end (CUPTI)
  double kernels_p50_ns = 0;            // the sum over ops of each kernel's p50
  double gaps_p50_ns = 0;               // the sum over ops of each gap's p50
  int clamped_gaps = 0;                 // CUPTI overlaps within tolerance (stage_trace.h)
  uint64_t max_overlap_ns = 0;
};

struct BatchSummary {
  int64_t batch = 0;
  std::vector<StageSummary> stages;
  model::LatencyStats ttfo_untraced_ms;
  model::LatencyStats ttfo_traced_ms;
  int64_t kernel_records = 0;        // all of the window's, of which:
  int64_t launch_sweep_kernels = 0;  // the graph-launch sweep's (micro.h)
  int64_t standalone_kernels = 0;    // the ops' launches alone, cold and warm
  uint64_t dropped_records = 0;
  int task_regions = 0;           // single-op regions the task benchmarks built
  int task_kernels_compiled = 0;  // their kernels not found in the kernel cache
  double task_compile_seconds = 0;
  double task_seconds = 0;  // all of the task benchmarks, compiling included
};

// Callbacks for the terminal; each may be empty.
struct ProfileListener {
  std::function<void(const std::string&)> note;
  std::function<void(const MicroResult&)> micro_done;
  std::function<void(const std::string& phase, int done, int total)> progress;
  std::function<void(const BatchSummary&)> batch_done;
};

struct BatchResult {
  model::BatchProfile profile;
  std::vector<StageOps> ops;       // by stage
  std::vector<StageTrace> stages;  // the timed traced replays, mapped
  BatchSummary summary;
};

// Profiles every stage of `runner`, made for `scenario`, on `tracer` (see the file comment).
// Throws megacut::Error if CUPTI dropped records or a kernel cannot be tied to its op.
BatchResult profile_batch(executor::ScenarioRunner& runner, const model::Scenario& scenario,
                          CuptiTracer& tracer, const BatchOptions& options,
                          const ProfileListener& listener = {});

// The all-conventional graph of every stage again, with every linear and lm-head op on cuBLASLt
// (the runner's providers set for it, then restored), traced as profile_batch traces its
// replays: one eager launch of each op, options.warmup replays checked and dropped, options.runs
// mapped. Each of those ops' kernels goes to OpProfile::conv_cublaslt of `profile` (one of
// profile_batch's); returns how many ops got one.
int trace_cublaslt(executor::ScenarioRunner& runner, const model::Scenario& scenario,
                   CuptiTracer& tracer, const BatchOptions& options, model::BatchProfile& profile,
                   const ProfileListener& listener = {});

// The same with our kernels launched with Programmatic Dependent Launch (the runner's setting
// restored after): each op of ours that follows one of ours gets ConvKernel::pdl_step_ns in
// `profile`, its end-to-end step there. Returns how many ops got one.
int trace_pdl(executor::ScenarioRunner& runner, const model::Scenario& scenario,
              CuptiTracer& tracer, const BatchOptions& options, model::BatchProfile& profile,
              const ProfileListener& listener = {});

// The whole sweep. Writes options.out after the micro-benchmarks and again after each batch, so
// that a failure (no room for a batch, dropped records) keeps what was measured; at the end reads
// the file back with model::read_profile and checks it. Throws megacut::Error naming the
// batch that failed and what the file keeps.
model::Profile run_profile(const ProfileOptions& options, const ProfileListener& listener = {});

}  // namespace megacut::profiler
