// What the simulator predicts: per region, per stage, and for the scenario (TTFO, decode step,
// throughput), with the critical path and per-SM utilization; JSON form
// "megacut.prediction/2".
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/composition.h"
#include "model/linear_provider.h"
#include "model/profile.h"
#include "simulator/megakernel.h"

namespace megacut::simulator {

inline constexpr std::string_view kPredictionSchema = "megacut.prediction/2";

// What ran before a region's first kernel: it decides the launch gap the region pays. After a
// tile region, the kernel before is one of ours whatever the provider choice says of its op.
enum class Boundary { stage_start, after_conv, after_mk, after_tile };
std::string_view boundary_name(Boundary boundary);

// One region simulated on its own, from its boundary (the previous region's end) to its end.
// Times inside are relative to that boundary.
struct RegionResult {
  std::string stage;
  int64_t batch = 0;
  model::Region region;
  Boundary before = Boundary::stage_start;

  TimeNs time_ns = 0;  // gap + launch + work + drain
  // Before its first kernel: the boundary's launch gap, and the region's share of the stage
  // graph's launch (its nodes at the per-node cost; the fixed cost too at the stage start).
  TimeNs gap_ns = 0;
  TimeNs launch_ns = 0;  // mk: kernel start to first task start
  TimeNs work_ns = 0;    // conv: first kernel start to last kernel end; mk: tasks
  TimeNs drain_ns = 0;   // mk: last task end to kernel end
  int64_t kernels = 0;
  int64_t graph_nodes = 0;  // nodes it adds to the stage's CUDA graph
  // Its share of the stage's graph launch and trace excess (StagePrediction), what a run that
  // follows another at once does not wait for: the graph's fixed launch if it is the stage's
  // first region, and per graph node the stage's launch and trace excess.
  TimeNs launch_fixed_ns = 0;
  TimeNs launch_node_ns = 0;
  TimeNs trace_excess_node_ns = 0;
  TimeNs graph_launch_ns() const { return launch_fixed_ns + graph_nodes * launch_node_ns; }
  TimeNs trace_excess_ns() const { return graph_nodes * trace_excess_node_ns; }
  int64_t tasks = 0;                          // mk only
  std::optional<model::RegionConfig> config;  // mk: the predicted configuration
  std::vector<int> register_limited_ops;      // mk: ops the configuration slows down
  std::vector<TimeNs> sm_busy_ns;             // per SM; conv kernels are spread over min(grid, SMs)
  std::vector<PathStep> critical_path;
  std::vector<Span> spans;  // only when the simulator records spans
  int64_t events = 0;       // engine events (mk)
};

struct OpOnPath {
  int op = 0;
  std::string name;
  TimeNs time_ns = 0;  // time of its kernels or tasks on the critical path
  int64_t steps = 0;
};

struct StagePrediction {
  std::string stage;
  int64_t runs_to_first_output = 0;
  int64_t runs_per_step = 0;
  TimeNs time_ns = 0;
  std::vector<std::shared_ptr<const RegionResult>> regions;
  std::vector<TimeNs> region_start_ns;
  std::vector<PathStep> critical_path;           // stage time line
  TimeNs path_work_ns = 0;                       // kernels and tasks on the path
  TimeNs path_overhead_ns = 0;                   // gaps, launches, drains and waits on the path
  std::vector<OpOnPath> path_by_op;              // ops by time on the path, longest first
  std::vector<double> sm_utilization;            // per SM: busy time / stage time
  std::optional<TimeNs> measured_conv_graph_ns;  // the profile's all-conv graph (replay check)
  std::vector<std::string> op_names;

  // The part of time_ns that is the host launching the stage's CUDA graph (the profile's fit of
  // graph launch against nodes): replayed after another stage, the launch overlaps that stage.
  TimeNs graph_launch_ns() const;
  // Of the rest of time_ns, what tracing added to the profile's kernels and gaps (graph nodes
  // times the profile's per-node excess): the launch really takes it, and overlaps with it.
  TimeNs trace_excess_ns() const;
};

struct Interpolation {
  int64_t batch = 0;
  int64_t lower = 0;
  int64_t upper = 0;
};

struct Prediction {
  std::string model;
  std::string device;
  int sm_count = 0;
  int64_t batch = 0;
  int64_t prompt_len = 0;
  int64_t frames = 0;       // TTS: frames of the first audio chunk
  int64_t tp = 1;           // tensor parallel: one rank's graphs of this many GPUs
  std::string composition;  // canonical text
  // The ops of its conv regions that run on cuBLASLt (SimOptions::linear_provider), listed.
  model::ProviderChoice providers;
  std::vector<StagePrediction> stages;
  // The first output: the stage runs that lead to it (model::stage_sequence), replayed back
  // to back (an LLM's prefill; a TTS pipeline's every run through the first audio chunk).
  TimeNs ttfo_ns = 0;
  // The steady-state step, the same way: an LLM's decode step; a TTS pipeline's stage runs of
  // the next chunk of frames.
  TimeNs decode_step_ns = 0;
  double throughput_per_s = 0;  // batch x the scenario's outputs per step / step
  std::string output_unit = "tokens";
  std::optional<Interpolation> interpolated;
  std::vector<std::string> notes;

  const StagePrediction& stage(std::string_view name) const;
};

// The prediction without spans (the trace holds those).
nlohmann::json prediction_to_json(const Prediction& prediction);

}  // namespace megacut::simulator
