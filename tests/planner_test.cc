// The planner: the resumed region simulations equal fresh ones to the nanosecond; the DP finds
// the exhaustive optimum (and the same top K) on many random small graphs; categories on
// profiles built to be each one; plan.json round trips; bad input gives clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include "model/batch_list.h"
#include "model/error.h"
#include "model/linear_provider.h"
#include "model/op.h"
#include "planner/plan.h"
#include "planner/region_costs.h"
#include "planner/search.h"
#include "tests/support/error_of.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::planner {
namespace {

using model::constant_stats;
using model::parse_batch_list;
using model::Profile;
using model::Region;
using model::RegionKind;

// One decoder layer (11 ops for llama, 12 for qwen3: the random profiles' 8-token prompt and
// their decode steps have few rows, so each layer's ops are fused): small enough to enumerate
// every composition (about 2 x 3^(n-1) of them).
std::string one_layer(const std::string& family) {
  return std::string(MEGACUT_TEST_SOURCE_DIR) + "/configs/one-layer-" + family;
}

// A synthetic profile with every number redrawn at random: conventional kernels and gaps, task
// benchmarks (a random solo time and bandwidth share, with noise), standalone configurations
// (so regions mix register budgets), micro-benchmarks, SM count and bandwidth. What wins, conv
// or mk, short regions or long, then changes from op to op and from case to case. With tp > 1,
// one rank's graphs of tp GPUs, each collective kind benchmarked with a latency and link
// bandwidth of its own.
Profile random_profile(const std::string& model, const std::vector<int64_t>& batches, uint32_t seed,
                       int64_t tp = 1) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution(lo, hi)(rng); };
  testing::SyntheticDevice device;
  device.sm_count = std::vector<int>{2, 4, 8, 16, 132}[rng() % 5];
  device.bytes_per_ns = uniform(100, 2000);
  device.tp = tp;
  Profile p = testing::synthetic_profile(model, batches, 8, device);
  auto c = [](double ns) { return constant_stats(std::round(ns)); };
  for (model::CollectiveBenchmark& b : p.micro.collectives) {
    const double latency = uniform(500, 8000), link_bytes_per_ns = uniform(2, 400);
    for (model::CollectivePoint& point : b.points) {
      point.time_ns =
          c(latency + static_cast<double>(model::ring_link_bytes(b.kind, point.bytes, tp)) /
                          link_bytes_per_ns);
    }
  }
  p.micro.graph_launch_ns = c(uniform(0, 6000));
  p.micro.kernel_gap_ns = c(uniform(0, 3000));
  p.micro.kernel_gap_pdl_ns = c(uniform(0, 1000));
  p.micro.region_launch_ns = c(uniform(0, 5000));
  p.micro.region_drain_ns = c(uniform(0, 3000));
  p.micro.counter_signal_to_wait_ns = c(uniform(0, 1500));
  p.micro.dependent_launch_ns = c(uniform(0, 3000));
  const std::vector<int> threads = {64, 128, 256, 512, 1024};
  for (model::BatchProfile& b : p.batches) {
    for (model::StageProfile& s : b.stages) {
      for (model::OpProfile& op : s.ops) {
        op.conv->duration_ns = c(uniform(300, 20000));
        if (op.conv->gap_to_next_ns) op.conv->gap_to_next_ns = c(uniform(0, 3000));
        // Kernels that share SMs or fill them, for tile regions.
        op.conv->launch.block = {threads[rng() % threads.size()], 1, 1};
        op.conv->launch.registers = static_cast<int>(uniform(24, 255));
        op.conv->launch.smem_bytes = static_cast<int64_t>(uniform(0, 200 * 1024));
        const double solo = uniform(50, 6000), shared = uniform(0, 1500);
        for (model::TaskBenchmark& t : op.tasks) {
          t.duration_ns = c((solo + shared * std::min(t.ctas, 8)) * uniform(0.9, 1.1));
        }
        op.task_region =
            model::RegionConfig{threads[rng() % threads.size()], static_cast<int>(uniform(24, 255)),
                                static_cast<int64_t>(uniform(0, 64 * 1024))};
        // Half the ops stream their weights through a ring of half their shared memory (no
        // further draws: the other values stay as they were).
        if (op.task_region->registers % 2 == 0) {
          op.task_region->ring_bytes = op.task_region->smem_bytes / 2;
        }
      }
    }
  }
  // A graph launch that grows with the nodes (each region pays for its own).
  const double fixed_ns = uniform(0, 6000), node_ns = uniform(0, 400);
  for (int64_t n : {1, 64, 512}) {
    p.micro.graph_launch_by_nodes.push_back({n, c(fixed_ns + node_ns * static_cast<double>(n))});
  }
  return p;
}

// The boundary a region leaves to the next (Simulator::simulate).
simulator::Boundary boundary_after(const Region& r) {
  switch (r.kind) {
    case RegionKind::mk:
      return simulator::Boundary::after_mk;
    case RegionKind::tile:
      return simulator::Boundary::after_tile;
    case RegionKind::conv:
      break;
  }
  return simulator::Boundary::after_conv;
}

std::vector<TimeNs> times_of(const StageSearch& s) {
  std::vector<TimeNs> out;
  for (const StageCandidate& c : s.best) out.push_back(c.key_ns);
  return out;
}

// Every mk region of the stage, as the evaluator resumes it from a longer region's run, against
// Simulator::simulate_region to the nanosecond; the evaluator's statistics.
MkRegionEvaluator::Stats expect_every_region_as_fresh(simulator::Simulator& sim,
                                                      const std::string& stage, int64_t batch) {
  const int n = sim.graph(stage, batch).op_count();
  MkRegionEvaluator evaluator(sim, stage, batch);
  for (int a = 0; a < n; ++a) {
    std::vector<int> ends;
    for (int b = a + 1; b <= n; ++b) ends.push_back(b);
    const std::vector<TimeNs> got = evaluator.makespans(a, ends);
    for (int b = a + 1; b <= n; ++b) {
      const auto before = a == 0 ? simulator::Boundary::stage_start : simulator::Boundary::after_mk;
      const auto want = sim.simulate_region(stage, batch, {RegionKind::mk, a, b}, before);
      EXPECT_EQ(got[b - a - 1], want->work_ns) << "mk[" << a << ":" << b << "]";
      if (got[b - a - 1] != want->work_ns) return evaluator.stats();
    }
  }
  return evaluator.stats();
}

TEST(RegionEvaluatorTest, EveryRegionMatchesAFreshSimulationToTheNanosecond) {
  // Resuming from a separating cut must not change a single result: compare every mk region
  // of two-layer graphs (18 and 20 ops, fused) with Simulator::simulate_region.
  for (const std::string model : {"tiny-llama", "tiny-qwen3"}) {
    for (uint32_t seed = 0; seed < 4; ++seed) {
      simulator::Simulator sim(random_profile(model, {1, 3}, seed));
      for (int64_t batch : {1, 3}) {
        for (const std::string stage : {"prefill", "decode"}) {
          SCOPED_TRACE(model + " seed " + std::to_string(seed) + " batch " + std::to_string(batch) +
                       " " + stage);
          const MkRegionEvaluator::Stats stats = expect_every_region_as_fresh(sim, stage, batch);
          if (stage == "decode") {
            EXPECT_GT(stats.resumed, 0) << model;
          }
        }
      }
    }
  }
}

TEST(RegionEvaluatorTest, LongRegionsOnAManySmDeviceMatchFreshSimulations) {
  // Llama-3.2-1B prefill at batch 2 on a 132-SM synthetic device: no op boundary separates
  // the run in time, so each shorter region continues from a copy of a run in full flight.
  // 2 x 32 = 64 rows fuse each layer: embed, 16 layers of 7 ops, final_norm, lm_head, argmax.
  testing::SyntheticDevice device;
  device.sm_count = 132;
  device.bytes_per_ns = 4000;
  device.flops_per_ns_per_sm = 7000;
  simulator::Simulator sim(testing::synthetic_profile("llama-3.2-1b", {2}, 32, device));
  ASSERT_EQ(sim.graph("prefill", 2).op_count(), 116);
  MkRegionEvaluator evaluator(sim, "prefill", 2);
  // Regions from the stage's first two ops, layer 3's first op (qkv), layer 8's attention, and
  // the last 26 ops (from layer 12's gate_up to argmax).
  for (int a : {0, 1, 22, 60, 90}) {
    std::vector<int> ends;
    for (int b = a + 1; b <= std::min(a + 26, 116); ++b) ends.push_back(b);
    const std::vector<TimeNs> got = evaluator.makespans(a, ends);
    for (size_t i = 0; i < ends.size(); ++i) {
      const auto before = a == 0 ? simulator::Boundary::stage_start : simulator::Boundary::after_mk;
      const auto want =
          sim.simulate_region("prefill", 2, {RegionKind::mk, a, ends[i]}, before)->work_ns;
      ASSERT_EQ(got[i], want) << "mk[" << a << ":" << ends[i] << "]";
    }
  }
  // Far fewer tasks than simulating each region from its start.
  EXPECT_GT(evaluator.stats().resumed, 100);
}

// The evaluator runs megakernels itself, without Simulator::simulate_region: a time past 2^53
// ns there names the profile, batch, stage and regions too.
TEST(RegionEvaluatorTest, TimesPast2To53NsNameWhereTheyArise) {
  model::Profile p = testing::synthetic_profile("tiny-llama", {1}, 16);
  for (model::StageProfile& s : p.batches[0].stages) {
    if (s.stage != "decode") continue;
    for (model::TaskBenchmark& t : s.ops.at(9).tasks) {
      t.duration_ns = model::constant_stats(1e300);
    }
  }
  simulator::Simulator sim(std::move(p));
  MkRegionEvaluator evaluator(sim, "decode", 1);
  const std::vector<int> ends{5, 10, 14};
  const std::string message = testing::error_of([&] { evaluator.makespans(3, ends); });
  EXPECT_EQ(message.substr(0, message.find(": a predicted time")),
            "profile synthetic tiny-llama: batch 1, stage decode, mk[3:14]")
      << message;
}

TEST(SearchTest, DpFindsTheExhaustiveOptimumOnRandomSmallGraphs) {
  // 96 cases: one-layer llama and qwen3, prefill and decode, batches 1 and 2, 12 random
  // profiles each, K from 1 to 8. The DP's K best times equal the exhaustive enumeration's,
  // and its best equals the best over every composition, adjacent conv regions included.
  int cases = 0, mixed_optima = 0, tile_optima = 0;
  int64_t regions = 0, simulated = 0, resumed = 0;
  for (const std::string family : {"llama", "qwen3"}) {
    for (uint32_t seed = 100; seed < 112; ++seed) {
      simulator::Simulator sim(random_profile(one_layer(family), {1, 2}, seed));
      for (int64_t batch : {1, 2}) {
        for (const std::string stage : {"prefill", "decode"}) {
          SCOPED_TRACE(family + " seed " + std::to_string(seed) + " batch " +
                       std::to_string(batch) + " " + stage);
          const int k = static_cast<int>(1 + seed % 8);
          const StageSearch dp = search_stage(sim, stage, batch, {.top_k = k});
          const StageSearch all = exhaustive_stage(sim, stage, batch, k);
          ASSERT_EQ(times_of(dp), times_of(all));
          const StageSearch any = exhaustive_stage(sim, stage, batch, 1, false);
          ASSERT_EQ(dp.best.front().key_ns, any.best.front().key_ns);
          const auto& best = dp.best.front().regions;
          mixed_optima += std::adjacent_find(best.begin(), best.end(), [](auto& x, auto& y) {
                            return x.kind != y.kind;
                          }) != best.end();
          tile_optima +=
              std::ranges::any_of(best, [](const Region& r) { return r.kind == RegionKind::tile; });
          ++cases;
          regions += dp.stats.mk_regions;
          simulated += dp.stats.mk_simulated;
          resumed += dp.stats.mk_resumed;
        }
      }
    }
  }
  EXPECT_EQ(cases, 96);
  // The random profiles are meant to exercise cuts, not just all-conv or all-mk answers, and
  // every kind of region.
  EXPECT_GT(mixed_optima, 10);
  EXPECT_GT(tile_optima, 10);
  EXPECT_LT(tile_optima, cases);
  // ... and to exercise both shortcuts: bounds that prune, resumed simulations.
  EXPECT_LT(simulated, regions);
  EXPECT_GT(resumed, 0);
  std::printf(
      "%d cases, %d with mixed optima, %d with tile regions; %lld of %lld mk regions simulated, "
      "%lld resumed\n",
      cases, mixed_optima, tile_optima, static_cast<long long>(simulated),
      static_cast<long long>(regions), static_cast<long long>(resumed));
}

// Tensor parallel: collectives run in mk regions as communication tasks over the links, whose
// bandwidth differs by kind; the DP's K best still equal the exhaustive enumeration's, pruning
// and resuming still change nothing, and each mk region the evaluator resumes matches a fresh
// simulation to the nanosecond.
TEST(SearchTest, DpStaysExactWithCollectivesInMegakernels) {
  int cases = 0, collectives_in_mk = 0;
  for (const std::string family : {"llama"}) {  // one-layer qwen3's vocabulary is odd
    for (uint32_t seed = 300; seed < 312; ++seed) {
      simulator::Simulator sim(random_profile(one_layer(family), {1, 2}, seed, 2));
      for (int64_t batch : {1, 2}) {
        for (const std::string stage : {"prefill", "decode"}) {
          SCOPED_TRACE(family + " seed " + std::to_string(seed) + " batch " +
                       std::to_string(batch) + " " + stage);
          const int k = static_cast<int>(1 + seed % 4);
          const StageSearch dp = search_stage(sim, stage, batch, {.top_k = k});
          ASSERT_EQ(times_of(dp), times_of(exhaustive_stage(sim, stage, batch, k)));
          const StageSearch plain =
              search_stage(sim, stage, batch, {.top_k = k, .prune = false, .resume = false});
          ASSERT_EQ(times_of(dp), times_of(plain));
          const model::Graph& g = sim.graph(stage, batch);
          for (const Region& r : dp.best.front().regions) {
            for (int op = r.begin; op < r.end && r.kind == RegionKind::mk; ++op) {
              collectives_in_mk += model::is_collective(g.op(op)) ? 1 : 0;
            }
          }
          expect_every_region_as_fresh(sim, stage, batch);
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 48);
  EXPECT_GT(collectives_in_mk, 0);
}

TEST(SearchTest, DpFindsTheExhaustiveOptimumWhereOpsLackAConventionalKernel) {
  // An op without a conventional kernel runs in mk regions only, and a tile region after it
  // starts after an mk region: the DP must still find what the enumeration finds. 48 cases:
  // one-layer llama and qwen3, both stages, 12 random profiles with one op's kernel removed.
  int cases = 0, tile_optima = 0;
  for (const std::string family : {"llama", "qwen3"}) {
    for (uint32_t seed = 200; seed < 212; ++seed) {
      Profile p = random_profile(one_layer(family), {1}, seed);
      for (const std::string stage : {"prefill", "decode"}) {
        for (model::StageProfile& s : p.batches[0].stages) {
          if (s.stage == stage) s.ops.at(seed % s.ops.size()).conv.reset();
        }
      }
      simulator::Simulator sim(std::move(p));
      for (const std::string stage : {"prefill", "decode"}) {
        SCOPED_TRACE(family + " seed " + std::to_string(seed) + " " + stage);
        const int k = static_cast<int>(1 + seed % 4);
        const StageSearch dp = search_stage(sim, stage, 1, {.top_k = k});
        ASSERT_EQ(times_of(dp), times_of(exhaustive_stage(sim, stage, 1, k)));
        tile_optima += std::ranges::any_of(
            dp.best.front().regions, [](const Region& r) { return r.kind == RegionKind::tile; });
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 48);
  EXPECT_GT(tile_optima, 5);
}

// A launch sweep with a per-node launch and trace excess, so that graph launches weigh by
// node: a fixed 4 us, `node_ns` a node, and `excess_ns` a node of tracing (a 512-node chain's
// traced span that much longer than its back-to-back replay).
void add_launch_sweep(Profile& p, double node_ns, double excess_ns) {
  for (model::BatchProfile& b : p.batches) {
    model::GraphLaunchPoint chain{512, constant_stats(4000 + 512 * node_ns)};
    chain.span_ns = constant_stats(512 * 3000 + 512 * excess_ns);
    chain.back_to_back_ns = constant_stats(512 * 3000);
    b.graph_launch_by_nodes = {{1, constant_stats(4000 + node_ns)}, chain};
  }
}

// With some of a stage's launch hidden, the DP still finds the exhaustive K best, each counted
// at its regions' time less that share of their launch and trace excess; shares that are not
// whole nanoseconds a node included.
TEST(SearchTest, DpFindsTheExhaustiveOptimumWithPdlAndCublasltLinears) {
  // With PDL steps and cuBLASLt kernels the fastest policy takes for some linears, a region
  // after a tile region pays another boundary than after a conv region (our kernel ended the
  // tile region): the DP's best equals the enumeration's, and each candidate's key the sum of
  // its regions replayed with the boundary each leaves. 24 cases.
  int cases = 0, tile_optima = 0;
  for (const std::string family : {"llama", "qwen3"}) {
    for (uint32_t seed = 300; seed < 306; ++seed) {
      Profile p = random_profile(one_layer(family), {1}, seed);
      std::mt19937 rng(seed);
      for (model::StageProfile& s : p.batches[0].stages) {
        for (model::OpProfile& op : s.ops) {
          const double d = op.conv->duration_ns.mean;
          if (op.index > 0) {
            op.conv->pdl_step_ns = constant_stats(std::round(d * (0.5 + rng() % 100 / 100.0)));
          }
          if (model::cublaslt_can_run(op.kind)) {
            model::ConvKernel lt = *op.conv;
            lt.provider = "cublas";
            lt.pdl_step_ns.reset();
            lt.duration_ns = constant_stats(std::round(d * (0.3 + rng() % 100 / 100.0)));
            op.conv_cublaslt = lt;
          }
        }
      }
      simulator::Simulator sim(std::move(p),
                               {.pdl = true, .linear_provider = model::ProviderPolicy::fastest});
      for (const std::string stage : {"prefill", "decode"}) {
        SCOPED_TRACE(family + " seed " + std::to_string(seed) + " " + stage);
        const StageSearch dp = search_stage(sim, stage, 1, {.top_k = 3});
        ASSERT_EQ(times_of(dp), times_of(exhaustive_stage(sim, stage, 1, 3)));
        for (const StageCandidate& c : dp.best) {
          TimeNs key = 0;
          simulator::Boundary before = simulator::Boundary::stage_start;
          for (const Region& r : c.regions) {
            key += sim.simulate_region(stage, 1, r, before)->time_ns;
            before = boundary_after(r);
          }
          EXPECT_EQ(key, c.key_ns);
        }
        tile_optima += std::ranges::any_of(
            dp.best.front().regions, [](const Region& r) { return r.kind == RegionKind::tile; });
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 24);
  EXPECT_GT(tile_optima, 3);
}

TEST(SearchTest, DpFindsTheExhaustiveOptimumWithHiddenLaunches) {
  int cases = 0;
  for (uint32_t seed = 300; seed < 306; ++seed) {
    Profile p = random_profile(one_layer("qwen3"), {1}, seed);
    add_launch_sweep(p, std::vector<double>{0, 201, 333, 677}[seed % 4], 301);
    simulator::Simulator sim(p);
    for (double hidden : {0.5, 0.75, 1.0}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", hidden " + std::to_string(hidden));
      const StageSearch dp =
          search_stage(sim, "decode", 1, {.top_k = 4, .hidden_launch_share = hidden});
      const StageSearch all = exhaustive_stage(sim, "decode", 1, 4, true, hidden);
      ASSERT_EQ(times_of(dp), times_of(all));
      for (const StageCandidate& c : dp.best) {
        TimeNs key = 0, time = 0;
        simulator::Boundary before = simulator::Boundary::stage_start;
        for (const Region& r : c.regions) {
          const auto result = sim.simulate_region("decode", 1, r, before);
          key += region_key_ns(*result, hidden);
          time += result->time_ns;
          before = boundary_after(r);
        }
        EXPECT_EQ(c.key_ns, key);
        EXPECT_LT(c.key_ns, time);  // the fixed launch alone is 4 us
      }
      ++cases;
    }
  }
  EXPECT_EQ(cases, 18);
}

// Under a coverage floor the DP finds the exhaustive optimum of the compositions with that many
// ops in mk regions, timed as the simulator times its regions; with hidden launches too.
TEST(SearchTest, CoverageFloorsFindTheExhaustiveOptimumOnRandomSmallGraphs) {
  const std::vector<double> floors = {0.2, 0.5, 0.8, 1.0};
  int cases = 0, above_best = 0;
  int64_t regions = 0, simulated = 0;
  for (const std::string family : {"llama", "qwen3"}) {
    for (uint32_t seed = 400; seed < 406; ++seed) {
      Profile p = random_profile(one_layer(family), {1}, seed);
      add_launch_sweep(p, 333, 301);
      simulator::Simulator sim(p);
      for (const std::string stage : {"prefill", "decode"}) {
        const double hidden = seed % 2 == 0 ? 0.0 : 0.75;
        SCOPED_TRACE(family + " seed " + std::to_string(seed) + " " + stage);
        const StageSearch dp = search_stage(
            sim, stage, 1, {.top_k = 1, .hidden_launch_share = hidden, .coverage_floors = floors});
        ASSERT_EQ(dp.at_coverage.size(), floors.size());
        EXPECT_EQ(dp.stats.mk_ops, dp.stats.ops);  // every op has a task benchmark
        regions += dp.stats.mk_regions;
        simulated += dp.stats.mk_simulated;
        for (size_t j = 0; j < floors.size(); ++j) {
          const int64_t least = min_mk_ops(floors[j], dp.stats.mk_ops);
          const StageCandidate& c = dp.at_coverage[j];
          const StageSearch all = exhaustive_stage(sim, stage, 1, 1, true, hidden, least);
          ASSERT_EQ(c.key_ns, all.best.front().key_ns) << "floor " << floors[j];
          EXPECT_GE(model::mk_op_count(c.regions), least);
          EXPECT_GE(c.key_ns, dp.best.front().key_ns);
          above_best += c.key_ns > dp.best.front().key_ns;
          TimeNs key = 0;
          int at = 0;
          simulator::Boundary before = simulator::Boundary::stage_start;
          for (size_t r = 0; r < c.regions.size(); ++r) {
            EXPECT_EQ(c.regions[r].begin, at);
            if (r > 0) {
              EXPECT_FALSE(c.regions[r].kind == RegionKind::conv &&
                           c.regions[r - 1].kind == RegionKind::conv);
            }
            key += region_key_ns(*sim.simulate_region(stage, 1, c.regions[r], before), hidden);
            before = boundary_after(c.regions[r]);
            at = c.regions[r].end;
          }
          EXPECT_EQ(at, dp.stats.ops);
          EXPECT_EQ(key, c.key_ns);
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 24);
  // The floors bind: most cost more than the unconstrained best.
  EXPECT_GT(above_best, 24);
  // ... and every mk region was simulated: any one may be on a floor's best.
  EXPECT_EQ(simulated, regions);
  std::printf("%d cases, %d floors above the best; %lld of %lld mk regions simulated\n", cases,
              above_best, static_cast<long long>(simulated), static_cast<long long>(regions));
}

TEST(SearchTest, CoverageFloorsOutsideZeroToOneAreRefused) {
  simulator::Simulator sim(testing::synthetic_profile("tiny-llama", {1}, 8));
  for (double share : {0.0, -0.5, 1.5}) {
    const std::string error = testing::error_of([&] {
      search_stage(sim, "decode", 1, {.coverage_floors = {0.5, share}});
    });
    EXPECT_NE(error.find("a coverage floor must be in (0, 1]"), std::string::npos)
        << share << ": " << error;
  }
}

// A TTS stage's runs follow other runs at once: its search key orders its compositions as
// their time to first audio does, to the nanosecond (the vocoder runs once, after the talker),
// though the compositions differ in graph nodes and each node costs 500 ns of launch.
TEST(SearchTest, TtsStageKeysDifferAsTheFirstAudioDoes) {
  Profile p = testing::synthetic_profile("tiny-llama-hifigan-tts", {1}, 16);
  add_launch_sweep(p, 500, 300);
  simulator::Simulator sim(p);
  const StageSearch s = search_stage(sim, "vocoder", 1, {.top_k = 6, .hidden_launch_share = 1});
  ASSERT_GE(s.best.size(), 2u);
  model::Composition c = model::uniform_composition(sim.stage_shapes(1), model::RegionKind::conv);
  std::vector<TimeNs> ttfa;
  std::set<int64_t> nodes;
  for (const StageCandidate& candidate : s.best) {
    for (model::StageRegions& stage : c.stages) {
      if (stage.stage == "vocoder") stage.regions = candidate.regions;
    }
    const simulator::Prediction prediction = sim.simulate(c, 1);
    ttfa.push_back(prediction.ttfo_ns);
    int64_t n = 0;
    for (const auto& r : prediction.stage("vocoder").regions) n += r->graph_nodes;
    nodes.insert(n);
  }
  EXPECT_GT(nodes.size(), 1u);
  for (size_t i = 1; i < s.best.size(); ++i) {
    EXPECT_EQ(ttfa[i] - ttfa[0], s.best[i].key_ns - s.best[0].key_ns) << "candidate " << i;
  }
}

// Both objectives plan a TTS pipeline with hidden launches (under the throughput objective the
// step's first stage hides 3 of its 4 runs' launches): make_plan checks every ranked
// composition's search key against the simulator's regions, and would throw on a mismatch.
TEST(PlanTest, PlansATtsPipelineUnderEitherObjectiveWithHiddenLaunches) {
  Profile p = testing::synthetic_profile("tiny-llama-hifigan-tts", {1, 2}, 16);
  add_launch_sweep(p, 201, 301);
  for (Objective objective : {Objective::ttfo, Objective::throughput}) {
    PlanOptions options;
    options.objective = objective;
    options.top_k = 3;
    const Plan plan = make_plan(p, options);
    ASSERT_EQ(plan.batches.size(), 2u);
    for (const BatchPlan& b : plan.batches) EXPECT_FALSE(b.ranked.empty());
  }
}

TEST(SearchTest, PruningAndResumingChangeNothingOnTwoLayerGraphs) {
  for (const std::string model : {"tiny-llama", "tiny-qwen3"}) {
    for (uint32_t seed = 200; seed < 206; ++seed) {
      simulator::Simulator sim(random_profile(model, {1, 4}, seed));
      for (int64_t batch : {1, 4}) {
        for (const std::string stage : {"prefill", "decode"}) {
          SCOPED_TRACE(model + " seed " + std::to_string(seed) + " " + stage);
          const StageSearch fast = search_stage(sim, stage, batch, {.top_k = 8});
          const StageSearch plain =
              search_stage(sim, stage, batch, {.top_k = 8, .prune = false, .resume = false});
          EXPECT_EQ(times_of(fast), times_of(plain));
          EXPECT_EQ(plain.stats.mk_simulated, plain.stats.mk_regions);
          EXPECT_LE(fast.stats.mk_simulated, fast.stats.mk_regions);
        }
      }
    }
  }
}

TEST(SearchTest, CandidatesAreDistinctCanonicalAndTimedAsTheSimulatorTimesThem) {
  simulator::Simulator sim(random_profile("tiny-qwen3", {2}, 7));
  for (const std::string stage : {"prefill", "decode"}) {
    const StageSearch s = search_stage(sim, stage, 2, {.top_k = 10});
    ASSERT_EQ(s.best.size(), 10u);
    std::set<std::vector<std::tuple<int, int, int>>> seen;
    for (size_t i = 0; i < s.best.size(); ++i) {
      const StageCandidate& c = s.best[i];
      if (i > 0) {
        EXPECT_LE(s.best[i - 1].key_ns, c.key_ns);
      }
      std::vector<std::tuple<int, int, int>> key;
      int at = 0;
      for (size_t r = 0; r < c.regions.size(); ++r) {
        EXPECT_EQ(c.regions[r].begin, at);
        EXPECT_LT(c.regions[r].begin, c.regions[r].end);
        at = c.regions[r].end;
        if (r > 0) {
          EXPECT_FALSE(c.regions[r].kind == RegionKind::conv &&
                       c.regions[r - 1].kind == RegionKind::conv);
        }
        key.emplace_back(static_cast<int>(c.regions[r].kind), c.regions[r].begin, c.regions[r].end);
      }
      EXPECT_EQ(at, sim.graph(stage, 2).op_count());
      EXPECT_TRUE(seen.insert(key).second) << "candidate " << i << " repeats";
      model::Composition comp = model::uniform_composition(sim.stage_shapes(2), RegionKind::conv);
      for (model::StageRegions& sr : comp.stages) {
        if (sr.stage == stage) sr.regions = c.regions;
      }
      EXPECT_EQ(sim.simulate(comp, 2).stage(stage).time_ns, c.key_ns);
    }
  }
}

TEST(SearchTest, ExhaustiveRefusesLargeStages) {
  // tiny-qwen3's prefill of 8 tokens: embed, 2 layers of 8 ops (qkv, o, gate_up and down with
  // their norms and adds fused; qk_norm, rope, kv_append, attention), final_norm, lm_head and
  // argmax: 20 ops, 2 past the limit.
  simulator::Simulator sim(testing::synthetic_profile("tiny-qwen3", {1}, 8));
  try {
    exhaustive_stage(sim, "prefill", 1, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 20 ops; enumeration is limited to 18"),
              std::string::npos)
        << e.what();
  }
}

// Scales one batch's conventional kernels (and gaps) and task benchmarks: > 1 makes that way
// of running slower. Uniform standalone configurations keep regions free of register limits.
void scale_batch(Profile& p, int64_t batch, double conv, double mk) {
  for (model::BatchProfile& b : p.batches) {
    if (b.batch != batch) continue;
    for (model::StageProfile& s : b.stages) {
      for (model::OpProfile& op : s.ops) {
        op.conv->duration_ns = constant_stats(std::round(op.conv->duration_ns.p50 * conv));
        if (op.conv->gap_to_next_ns) {
          op.conv->gap_to_next_ns = constant_stats(std::round(op.conv->gap_to_next_ns->p50 * conv));
        }
        for (model::TaskBenchmark& t : op.tasks) {
          t.duration_ns = constant_stats(std::round(t.duration_ns.p50 * mk));
        }
        op.task_region = model::RegionConfig{128, 40, 0};
      }
    }
  }
}

// Per batch 1, 2, 4: which way is made cheap ('m': megakernels, 'c': conventional, '=':
// neither).
Plan plan_for(const std::string& ways, const PlanOptions& options = {}) {
  Profile p = testing::synthetic_profile("tiny-llama", {1, 2, 4}, 16);
  const std::vector<int64_t> batches = {1, 2, 4};
  for (size_t i = 0; i < batches.size(); ++i) {
    if (ways[i] == 'm') scale_batch(p, batches[i], 100, 1);
    if (ways[i] == 'c') scale_batch(p, batches[i], 1, 100);
    if (ways[i] == '=') scale_batch(p, batches[i], 1, 1);
  }
  return make_plan(p, options);
}

TEST(CategoryTest, ProfilesBuiltForEachCategoryGetIt) {
  // Conventional kernels 100x slower at every batch: one megakernel per stage everywhere.
  Plan stable = plan_for("mmm");
  EXPECT_EQ(stable.category, Category::stable);
  EXPECT_EQ(stable.batches[0].best().text, "prefill: mk[0:18]; decode: mk[0:14]");
  // Tasks 100x slower everywhere: all-conventional everywhere.
  EXPECT_EQ(plan_for("ccc").category, Category::averse);
  // Megakernels win at batch 1 and lose at batch 4: coverage 100% -> ... -> 0%.
  const Plan receding = plan_for("m=c");
  EXPECT_EQ(receding.category, Category::receding);
  EXPECT_DOUBLE_EQ(receding.batches.front().best().coverage(), 1.0);
  EXPECT_DOUBLE_EQ(receding.batches.back().best().coverage(), 0.0);
  EXPECT_EQ(plan_for("c=m").category, Category::advancing);
  EXPECT_EQ(plan_for("mcm").category, Category::mixed);
}

TEST(CategoryTest, ClassifyFollowsTheDefinitions) {
  // Batches whose best composition has the given decode coverage (prefill all-conventional).
  auto sweep = [](const std::vector<double>& coverage, bool mk_predicted = true) {
    std::vector<BatchPlan> batches;
    for (size_t i = 0; i < coverage.size(); ++i) {
      Evaluated e;
      const int mk_ops = static_cast<int>(std::round(coverage[i] * 1000));
      e.composition.stages = {{"prefill", {{RegionKind::conv, 0, 1000}}}, {"decode", {}}};
      if (mk_ops > 0) e.composition.stages[1].regions.push_back({RegionKind::mk, 0, mk_ops});
      if (mk_ops < 1000)
        e.composition.stages[1].regions.push_back({RegionKind::conv, mk_ops, 1000});
      e.text = e.composition.to_string();
      e.stages = {{"prefill", 1000, 0}, {"decode", 1000, mk_ops}};
      std::optional<Evaluated> all_mk;
      if (mk_predicted) all_mk = e;
      batches.push_back({static_cast<int64_t>(1) << i, {e}, e, all_mk, {}, {}});
    }
    return classify(batches);
  };
  EXPECT_EQ(sweep({0, 0, 0}), Category::averse);
  // No mk region chosen because none could be predicted: no verdict.
  EXPECT_EQ(sweep({0, 0, 0}, false), Category::undetermined);
  EXPECT_EQ(sweep({0.3, 0.3, 0.3}), Category::stable);
  EXPECT_EQ(sweep({0.5, 0.2, 0.2, 0.0}), Category::receding);
  // A rise within the tolerance (0.4 points) does not break a fall.
  EXPECT_EQ(sweep({0.5, 0.504, 0.1}), Category::receding);
  EXPECT_EQ(sweep({0.0, 0.1, 0.6}), Category::advancing);
  EXPECT_EQ(sweep({0.5, 0.1, 0.6}), Category::mixed);
  // Flat coverage while the composition changes.
  EXPECT_EQ(sweep({0.3, 0.302, 0.3}), Category::mixed);
}

TEST(CategoryTest, ASmallGainSettlesOnAllConventional) {
  // One batch whose best (an mk region) takes 1,000 ns of TTFO and 900 ns of decode step
  // against all-conventional's 1,030 and 1,000: a 3% and an 11.1% gain.
  Evaluated conv, best;
  conv.composition.stages = {{"decode", {{RegionKind::conv, 0, 10}}}};
  conv.text = conv.composition.to_string();
  conv.ttfo_ns = 1030;
  conv.decode_step_ns = 1000;
  conv.stages = {{"decode", 1000, 0}};
  best.composition.stages = {{"decode", {{RegionKind::mk, 0, 10}}}};
  best.text = best.composition.to_string();
  best.ttfo_ns = 1000;
  best.decode_step_ns = 900;
  best.stages = {{"decode", 900, 900}};
  const BatchPlan b{1, {best}, conv, best, {}, {}};
  EXPECT_TRUE(worth_building(b, 0.02, Objective::ttfo));
  EXPECT_FALSE(worth_building(b, 0.05, Objective::ttfo));
  EXPECT_FALSE(worth_building(b, 0.05, std::nullopt));  // ranked by TTFO
  EXPECT_TRUE(worth_building(b, 0.05, Objective::throughput));
  EXPECT_EQ(settled(b, 0.05, Objective::ttfo).text, conv.text);
  EXPECT_EQ(settled(b, 0.02, Objective::ttfo).text, best.text);
  EXPECT_EQ(classify({b}, 0.05), Category::averse);
  EXPECT_EQ(classify({b}, 0.02), Category::stable);
  // All-conventional is always worth what it costs: nothing to build.
  const BatchPlan plain{1, {conv}, conv, best, {}, {}};
  EXPECT_TRUE(worth_building(plain, 0.5, Objective::ttfo));
}

// Threads beyond the searches (a batch and stage each) have nothing to do; the plan counts those
// that ran.
TEST(PlanTest, ThreadsAreCappedAtTheSearches) {
  const Profile p = random_profile("tiny-llama", {1, 4}, 7);
  EXPECT_EQ(make_plan(p, {.threads = 100000}).threads, 4);  // 2 batches x 2 stages
  EXPECT_EQ(make_plan(p, {.threads = 3}).threads, 3);
}

// The top 5 of a batch: every stage at its best, then every stage at its best over each
// coverage floor (1/4, 1/2, 3/4, all), as search_stage finds them, each once, the best first.
// The one covering everything beats or matches one megakernel per stage, itself such a
// composition.
TEST(PlanTest, TopKIsTheBestThenTheBestAtEachCoverageFloor) {
  const std::vector<double> floors = {0.25, 0.5, 0.75, 1.0};
  for (uint32_t seed : {42u, 43u, 44u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Profile p = random_profile("tiny-llama", {1, 4}, seed);
    const Plan plan = make_plan(p, {.top_k = 5, .objective = Objective::ttfo, .threads = 2});
    simulator::Simulator sim(p);
    for (const BatchPlan& b : plan.batches) {
      std::vector<StageSearch> searches;
      for (const model::StageShape& s : sim.stage_shapes(b.batch)) {
        searches.push_back(
            search_stage(sim, s.name, b.batch, {.top_k = 1, .coverage_floors = floors}));
      }
      auto text = [&](const std::function<const StageCandidate&(const StageSearch&)>& choice) {
        model::Composition c;
        for (const StageSearch& s : searches) c.stages.push_back({s.stage, choice(s).regions});
        return c.to_string();
      };
      const std::string best =
          text([](const StageSearch& s) -> const StageCandidate& { return s.best.front(); });
      std::set<std::string> want = {best};
      for (size_t j = 0; j < floors.size(); ++j) {
        want.insert(
            text([j](const StageSearch& s) -> const StageCandidate& { return s.at_coverage[j]; }));
      }
      std::set<std::string> got;
      for (const Evaluated& e : b.ranked) EXPECT_TRUE(got.insert(e.text).second) << e.text;
      EXPECT_EQ(got, want);
      EXPECT_GE(b.ranked.size(), 3u);  // these profiles leave at least two floors distinct
      EXPECT_EQ(b.best().text, best);
      const auto all_mk = std::find_if(b.ranked.begin(), b.ranked.end(),
                                       [](const Evaluated& e) { return e.coverage() == 1.0; });
      ASSERT_NE(all_mk, b.ranked.end());
      ASSERT_TRUE(b.all_mk);
      EXPECT_LE(all_mk->ttfo_ns, b.all_mk->ttfo_ns);
    }
  }
}

TEST(PlanTest, RanksByTheObjectiveAndBeatsOrMatchesTheBaselines) {
  Profile p = random_profile("tiny-llama", {1, 2}, 42);
  for (Objective objective : {Objective::ttfo, Objective::throughput}) {
    PlanOptions options;
    options.objective = objective;
    options.top_k = 4;
    options.threads = 2;
    const Plan plan = make_plan(p, options);
    ASSERT_EQ(plan.batches.size(), 2u);
    for (const BatchPlan& b : plan.batches) {
      ASSERT_GT(b.ranked.size(), 1u);
      ASSERT_LE(b.ranked.size(), 4u);
      for (size_t i = 1; i < b.ranked.size(); ++i) {
        const Evaluated& x = b.ranked[i - 1];
        const Evaluated& y = b.ranked[i];
        if (objective == Objective::ttfo) {
          EXPECT_LE(std::tie(x.ttfo_ns, x.decode_step_ns), std::tie(y.ttfo_ns, y.decode_step_ns));
        } else {
          EXPECT_LE(std::tie(x.decode_step_ns, x.ttfo_ns), std::tie(y.decode_step_ns, y.ttfo_ns));
        }
      }
      // Each stage is at its minimum, so the best beats or matches both baselines on both keys.
      EXPECT_LE(b.best().ttfo_ns, b.all_conv.ttfo_ns);
      EXPECT_LE(b.best().decode_step_ns, b.all_conv.decode_step_ns);
      ASSERT_TRUE(b.all_mk);
      EXPECT_LE(b.best().ttfo_ns, b.all_mk->ttfo_ns);
      EXPECT_LE(b.best().decode_step_ns, b.all_mk->decode_step_ns);
    }
  }
}

TEST(PlanTest, ParetoFrontHoldsNoDominatedPoint) {
  const Plan plan = make_plan(random_profile("tiny-qwen3", {1, 2, 4}, 3), {.top_k = 3});
  ASSERT_FALSE(plan.pareto.empty());
  for (size_t i = 0; i < plan.pareto.size(); ++i) {
    for (size_t j = 0; j < plan.pareto.size(); ++j) {
      const ParetoPoint& p = plan.pareto[i];
      const ParetoPoint& q = plan.pareto[j];
      if (i == j) continue;
      EXPECT_FALSE(q.ttfo_ns <= p.ttfo_ns && q.throughput_per_s >= p.throughput_per_s &&
                   (q.ttfo_ns < p.ttfo_ns || q.throughput_per_s > p.throughput_per_s));
    }
    if (i > 0) {
      EXPECT_LE(plan.pareto[i - 1].ttfo_ns, plan.pareto[i].ttfo_ns);
    }
  }
}

// A coverage floor counts ops in mk regions: a --top past one more than the largest stage's op
// count ranks no composition the capped one does not, and the plan says it took the cap.
TEST(PlanTest, TopBeyondEveryOpCountIsCappedAndRanksTheSame) {
  const Profile p = random_profile("tiny-llama", {1}, 7);
  simulator::Simulator sim(p, {});
  int most_ops = 0;
  for (const model::StageShape& s : sim.stage_shapes(1)) most_ops = std::max(most_ops, s.op_count);
  const Plan capped = make_plan(p, {.top_k = most_ops + 1, .threads = 2});
  const Plan asked = make_plan(p, {.top_k = 100000, .threads = 2});
  EXPECT_EQ(capped.top_k, most_ops + 1);
  EXPECT_EQ(asked.top_k, most_ops + 1);
  ASSERT_EQ(asked.batches.size(), 1u);
  ASSERT_EQ(asked.batches[0].ranked.size(), capped.batches[0].ranked.size());
  for (size_t i = 0; i < asked.batches[0].ranked.size(); ++i) {
    EXPECT_EQ(asked.batches[0].ranked[i].text, capped.batches[0].ranked[i].text) << i;
  }
  EXPECT_EQ(make_plan(p, {.top_k = 3}).top_k, 3);  // below the cap: as asked
}

TEST(PlanTest, SaysWhereTheProfileTimesNoTileRegion) {
  PlanOptions options;
  options.batches = {1};
  options.threads = 1;
  testing::SyntheticDevice older;
  older.sm_limits = false;
  const Plan without = make_plan(testing::synthetic_profile("tiny-llama", {1}, 16, older), options);
  const std::vector<std::string>& notes = without.batch(1).notes;
  EXPECT_TRUE(std::ranges::any_of(notes, [](const std::string& n) {
    return n.starts_with("no tile region in prefill, decode: ") &&
           n.find("device.sm_limits missing") != std::string::npos;
  })) << ::testing::PrintToString(notes);
  const Plan with = make_plan(testing::synthetic_profile("tiny-llama", {1}, 16), options);
  EXPECT_FALSE(std::ranges::any_of(
      with.batch(1).notes, [](const std::string& n) { return n.starts_with("no tile region"); }));
}

TEST(PlanTest, ProgressRisesToOne) {
  std::vector<double> seen;
  PlanOptions options;
  options.threads = 2;
  options.progress = [&](double f, const std::string&) { seen.push_back(f); };
  make_plan(random_profile("tiny-llama", {1, 2}, 5), options);
  ASSERT_FALSE(seen.empty());
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  for (double f : seen) EXPECT_TRUE(f >= 0 && f <= 1) << f;
}

TEST(PlanJsonTest, RoundTripsAndGivesEachBatchItsComposition) {
  PlanOptions options;
  options.top_k = 3;
  const Plan plan = make_plan(random_profile("tiny-qwen3", {1, 2, 4}, 11), options);
  const nlohmann::json doc = nlohmann::json::parse(plan_to_json(plan).dump(1));
  EXPECT_EQ(doc["schema"], "megacut.plan/1");
  EXPECT_EQ(plan_from_json(doc, "plan.json"), plan);

  // Without a minimum gain every batch settles on its best, launched as planned (no PDL).
  simulator::Simulator sim(random_profile("tiny-qwen3", {1, 2, 4}, 11));
  for (const BatchPlan& b : plan.batches) {
    const PlannedRun run = plan_composition(doc, b.batch, sim.stage_shapes(b.batch), "p.json");
    EXPECT_EQ(run.composition, b.best().composition);
    EXPECT_EQ(run.composition.to_string(), b.best().text);
    EXPECT_FALSE(run.pdl);
  }
  try {
    plan_composition(doc, 8, sim.stage_shapes(1), "p.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "p.json: no plan for batch 8 (planned batches: 1, 2, 4)");
  }
}

// A batch whose best does not gain the minimum over all-conventional settles on
// all-conventional: plan.json's composition, the one megacut run executes, is then conv, while
// its ranked list keeps the best first. A minimum gain of 1000% is never met.
TEST(PlanJsonTest, EachBatchRunsTheCompositionItSettlesOn) {
  const Plan plan =
      make_plan(random_profile("tiny-llama", {1, 2}, 13), {.top_k = 2, .min_gain = 10.0});
  const nlohmann::json doc = nlohmann::json::parse(plan_to_json(plan).dump(1));
  EXPECT_EQ(plan_from_json(doc, "plan.json"), plan);
  simulator::Simulator sim(random_profile("tiny-llama", {1, 2}, 13));
  for (size_t i = 0; i < plan.batches.size(); ++i) {
    const BatchPlan& b = plan.batches[i];
    const PlannedRun run = plan_composition(doc, b.batch, sim.stage_shapes(b.batch), "p.json");
    EXPECT_EQ(run.composition, b.all_conv.composition);
    EXPECT_EQ(doc["batches"][i]["text"], b.all_conv.text);
    EXPECT_EQ(doc["batches"][i]["ranked"][0]["text"], b.best().text);
  }
  // A plan.json whose composition is not the settled one is refused, naming the field.
  nlohmann::json bad = doc;
  bad["category"]["min_gain"] = 0.0;
  if (!(plan.batches[0].best().composition == plan.batches[0].all_conv.composition)) {
    try {
      plan_from_json(bad, "p.json");
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("p.json: field 'batches[0].composition': differs "
                                           "from the composition the batch settles on"),
                std::string::npos)
          << e.what();
    }
  }
}

// choose_pdl plans each batch with plain and with PDL launches and keeps the faster settled
// composition. With a minimum gain of 1000% every batch settles on all-conventional, whose
// kernel boundaries cost the synthetic device's PDL gap of 300 ns instead of 800 ns: so every
// batch launches with PDL (and says so in a note). With a PDL gap of 2,000 ns none does, and the
// plan equals the plain one.
TEST(PlanTest, ChoosesPdlWhereItIsPredictedFaster) {
  const Profile faster = testing::synthetic_profile("tiny-llama", {1, 4}, 16);
  const PlanOptions options{.top_k = 2, .min_gain = 10.0, .choose_pdl = true};
  const Plan with = make_plan(faster, options);
  for (const BatchPlan& b : with.batches) {
    EXPECT_TRUE(b.pdl) << "batch " << b.batch;
    ASSERT_FALSE(b.notes.empty());
    EXPECT_EQ(b.notes.back().rfind("launched with PDL: predicted TTFO ", 0), 0u) << b.notes.back();
    EXPECT_LT(b.all_conv.ttfo_ns,
              make_plan(faster, {.top_k = 2, .min_gain = 10.0}).batch(b.batch).all_conv.ttfo_ns);
  }
  const nlohmann::json doc = nlohmann::json::parse(plan_to_json(with).dump(1));
  EXPECT_EQ(plan_from_json(doc, "plan.json"), with);
  simulator::Simulator sim(faster);
  EXPECT_TRUE(plan_composition(doc, 4, sim.stage_shapes(4), "p.json").pdl);

  testing::SyntheticDevice slow_pdl;
  slow_pdl.kernel_gap_pdl_ns = 2000;
  const Profile slower = testing::synthetic_profile("tiny-llama", {1, 4}, 16, slow_pdl);
  const Plan without = make_plan(slower, options);
  const Plan plain = make_plan(slower, {.top_k = 2, .min_gain = 10.0});
  ASSERT_EQ(without.batches.size(), plain.batches.size());
  for (size_t i = 0; i < plain.batches.size(); ++i) {
    EXPECT_FALSE(without.batches[i].pdl) << "batch " << plain.batches[i].batch;
    EXPECT_EQ(without.batches[i].ranked, plain.batches[i].ranked);
    EXPECT_EQ(without.batches[i].all_conv, plain.batches[i].all_conv);
    EXPECT_EQ(without.batches[i].notes, plain.batches[i].notes);
  }
  EXPECT_EQ(without.pareto, plain.pareto);
  EXPECT_EQ(without.category, plain.category);
}

TEST(PlanJsonTest, ErrorsNameTheFileAndField) {
  const Plan plan = make_plan(random_profile("tiny-llama", {1}, 12), {.top_k = 2});
  ASSERT_EQ(plan.batches[0].ranked.size(), 2u);
  const nlohmann::json good = plan_to_json(plan);
  auto error_of = [](const nlohmann::json& doc) {
    return testing::error_of([&] { plan_from_json(doc, "plan.json"); });
  };
  nlohmann::json doc = good;
  doc["schema"] = "megacut.plan/0";
  EXPECT_EQ(error_of(doc), "plan.json: field 'schema': expected \"megacut.plan/1\"");
  doc = good;
  doc["batches"][0]["ranked"][1]["text"] = "decode: mk[0:99]";
  EXPECT_NE(error_of(doc).find("plan.json: field 'batches[0].ranked[1].text': composition"),
            std::string::npos)
      << error_of(doc);
  doc = good;
  doc["batches"][0].erase("ttfo_ns");
  doc["batches"][0]["all_conv"].erase("ttfo_ns");
  EXPECT_EQ(error_of(doc), "plan.json: field 'batches[0].all_conv.ttfo_ns': missing");
  doc = good;
  doc["batches"][0]["pdl"] = 1;
  EXPECT_EQ(error_of(doc), "plan.json: field 'batches[0].pdl': expected true or false, got 1");
  doc = good;
  doc["objective"] = 3;
  EXPECT_EQ(error_of(doc), "plan.json: field 'objective': expected a string, got 3");
  doc = good;
  doc["objective"] = "fast";
  EXPECT_NE(error_of(doc).find("plan.json: field 'objective': "), std::string::npos)
      << error_of(doc);
  doc = good;
  doc["top_k"] = -2;
  EXPECT_EQ(error_of(doc),
            "plan.json: field 'top_k': expected an integer in [1, 2147483647], got -2");
  doc = good;
  doc["batches"][0]["composition"] =
      model::composition_to_json(plan.batches[0].all_conv.composition);
  if (!(plan.batches[0].all_conv.composition == plan.batches[0].best().composition)) {
    EXPECT_NE(error_of(doc).find("field 'batches[0].composition': differs from the composition "
                                 "the batch settles on"),
              std::string::npos)
        << error_of(doc);
  }
}

TEST(PlanInputTest, BadInputsGiveClearErrors) {
  auto error_of = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(parse_batch_list("1,2,16"), (std::vector<int64_t>{1, 2, 16}));
  EXPECT_EQ(error_of([] { parse_batch_list("1,x,4"); }),
            "--batch: 'x' in '1,x,4' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(error_of([] { parse_batch_list("1,,4"); }),
            "--batch: '' in '1,,4' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(error_of([] { parse_batch_list("0"); }),
            "--batch: '0' in '0' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(error_of([] { parse_batch_list("2,4,2"); }), "--batch: 2 is listed twice in '2,4,2'");
  EXPECT_EQ(error_of([] { parse_batch_list("3x"); }),
            "--batch: '3x' in '3x' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(parse_objective("throughput"), Objective::throughput);
  EXPECT_EQ(error_of([] { parse_objective("fast"); }),
            "--objective: 'fast' is not an objective (ttfo: time to first output first; "
            "throughput: decode throughput first)");

  const Profile p = testing::synthetic_profile("tiny-llama", {1, 2, 4}, 16);
  EXPECT_EQ(error_of([&] {
              make_plan(p, {.batches = {1, 3}});
            }),
            "profile synthetic tiny-llama: no measurements at batch 3 (measured: 1, 2, 4); "
            "profile that batch, or allow interpolation (--allow-interpolate)");
  EXPECT_EQ(error_of([&] { make_plan(p, {.top_k = 0}); }),
            "plan: the number of ranked compositions (--top) must be at least 1, not 0");
  // Interpolation fills a batch between measured ones, but never beyond them.
  PlanOptions interpolate{.batches = {3}};
  interpolate.sim.allow_interpolate = true;
  const Plan interpolated = make_plan(p, interpolate);
  EXPECT_EQ(interpolated.batches.front().batch, 3);
  ASSERT_EQ(interpolated.batches.front().notes.size(), 1u);
  EXPECT_NE(interpolated.batches.front().notes[0].find("interpolated"), std::string::npos);
  interpolate.batches = {8};
  EXPECT_NE(error_of([&] { make_plan(p, interpolate); }).find("outside the measured batches"),
            std::string::npos);
}

}  // namespace
}  // namespace megacut::planner
