// The simulator end to end on synthetic profiles: analytic cases with the expectation worked
// out in a comment before each assertion, then properties over random compositions.
#include "simulator/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model/composition.h"
#include "model/error.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::simulator {
namespace {

using model::constant_stats;
using model::Region;
using model::RegionKind;

constexpr int64_t kPrompt = 16;

model::Profile tiny(const std::string& model = "tiny-llama") {
  return testing::synthetic_profile(model, {1, 2, 4}, kPrompt);
}

// Every conventional kernel takes `kernel_ns`, every gap between kernels `gap_ns`.
model::Profile uniform_conv(model::Profile p, double kernel_ns, double gap_ns) {
  for (model::BatchProfile& b : p.batches) {
    for (model::StageProfile& s : b.stages) {
      for (model::OpProfile& op : s.ops) {
        op.conv->duration_ns = constant_stats(kernel_ns);
        if (op.conv->gap_to_next_ns) op.conv->gap_to_next_ns = constant_stats(gap_ns);
      }
    }
  }
  return p;
}

model::OpProfile& op_of(model::Profile& p, int64_t batch, const std::string& stage, int op) {
  for (model::BatchProfile& b : p.batches) {
    if (b.batch != batch) continue;
    for (model::StageProfile& s : b.stages) {
      if (s.stage != stage) continue;
      for (model::OpProfile& o : s.ops) {
        if (o.index == op) return o;
      }
    }
  }
  throw Error("test: no such op");
}

model::Composition parse(Simulator& sim, const std::string& text, int64_t batch) {
  return model::parse_composition(text, sim.stage_shapes(batch));
}

TEST(SimulatorTest, ConventionalStageIsLaunchPlusKernelsPlusGaps) {
  Simulator sim(uniform_conv(tiny(), 1000, 200));
  const Prediction p = sim.simulate(parse(sim, "conv", 1), 1);
  // tiny-llama decode has 14 ops (embed, 2 layers of 5 fused ops, final_norm, lm_head,
  // argmax): 4 µs graph launch + 14 x 1 µs + 13 x 0.2 µs = 20.6 µs.
  EXPECT_EQ(p.stage("decode").time_ns, 20600);
  EXPECT_EQ(p.decode_step_ns, 20600);
  // TTFO is the prefill (16 rows: its norms fused, but rope, kv-append and attention apart, 7
  // ops a layer, 18 ops): 4 + 18 x 1 + 17 x 0.2 = 25.4 µs; the decode step gives batch 1 x 1
  // token per 20.6 µs = 48,544 tokens/s.
  EXPECT_EQ(p.ttfo_ns, 25400);
  EXPECT_NEAR(p.throughput_per_s, 1e9 / 20600, 1e-6);
}

TEST(SimulatorTest, SplittingAConventionalRegionChangesNothing) {
  // conv[0:10] conv[10:14]: the boundary between them is the same kernel boundary, with op 9's
  // measured gap: 20.6 µs as before.
  Simulator sim(uniform_conv(tiny(), 1000, 200));
  EXPECT_EQ(sim.simulate(parse(sim, "decode: conv[0:10] conv[10:]", 1), 1).decode_step_ns, 20600);
}

TEST(SimulatorTest, RegionBoundariesPayLaunchGaps) {
  // mk[4:5] is one op: 20 tiles of tiny-llama's decode gate_up (layer 0's, its norm fused),
  // 1 µs each at any CTA count (no bandwidth term), over 8 SMs: 3 waves, 3 µs of tasks.
  model::Profile q = uniform_conv(tiny(), 1000, 200);
  for (model::TaskBenchmark& t : op_of(q, 1, "decode", 4).tasks)
    t.duration_ns = constant_stats(1000);
  Simulator sim(std::move(q));
  const Prediction p = sim.simulate(parse(sim, "decode: conv[0:4] mk[4:5] conv[5:]", 1), 1);
  const StagePrediction& s = p.stage("decode");
  ASSERT_EQ(s.regions.size(), 3u);
  // conv[0:4]: 4 µs launch + 4 x 1 µs + 3 x 0.2 µs = 8.6 µs.
  EXPECT_EQ(s.regions[0]->time_ns, 8600);
  // mk[4:5]: 0.8 µs kernel gap + 3 µs region launch + 0.5 µs startup + 3 µs of tasks + 1 µs
  // drain = 8.3 µs.
  EXPECT_EQ(s.regions[1]->gap_ns, 800);
  EXPECT_EQ(s.regions[1]->work_ns, 3000);
  EXPECT_EQ(s.regions[1]->time_ns, 8300);
  EXPECT_EQ(s.regions[1]->tasks, 20);
  // conv[5:14] after an mk region: 0.8 µs kernel gap + 9 x 1 µs + 8 x 0.2 µs = 11.4 µs.
  EXPECT_EQ(s.regions[2]->time_ns, 11400);
  EXPECT_EQ(s.time_ns, 8600 + 8300 + 11400);
  EXPECT_EQ(s.region_start_ns, (std::vector<TimeNs>{0, 8600, 16900}));

  // With PDL every boundary before one of our kernels pays the 0.3 µs PDL gap: the two at the
  // mk region 2 x 0.5 µs less, the 3 + 8 inside the conv regions 11 x 0.1 µs more.
  model::Profile r = uniform_conv(tiny(), 1000, 200);
  for (model::TaskBenchmark& t : op_of(r, 1, "decode", 4).tasks)
    t.duration_ns = constant_stats(1000);
  Simulator pdl(std::move(r), SimOptions{.pdl = true});
  EXPECT_EQ(pdl.simulate(parse(pdl, "decode: conv[0:4] mk[4:5] conv[5:]", 1), 1).decode_step_ns,
            s.time_ns - 1000 + 1100);
}

// Every kernel of ours after one of ours gets a PDL step of `step_ns` (as the profile's PDL trace
// records it).
model::Profile with_pdl_steps(model::Profile p, double step_ns) {
  for (model::BatchProfile& b : p.batches) {
    for (model::StageProfile& s : b.stages) {
      for (model::OpProfile& op : s.ops) {
        if (op.index > 0) op.conv->pdl_step_ns = constant_stats(step_ns);
      }
    }
  }
  return p;
}

TEST(SimulatorTest, WithPdlAKernelAfterOneOfOursAddsItsMeasuredStep) {
  // Steps of 0.7 µs (each 1 µs kernel started 0.3 µs before the one before it ended): the decode
  // stage is 4 µs launch + 1 µs for the first kernel + 13 x 0.7 µs = 14.1 µs, however its conv
  // ops are cut into regions; without PDL, 20.6 µs as before.
  const model::Profile p = with_pdl_steps(uniform_conv(tiny(), 1000, 200), 700);
  Simulator pdl(p, SimOptions{.pdl = true});
  EXPECT_EQ(pdl.simulate(parse(pdl, "conv", 1), 1).decode_step_ns, 14100);
  EXPECT_EQ(pdl.simulate(parse(pdl, "decode: conv[0:5] conv[5:]", 1), 1).decode_step_ns, 14100);
  Simulator plain(p);
  EXPECT_EQ(plain.simulate(parse(plain, "conv", 1), 1).decode_step_ns, 20600);
  // Steps longer than the kernel: the rest is the boundary, 4 + 1 + 13 x 1.5 µs.
  Simulator slow(with_pdl_steps(uniform_conv(tiny(), 1000, 200), 1500), SimOptions{.pdl = true});
  const Prediction q = slow.simulate(parse(slow, "conv", 1), 1);
  EXPECT_EQ(q.decode_step_ns, 24500);
  EXPECT_EQ(q.stage("decode").regions[0]->kernels, 14);
}

TEST(SimulatorTest, APdlStepNeedsOurKernelsOnBothSides) {
  // After an mk region the PDL micro-benchmark's gap applies (0.3 µs), not the step; and the
  // lm-head on cuBLASLt (op 12 of the decode stage) is launched plainly: its own boundary is the
  // traced 0.2 µs gap and its 1 µs; argmax after it has no step either, but launches early: the
  // 0.3 µs PDL gap and its 1 µs.
  model::Profile p = with_pdl_steps(uniform_conv(tiny(), 1000, 200), 700);
  for (model::TaskBenchmark& t : op_of(p, 1, "decode", 4).tasks)
    t.duration_ns = constant_stats(1000);
  Simulator pdl(p, SimOptions{.pdl = true});
  const Prediction mixed = pdl.simulate(parse(pdl, "decode: conv[0:4] mk[4:5] conv[5:]", 1), 1);
  // conv[5:14] after the mk region: 0.3 µs + 1 µs + 8 x 0.7 µs = 6.9 µs.
  EXPECT_EQ(mixed.stage("decode").regions[2]->time_ns, 6900);

  model::OpProfile& head = op_of(p, 1, "decode", 12);
  head.conv_cublaslt = *head.conv;
  head.conv_cublaslt->provider = "cublas";
  head.conv_cublaslt->pdl_step_ns.reset();
  model::ProviderChoice choice;
  choice.cublaslt_ops["decode"] = {12};
  Simulator lt(p, SimOptions{.pdl = true, .provider_choice = choice});
  // 4 + 1 + 11 x 0.7 (ops 1-11) + (0.2 + 1) (op 12) + (0.3 + 1) (op 13) = 15.2 µs.
  EXPECT_EQ(lt.simulate(parse(lt, "conv", 1), 1).decode_step_ns, 15200);
}

TEST(SimulatorTest, ConventionalRegionAddsMeans) {
  // Op 5's kernel usually takes 1 µs but now and then much longer: p50 1 µs, mean 1.3 µs; the
  // gap after op 7 likewise, p50 0.2 µs, mean 0.5 µs. A stage of many such terms adds their
  // means: 20.6 µs + 0.3 µs + 0.3 µs = 21.2 µs.
  model::Profile q = uniform_conv(tiny(), 1000, 200);
  op_of(q, 1, "decode", 5).conv->duration_ns.mean = 1300;
  op_of(q, 1, "decode", 7).conv->gap_to_next_ns->mean = 500;
  Simulator sim(std::move(q));
  EXPECT_EQ(sim.simulate(parse(sim, "conv", 1), 1).decode_step_ns, 21200);
}

// The graph-launch sweep of a profile: launch(n) = 4 µs + 50 ns per node, measured exactly.
model::Profile with_launch_sweep(model::Profile p) {
  p.micro.graph_launch_by_nodes.clear();
  for (int64_t n : {1, 16, 64, 256}) {
    p.micro.graph_launch_by_nodes.push_back({n, constant_stats(4000.0 + 50.0 * n)});
  }
  return p;
}

TEST(SimulatorTest, GraphLaunchGrowsWithTheStageGraphsNodes) {
  Simulator sim(with_launch_sweep(uniform_conv(tiny(), 1000, 200)));
  EXPECT_NEAR(sim.graph_launch(1).fixed_ns, 4000, 1e-6);
  EXPECT_NEAR(sim.graph_launch(1).per_node_ns, 50, 1e-9);
  // tiny-llama decode, all conv: 14 nodes, launched in 4 µs + 14 x 50 ns = 4.7 µs, then
  // 14 x 1 µs + 13 x 0.2 µs: 21.3 µs.
  const Prediction p = sim.simulate(parse(sim, "conv", 1), 1);
  EXPECT_EQ(p.stage("decode").regions[0]->graph_nodes, 14);
  EXPECT_EQ(p.stage("decode").regions[0]->gap_ns, 4700);
  EXPECT_EQ(p.decode_step_ns, 21300);

  // An op that runs two kernels (cuBLASLt's split-K GEMM, here layer 0's gate_up) is two
  // nodes: 50 ns more.
  model::Profile two = with_launch_sweep(uniform_conv(tiny(), 1000, 200));
  op_of(two, 1, "decode", 4).conv->kernel = "gemm_main + gemm_reduce";
  Simulator sim2(std::move(two));
  EXPECT_EQ(sim2.simulate(parse(sim2, "conv", 1), 1).decode_step_ns, 21350);
}

TEST(SimulatorTest, ABatchsOwnLaunchSweepComesFirst) {
  // The micro-benchmarks say 4 µs + 50 ns per node; batch 2's replays ran beside a sweep that
  // says 6 µs + 100 ns per node, batch 4's 8 µs + 200 ns. Batch 2's decode (14 nodes) launches in
  // 6 µs + 1.4 µs = 7.4 µs; batch 1, with no sweep of its own, in 4.7 µs; batch 3, interpolated
  // half way, in 7 µs + 14 x 150 ns = 9.1 µs.
  model::Profile q = with_launch_sweep(uniform_conv(tiny(), 1000, 200));
  for (model::BatchProfile& b : q.batches) {
    if (b.batch == 1) continue;
    const double fixed = b.batch == 2 ? 6000 : 8000, per_node = b.batch == 2 ? 100 : 200;
    for (int64_t n : {1, 64}) {
      b.graph_launch_by_nodes.push_back({n, constant_stats(fixed + per_node * n)});
    }
  }
  Simulator sim(std::move(q), SimOptions{.allow_interpolate = true});
  EXPECT_EQ(sim.simulate(parse(sim, "conv", 2), 2).stage("decode").regions[0]->gap_ns, 7400);
  EXPECT_EQ(sim.simulate(parse(sim, "conv", 1), 1).stage("decode").regions[0]->gap_ns, 4700);
  EXPECT_EQ(sim.simulate(parse(sim, "conv", 3), 3).stage("decode").regions[0]->gap_ns, 9100);
}

TEST(SimulatorTest, EachRegionPaysTheLaunchOfItsOwnNodes) {
  // conv[0:4] mk[4:5] conv[5:] has 4 + 1 + 9 = 14 nodes (an mk region is one kernel):
  // 4 µs + 14 x 50 ns of launch in all, each region paying its nodes where it starts.
  // conv[0:4]: 4 µs + 4 x 50 ns + 4 x 1 µs + 3 x 0.2 µs = 8.8 µs;
  // mk[4:5] (gate_up, 20 tiles of 1 µs on 8 SMs): 0.8 µs gap + 1 x 50 ns + 3.5 µs launch and
  // startup + 3 µs of tasks + 1 µs drain = 8.35 µs;
  // conv[5:14]: 0.8 µs + 9 x 50 ns + 9 x 1 µs + 8 x 0.2 µs = 11.85 µs.
  model::Profile q = with_launch_sweep(uniform_conv(tiny(), 1000, 200));
  for (model::TaskBenchmark& t : op_of(q, 1, "decode", 4).tasks)
    t.duration_ns = constant_stats(1000);
  Simulator sim(std::move(q));
  const Prediction p = sim.simulate(parse(sim, "decode: conv[0:4] mk[4:5] conv[5:]", 1), 1);
  const StagePrediction& s = p.stage("decode");
  ASSERT_EQ(s.regions.size(), 3u);
  EXPECT_EQ(s.regions[0]->time_ns, 8800);
  EXPECT_EQ(s.regions[1]->graph_nodes, 1);
  EXPECT_EQ(s.regions[1]->time_ns, 8350);
  EXPECT_EQ(s.regions[2]->time_ns, 11850);
  EXPECT_EQ(s.time_ns, 8800 + 8350 + 11850);
}

TEST(SimulatorTest, MegakernelOfOneOpMatchesItsStandaloneBenchmark) {
  // The synthetic device: a gate_up tile of decode batch 1 (8 features, a gate and an up row of
  // 64 k each, its rmsnorm and silu-mul fused: norm-linear with glu) costs 300 ns + (2 x 16 x 64
  // + 3 x 64 + 5 x 8 = 2,280 FLOP) / 500 FLOP/ns = 304.56 ns solo and moves 128 (x) + 2,048 (W)
  // + 128 (the norm's scale) + 16 (y) = 2,320 bytes, 2.32 ns at 1 TB/s per task in flight. 20
  // tiles over 8 SMs: waves of 8, 8 and 4 tasks in flight, each task 304.56 + 8 x 2.32 (or 4 x
  // 2.32) ns: about 323.1 + 323.1 + 313.8 = 960.1 ns.
  Simulator sim(tiny());
  const TaskFit fit = sim.task_fit("decode", 1, 4);
  EXPECT_NEAR(fit.solo_ns, 304.56, 1e-6);
  EXPECT_NEAR(fit.shared_ns, 2.32, 1e-9);
  const auto r =
      sim.simulate_region("decode", 1, Region{RegionKind::mk, 4, 5}, Boundary::after_conv);
  EXPECT_NEAR(static_cast<double>(r->work_ns), 960.1, 3);
}

TEST(SimulatorTest, TasksCheckTheirDependenciesInsideTheRegionInRoundsOfTheBlock) {
  // With the micro-benchmark, each task's fixed time grows by one 200 ns round per block's
  // worth (the region's threads) of its dependencies inside the region that its queue has not
  // seen done (model::task_waits); those on ops before the region were met at its kernel
  // boundary and cost nothing. Without it, nothing is added.
  testing::SyntheticDevice without;
  without.dependency_check_round_ns = 0;
  Simulator with_check(tiny()),
      no_check(testing::synthetic_profile("tiny-llama", {1}, kPrompt, without));
  const Region region{RegionKind::mk, 3, 12};
  const model::Graph& g = with_check.graph("prefill", 1);
  const int threads = with_check.region_config("prefill", 1, region).threads;
  const TaskCosts a = with_check.region_task_costs("prefill", 1, region);
  const TaskCosts b = no_check.region_task_costs("prefill", 1, region);
  ASSERT_EQ(a.fixed_ns.size(), b.fixed_ns.size());
  const model::TaskWaits waits = model::task_waits(
      g, model::make_schedule(g, region.begin, region.end, with_check.profile().device.sm_count));
  int64_t checked = 0;
  for (size_t j = 0; j < a.fixed_ns.size(); ++j) {
    const int64_t inside = waits.count(static_cast<int64_t>(j));
    const int64_t rounds = (inside + threads - 1) / threads;
    EXPECT_EQ(a.fixed_ns[j] - b.fixed_ns[j], 200 * rounds) << "task " << j;
    checked += rounds > 0;
  }
  EXPECT_GT(checked, 0);
  const model::Composition mk = parse(no_check, "mk", 1);
  EXPECT_NE(no_check.simulate(mk, 1).notes.at(0).find("dependency_check_round_ns"),
            std::string::npos);
  EXPECT_TRUE(with_check.simulate(mk, 1).notes.empty());
}

TEST(SimulatorTest, HopsByFlaggedWordsTakeTheWordLatency) {
  // Every op's body takes and gives flagged words, so the decode step as one region hands each
  // op's x over from the op before by words: model::data_edges of the whole stage, a chain of
  // 13 hops. With the word hop as long as the counter's (400 ns) and no dependency checks, the
  // prediction is the counters' to the nanosecond; with a word hop of 0 the step is shorter
  // (hops between SMs lie on its path). A profile without the word hop's micro-benchmark hands
  // nothing over by words and says so.
  auto profile = [](int64_t word_ns, bool words) {
    testing::SyntheticDevice d;
    d.dependency_check_round_ns = 0;
    d.flagged_word_hop_ns = word_ns;
    d.flagged_words = words;
    return testing::synthetic_profile("tiny-llama", {1}, kPrompt, d);
  };
  // Without the micro-benchmark, ops that can take and give words still hand nothing over.
  model::Profile old_profile = profile(0, true);
  for (model::StageProfile& s : old_profile.batches[0].stages) {
    for (model::OpProfile& op : s.ops) op.flagged_words = model::FlaggedWordsSupport{true, true};
  }
  Simulator counters(profile(400, false)), same(profile(400, true)), fast(profile(1, true)),
      unmeasured(old_profile);
  const Region region{RegionKind::mk, 0, 14};
  const model::Graph& g = fast.graph("decode", 1);
  ASSERT_EQ(g.op_count(), 14);
  const TaskCosts costs = fast.region_task_costs("decode", 1, region);
  auto all = [](int) { return true; };
  EXPECT_EQ(costs.by_data, model::data_edges(g, 0, 14, all, all));
  EXPECT_EQ(costs.by_data.size(), 13u);
  EXPECT_TRUE(counters.region_task_costs("decode", 1, region).by_data.empty());
  EXPECT_TRUE(unmeasured.region_task_costs("decode", 1, region).by_data.empty());
  EXPECT_EQ(fast.megakernel_params().word_latency_ns, 1);

  const model::Composition mk = parse(fast, "decode: mk", 1);
  const Prediction by_counters = counters.simulate(mk, 1);
  EXPECT_EQ(same.simulate(mk, 1).decode_step_ns, by_counters.decode_step_ns);
  EXPECT_LT(fast.simulate(mk, 1).decode_step_ns, by_counters.decode_step_ns);
  auto says_no_words = [](const Prediction& p) {
    return std::ranges::any_of(p.notes, [](const std::string& note) {
      return note.find("micro.flagged_word_hop_ns") != std::string::npos;
    });
  };
  EXPECT_FALSE(says_no_words(fast.simulate(mk, 1)));
  const Prediction old = unmeasured.simulate(mk, 1);
  EXPECT_EQ(old.decode_step_ns, by_counters.decode_step_ns);
  EXPECT_TRUE(says_no_words(old));
}

TEST(SimulatorTest, StreamedBodiesLoadAsMuchOfTheirWeightsAheadAsTheRingHolds) {
  // The decode step's products (norm-linear, linear-residual, lm-head) with a weight ring of
  // 4 KB: each task loads ahead the share of the bytes its fit moves that min(its weights,
  // 4 KB) is of all it reads and writes; the other ops nothing. A profile without rings loads
  // nothing ahead, and the region runs faster with them.
  auto streamed = [](std::string_view kind) {
    return kind == "norm-linear" || kind == "linear-residual" || kind == "lm-head";
  };
  model::Profile with_rings = tiny();
  for (model::StageProfile& s : with_rings.batches[0].stages) {
    for (model::OpProfile& op : s.ops) {
      if (!op.task_region || !streamed(op.kind)) continue;
      op.task_region->smem_bytes = std::max<int64_t>(op.task_region->smem_bytes, 4096);
      op.task_region->ring_bytes = 4096;
    }
  }
  Simulator sim(with_rings), plain(tiny());
  const model::Graph& g = sim.graph("decode", 1);
  const Region region{RegionKind::mk, 0, g.op_count()};
  EXPECT_EQ(sim.region_config("decode", 1, region).ring_bytes, 4096);
  const TaskCosts costs = sim.region_task_costs("decode", 1, region);
  ASSERT_EQ(costs.ahead_bytes.size(), costs.bytes.size());
  int ahead = 0;
  for (model::TaskId id = 0; id < g.task_count(); ++id) {
    const model::TileCost c = g.task_cost(id);
    const double expected = streamed(g.op(g.task(id).op).kind->name())
                                ? costs.bytes[id] * std::min<double>(c.stream_bytes, 4096) /
                                      static_cast<double>(c.bytes_read + c.bytes_written)
                                : 0.0;
    EXPECT_DOUBLE_EQ(costs.ahead_bytes[id], expected) << "task " << id;
    ahead += costs.ahead_bytes[id] > 0;
  }
  EXPECT_GT(ahead, 0);
  EXPECT_TRUE(plain.region_task_costs("decode", 1, region).ahead_bytes.empty());
  const Boundary start = Boundary::stage_start;
  EXPECT_LT(sim.simulate_region("decode", 1, region, start)->work_ns,
            plain.simulate_region("decode", 1, region, start)->work_ns);
}

TEST(SimulatorTest, RegionLaunchAddsTheRuntimesStartupToTheTrivialRegions) {
  // A region is launched as the micro-benchmark's trivial region is (3,000 ns), then each CTA
  // does the runtime's own work before its first task: 500 ns in the synthetic task benchmarks.
  // Without that measurement only the 3,000 ns are charged, and the prediction says so.
  testing::SyntheticDevice without;
  without.region_startup_ns = 0;
  Simulator with_startup(tiny()),
      no_startup(testing::synthetic_profile("tiny-llama", {1}, kPrompt, without));
  const Region region{RegionKind::mk, 3, 12};
  const auto a = with_startup.simulate_region("decode", 1, region, Boundary::after_conv);
  const auto b = no_startup.simulate_region("decode", 1, region, Boundary::after_conv);
  EXPECT_EQ(a->launch_ns, 3500);
  EXPECT_EQ(b->launch_ns, 3000);
  EXPECT_EQ(a->work_ns, b->work_ns);
  EXPECT_EQ(a->time_ns - b->time_ns, 500);
  const model::Composition mk = parse(no_startup, "mk", 1);
  const std::vector<std::string> notes = no_startup.simulate(mk, 1).notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("startup_ns") != std::string::npos;
  }));
}

TEST(SimulatorTest, MixedRegionGetsThePredictedConfiguration) {
  // decode ops 7..12 hold layer 1's attention (128 threads, 168 registers), its fused linears
  // and final_norm (128 threads, 40 registers), and lm_head (512 threads, 96 registers, 48 KiB):
  // 512 x 168 does not fit 65,536 registers, so the region gets 128 and attention (op 7) runs
  // register-limited.
  Simulator sim(tiny());
  const auto r =
      sim.simulate_region("decode", 1, Region{RegionKind::mk, 7, 13}, Boundary::after_conv);
  ASSERT_TRUE(r->config.has_value());
  EXPECT_EQ(*r->config, (model::RegionConfig{512, 128, 48 * 1024}));
  EXPECT_EQ(r->register_limited_ops, std::vector<int>{7});
}

TEST(SimulatorTest, RegionsAreCachedByContent) {
  Simulator sim(tiny());
  const Region region{RegionKind::mk, 3, 12};
  const auto a = sim.simulate_region("prefill", 2, region, Boundary::after_conv);
  const auto b = sim.simulate_region("prefill", 2, region, Boundary::after_conv);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(sim.cache_stats().hits, 1);
  // Another predecessor kind is another entry (it may pay another gap).
  sim.simulate_region("prefill", 2, region, Boundary::after_mk);
  EXPECT_EQ(sim.cache_stats().misses, 2);
  // A region at op 0 follows the stage start and nothing else.
  EXPECT_THROW(sim.simulate_region("prefill", 2, Region{RegionKind::mk, 0, 3}, Boundary::after_mk),
               Error);
  EXPECT_THROW(sim.simulate_region("prefill", 2, Region{RegionKind::mk, 3, 99}, Boundary::after_mk),
               Error);
}

std::string error_of(Simulator& sim, const std::string& composition, int64_t batch) {
  try {
    sim.simulate(parse(sim, composition, batch), batch);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SimulatorTest, MissingDataNamesOpStageAndBatch) {
  model::Profile p = tiny();
  op_of(p, 2, "decode", 7).conv.reset();
  op_of(p, 2, "decode", 2).tasks.clear();
  Simulator sim(std::move(p));
  EXPECT_EQ(error_of(sim, "decode: conv", 2),
            "profile synthetic tiny-llama: batch 2, stage decode, op 7 "
            "(layers.1.attn.attention): no conventional kernel measured (needed by conv[0:14])");
  EXPECT_EQ(error_of(sim, "decode: conv[0:1] mk[1:14]", 2),
            "profile synthetic tiny-llama: batch 2, stage decode, op 2 (layers.0.attn.attention): "
            "no standalone task benchmark measured (needed by mk[1:14])");
  // Other batches still have both.
  EXPECT_EQ(error_of(sim, "decode: conv[0:1] mk[1:14]", 1), "(no error)");
  EXPECT_EQ(error_of(sim, "conv", 3),
            "profile synthetic tiny-llama: no measurements at batch 3 (measured: 1, 2, 4); "
            "profile that batch, or allow interpolation (--allow-interpolate)");
}

// A profile built in code skips the reader's bound on durations (an hour): times that pass
// 2^53 ns, summed or converted, name the profile, batch, stage and region, where they once
// wrapped into negative or plausible-looking predictions.
TEST(SimulatorTest, PredictedTimesPast2To53NsNameWhereTheyArise) {
  // 18 kernels of 10^15 ns: the tenth brings prefill past 2^53 (9.007 x 10^15) ns.
  Simulator summed(uniform_conv(tiny(), 1e15, 200));
  const std::string message = error_of(summed, "conv", 1);
  EXPECT_EQ(message.substr(0, message.find(": a predicted time")),
            "profile synthetic tiny-llama: batch 1, stage prefill, conv[0:18]")
      << message;
  EXPECT_NE(message.find("passes 2^53 ns (104 days)"), std::string::npos) << message;

  model::Profile p = tiny();
  op_of(p, 2, "decode", 5).conv->duration_ns = constant_stats(1e300);
  Simulator one(std::move(p));
  EXPECT_EQ(error_of(one, "decode: conv[0:5] mk[5:14]", 2), "(no error)");
  EXPECT_EQ(error_of(one, "decode: conv[0:9] mk[9:14]", 2),
            "profile synthetic tiny-llama: batch 2, stage decode, conv[0:9]: a predicted time of "
            "1e+300 ns passes 2^53 ns (104 days): the profile's durations, summed or scaled by "
            "this graph's tiles, are implausible");

  model::Profile q = tiny();
  for (model::TaskBenchmark& t : op_of(q, 1, "decode", 9).tasks)
    t.duration_ns = constant_stats(1e300);
  Simulator tasks(std::move(q));
  const std::string mk = error_of(tasks, "decode: conv[0:3] mk[3:14]", 1);
  EXPECT_EQ(mk.substr(0, mk.find(": a predicted time")),
            "profile synthetic tiny-llama: batch 1, stage decode, mk[3:14]")
      << mk;
}

TEST(SimulatorTest, ProfileOfAnotherGraphIsRejected) {
  model::Profile p = tiny();
  op_of(p, 1, "decode", 3).name = "layers.0.attn.out";
  Simulator sim(std::move(p));
  EXPECT_EQ(error_of(sim, "conv", 1),
            "profile synthetic tiny-llama: batch 1, stage decode, op 3: the profile has "
            "'layers.0.attn.out' (linear-residual), the graph rebuilt from model.config has "
            "'layers.0.attn.o' (linear-residual)");
}

TEST(SimulatorTest, ProfileOfOtherTilesIsRejected) {
  model::Profile p = tiny();
  model::OpProfile& o = op_of(p, 1, "decode", 3);
  const int64_t tiles = o.tiles;
  ASSERT_GT(tiles, 0);
  o.tiles = tiles + 1;
  Simulator sim(std::move(p));
  EXPECT_EQ(error_of(sim, "conv", 1),
            "profile synthetic tiny-llama: batch 1, stage decode, op 3 (layers.0.attn.o): the "
            "profile measured its tasks as " +
                std::to_string(tiles + 1) + " tiles, the graph rebuilt now cuts it into " +
                std::to_string(tiles) +
                " (the tiling changed since the profile was made): profile the model again");
}

TEST(SimulatorTest, ProfilesWithoutTileCountsStillRead) {
  model::Profile p = tiny();
  for (model::BatchProfile& b : p.batches)
    for (model::StageProfile& s : b.stages)
      for (model::OpProfile& o : s.ops) o.tiles = 0;
  Simulator sim(std::move(p));
  EXPECT_GT(sim.simulate(model::uniform_composition(sim.stage_shapes(1), model::RegionKind::mk), 1)
                .ttfo_ns,
            0);
}

TEST(SimulatorTest, InterpolatesBetweenMeasuredBatchesWhenAllowed) {
  Simulator plain(tiny());
  const TimeNs two = plain.simulate(parse(plain, "conv", 2), 2).decode_step_ns;
  const TimeNs four = plain.simulate(parse(plain, "conv", 4), 4).decode_step_ns;
  Simulator sim(tiny(), SimOptions{.allow_interpolate = true});
  const Prediction p = sim.simulate(parse(sim, "conv", 3), 3);
  // All-conv stage time is a sum of kernel and gap medians, each interpolated halfway between
  // batches 2 and 4: halfway between the two stage times, up to 1 ns of rounding per kernel
  // (18 of them).
  EXPECT_NEAR(static_cast<double>(p.decode_step_ns), (two + four) / 2.0, 18);
  ASSERT_TRUE(p.interpolated.has_value());
  EXPECT_EQ(p.interpolated->lower, 2);
  EXPECT_EQ(p.interpolated->upper, 4);
  EXPECT_EQ(prediction_to_json(p)["interpolated"]["upper"], 4);
  ASSERT_EQ(p.notes.size(), 1u);
  // mk regions run on interpolated task benchmarks too.
  EXPECT_GT(sim.simulate(parse(sim, "mk", 3), 3).ttfo_ns, 0);
  // Interpolation never extrapolates.
  EXPECT_EQ(error_of(sim, "conv", 5),
            "profile synthetic tiny-llama: batch 5 is outside the measured batches (1, 2, 4); "
            "interpolation does not extrapolate");
}

TEST(SimulatorTest, PredictionJson) {
  Simulator sim(tiny());
  const Prediction p = sim.simulate(parse(sim, "prefill: mk; decode: conv[0:5] mk[5:]", 2), 2);
  const nlohmann::json j = prediction_to_json(p);
  EXPECT_EQ(j["schema"], "megacut.prediction/2");
  EXPECT_EQ(j["composition"], "prefill: mk[0:18]; decode: conv[0:5] mk[5:14]");
  EXPECT_EQ(j["ttfo_ns"], p.ttfo_ns);
  EXPECT_EQ(j["stages"][1]["regions"].size(), 2u);
  EXPECT_EQ(j["stages"][1]["regions"][1]["before"], "after conv");
  EXPECT_EQ(j["stages"][0]["sm_utilization"].size(), 8u);
  EXPECT_TRUE(j["stages"][0]["measured_conv_graph_ns"].is_number());
  EXPECT_FALSE(j["stages"][0]["critical_path"]["by_op"].empty());
}

// ---- properties over random compositions ----

std::string random_composition(std::mt19937& rng, const std::vector<model::StageShape>& shapes) {
  std::string text;
  for (const model::StageShape& s : shapes) {
    text += (text.empty() ? "" : "; ") + s.name + ":";
    int begin = 0;
    while (begin < s.op_count) {
      const int end = std::min(s.op_count, begin + 1 + static_cast<int>(rng() % 12));
      text += std::string(rng() % 2 ? " mk[" : " conv[") + std::to_string(begin) + ":" +
              std::to_string(end) + "]";
      begin = end;
    }
  }
  return text;
}

// Lower bounds of an mk region's task time: its longest dependency chain and its busiest
// queue at uncontended task times (fixed + bytes at the full bandwidth), and all its bytes at
// the full bandwidth.
struct Bounds {
  double chain_ns = 0;
  double bytes_ns = 0;
};

Bounds mk_bounds(Simulator& sim, const std::string& stage, int64_t batch, const Region& region) {
  const model::Graph& g = sim.graph(stage, batch);
  const TaskCosts costs = sim.region_task_costs(stage, batch, region);
  const double bandwidth = sim.profile().device.copy_bandwidth_gb_per_s;
  const model::TaskId first = g.first_task(region.begin);
  std::vector<double> finish(costs.fixed_ns.size(), 0);
  Bounds b;
  for (size_t j = 0; j < finish.size(); ++j) {
    double ready = 0;
    for (model::TaskId dep : g.task_deps(first + static_cast<model::TaskId>(j))) {
      if (dep >= first) ready = std::max(ready, finish[dep - first]);
    }
    finish[j] = ready + static_cast<double>(costs.fixed_ns[j]) + costs.bytes[j] / bandwidth;
    b.chain_ns = std::max(b.chain_ns, finish[j]);
    b.bytes_ns += costs.bytes[j] / bandwidth;
  }
  return b;
}

TEST(SimulatorPropertyTest, RandomCompositionsRespectBoundsAndReplayExactly) {
  std::mt19937 rng(7);
  for (const char* model : {"tiny-llama", "tiny-qwen3"}) {
    Simulator sim(tiny(model));
    Simulator again(tiny(model));
    for (int trial = 0; trial < 25; ++trial) {
      const int64_t batch = std::vector<int64_t>{1, 2, 4}[rng() % 3];
      const std::string text = random_composition(rng, sim.stage_shapes(batch));
      SCOPED_TRACE(std::string(model) + " batch " + std::to_string(batch) + ": " + text);
      const Prediction p = sim.simulate(parse(sim, text, batch), batch);
      // Same input, a fresh simulator: identical output.
      EXPECT_EQ(prediction_to_json(p),
                prediction_to_json(again.simulate(parse(again, text, batch), batch)));
      for (const StagePrediction& s : p.stages) {
        TimeNs sum = 0;
        for (size_t i = 0; i < s.regions.size(); ++i) {
          const RegionResult& r = *s.regions[i];
          EXPECT_EQ(s.region_start_ns[i], sum);
          EXPECT_EQ(r.time_ns, r.gap_ns + r.launch_ns + r.work_ns + r.drain_ns);
          sum += r.time_ns;
          if (r.region.kind != RegionKind::mk) continue;
          const Bounds b = mk_bounds(sim, s.stage, batch, r.region);
          EXPECT_GE(static_cast<double>(r.work_ns) + 1e-6, std::floor(b.chain_ns));
          EXPECT_GE(static_cast<double>(r.work_ns) + 1e-6, std::floor(b.bytes_ns));
        }
        EXPECT_EQ(s.time_ns, sum);
        // The critical path runs without a hole from the stage start to its end.
        TimeNs at = 0;
        for (const PathStep& step : s.critical_path) {
          EXPECT_EQ(step.start_ns, at);
          EXPECT_GE(step.end_ns, step.start_ns);
          at = step.end_ns;
        }
        EXPECT_EQ(at, s.time_ns);
        EXPECT_EQ(s.path_work_ns + s.path_overhead_ns, s.time_ns);
        for (double u : s.sm_utilization) {
          EXPECT_GE(u, 0.0);
          EXPECT_LE(u, 1.0);
        }
      }
    }
  }
}

TEST(SimulatorPropertyTest, RegionTimeDoesNotDependOnWhatRanBeforeBeyondItsKind) {
  // The same region inside two different compositions, each simulated by a fresh simulator:
  // the same result.
  Simulator a(tiny()), b(tiny());
  const auto ra = a.simulate(parse(a, "decode: conv[0:4] mk[4:9] mk[9:14]", 4), 4);
  const auto rb = b.simulate(parse(b, "decode: mk[0:2] conv[2:9] mk[9:14]", 4), 4);
  // mk[9:14] follows an mk region in one and a conv region in the other: the same kernel gap.
  EXPECT_EQ(ra.stage("decode").regions[2]->time_ns, rb.stage("decode").regions[2]->time_ns);
  EXPECT_EQ(ra.stage("decode").regions[2]->work_ns, rb.stage("decode").regions[2]->work_ns);
}

}  // namespace
}  // namespace megacut::simulator
