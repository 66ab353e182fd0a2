// The profiler. On synthetic records (runs everywhere): kernels are tied to their ops by the
// tags of the calls that launched them and by position in the stage's replay, and every mismatch
// is an error. On the GPU (skipped without one): tiny-llama's stage graphs traced with CUPTI give
// one record per launched kernel, each on the right op, with positive, ordered durations; the
// written profile reads back with model::read_profile.
#include "profiler/profiler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "executor/runner.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/linear_provider.h"
#include "model/profile.h"
#include "profiler/stage_trace.h"
#include "simulator/cost.h"
#include "tests/gpu/gpu_support.h"

namespace megacut::testing {
namespace {

using profiler::KernelRecord;
using profiler::StageOps;
using profiler::Tag;
using profiler::TagKind;

KernelRecord kernel(std::string name, uint64_t start, uint64_t end, int64_t grid = 4) {
  KernelRecord k;
  k.name = std::move(name);
  k.start_ns = start;
  k.end_ns = end;
  k.launch.grid = {grid, 1, 1};
  k.launch.block = {128, 1, 1};
  k.launch.registers = 32;
  return k;
}

// Three ops; op 1 runs two kernels (as cuBLASLt's split-K GEMM does).
StageOps three_ops() {
  return {
      "decode",
      {{"norm", "rmsnorm", "ours"}, {"proj", "linear", "cublas"}, {"argmax", "argmax", "ours"}}};
}

std::vector<std::vector<KernelRecord>> eager_kernels() {
  return {{kernel("norm_kernel", 10, 20)},
          {kernel("gemm_reduce", 50, 55, 1), kernel("gemm_main", 30, 45, 8)},  // any order
          {kernel("argmax_kernel", 70, 80, 2)}};
}

// Replay r starts at 1000 * (r + 1): norm 100 + r ns, a 10 ns gap, main 200, 5 ns, reduce 20,
// a 30 + r ns gap, argmax 50.
std::vector<KernelRecord> replay(int r) {
  const uint64_t t0 = 1000 * (r + 1);
  const uint64_t norm_end = t0 + 100 + r;
  std::vector<KernelRecord> ks = {
      kernel("argmax_kernel", norm_end + 265 + r, norm_end + 315 + r, 2),
      kernel("gemm_main", norm_end + 10, norm_end + 210, 8),
      kernel("norm_kernel", t0, norm_end),
      kernel("gemm_reduce", norm_end + 215, norm_end + 235, 1),
  };
  for (KernelRecord& k : ks) k.graph_node = k.launch.grid[0];  // one node per kernel
  return ks;
}

TEST(StageTraceTest, MapsKernelsToOpsByPosition) {
  const profiler::StageTrace t =
      profiler::map_stage(three_ops(), eager_kernels(), {replay(0), replay(1), replay(2)});
  EXPECT_EQ(t.op_of_position, (std::vector<int>{0, 1, 1, 2}));
  ASSERT_EQ(t.profile.ops.size(), 3u);
  const model::ConvKernel& norm = *t.profile.ops[0].conv;
  const model::ConvKernel& proj = *t.profile.ops[1].conv;
  const model::ConvKernel& argmax = *t.profile.ops[2].conv;
  EXPECT_EQ(norm.kernel, "norm_kernel");
  EXPECT_EQ(proj.kernel, "gemm_main + gemm_reduce");
  EXPECT_EQ(proj.provider, "cublas");
  // norm lasts 100, 101, 102 ns: p50 101; its gap to proj is 10 ns in every replay.
  EXPECT_DOUBLE_EQ(norm.duration_ns.p50, 101);
  EXPECT_DOUBLE_EQ(norm.gap_to_next_ns->p50, 10);
  // proj spans its two kernels: 225 ns; its gap is 30 + r: p50 31; its launch is gemm_main's.
  EXPECT_DOUBLE_EQ(proj.duration_ns.p50, 225);
  EXPECT_DOUBLE_EQ(proj.gap_to_next_ns->p50, 31);
  EXPECT_EQ(proj.launch.grid[0], 8);
  EXPECT_EQ(argmax.duration_ns.count, 3);
  EXPECT_FALSE(argmax.gap_to_next_ns.has_value());  // the stage's last op
  EXPECT_EQ(t.profile.ops[1].name, "proj");
  EXPECT_EQ(t.profile.ops[1].kind, "linear");
}

// With PDL a kernel of ours starts before the one it follows ends: accepted only when the
// replays say so, and each op of ours after one of ours gets its end-to-end step.
TEST(StageTraceTest, PdlReplaysOverlapAndGiveEachOpItsStep) {
  const StageOps ops{"decode",
                     {{"norm", "rmsnorm", "ours"},
                      {"proj", "linear", "ours"},
                      {"head", "lm-head", "cublas"},
                      {"argmax", "argmax", "ours"}}};
  const std::vector<std::vector<KernelRecord>> eager = {{kernel("norm_kernel", 10, 20)},
                                                        {kernel("proj_kernel", 30, 40)},
                                                        {kernel("gemm", 50, 60)},
                                                        {kernel("argmax_kernel", 70, 80)}};
  // Replay r, from its start: norm 0-3000 ns, proj from 1000 (2 µs before norm ends) to
  // 3700 + r, the head 3800-4600, argmax 4000-4900.
  auto replay = [](uint64_t r) {
    const uint64_t t0 = 100000 * (r + 1);
    return std::vector<KernelRecord>{
        kernel("norm_kernel", t0, t0 + 3000), kernel("proj_kernel", t0 + 1000, t0 + 3700 + r),
        kernel("gemm", t0 + 3800, t0 + 4600), kernel("argmax_kernel", t0 + 4000, t0 + 4900)};
  };
  EXPECT_THROW(profiler::map_stage(ops, eager, {replay(0)}), Error);
  const profiler::StageTrace t =
      profiler::map_stage(ops, eager, {replay(0), replay(1), replay(2)}, /*pdl=*/true);
  EXPECT_FALSE(t.profile.ops[0].conv->pdl_step_ns.has_value());  // the stage's first op
  ASSERT_TRUE(t.profile.ops[1].conv->pdl_step_ns.has_value());
  EXPECT_DOUBLE_EQ(t.profile.ops[1].conv->pdl_step_ns->p50, 701);  // 700 + r, r = 0, 1, 2
  EXPECT_FALSE(t.profile.ops[2].conv->pdl_step_ns.has_value());    // cuBLASLt's
  EXPECT_FALSE(t.profile.ops[3].conv->pdl_step_ns.has_value());    // after cuBLASLt's
}

TEST(StageTraceTest, CountMismatchIsAnError) {
  std::vector<KernelRecord> short_replay = replay(1);
  short_replay.pop_back();
  try {
    profiler::map_stage(three_ops(), eager_kernels(), {replay(0), short_replay});
    FAIL() << "a replay with a kernel missing was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replay 1: 3 kernels, expected 4"), std::string::npos)
        << e.what();
  }
}

TEST(StageTraceTest, NameOrShapeMismatchIsAnError) {
  std::vector<KernelRecord> renamed = replay(0);
  std::sort(renamed.begin(), renamed.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  renamed[3].name = "other_kernel";
  EXPECT_THROW(profiler::map_stage(three_ops(), eager_kernels(), {renamed}), Error);
  std::vector<KernelRecord> regridded = replay(0);
  for (KernelRecord& k : regridded) {
    if (k.name == "norm_kernel") k.launch.grid[0] = 5;
  }
  EXPECT_THROW(profiler::map_stage(three_ops(), eager_kernels(), {regridded}), Error);
}

TEST(StageTraceTest, JitterIsAGapOfZeroAndRealOverlapAnError) {
  // gemm_main starts 20 ns earlier, 10 ns before norm_kernel ends: a timestamp tick, counted as
  // a gap of 0.
  std::vector<KernelRecord> jitter = replay(0);
  for (KernelRecord& k : jitter) {
    if (k.name == "gemm_main") k.start_ns -= 20;
  }
  const profiler::StageTrace t = profiler::map_stage(three_ops(), eager_kernels(), {jitter});
  EXPECT_EQ(t.clamped_gaps, 1);
  EXPECT_EQ(t.max_overlap_ns, 10u);
  EXPECT_DOUBLE_EQ(t.profile.ops[0].conv->gap_to_next_ns->max, 0);

  // norm_kernel runs on for over a microsecond past gemm_main's start: concurrent, an error.
  std::vector<KernelRecord> overlapping = replay(0);
  for (KernelRecord& k : overlapping) {
    if (k.name == "norm_kernel") k.end_ns += profiler::kOverlapToleranceNs + 100;
  }
  EXPECT_THROW(profiler::map_stage(three_ops(), eager_kernels(), {overlapping}), Error);
}

TEST(StageTraceTest, MissingEagerKernelsAndNodeChangesAreErrors) {
  std::vector<std::vector<KernelRecord>> eager = eager_kernels();
  eager[2].clear();
  EXPECT_THROW(profiler::map_stage(three_ops(), eager, {replay(0)}), Error);

  std::vector<KernelRecord> moved = replay(1);
  moved[0].graph_node = 99;
  EXPECT_THROW(profiler::map_stage(three_ops(), eager_kernels(), {replay(0), moved}), Error);
}

TEST(StageTraceTest, TagsRoundTripAndGroupKernels) {
  const Tag tag{TagKind::replay, 3, 1234567};
  EXPECT_EQ(Tag::decode(tag.code()), tag);
  EXPECT_NE(Tag{}.code(), tag.code());

  profiler::TraceWindow window;
  window.kernels = {kernel("b", 20, 30), kernel("a", 10, 15), kernel("stray", 40, 50)};
  window.kernels[0].correlation = 7;
  window.kernels[1].correlation = 7;
  window.kernels[2].correlation = 8;
  window.tag_of_call[7] = tag.code();
  const profiler::TaggedKernels grouped = profiler::group_by_tag(window);
  ASSERT_EQ(grouped.of(tag).size(), 2u);
  EXPECT_EQ(grouped.of(tag)[0].name, "a");  // in start order
  ASSERT_EQ(grouped.untagged.size(), 1u);
  EXPECT_EQ(grouped.untagged[0].name, "stray");
  EXPECT_TRUE(grouped.of(Tag{TagKind::op, 0, 0}).empty());
}

TEST(StageTraceTest, MeasuredTraceLaysStagesEndToEnd) {
  const profiler::StageTrace t =
      profiler::map_stage(three_ops(), eager_kernels(), {replay(0), replay(1), replay(2)});
  // Spans of 415 + 2r ns: 415, 417, 419.
  EXPECT_DOUBLE_EQ(t.span_ns().p50, 417);
  EXPECT_EQ(profiler::median_iteration({t}), 1);
  // Each stage's first kernel 50 ns after the stage's start.
  const nlohmann::json trace = profiler::measured_trace({t, t}, {three_ops(), three_ops()}, 1,
                                                        {50, 50}, {{"device", "test"}});
  int kernels = 0, stages = 0;
  double last_stage_end = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") continue;
    ASSERT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("ts").get<double>(), 0);
    if (e.at("cat") == "kernel") {
      ++kernels;
      EXPECT_EQ(e.at("tid"), 0);
      EXPECT_TRUE(e.at("args").contains("op"));
      EXPECT_TRUE(e.at("args").contains("registers per thread"));
    } else if (e.at("cat") == "stage") {
      // Replay 1: a 50 ns lead, then 2000 to 2417 (norm ends at 2101, argmax 316 later).
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), last_stage_end);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 0.467);
      last_stage_end += e.at("dur").get<double>();
      ++stages;
    }
  }
  EXPECT_EQ(kernels, 8);
  EXPECT_EQ(stages, 2);
}

// ---- on the GPU --------------------------------------------------------------------------------

// The tile body each op kind's kernel runs (tile_kernel<Body>, or stream_kernel<Body> for a
// weight-streaming body), for checking names on their own.
std::string body_of(const std::string& kind) {
  static const std::map<std::string, std::string> bodies = {
      {"embedding", "EmbeddingTile"},
      {"rmsnorm", "RmsNormTile"},
      {"linear", "Linear"},
      {"lm-head", "Linear"},
      {"norm-linear", "LinearStreamTile"},
      {"linear-residual", "LinearStreamTile"},
      {"qk-norm", "QkNormTile"},
      {"rope", "RopeTile"},
      {"kv-append", "KvAppendTile"},
      {"attention", "Attention"},
      {"qkv-attention", "QkvAttentionDecodeTile"},
      {"silu-mul", "SiluMulTile"},
      {"residual-add", "ResidualAddTile"},
      {"argmax", "ArgmaxTile"}};
  const auto it = bodies.find(kind);
  return it == bodies.end() ? "no body listed for kind " + kind : it->second;
}

// Tasks 0, 2 on queue 0 and task 1 on queue 1, then `empty_queues` queues without tasks; task 0
// runs 1000-1100, task 1 1010-1300, task 2 1150-1200.
struct TwoQueues {
  executor::TaskTable table;
  std::vector<executor::TaskTimingRecord> records;
  explicit TwoQueues(int empty_queues = 0) {
    table.task_count = 3;
    table.queue_begin = {0, 2, 3};
    table.queue_begin.insert(table.queue_begin.end(), empty_queues, 3);
    table.tasks.resize(3);
    table.tasks[0].index = 0;
    table.tasks[1].index = 2;
    table.tasks[2].index = 1;
    records = {
        {0, 5, 0, 1000, 1100, 0, 0}, {1, 5, 1, 1010, 1300, 1, 1}, {2, 5, 2, 1150, 1200, 0, 0}};
  }
};

// A task lasts until the next task of its queue starts (the per-task runtime cost is its own); a
// queue's last task until its end.
TEST(TaskBenchTest, DurationsRunToTheNextTaskOnTheSameQueue) {
  TwoQueues q;
  const executor::TaskTable& table = q.table;
  std::vector<executor::TaskTimingRecord>& records = q.records;
  EXPECT_EQ(profiler::task_durations_ns(table, records), (std::vector<double>{150, 50, 290}));

  records[2].start_ns = 0;  // never ran
  EXPECT_THROW(profiler::task_durations_ns(table, records), Error);
  records.pop_back();
  EXPECT_THROW(profiler::task_durations_ns(table, records), Error);
}

// The same two queues and an empty one: queue 0 starts at 900 and its first task (0) at 1000,
// queue 1 at 1004 and its first task (2) at 1010. An empty queue has no startup; a first task
// that starts before its CTA, or a CTA that never recorded its start, is an error.
TEST(TaskBenchTest, StartupRunsFromTheCtasStartToItsFirstTask) {
  const TwoQueues q(1);
  const executor::TaskTable& table = q.table;
  const std::vector<executor::TaskTimingRecord>& records = q.records;
  EXPECT_EQ(profiler::task_startup_ns(table, records, {900, 1004, 1005}),
            (std::vector<double>{100, 6}));
  EXPECT_THROW(profiler::task_startup_ns(table, records, {1001, 1004, 1005}), Error);
  EXPECT_THROW(profiler::task_startup_ns(table, records, {0, 1004, 1005}), Error);
  EXPECT_THROW(profiler::task_startup_ns(table, records, {900, 1004}), Error);
}

// The same two queues, task 2 of op 6 and the others of op 5, CTAs entering at 900 and 1004: op 5
// runs 100-400 from the region's start (900), busy 100 + 290, after waits of 100 and 6; op 6's
// one task waits from its queue's task before (end 1100) to its start (1150).
TEST(TaskBenchTest, OpTimelinesSumBusyAndWaitPerOp) {
  TwoQueues q;
  q.table.op_begin = 5;
  q.table.op_end = 8;  // op 7 has no task in this launch: left out
  q.records[2].op = 6;
  const std::vector<profiler::OpTimeline> ops =
      profiler::op_timelines(q.table, q.records, {900, 1004});
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op, 5);
  EXPECT_EQ(ops[0].tasks, 2);
  EXPECT_EQ(ops[0].first_start_ns, 100);
  EXPECT_EQ(ops[0].last_end_ns, 400);
  EXPECT_EQ(ops[0].busy_ns, 390);
  EXPECT_EQ(ops[0].wait_ns, 106);
  EXPECT_EQ(ops[1].op, 6);
  EXPECT_EQ(ops[1].tasks, 1);
  EXPECT_EQ(ops[1].first_start_ns, 250);
  EXPECT_EQ(ops[1].last_end_ns, 300);
  EXPECT_EQ(ops[1].busy_ns, 50);
  EXPECT_EQ(ops[1].wait_ns, 50);
  EXPECT_THROW(profiler::op_timelines(q.table, q.records, {1001, 1004}), Error);
}

// A task's signal runs from its end to its counter's store; tasks without a publish record (as
// in files written before publish times) count in no mean.
TEST(TaskBenchTest, SignalRunsFromTheEndToThePublish) {
  TwoQueues q;
  q.table.op_begin = 5;
  q.table.op_end = 6;
  q.records[0].publish_ns = 1130;  // 30 after its end
  q.records[1].publish_ns = 1310;  // 10 after
  const std::vector<profiler::OpTimeline> ops =
      profiler::op_timelines(q.table, q.records, {900, 1004});
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].signaled, 2);
  EXPECT_EQ(ops[0].signal_ns, 40);
}

TEST(TaskBenchTest, DefaultCtaCountsAreOneQuarterHalfAll) {
  EXPECT_EQ(profiler::default_task_ctas(132), (std::vector<int>{1, 33, 66, 132}));
  EXPECT_EQ(profiler::default_task_ctas(2), (std::vector<int>{1, 2}));
  EXPECT_THROW(profiler::default_task_ctas(0), Error);
}

TEST(ProfilerGpuTest, TinyLlamaTraceHasOneRecordPerKernelOnItsOp) {
  MEGACUT_REQUIRE_GPU();
  const model::ModelSpec spec = model::load_model("tiny-llama");
  const model::Scenario scenario = model::make_scenario(spec, 2, 16);
  executor::ScenarioRunner runner(spec, scenario, executor::HostWeights::random(spec, 3), {});
  profiler::CuptiTracer& tracer = profiler::CuptiTracer::instance();
  const profiler::BatchOptions options{.warmup = 2, .runs = 7};
  const profiler::BatchResult r = profiler::profile_batch(runner, scenario, tracer, options);

  // Our tile bodies run one kernel per op: each op once eagerly, then in every replay, then
  // alone, cold and warm; besides them, the graph-launch sweep's.
  int64_t kernels = 0;
  for (int s = 0; s < runner.stage_count(); ++s) {
    kernels += int64_t{runner.stage_graph(s).op_count()} * (1 + options.warmup + options.runs);
  }
  int64_t ops = 0;
  for (int s = 0; s < runner.stage_count(); ++s) ops += runner.stage_graph(s).op_count();
  EXPECT_EQ(r.summary.standalone_kernels, ops * 2 * options.standalone_runs);
  EXPECT_GT(r.summary.launch_sweep_kernels, 0);
  EXPECT_EQ(r.summary.kernel_records,
            kernels + r.summary.standalone_kernels + r.summary.launch_sweep_kernels);
  EXPECT_EQ(r.summary.dropped_records, 0u);

  ASSERT_EQ(r.stages.size(), scenario.stages.size());
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const model::Graph& g = runner.stage_graph(static_cast<int>(s));
    const profiler::StageTrace& t = r.stages[s];
    ASSERT_EQ(t.replays.size(), static_cast<size_t>(options.runs));
    ASSERT_EQ(t.profile.ops.size(), static_cast<size_t>(g.op_count()));
    for (const auto& replay : t.replays) {
      ASSERT_EQ(replay.size(), static_cast<size_t>(g.op_count()));
      for (size_t p = 0; p < replay.size(); ++p) {
        EXPECT_GT(replay[p].end_ns, replay[p].start_ns);
        if (p > 0) {  // in order, but for timestamp jitter
          EXPECT_GE(replay[p].start_ns + profiler::kOverlapToleranceNs, replay[p - 1].end_ns);
        }
        EXPECT_NE(replay[p].graph_node, 0u) << "a replayed kernel outside its graph";
      }
    }
    for (const model::OpProfile& op : t.profile.ops) {
      const model::Op& o = g.op(op.index);
      EXPECT_EQ(op.name, o.name);
      const std::string kind(o.kind->name());
      const model::ConvKernel& k = *op.conv;
      // A streamed body's kernel is a persistent grid, a CTA an SM at most; others a CTA a tile.
      const bool streamed = k.kernel.find("stream_kernel<") != std::string::npos;
      EXPECT_TRUE(streamed || k.kernel.find("tile_kernel<") != std::string::npos) << k.kernel;
      EXPECT_NE(k.kernel.find(body_of(kind)), std::string::npos)
          << "op " << o.name << " (" << kind << ") mapped to " << k.kernel;
      EXPECT_GT(k.duration_ns.min, 0);
      EXPECT_EQ(k.duration_ns.count, options.runs);
      const int64_t ctas = int64_t{k.launch.grid[0]} * k.launch.grid[1] * k.launch.grid[2];
      if (streamed) {
        EXPECT_GT(ctas, 0);
        EXPECT_LE(ctas, o.tiling.count());
      } else {
        EXPECT_EQ(ctas, o.tiling.count());
      }
      if (op.index + 1 < g.op_count()) {
        ASSERT_TRUE(k.gap_to_next_ns.has_value());
        EXPECT_GE(k.gap_to_next_ns->min, 0);
      }
    }
    ASSERT_TRUE(t.profile.graph_ns.has_value());
    EXPECT_GT(t.profile.graph_ns->p50, r.summary.stages[s].kernels_p50_ns * 0.8);
  }
}

TEST(ProfilerGpuTest, WrittenProfileReadsBack) {
  MEGACUT_REQUIRE_GPU();
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = "megacut_profiler_test_" + std::to_string(getpid());
  profiler::ProfileOptions options;
  options.model = "tiny-llama";
  options.batches = {1, 2};
  options.prompt_len = 16;
  options.batch.warmup = 2;
  options.batch.runs = 5;
  options.micro.launches = 5;
  options.out = dir / (stem + ".json");
  options.trace = dir / (stem + ".trace.json");
  const model::Profile measured = profiler::run_profile(options);

  const model::Profile p = model::read_profile(options.out);
  EXPECT_TRUE(p.same_content(measured));
  EXPECT_EQ(p.batch_sizes(), (std::vector<int64_t>{1, 2}));
  // Every linear and lm-head op has its cuBLASLt kernel beside ours, traced as often; no other.
  for (const model::BatchProfile& b : p.batches) {
    int gemms = 0;
    for (const model::StageProfile& s : b.stages) {
      for (const model::OpProfile& op : s.ops) {
        const std::string where =
            "batch " + std::to_string(b.batch) + " " + s.stage + " " + op.name;
        ASSERT_TRUE(op.conv.has_value()) << where;
        EXPECT_EQ(op.conv->provider, "ours") << where;
        // Every op but the stage's first has its step under PDL, traced as often.
        if (op.index > 0) {
          ASSERT_TRUE(op.conv->pdl_step_ns.has_value()) << where;
          EXPECT_EQ(op.conv->pdl_step_ns->count, options.batch.runs) << where;
        } else {
          EXPECT_FALSE(op.conv->pdl_step_ns.has_value()) << where;
        }
        if (!model::cublaslt_can_run(op.kind)) {
          EXPECT_FALSE(op.conv_cublaslt.has_value()) << where;
          continue;
        }
        ++gemms;
        ASSERT_TRUE(op.conv_cublaslt.has_value()) << where;
        EXPECT_EQ(op.conv_cublaslt->provider, "cublas") << where;
        EXPECT_EQ(op.conv_cublaslt->duration_ns.count, options.batch.runs) << where;
        EXPECT_GT(op.conv_cublaslt->duration_ns.min, 0) << where;
      }
    }
    EXPECT_GT(gemms, 0) << "batch " << b.batch;
  }
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  EXPECT_EQ(p.device.sm_count, prop.multiProcessorCount);
  EXPECT_GT(p.device.copy_bandwidth_gb_per_s, 0);
  EXPECT_GT(p.micro.graph_launch_ns.p50, 0);
  EXPECT_GT(p.micro.kernel_gap_ns.p50, 0);
  EXPECT_GT(p.micro.counter_signal_to_wait_ns.p50, 0);
  EXPECT_LT(p.micro.counter_signal_to_wait_ns.p50, 100000);
  ASSERT_TRUE(p.micro.flagged_word_hop_ns.has_value());
  EXPECT_GT(p.micro.flagged_word_hop_ns->p50, 0);
  EXPECT_LT(p.micro.flagged_word_hop_ns->p50, 100000);
  // The launch sweep, at the start and beside each batch's replays: every size measured. What a
  // launch adds beyond the traced kernels can fall to 0 for long chains (tracing lengthens them
  // about as much as launching them takes), never for one node, and the fit stays positive.
  auto check_sweep = [](const std::vector<model::GraphLaunchPoint>& points, int64_t samples,
                        const std::string& where) {
    ASSERT_GE(points.size(), 2u) << where;
    std::vector<double> nodes, launch_ns;
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(points[i].launch_ns.count, samples) << where << ", " << points[i].nodes;
      if (i > 0) {
        EXPECT_GT(points[i].nodes, points[i - 1].nodes) << where;
      }
      nodes.push_back(static_cast<double>(points[i].nodes));
      launch_ns.push_back(points[i].launch_ns.p50);
    }
    EXPECT_GT(points.front().launch_ns.p50, 0) << where;
    EXPECT_GT(simulator::fit_graph_launch(nodes, launch_ns).at(nodes.back()), 0) << where;
    // Every size has its traced span; the long chains their back-to-back replay as well, which
    // takes longer than the launch measured for the same graph and no more than half again the
    // traced span (whether the GPU or the host set its pace, these cannot tell).
    for (const model::GraphLaunchPoint& g : points) {
      ASSERT_TRUE(g.span_ns.has_value()) << where << ", " << g.nodes;
      EXPECT_EQ(g.span_ns->count, samples) << where << ", " << g.nodes;
      EXPECT_EQ(g.back_to_back_ns.has_value(), g.nodes >= 256) << where << ", " << g.nodes;
      if (!g.back_to_back_ns) continue;
      EXPECT_EQ(g.back_to_back_ns->count, samples) << where << ", " << g.nodes;
      EXPECT_GT(g.back_to_back_ns->p50, g.launch_ns.p50) << where << ", " << g.nodes;
      EXPECT_LT(g.back_to_back_ns->p50, 1.5 * g.span_ns->p50) << where << ", " << g.nodes;
    }
  };
  check_sweep(p.micro.graph_launch_by_nodes, options.micro.launches, "micro-benchmarks");
  for (const model::BatchProfile& b : p.batches) {
    check_sweep(b.graph_launch_by_nodes, options.batch.runs, "batch " + std::to_string(b.batch));
  }
  // Each op alone: its kernel cold and warm, its tasks at each CTA count up to its tile count.
  const std::vector<int> ctas = profiler::default_task_ctas(prop.multiProcessorCount);
  const model::ModelSpec spec = model::load_model("tiny-llama");
  const model::Scenario scenario = model::make_scenario(spec, 1, options.prompt_len);
  for (const model::BatchProfile& b : p.batches) {
    for (const model::StageProfile& s : b.stages) {
      model::Stage stage = scenario.stage(s.stage);
      const model::Graph g = model::build_decoder_stage(spec.decoder, stage, b.batch);
      for (const model::OpProfile& op : s.ops) {
        SCOPED_TRACE("batch " + std::to_string(b.batch) + " " + s.stage + " " + op.name);
        ASSERT_TRUE(op.conv.has_value());
        ASSERT_TRUE(op.conv->standalone_cold_ns.has_value());
        ASSERT_TRUE(op.conv->standalone_warm_ns.has_value());
        EXPECT_EQ(op.conv->standalone_cold_ns->count, options.batch.standalone_runs);
        EXPECT_GT(op.conv->standalone_cold_ns->min, 0);
        EXPECT_GT(op.conv->standalone_warm_ns->min, 0);
        ASSERT_TRUE(op.task_region.has_value());
        EXPECT_GT(op.task_region->threads, 0);
        EXPECT_GT(op.task_region->registers, 0);
        // A ring is whole 16 KB slots of the region's shared memory; the fused products run on
        // the weight-streaming body only, so theirs stream.
        EXPECT_LE(op.task_region->ring_bytes, op.task_region->smem_bytes);
        EXPECT_EQ(op.task_region->ring_bytes % 16384, 0);
        if (op.kind == "norm-linear" || op.kind == "linear-residual") {
          EXPECT_GE(op.task_region->ring_bytes, 2 * 16384);
        }
        // What the body does with flagged words, as a region over the op would find it: at
        // batch 1 the decode linears and attention take and give them (executor/tiles/flagged.cuh).
        ASSERT_TRUE(op.flagged_words.has_value());
        if (b.batch == 1 && s.stage == "decode" &&
            (op.kind == "norm-linear" || op.kind == "linear-residual" ||
             op.kind == "qkv-attention")) {
          EXPECT_TRUE(op.flagged_words->takes_x && op.flagged_words->gives_y);
        }
        if (op.kind == "embedding" || op.kind == "argmax") {
          EXPECT_FALSE(op.flagged_words->takes_x);
        }
        const int64_t tiles = g.op(op.index).tiling.count();
        std::vector<int> expected;
        for (int c : ctas) {
          const int capped = static_cast<int>(std::min<int64_t>(c, tiles));
          if (expected.empty() || expected.back() != capped) expected.push_back(capped);
        }
        std::vector<int> measured;
        for (const model::TaskBenchmark& t : op.tasks) {
          measured.push_back(t.ctas);
          EXPECT_GE(t.duration_ns.count, std::min<int64_t>(tiles, 64));
          EXPECT_GT(t.duration_ns.min, 0);
          // One startup per CTA and launch, each a CTA's start to its first task: positive,
          // and short next to a whole task.
          ASSERT_TRUE(t.startup_ns.has_value());
          EXPECT_GE(t.startup_ns->count, t.ctas);
          EXPECT_GT(t.startup_ns->min, 0);
          EXPECT_LT(t.startup_ns->p50, 1e6);
        }
        EXPECT_EQ(measured, expected);
      }
    }
  }

  std::ifstream in(options.trace);
  const nlohmann::json trace = nlohmann::json::parse(in);
  int kernels = 0;
  for (const auto& e : trace.at("traceEvents")) kernels += e.value("cat", "") == "kernel";
  int ops = 0;
  for (const model::StageProfile& s : p.batches.front().stages) ops += s.ops.size();
  EXPECT_EQ(kernels, ops);
  std::filesystem::remove(options.out);
  std::filesystem::remove(options.trace);
}

}  // namespace
}  // namespace megacut::testing
