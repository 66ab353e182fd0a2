// The scenario runner: a model's stages on the GPU, each captured once in a CUDA graph and
// replayed, timed with CUDA events.
//
// Memory: one arena for the weights (packed as every op reads them), one for each stage's
// activations, and KV caches shared by all stages. The decode stage's input tokens alias the
// prefill's argmax output, and each decode step writes its own argmax over its input, so a
// replayed prefill followed by decode steps is a greedy generation. Before any allocation the
// runner adds up what it needs and compares it with the device's free memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "executor/conventional.h"
#include "executor/megakernel.h"
#include "executor/megakernel_bodies.h"
#include "executor/weights.h"
#include "model/composition.h"
#include "model/linear_provider.h"
#include "model/scenario.h"
#include "model/stats.h"

namespace megacut::executor {

struct RunOptions {
  int warmup = 5;
  int runs = 50;
  // Which linear ops of conv regions run on cuBLASLt (model/linear_provider.h); default: none.
  model::ProviderChoice providers;
  uint64_t token_seed = 1;         // the prompt's random token ids
  int decode_steps = 1;            // KV-cache room for this many generated tokens beyond the prompt
  model::Composition composition;  // how each stage is cut into regions; no stages: all conv
  // Our kernels (tile kernels and megakernel regions) launched with
  // Programmatic Dependent Launch; cuBLASLt's never are.
  bool pdl = false;
  // mk regions compiled with per-task timing records (mk_regions, read_timings); this adds
  // stores to every task, so a run measured with it is not the plain composition's.
  bool task_timing = false;
  // mk regions hand every activation over through counters (RegionOptions::flagged_hand_overs
  // off): for comparison with the flagged words they use where they can.
  bool counter_hops = false;
};

// One timed scenario: how it was obtained (provider, composition) and what it measured.
struct Measurement {
  std::string model;
  int64_t batch = 0;
  int64_t prompt_len = 0;
  int64_t frames = 0;  // TTS: frames of the first audio chunk
  std::string composition;
  std::string provider;  // RunOptions::providers, described
  model::ProviderChoice providers;
  bool pdl = false;          // RunOptions::pdl
  bool task_timing = false;  // RunOptions::task_timing
  std::string device;
  int warmup = 0;
  // ms: prefill through the first token; a TTS pipeline's every stage run through the first
  // audio chunk (time to first audio), replays launched back to back.
  model::LatencyStats ttfo;
  // ms: a decode step; a TTS pipeline's streaming step (every stage run of the next chunk).
  model::LatencyStats decode_step;
  // batch x the scenario's outputs per step / decode step p50: tokens, or seconds of audio.
  double outputs_per_s = 0;
  std::string output_unit = "tokens";
  // What the stages must move and compute (model::TileCost totals), and the device's measured
  // copy bandwidth (bytes read + written per second; the caller measures it, as megacut run
  // does with profiler::measure_copy_bandwidth), for achieved rates and floors.
  int64_t weight_bytes = 0;
  model::TileCost prefill_cost;
  model::TileCost decode_cost;
  std::vector<std::pair<std::string, model::TileCost>> stage_costs;  // every stage, in order
  double copy_bytes_per_s = 0;

  nlohmann::json to_json() const;  // "schema": "megacut.measurement/1"
};

class ScenarioRunner {
 public:
  ScenarioRunner(const model::ModelSpec& model, const model::Scenario& scenario,
                 const HostWeights& weights, RunOptions options);
  ~ScenarioRunner();
  ScenarioRunner(const ScenarioRunner&) = delete;
  ScenarioRunner& operator=(const ScenarioRunner&) = delete;

  // Bytes of device memory the runner holds.
  int64_t device_bytes() const;

  // Captures each stage's graph (once) and times `options.runs` replays after warm-up.
  Measurement measure();

  // Stage by stage, for the profiler. Stages are numbered in scenario order.
  int stage_count() const;
  const model::Graph& stage_graph(int stage) const;
  const model::ProviderChoice& providers() const;
  // Launches one op of a stage on the runner's stream, outside any graph (with PDL where
  // RunOptions::pdl); does not wait.
  void launch_op(int stage, int op);
  // A persistent region of ops [op_begin, op_end) of the stage over the stage's buffers,
  // outside the composition, for standalone task benchmarks; launch it on stream().
  std::unique_ptr<MegakernelRegion> make_region(int stage, int op_begin, int op_end,
                                                RegionOptions options) const;
  // The op's tile body as an mk region runs it over the stage's buffers (what it can do with
  // flagged words, for the profile).
  RegionBody region_body(int stage, int op) const;
  cudaStream_t stream() const;
  // Captures the stage's CUDA graph unless already captured, after one eager run of the stage
  // so that cuBLASLt picks its plans outside the capture.
  void capture(int stage);
  // One replay of the stage's graph (captured first if need be), timed alone with CUDA events:
  // from an event recorded before cudaGraphLaunch to one recorded after it. Waits for it.
  double time_replay_ms(int stage);
  // Waits for everything launched on the runner's stream.
  void synchronize();
  // Runs every stage as `composition` cuts it from now on (graphs are captured anew). Weights
  // stay; activations and KV caches are poisoned again and the prompt rewritten, as when made.
  void set_composition(model::Composition composition);
  // Runs conv regions' linear ops on these providers from now on (graphs are captured anew).
  void set_providers(model::ProviderChoice providers);
  // Launches our kernels with Programmatic Dependent Launch, or not, from now on (RunOptions::pdl;
  // graphs are captured anew).
  void set_pdl(bool pdl);
  bool pdl() const;
  // The stage's logits buffer as the last launch or replay left it: (batch, vocab).
  std::vector<float> stage_logits(int stage);
  // The bytes of a stage tensor's buffer (an input, activation or state, not a weight) as the
  // last launch or replay left it: for checks that compare a run op by op.
  std::vector<std::byte> tensor_bytes(int stage, int tensor);
  // The stage's mk regions in order, once the stage has been launched (their configurations
  // and, with RunOptions::task_timing, the last launch's task records); none for an
  // all-conventional stage.
  std::vector<const MegakernelRegion*> mk_regions(int stage) const;

  // Greedy generation without graphs, for checking: prefill, then `steps` decode steps (each
  // built for its own position). Fills the outputs below.
  void generate(int steps);
  const std::vector<int32_t>& prompt_tokens() const;  // (batch, prompt_len)
  const std::vector<float>& prefill_logits() const;   // (batch, vocab)
  const std::vector<float>& decode_logits() const;    // (steps, batch, vocab)
  const std::vector<int32_t>& decode_tokens() const;  // (steps, batch): each step's input

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megacut::executor
