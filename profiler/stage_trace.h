// From CUPTI kernel records to ops: the pure part of the conventional-graph trace, with no CUDA
// header, so that it is tested on synthetic records where there is no GPU.
//
// How a kernel is tied to its op, without guessing. Every CUDA call the profiler makes while
// tracing carries a tag (CuptiTracer::Scope): the eager launch of op i of stage s, or replay r
// of stage s's graph. CUPTI gives each call a correlation id, and each kernel record the id of
// the call that launched it; all kernels of one graph launch share the id of that cudaGraphLaunch.
//  1. The eager launches tell, op by op, which kernels each op runs (one for our tile bodies, one
//     or more for cuBLASLt), in start order: the stage's expected kernel sequence.
//  2. A stage graph is captured from one stream, so a replay runs its kernels one after the
//     other in capture order: sorted by start time, replay r's kernels must be exactly that
//     sequence, position by position (count, name, grid and block). Any difference is an error
//     naming the stage, replay and position, never a best guess.
//  3. Graph node ids, where CUPTI gives them, must be the same at each position in every replay.
// CUPTI's timestamps of two consecutive kernels can overlap by a tick or two (seen: 64 ns on an
// H200); up to kOverlapToleranceNs that is clock jitter, and the gap counts as 0. More is an
// error: the kernels ran concurrently, which a stage graph captured from one stream cannot do.
//
// Only CUPTI's GPU timestamps are compared with one another: its CPU-side timestamps and
// %globaltimer were seen about 40 µs off them on an H200, so neither is mixed in here.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/profile.h"
#include "model/stats.h"

namespace megacut::profiler {

// One kernel execution as CUPTI reported it; times on CUPTI's clock, in ns.
struct KernelRecord {
  std::string name;  // demangled
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation = 0;  // of the CUDA call that launched it
  uint32_t stream = 0;
  uint32_t graph_id = 0;    // 0 outside CUDA graphs
  uint64_t graph_node = 0;  // 0 outside CUDA graphs
  model::LaunchConfig launch;
};

// What the host was doing when it made a CUDA call.
// `standalone_cold` and `standalone_warm` launch one op alone, after a `flush` of L2 and right
// after itself.
enum class TagKind : uint8_t {
  none = 0,
  op = 1,
  replay = 2,
  micro = 3,
  flush = 4,
  standalone_cold = 5,
  standalone_warm = 6
};

struct Tag {
  TagKind kind = TagKind::none;
  int stage = 0;  // stage index; for micro-benchmarks, which benchmark
  int index = 0;  // op index, replay index, or the micro-benchmark's launch

  uint64_t code() const;
  static Tag decode(uint64_t code);
  friend bool operator==(const Tag&, const Tag&) = default;
};

inline constexpr uint64_t kOverlapToleranceNs = 1000;

// Everything one trace window saw.
struct TraceWindow {
  std::vector<KernelRecord> kernels;
  std::unordered_map<uint32_t, uint64_t> tag_of_call;  // call correlation id -> Tag::code()
  uint64_t dropped_records = 0;
};

// Kernels by the tag of the call that launched them, each list in start order; kernels whose
// call carried no tag apart.
struct TaggedKernels {
  std::map<uint64_t, std::vector<KernelRecord>> by_tag;
  std::vector<KernelRecord> untagged;

  // The kernels of `tag` (empty if none).
  const std::vector<KernelRecord>& of(Tag tag) const;
};
TaggedKernels group_by_tag(const TraceWindow& window);

// A stage's ops as the profile names them.
struct StageOps {
  std::string stage;
  struct Op {
    std::string name;
    std::string kind;
    std::string provider;  // "ours" or "cublas"
  };
  std::vector<Op> ops;
};

// A stage's traced replays, mapped to its ops.
struct StageTrace {
  // Per op: kernel name(s), duration and gap statistics over the replays, launch configuration.
  // graph_ns is left for the caller (it is timed without tracing).
  model::StageProfile profile;
  std::vector<int> op_of_position;                 // kernel position in a replay -> op index
  std::vector<std::vector<KernelRecord>> replays;  // each in start order
  int clamped_gaps = 0;         // overlaps of up to kOverlapToleranceNs, counted as gaps of 0
  uint64_t max_overlap_ns = 0;  // the largest of them

  // Each replay's first kernel start to its last kernel end.
  model::LatencyStats span_ns() const;
};

// Maps `replays` (each replay's kernels, any order) of a stage to its ops, from `eager` (op by
// op, the kernels its eager launch ran). Throws megacut::Error on any mismatch (see the file
// comment). With `pdl` the replays launched our kernels with Programmatic Dependent Launch: a
// kernel may then start before the one it follows ends, and each op of ours after one of ours
// gets ConvKernel::pdl_step_ns (the previous op's end to its end).
StageTrace map_stage(const StageOps& stage, const std::vector<std::vector<KernelRecord>>& eager,
                     std::vector<std::vector<KernelRecord>> replays, bool pdl = false);

// The iteration (replay index, the same in every stage) whose total span over the stages is the
// median.
int median_iteration(const std::vector<StageTrace>& stages);

// One measured iteration as a Chrome trace laid out like a simulated one (both are made of the
// pieces in model/trace_events.h):
// the stages one after the other on one time axis, each with its first kernel lead_ns[stage]
// after the stage's start (what launching the graph adds, where the simulator puts
// graph_launch_ns); kernels on one thread per stream with Kineto's argument names; stages on the
// "stages and regions" thread.
nlohmann::json measured_trace(const std::vector<StageTrace>& stages,
                              const std::vector<StageOps>& ops, int iteration,
                              const std::vector<int64_t>& lead_ns,
                              const nlohmann::json& other_data);

}  // namespace megacut::profiler
