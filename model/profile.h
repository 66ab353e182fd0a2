// The profile: everything measured about one model on one device that the simulator may use,
// and nothing else: the contract between the profiler (GPU side), which fills it, and the
// simulator, which reads only this, never a measurement of the candidate it predicts.
//
// What is measured, and exactly how, so that the profiler and the simulator agree:
//  - the device's SM count, L2 size, register file per SM, and copy bandwidth (bytes read plus
//    bytes written per second by a large device-to-device copy: the unit of TileCost bytes);
//  - micro-benchmarks of boundaries and counters (MicroBenchmarks below);
//  - per batch size and stage, the all-conventional CUDA graph: for every op, its kernel's
//    duration and the gap from its end to the next kernel's start (CUPTI activity records of
//    the captured graph), and its launch configuration; and the graph's end-to-end time; and,
//    beside those replays, the graph-launch sweep (GraphLaunchPoint); then the same graph with
//    every linear and lm-head op on cuBLASLt, traced the same way, for those ops' cuBLASLt
//    kernels (OpProfile::conv_cublaslt); and the graph with our kernels launched with
//    Programmatic Dependent Launch, traced the same way, for each op's end-to-end step
//    (ConvKernel::pdl_step_ns);
//  - per op, its conventional kernel alone, after an L2 flush and warm (reported, not simulated);
//  - per op, the standalone task benchmark: the op alone as a persistent region at 1, sm/4,
//    sm/2 and sm CTAs, its tiles placed by model::make_schedule(graph, op, op + 1, ctas);
//    a task's duration runs from its start to the start of the next task on the same CTA (to
//    its completion signal for a CTA's last task), so it includes the runtime's per-task cost.
// Latency statistics are in nanoseconds (unit "ns") everywhere in this file.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/stats.h"

namespace megacut::model {

inline constexpr std::string_view kProfileSchema = "megacut.profile/1";

// What one SM holds at once, beyond its registers (DeviceProfile::registers_per_sm): how many
// CTAs of which kernels fit side by side. The simulator places a tile region's CTAs by them.
struct SmLimits {
  int threads = 0;                          // resident threads
  int ctas = 0;                             // resident CTAs
  int64_t smem_bytes = 0;                   // shared memory
  int64_t reserved_smem_per_cta_bytes = 0;  // taken from it for each resident CTA by the system
  friend bool operator==(const SmLimits&, const SmLimits&) = default;
};

struct DeviceProfile {
  std::string name;  // e.g. "NVIDIA H200"
  int sm_count = 0;
  int64_t l2_bytes = 0;  // recorded for reports; the cost model does not use it yet
  int64_t registers_per_sm = 0;
  double copy_bandwidth_gb_per_s = 0;  // bytes read + written per second, / 1e9 (= bytes per ns)
  // Absent from profiles that predate it; tile regions cannot be predicted without it.
  std::optional<SmLimits> sm_limits;
};

// The launch of a CUDA graph of `nodes` kernels, measured as MicroBenchmarks::graph_launch_ns is.
struct GraphLaunchPoint {
  int64_t nodes = 0;
  LatencyStats launch_ns;
  // The traced CUPTI span of one replay's kernels (first start to last end), which launch_ns
  // subtracts. Absent in profiles that predate it.
  std::optional<LatencyStats> span_ns;
  // Untraced, one replay's time on the GPU when replays follow each other at once (timed from
  // the end of a first replay to the end of several more, per replay): kernels and gaps without
  // tracing, nor a launch, which the host makes while the GPU runs the replay before. Measured
  // only for graphs long enough that the GPU, not the host, sets that pace; absent otherwise.
  // span_ns less this, per node, is what tracing adds to each kernel and gap.
  std::optional<LatencyStats> back_to_back_ns;
  friend bool operator==(const GraphLaunchPoint&, const GraphLaunchPoint&) = default;
};

// A collective of a tensor-parallel profile's GPUs (Profile::tp > 1), run alone at one message
// size: `bytes` is what each rank holds (an all-gather's result), the time its kernel's start to
// its end on the slowest rank.
struct CollectivePoint {
  int64_t bytes = 0;
  LatencyStats time_ns;
  friend bool operator==(const CollectivePoint&, const CollectivePoint&) = default;
};

// One collective kind over message sizes: the latency and link bandwidth a communication task
// of an mk region is predicted from (simulator/cost.h, fit_collective).
struct CollectiveBenchmark {
  std::string kind;                     // "all-reduce" or "all-gather" (model/op.h)
  std::vector<CollectivePoint> points;  // increasing bytes
  friend bool operator==(const CollectiveBenchmark&, const CollectiveBenchmark&) = default;
};

// Boundary and synchronization costs, each from a dedicated micro-benchmark of empty or
// trivial kernels.
struct MicroBenchmarks {
  // cudaGraphLaunch to its first kernel's start. Measured as graph_ns is, with CUDA events around
  // cudaGraphLaunch, less the CUPTI span of the graph's kernels; so it includes the end event's
  // tail, and graph launch + kernels + gaps add up to graph_ns.
  LatencyStats graph_launch_ns;
  // The same for graphs of several sizes (chains of trivial kernels), increasing in nodes: the
  // launch grows with the graph. Empty in profiles that predate it; the simulator then charges
  // graph_launch_ns whatever the size.
  std::vector<GraphLaunchPoint> graph_launch_by_nodes;
  LatencyStats kernel_gap_ns;  // one kernel's end to the next one's start, in a CUDA graph
  // The same with Programmatic Dependent Launch: the first kernel's end to the moment the
  // second passes cudaGridDependencySynchronize (never negative). Measured as what the boundary
  // adds beyond the second kernel's own duration: the end-to-end spacing of PDL-chained kernels
  // less a plain launch's duration (CUPTI), 0 where the early launch hides more than the gap.
  LatencyStats kernel_gap_pdl_ns;
  LatencyStats region_launch_ns;  // a persistent region kernel's start to its first task's start
  LatencyStats region_drain_ns;   // a persistent region's last task end to the kernel's end
  // A release store of a dependency counter on one SM to the acquire load that sees it on
  // another SM (spinning with the runtime's back-off).
  LatencyStats counter_signal_to_wait_ns;
  // One round of a task's dependency check in a persistent region: every thread of a block
  // acquire-loads one counter that is already signalled, then the block's barrier. The region
  // kernel checks blockDim.x dependencies per round, so a task with n dependencies inside its
  // region spends ceil(n / threads) rounds before its body starts. Absent from older profiles;
  // the simulator then leaves the check out and says so.
  std::optional<LatencyStats> dependency_check_round_ns;
  // Programmatic Dependent Launch from the start: a kernel of one CTA that lets its dependent
  // launch first thing, then spins; that call (%globaltimer) to the dependent's first
  // instruction. What a tile region's kernel waits, after the last CTA of the kernel before it
  // has started, before its own CTAs can. Absent from older profiles; the simulator then
  // charges kernel_gap_ns and says so.
  std::optional<LatencyStats> dependent_launch_ns;
  // A flagged word (executor/tiles/flagged.cuh) stored on one SM to the poll that sees its run
  // on another: what a hop by data in an mk region waits (model::data_edges), where a hop by
  // counter waits counter_signal_to_wait_ns. Absent from older profiles; the simulator then
  // prices every hop as a counter's and says so.
  std::optional<LatencyStats> flagged_word_hop_ns;
  // Tensor parallel only: each collective kind the graphs hold, over message sizes. Without them
  // (profiles of one GPU, or that predate them) no mk region can run a collective.
  std::vector<CollectiveBenchmark> collectives;

  // The benchmark of `kind` (an all-reduce-residual is timed as an all-reduce); null when absent.
  const CollectiveBenchmark* collective(std::string_view kind) const;
};

struct LaunchConfig {
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int registers = 0;       // per thread
  int64_t smem_bytes = 0;  // static + dynamic, per CTA
  friend bool operator==(const LaunchConfig&, const LaunchConfig&) = default;
};

// An op's kernel in the all-conventional CUDA graph.
struct ConvKernel {
  // The kernel's (demangled) name as CUPTI reports it; an op that runs several kernels (cuBLASLt
  // may) has their names in start order, joined by " + ". Each is one node of the stage graph.
  std::string kernel;
  std::string provider = "ours";  // "ours" (the op's tile body) or "cublas"
  LatencyStats duration_ns;
  std::optional<LatencyStats> gap_to_next_ns;  // absent only for the stage's last op
  // The same graph with every kernel of ours launched with Programmatic Dependent Launch, which
  // lets a kernel start before the one it follows ends: the previous op's end to this op's end
  // (CUPTI), what the op adds to the stage there. Only for our kernels that follow one of ours;
  // absent in profiles that predate it.
  std::optional<LatencyStats> pdl_step_ns;
  // A cuBLASLt kernel's (OpProfile::conv_cublaslt): the previous op's end to its start in the
  // graph with cuBLASLt linears, the boundary before it. Absent for the stage's first op and in
  // profiles that predate it.
  std::optional<LatencyStats> gap_before_ns;
  LaunchConfig launch;
  // The op's kernel(s) launched alone, outside the graph (CUPTI: first kernel start to last
  // kernel end): right after an L2 flush, and right after a launch of itself. For reports and
  // checks; the simulator takes durations from the graph, where the op really runs.
  std::optional<LatencyStats> standalone_cold_ns;
  std::optional<LatencyStats> standalone_warm_ns;
  friend bool operator==(const ConvKernel&, const ConvKernel&) = default;
};

// The configuration of a persistent region: block size, registers per thread, shared memory,
// and of that the weight ring each CTA streams its tasks' weights into ahead of them.
struct RegionConfig {
  int threads = 0;
  int registers = 0;
  int64_t smem_bytes = 0;
  // 0 where no body streams, and in profiles from before the ring was recorded: the simulator
  // then loads no weights ahead of a task.
  int64_t ring_bytes = 0;
  friend bool operator==(const RegionConfig&, const RegionConfig&) = default;
};

// Task durations of the op alone in a persistent region of `ctas` CTAs.
struct TaskBenchmark {
  int ctas = 0;
  LatencyStats duration_ns;
  // Each CTA's start to its first task's start: the runtime's own work before any body runs
  // (run index from the arrival count, the queue's first task and layout read from memory just
  // flushed from L2). Absent from older profiles; the simulator then charges only the
  // micro-benchmark's trivial region launch, and says so.
  std::optional<LatencyStats> startup_ns;
  friend bool operator==(const TaskBenchmark&, const TaskBenchmark&) = default;
};

// What an op's tile body can do with flagged words in an mk region (executor::RegionBody): take
// its x as words, give its output as words. model::data_edges turns them into a region's hops.
struct FlaggedWordsSupport {
  bool takes_x = false;
  bool gives_y = false;
  friend bool operator==(const FlaggedWordsSupport&, const FlaggedWordsSupport&) = default;
};

struct OpProfile {
  int index = 0;
  std::string name;  // checked against the graph rebuilt from the model config
  std::string kind;
  std::optional<ConvKernel> conv;
  // The op's cuBLASLt kernel(s) in the all-conventional CUDA graph with every linear and lm-head
  // op on cuBLASLt (model/linear_provider.h), measured as `conv` is, beside it: only for those
  // kinds, and absent from profiles that predate it (and from those whose `conv` is cuBLASLt's).
  std::optional<ConvKernel> conv_cublaslt;
  std::optional<RegionConfig> task_region;  // the single-op region's configuration
  std::vector<TaskBenchmark> tasks;         // increasing CTA count; empty if not measured
  // The op's tile count in the graph its tasks were measured on: the simulator applies their
  // durations to the tiles of the graph it rebuilds, so another tiling (other code) is refused.
  // 0: not recorded (profiles before the field).
  int64_t tiles = 0;
  // Absent from profiles that predate it: the simulator then hands nothing over as words.
  std::optional<FlaggedWordsSupport> flagged_words;
  friend bool operator==(const OpProfile&, const OpProfile&) = default;
};

struct StageProfile {
  std::string stage;
  // The all-conventional CUDA graph: cudaGraphLaunch to the end of its last kernel.
  std::optional<LatencyStats> graph_ns;
  std::vector<OpProfile> ops;  // increasing index; an op may be missing

  const OpProfile* op(int index) const;
  friend bool operator==(const StageProfile&, const StageProfile&) = default;
};

struct BatchProfile {
  int64_t batch = 0;
  std::vector<StageProfile> stages;
  // The graph-launch sweep (MicroBenchmarks::graph_launch_by_nodes) run again alongside this
  // batch's replays, so that it meets the host as graph_ns does (profiler/micro.h says why that
  // matters). Empty in profiles that predate it.
  std::vector<GraphLaunchPoint> graph_launch_by_nodes;

  const StageProfile* stage(std::string_view name) const;
  friend bool operator==(const BatchProfile&, const BatchProfile&) = default;
};

struct Profile {
  std::string model_name;
  nlohmann::json model_config;  // the model's Hugging Face config.json object
  int64_t prompt_len = 0;
  int64_t frames = 0;  // TTS: frames of the first audio chunk (0: an LLM)
  int64_t tp = 1;      // tensor-parallel degree: each batch's graphs are one rank's of tp GPUs
  DeviceProfile device;
  MicroBenchmarks micro;
  std::vector<BatchProfile> batches;  // increasing batch

  // Where the profile came from, for error messages; not part of the JSON.
  std::string source = "profile";

  const BatchProfile* batch(int64_t batch) const;
  std::vector<int64_t> batch_sizes() const;
  // Equal in content (the source is ignored).
  bool same_content(const Profile& other) const;
};

// Throws an Error unless the simulator can predict `batch` from `profile`: measured, or, with
// `allow_interpolate`, between two measured batches (interpolation does not extrapolate). It
// reads the profile alone, so that a batch the profile cannot answer for is refused before any
// graph is built: every command checks its batches here, and so does the simulator.
void check_batch(const Profile& profile, int64_t batch, bool allow_interpolate);

// Throws an Error unless `profile` holds one rank's graphs of `tp` GPUs: a profile answers for
// the tensor-parallel degree it was made at only.
void check_tp(const Profile& profile, int64_t tp);

nlohmann::json profile_to_json(const Profile& profile);
// Validates everything the JSON can say on its own (types, ranges, order, schema); whether an
// op's name and kind match the model's graph is checked when the graph is built. `file` names
// the source in errors: "<file>: field 'batches[2].stages[0].ops[17].conv.duration_ns.p50':
// missing".
Profile profile_from_json(const nlohmann::json& json, std::string_view file);
Profile read_profile(const std::filesystem::path& path);
// Written whole or not at all (model::write_file).
void write_profile(const Profile& profile, const std::filesystem::path& path);

}  // namespace megacut::model
