// One mk region on the engine, on hand-built tile graphs and schedules: the expectations are
// worked out in the comments before each assertion.
#include "simulator/megakernel.h"

#include <gtest/gtest.h>

#include <random>

#include "model/error.h"
#include "model/graph.h"
#include "model/op.h"
#include "model/schedule.h"

namespace megacut::simulator {
namespace {

// An op kind for hand-built graphs: tile i of the output reads tile i of its input (same
// tiling), and costs nothing (tests set task costs directly).
class Copy final : public model::OpKind {
 public:
  std::string_view name() const override { return "test.copy"; }
  int input_count() const override { return 1; }
  model::Access access(int) const override { return model::Access::one_to_one; }
  std::vector<model::Box> input_boxes(const model::Op&, const model::Graph&, int,
                                      const model::Box& out) const override {
    return {out};
  }
  model::TileCost tile_cost(const model::Op&, const model::Graph&,
                            const model::Box&) const override {
    return {};
  }
};

// A chain of `ops` ops of `tiles` tiles each: tile i of op k depends on tile i of op k-1.
model::Graph chain(int ops, int64_t tiles) {
  if (model::find_op_kind("test.copy") == nullptr) {
    model::register_op_kind(std::make_unique<Copy>());
  }
  model::Graph g("test", 1);
  int x = g.add_tensor({"in", model::TensorRole::input, model::DType::bf16, {tiles, 1}});
  for (int k = 0; k < ops; ++k) {
    // (Appending rather than operator+ sidesteps a GCC 12 -Wrestrict false positive.)
    std::string name = "op";
    name += std::to_string(k);
    const int y = g.add_tensor(
        {name + ".out", model::TensorRole::activation, model::DType::bf16, {tiles, 1}});
    g.add_op(name, "test.copy", {x}, {}, y, model::Tiling{tiles, 1, 1, 1});
    x = y;
  }
  g.finalize();
  return g;
}

model::Schedule schedule(int op_begin, int op_end, std::vector<std::vector<model::TaskId>> queues) {
  model::Schedule s;
  s.op_begin = op_begin;
  s.op_end = op_end;
  s.queues = std::move(queues);
  return s;
}

TaskCosts costs(std::vector<TimeNs> fixed, std::vector<double> bytes) {
  return TaskCosts{std::move(fixed), std::move(bytes)};
}

MegakernelParams params(double bytes_per_ns, TimeNs latency, bool spans = false) {
  return MegakernelParams{bytes_per_ns, latency, spans};
}

TEST(MegakernelTest, ChainAcrossQueuesPaysTheSignalLatencyEachHop) {
  // Three ops of one tile, each 1 µs of fixed time, each on its own queue, 400 ns from signal
  // to wait: 1000 + 400 + 1000 + 400 + 1000 = 3.8 µs.
  const model::Graph g = chain(3, 1);
  const auto run = simulate_megakernel(g, schedule(0, 3, {{0}, {1}, {2}}),
                                       costs({1000, 1000, 1000}, {0, 0, 0}), params(1000, 400));
  EXPECT_EQ(run.makespan_ns, 3800);
  // The path: task, wait, task, wait, task, contiguous from 0 to the end.
  ASSERT_EQ(run.critical_path.size(), 5u);
  EXPECT_EQ(run.critical_path[1].kind, StepKind::wait);
  EXPECT_EQ(run.critical_path[1].start_ns, 1000);
  EXPECT_EQ(run.critical_path[1].end_ns, 1400);
  EXPECT_EQ(run.critical_path[4].op, 2);
  EXPECT_EQ(run.critical_path[4].end_ns, 3800);
}

TEST(MegakernelTest, HopsByDataPayTheWordLatency) {
  // The chain of three across queues, op 1 taking its x from op 0 by flagged words (150 ns) and
  // op 2 from op 1 by counter (400 ns): 1000 + 150 + 1000 + 400 + 1000 = 3.55 µs.
  const model::Graph g = chain(3, 1);
  TaskCosts c = costs({1000, 1000, 1000}, {0, 0, 0});
  c.by_data = {{0, 1}};
  MegakernelParams p = params(1000, 400);
  p.word_latency_ns = 150;
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 3, {{0}, {1}, {2}}), c, p).makespan_ns, 3550);
  // Both by words: 3.3 µs. On one queue no hop waits: 3 µs.
  c.by_data = {{0, 1}, {1, 2}};
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 3, {{0}, {1}, {2}}), c, p).makespan_ns, 3300);
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 3, {{0, 1, 2}}), c, p).makespan_ns, 3000);
  // Cut short at op 2, the region keeps its costs: the hop into op 2 is a longer region's.
  c.fixed_ns.resize(2);
  c.bytes.resize(2);
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 2, {{0}, {1}}), c, p).makespan_ns, 2150);
  // A hop by data that goes backwards is refused.
  c.by_data = {{1, 0}};
  EXPECT_THROW(simulate_megakernel(g, schedule(0, 2, {{0}, {1}}), c, p), Error);
}

TEST(MegakernelTest, ChainOnOneQueueWaitsForNoSignal) {
  // The same chain on one queue: the producer ran on the same CTA, 3 x 1 µs = 3 µs.
  const model::Graph g = chain(3, 1);
  const auto run = simulate_megakernel(g, schedule(0, 3, {{0, 1, 2}}),
                                       costs({1000, 1000, 1000}, {0, 0, 0}), params(1000, 400));
  EXPECT_EQ(run.makespan_ns, 3000);
  EXPECT_EQ(run.lane_busy_ns, std::vector<TimeNs>{3000});
}

TEST(MegakernelTest, IndependentTasksOnOneQueueRunInOrder) {
  // Four independent tiles of one op on one queue, 250 ns each: 1 µs; on two queues: 0.5 µs.
  const model::Graph g = chain(1, 4);
  const TaskCosts c = costs({250, 250, 250, 250}, {0, 0, 0, 0});
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 1, {{0, 1, 2, 3}}), c, params(1, 0)).makespan_ns,
            1000);
  EXPECT_EQ(simulate_megakernel(g, schedule(0, 1, {{0, 2}, {1, 3}}), c, params(1, 0)).makespan_ns,
            500);
}

TEST(MegakernelTest, ConcurrentTasksShareTheDeviceBandwidth) {
  // Two tasks on two queues share 4 TB/s, each moves 8 MB then computes 500 ns: the bytes are
  // through at 4 µs, both end at 4.5 µs.
  const model::Graph g = chain(1, 2);
  const auto run = simulate_megakernel(g, schedule(0, 1, {{0}, {1}}), costs({500, 500}, {8e6, 8e6}),
                                       params(4000, 0));
  EXPECT_EQ(run.makespan_ns, 4500);
  EXPECT_EQ(run.lane_busy_ns, (std::vector<TimeNs>{4500, 4500}));
}

TEST(MegakernelTest, SerialTasksDoNotContend) {
  // The same two tasks on one queue: each alone moves 8 MB in 2 µs and computes 0.5 µs:
  // 2 x 2.5 µs = 5 µs.
  const model::Graph g = chain(1, 2);
  const auto run = simulate_megakernel(g, schedule(0, 1, {{0, 1}}), costs({500, 500}, {8e6, 8e6}),
                                       params(4000, 0));
  EXPECT_EQ(run.makespan_ns, 5000);
}

TEST(MegakernelTest, DependencyOutsideTheRegionIsAlreadyMet) {
  // Region [1, 2) of a two-op chain: op 0 ran before the kernel boundary, so op 1's two tiles
  // start at once: 700 ns.
  const model::Graph g = chain(2, 2);
  const auto run =
      simulate_megakernel(g, schedule(1, 2, {{2}, {3}}), costs({700, 700}, {0, 0}), params(1, 400));
  EXPECT_EQ(run.makespan_ns, 700);
}

TEST(MegakernelTest, ConsumerWaitsForTheLaterOfQueueAndDependency) {
  // Queue 0 runs op0.tile0 (1 µs) then op1.tile1 (1 µs); queue 1 runs op0.tile1 (3 µs) then
  // op1.tile0 (1 µs). op1.tile1 needs op0.tile1 (queue 1, visible at 3 µs + 0.2 µs), so it
  // starts at 3.2 µs, not 1 µs; op1.tile0 needs op0.tile0 (visible at 1.2 µs) but its queue
  // is free only at 3 µs. Ends: 4.2 µs and 4 µs.
  const model::Graph g = chain(2, 2);
  const auto run =
      simulate_megakernel(g, schedule(0, 2, {{0, 3}, {1, 2}}),
                          costs({1000, 3000, 1000, 1000}, {0, 0, 0, 0}), params(1, 200, true));
  EXPECT_EQ(run.makespan_ns, 4200);
  ASSERT_EQ(run.spans.size(), 4u);
  for (const Span& s : run.spans) {
    if (s.op == 1 && s.tile == 1) {
      EXPECT_EQ(s.start_ns, 3200);
    }
    if (s.op == 1 && s.tile == 0) {
      EXPECT_EQ(s.start_ns, 3000);
    }
  }
  // Critical path: op0.tile1 (3 µs), the 0.2 µs wait, op1.tile1.
  ASSERT_EQ(run.critical_path.size(), 3u);
  EXPECT_EQ(run.critical_path[0].tile, 1);
  EXPECT_EQ(run.critical_path[0].lane, 1);
  EXPECT_EQ(run.critical_path[1].kind, StepKind::wait);
}

TEST(MegakernelTest, ScheduleThatWaitsOnALaterTaskOfItsQueueIsReported) {
  // Queue 0 holds the consumer before its producer: it can never run; say so, don't hang.
  const model::Graph g = chain(2, 1);
  EXPECT_THROW(
      simulate_megakernel(g, schedule(0, 2, {{1, 0}}), costs({1, 1}, {0, 0}), params(1, 0)), Error);
}

TEST(MegakernelTest, MakeScheduleRegionMatchesTheLowerBounds) {
  // 64 independent tiles of 8 MB and 1 µs each over 8 queues at 4 TB/s: the bytes alone need
  // 512 MB / 4 TB/s = 128 µs, more than 8 tiles x (1 µs + 2 µs alone) per queue, so the
  // region is bandwidth-bound: at least 128 µs, and with every queue busy from the start the
  // bytes flow at full rate until the last tiles compute: at most 128 µs + 8 x 1 µs.
  const model::Graph g = chain(1, 64);
  const model::Schedule s = model::make_schedule(g, 0, 1, 8);
  const auto run = simulate_megakernel(
      g, s, costs(std::vector<TimeNs>(64, 1000), std::vector<double>(64, 8e6)), params(4000, 0));
  EXPECT_GE(run.makespan_ns, 128000);
  EXPECT_LE(run.makespan_ns, 136000);
}

// Costs with link bytes (communication tasks of tensor parallel) beside the device bytes.
TaskCosts costs(std::vector<TimeNs> fixed, std::vector<double> bytes,
                std::vector<double> link_bytes) {
  return TaskCosts{std::move(fixed), std::move(bytes), std::move(link_bytes)};
}

MegakernelParams link_params(double bytes_per_ns, TimeNs latency, double link_bytes_per_ns) {
  MegakernelParams p = params(bytes_per_ns, latency);
  p.link_bytes_per_ns = link_bytes_per_ns;
  return p;
}

TEST(MegakernelTest, ACommunicationTaskMovesLinkAndDeviceBytesAtOnce) {
  // One task, 2 µs fixed: 8 MB at 4 TB/s (2 µs) beside 3 MB at 100 GB/s over the links (30 µs):
  // the later, then the fixed time, 32 µs. With 0.1 MB over the links (1 µs) the device bytes
  // are the later: 4 µs.
  const model::Graph g = chain(1, 1);
  const MegakernelParams p = link_params(4000, 0, 100);
  EXPECT_EQ(
      simulate_megakernel(g, schedule(0, 1, {{0}}), costs({2000}, {8e6}, {3e6}), p).makespan_ns,
      32000);
  EXPECT_EQ(
      simulate_megakernel(g, schedule(0, 1, {{0}}), costs({2000}, {8e6}, {1e5}), p).makespan_ns,
      4000);
}

TEST(MegakernelTest, CommunicationTasksShareTheLinksNotTheDeviceBandwidth) {
  // Three tiles on three queues: two send 3 MB each over 100 GB/s of links at once (60 µs
  // together, then 2 µs fixed: 62 µs); the third moves 8 MB at 4 TB/s alone on the device's
  // bandwidth (2 µs, then 0.5 µs fixed), whatever the links carry.
  const model::Graph g = chain(1, 3);
  const auto run = simulate_megakernel(g, schedule(0, 1, {{0}, {1}, {2}}),
                                       costs({2000, 2000, 500}, {0, 0, 8e6}, {3e6, 3e6, 0}),
                                       link_params(4000, 0, 100));
  EXPECT_EQ(run.makespan_ns, 62000);
  EXPECT_EQ(run.lane_busy_ns, (std::vector<TimeNs>{62000, 62000, 2500}));
}

// The analytic case of tensor parallel: an all-reduce of S = 8 MB over N = 4 GPUs whose links
// carry W = 100 bytes/ns a GPU. A ring all-reduce sends 2 S (N - 1) / N = 12 MB from each GPU;
// as one collective after the chain it would take L + 12 MB / W = 2 + 120 = 122 µs (L = 2 µs,
// its latency). Cut into n = 4 tiles, each sends 3 MB (model::ring_link_bytes of its 2 MB):
// 30 µs, plus L = 32 µs a tile, on queue 1; tile i of the all-reduce waits for tile i of a chain
// op on queue 0 (c a tile), then for the signal (0.5 µs).
//  - c = 40 µs > 32 µs: each tile's reduction hides under the next tile's compute; only the
//    last is exposed: n c + 0.5 + 32 = 192.5 µs, against 160 + 122 = 282 µs one after the other.
//  - c = 20 µs < 32 µs: the link sets the pace once the first tile is done: c + 0.5 + n 32 =
//    148.5 µs.
TEST(MegakernelTest, AnAllReduceOverlapsTheChainOfTilesItReduces) {
  constexpr int64_t kGpus = 4, kTiles = 4, kMessage = 8'000'000;
  const double tile_link =
      static_cast<double>(model::ring_link_bytes("all-reduce", kMessage / kTiles, kGpus));
  ASSERT_EQ(tile_link, 3e6);
  const model::Graph g = chain(2, kTiles);
  const model::Schedule s = schedule(0, 2, {{0, 1, 2, 3}, {4, 5, 6, 7}});
  const std::vector<double> link{0, 0, 0, 0, tile_link, tile_link, tile_link, tile_link};
  const std::vector<double> none(8, 0);
  const MegakernelParams p = link_params(4000, 500, 100);
  auto fixed = [](TimeNs c) { return std::vector<TimeNs>{c, c, c, c, 2000, 2000, 2000, 2000}; };
  EXPECT_EQ(simulate_megakernel(g, s, costs(fixed(40000), none, link), p).makespan_ns, 192500);
  EXPECT_EQ(simulate_megakernel(g, s, costs(fixed(20000), none, link), p).makespan_ns, 148500);
}

TEST(MegakernelTest, RegionsCutShortRunWithTheirLinkTransfersAsAlone) {
  // A chain of three ops of two tiles; op 1's tiles send over the links, its tile 1 also moves
  // 40 MB on the device (10 µs), so it is still sending when op 2's first task starts: region
  // [0, 2) then continues from a copy of that moment, transfers in flight on the links included
  // (simulate_megakernel_prefixes), and must end as its schedule run alone does; so must the
  // whole region.
  const model::Graph g = chain(3, 2);
  const TaskCosts c =
      costs({100, 100, 100, 100, 100, 100}, {0, 0, 0, 4e7, 0, 0}, {0, 0, 1e4, 2e6, 0, 0});
  const MegakernelParams p = link_params(4000, 0, 100);
  const std::vector<int> ends{2, 3};
  const PrefixMakespans prefixes =
      simulate_megakernel_prefixes(g, schedule(0, 3, {{0, 2, 4}, {1, 3, 5}}), c, p, ends);
  // A continued run simulates some tasks twice: more than the region's six.
  EXPECT_GT(prefixes.tasks, 6);
  const std::vector<std::vector<std::vector<model::TaskId>>> cut{{{0, 2}, {1, 3}},
                                                                 {{0, 2, 4}, {1, 3, 5}}};
  for (size_t i = 0; i < ends.size(); ++i) {
    const size_t n = static_cast<size_t>(2 * ends[i]);
    const TaskCosts part{std::vector<TimeNs>(c.fixed_ns.begin(), c.fixed_ns.begin() + n),
                         std::vector<double>(c.bytes.begin(), c.bytes.begin() + n),
                         std::vector<double>(c.link_bytes.begin(), c.link_bytes.begin() + n)};
    EXPECT_EQ(prefixes.makespan_ns[i],
              simulate_megakernel(g, schedule(0, ends[i], cut[i]), part, p).makespan_ns)
        << "region [0, " << ends[i] << ")";
  }
  // Op 1 starts at 0.1 µs; its tile 0's 10 KB share the links with tile 1 (50 bytes/ns each,
  // 0.2 µs), then tile 1 sends its other 1.99 MB alone (19.9 µs) and computes 0.1 µs: 20.3 µs.
  EXPECT_EQ(prefixes.makespan_ns[0], 20300);
}

TEST(MegakernelTest, RegionsCutShortKeepTheirHopsByData) {
  // The chain of three ops of two tiles across two queues, the hops 0 -> 1 by words (100 ns) and
  // 1 -> 2 by counter (400 ns): each region the prefixes end, continued from the whole region's
  // run, ends as its schedule alone does with the same costs. Region [0, 2): op 0's tiles end at
  // 1 µs, op 1's tile on the other queue sees its tile 1 µs + 100 ns later: 1000 + 100 + 1000.
  const model::Graph g = chain(3, 2);
  TaskCosts c = costs({1000, 1000, 1000, 1000, 1000, 1000}, {0, 0, 0, 0, 0, 0});
  c.by_data = {{0, 1}};
  MegakernelParams p = params(1000, 400);
  p.word_latency_ns = 100;
  // Tile i of op k on queue (i + k) % 2: every hop crosses queues.
  const std::vector<std::vector<model::TaskId>> whole{{0, 3, 4}, {1, 2, 5}};
  const std::vector<int> ends{2, 3};
  const PrefixMakespans prefixes =
      simulate_megakernel_prefixes(g, schedule(0, 3, whole), c, p, ends);
  const std::vector<std::vector<std::vector<model::TaskId>>> cut{{{0, 3}, {1, 2}}, whole};
  for (size_t i = 0; i < ends.size(); ++i) {
    TaskCosts part = c;
    part.fixed_ns.resize(static_cast<size_t>(2 * ends[i]));
    part.bytes.resize(static_cast<size_t>(2 * ends[i]));
    EXPECT_EQ(prefixes.makespan_ns[i],
              simulate_megakernel(g, schedule(0, ends[i], cut[i]), part, p).makespan_ns)
        << "region [0, " << ends[i] << ")";
  }
  EXPECT_EQ(prefixes.makespan_ns[0], 2100);
  // The whole: then op 2 on the other queue 400 ns after op 1: 2100 + 400 + 1000.
  EXPECT_EQ(prefixes.makespan_ns[1], 3500);
}

TaskCosts costs_ahead(std::vector<TimeNs> fixed, std::vector<double> bytes,
                      std::vector<double> ahead) {
  return TaskCosts{std::move(fixed), std::move(bytes), {}, std::move(ahead)};
}

TEST(MegakernelTest, WeightsLoadAheadWhileATaskWaitsForItsDependency) {
  // Op 0's task (1 µs, no bytes) on queue 0; op 1's on queue 1 waits for it and moves 4 KB at
  // 4 bytes/ns (1 µs), then computes 100 ns. Loading nothing ahead it starts at 1 µs: 2.1 µs.
  // Loading all 4 KB ahead, from the region's start, they are through when it starts: 1.1 µs.
  // Loading 2 KB ahead (0.5 µs), the other 2 KB move from its start: 1 + 0.5 + 0.1 = 1.6 µs.
  const model::Graph g = chain(2, 1);
  const model::Schedule s = schedule(0, 2, {{0}, {1}});
  EXPECT_EQ(simulate_megakernel(g, s, costs({1000, 100}, {0, 4000}), params(4, 0)).makespan_ns,
            2100);
  EXPECT_EQ(simulate_megakernel(g, s, costs_ahead({1000, 100}, {0, 4000}, {0, 4000}), params(4, 0))
                .makespan_ns,
            1100);
  EXPECT_EQ(simulate_megakernel(g, s, costs_ahead({1000, 100}, {0, 4000}, {0, 2000}), params(4, 0))
                .makespan_ns,
            1600);
}

TEST(MegakernelTest, TheRestOfATasksBytesFollowsWhatItLoadsAhead) {
  // Op 0's task takes 200 ns; op 1's loads 2 KB of its 4 KB ahead from 0 to 0.5 µs. It starts at
  // 0.2 µs and its other 2 KB follow the first, from 0.5 to 1 µs (one stream a CTA, never two
  // at once): 1.1 µs. Loading nothing ahead, its 4 KB move from 0.2 µs: 1.3 µs.
  const model::Graph g = chain(2, 1);
  const model::Schedule s = schedule(0, 2, {{0}, {1}});
  EXPECT_EQ(simulate_megakernel(g, s, costs_ahead({200, 100}, {0, 4000}, {0, 2000}), params(4, 0))
                .makespan_ns,
            1100);
  EXPECT_EQ(simulate_megakernel(g, s, costs({200, 100}, {0, 4000}), params(4, 0)).makespan_ns,
            1300);
}

TEST(MegakernelTest, ATaskLoadsAheadOnlyOnceItsQueueIsFree) {
  // Both tasks on one queue: op 1's weights wait for op 0's task to end (the ring is its CTA's),
  // so loading ahead changes nothing: 1000 + 1000 + 100 = 2.1 µs.
  const model::Graph g = chain(2, 1);
  const model::Schedule s = schedule(0, 2, {{0, 1}});
  EXPECT_EQ(simulate_megakernel(g, s, costs_ahead({1000, 100}, {0, 4000}, {0, 4000}), params(4, 0))
                .makespan_ns,
            2100);
}

TEST(MegakernelTest, LoadsAheadShareTheBandwidthWithTheTasksRunning) {
  // Op 0's two tasks (queues 0 and 1) move 4 KB each; op 1's two (queues 2 and 3) wait for them
  // and load all their 4 KB ahead from 0. Four transfers share 16 bytes/ns: 4 bytes/ns each, all
  // through at 1 µs; op 0 ends at 1.1 µs, op 1 starts then with nothing left to move: 1.2 µs.
  const model::Graph g = chain(2, 2);
  const auto run = simulate_megakernel(
      g, schedule(0, 2, {{0}, {1}, {2}, {3}}),
      costs_ahead({100, 100, 100, 100}, {4000, 4000, 4000, 4000}, {0, 0, 4000, 4000}),
      params(16, 0));
  EXPECT_EQ(run.makespan_ns, 1200);
}

TEST(MegakernelTest, RegionsCutShortWhereAWaitingTaskLoadsAheadRunAsAlone) {
  // Three ops of two tiles on two queues. Op 2's tasks load their weights ahead as soon as their
  // queues are free, before any of them starts: the run of region [0, 2) must branch off at
  // the first such load (its tasks never load them), and end as its schedule run alone does.
  const model::Graph g = chain(3, 2);
  const TaskCosts c = costs_ahead({100, 100, 300, 100, 100, 100}, {0, 0, 4e3, 8e3, 6e3, 6e3},
                                  {0, 0, 2e3, 8e3, 6e3, 3e3});
  const MegakernelParams p = params(8, 50);
  const std::vector<int> ends{1, 2, 3};
  const std::vector<std::vector<model::TaskId>> queues{{0, 3, 4}, {1, 2, 5}};
  const PrefixMakespans prefixes =
      simulate_megakernel_prefixes(g, schedule(0, 3, queues), c, p, ends);
  for (size_t i = 0; i < ends.size(); ++i) {
    const model::TaskId n = 2 * ends[i];
    std::vector<std::vector<model::TaskId>> cut;
    for (const auto& q : queues) {
      cut.emplace_back();
      for (model::TaskId t : q) {
        if (t < n) cut.back().push_back(t);
      }
    }
    const size_t m = static_cast<size_t>(n);
    const TaskCosts part = costs_ahead({c.fixed_ns.begin(), c.fixed_ns.begin() + m},
                                       {c.bytes.begin(), c.bytes.begin() + m},
                                       {c.ahead_bytes.begin(), c.ahead_bytes.begin() + m});
    EXPECT_EQ(prefixes.makespan_ns[i],
              simulate_megakernel(g, schedule(0, ends[i], cut), part, p).makespan_ns)
        << "region [0, " << ends[i] << ")";
  }
  // The whole region: loading ahead shortens it.
  EXPECT_LT(
      prefixes.makespan_ns[2],
      simulate_megakernel(g, schedule(0, 3, queues), costs(c.fixed_ns, c.bytes), p).makespan_ns);
}

TEST(MegakernelTest, AQueuesFirstTaskLoadsAheadBeforeItStarts) {
  // One op of two independent tiles on two queues, 8 bytes/ns: tile 0 moves 4 KB, 2 KB of them
  // ahead; tile 1 moves 4 KB, none ahead. Both start at 0 and each CTA streams one transfer at a
  // time: 4 bytes/ns each, tile 0's ahead part is through at 0.5 µs and its rest follows, so both
  // end at 1 µs + 100 ns. (Were tile 0's two parts to move at once, it would take two of three
  // shares and end at 0.75 µs + 100 ns.)
  const model::Graph g = chain(1, 2);
  const auto run =
      simulate_megakernel(g, schedule(0, 1, {{0}, {1}}),
                          costs_ahead({100, 100}, {4000, 4000}, {2000, 0}), params(8, 0));
  EXPECT_EQ(run.lane_busy_ns, (std::vector<TimeNs>{1100, 1100}));
}

// An op kind for random regions: every tile of the output reads the whole 12-row input.
class WholeInput final : public model::OpKind {
 public:
  std::string_view name() const override { return "test.whole"; }
  int input_count() const override { return 1; }
  model::Access access(int) const override { return model::Access::full_row; }
  std::vector<model::Box> input_boxes(const model::Op&, const model::Graph&, int,
                                      const model::Box&) const override {
    return {model::Box{0, 12, 0, 1}};
  }
  model::TileCost tile_cost(const model::Op&, const model::Graph&,
                            const model::Box&) const override {
    return {};
  }
};

// A random region of `ops` ops over 12 rows: each reads the output of a random earlier op (or
// the input), tile for tile or (one in four) whole, in 1 to 12 tiles.
model::Graph random_region(std::mt19937& rng, int ops) {
  chain(1, 1);  // registers test.copy
  if (model::find_op_kind("test.whole") == nullptr) {
    model::register_op_kind(std::make_unique<WholeInput>());
  }
  model::Graph g("random", 1);
  std::vector<int> tensors{
      g.add_tensor({"in", model::TensorRole::input, model::DType::bf16, {12, 1}})};
  for (int k = 0; k < ops; ++k) {
    std::string name = "op";
    name += std::to_string(k);
    const int y =
        g.add_tensor({name + ".out", model::TensorRole::activation, model::DType::bf16, {12, 1}});
    const int64_t rows = std::vector<int64_t>{1, 2, 3, 4, 6, 12}[rng() % 6];
    g.add_op(name, rng() % 4 == 0 ? "test.whole" : "test.copy", {tensors[rng() % tensors.size()]},
             {}, y, model::Tiling{12, 1, rows, 1});
    tensors.push_back(y);
  }
  g.finalize();
  return g;
}

TEST(MegakernelTest, RegionsCutShortMatchTheirRunsAloneOnRandomRegionsThatLoadAhead) {
  // Random regions, queues and costs (some tasks loading all, part or none of their bytes
  // ahead, some sending link bytes): every region cut short, continued from the whole region's
  // run, ends as its schedule run alone does, to the nanosecond.
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const int ops = 2 + static_cast<int>(rng() % 5);
    const model::Graph g = random_region(rng, ops);
    std::vector<std::vector<model::TaskId>> queues(1 + rng() % 5);
    for (model::TaskId t = 0; t < g.task_count(); ++t) queues[rng() % queues.size()].push_back(t);
    const bool links = rng() % 4 == 0;
    TaskCosts c;
    for (model::TaskId t = 0; t < g.task_count(); ++t) {
      c.fixed_ns.push_back(static_cast<TimeNs>(rng() % 4) * 100);
      c.bytes.push_back(rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 8) * 1000);
      c.ahead_bytes.push_back(c.bytes.back() * static_cast<double>(rng() % 5) / 4);
      if (links) c.link_bytes.push_back(static_cast<double>(rng() % 3) * 500);
    }
    MegakernelParams p =
        links ? link_params(static_cast<double>(1 + rng() % 16),
                            static_cast<TimeNs>(rng() % 3) * 50, static_cast<double>(1 + rng() % 8))
              : params(static_cast<double>(1 + rng() % 16), static_cast<TimeNs>(rng() % 3) * 50);
    std::vector<int> ends;
    for (int e = 1; e <= ops; ++e) ends.push_back(e);
    const PrefixMakespans prefixes =
        simulate_megakernel_prefixes(g, schedule(0, ops, queues), c, p, ends);
    for (size_t i = 0; i < ends.size(); ++i) {
      const model::TaskId hi = g.first_task(ends[i]);
      std::vector<std::vector<model::TaskId>> cut;
      for (const auto& q : queues) {
        cut.emplace_back();
        for (model::TaskId t : q) {
          if (t < hi) cut.back().push_back(t);
        }
      }
      TaskCosts part = c;
      part.fixed_ns.resize(hi);
      part.bytes.resize(hi);
      part.ahead_bytes.resize(hi);
      if (links) part.link_bytes.resize(hi);
      ASSERT_EQ(prefixes.makespan_ns[i],
                simulate_megakernel(g, schedule(0, ends[i], cut), part, p).makespan_ns)
          << "round " << round << ", region [0, " << ends[i] << ")";
    }
  }
}

TEST(MegakernelTest, LoadingMoreAheadThanATaskMovesIsRefused) {
  const model::Graph g = chain(1, 1);
  EXPECT_THROW(
      simulate_megakernel(g, schedule(0, 1, {{0}}), costs_ahead({1}, {10}, {11}), params(1, 0)),
      Error);
}

TEST(MegakernelTest, LinkBytesWithoutALinkBandwidthAreRefused) {
  const model::Graph g = chain(1, 1);
  EXPECT_THROW(simulate_megakernel(g, schedule(0, 1, {{0}}), costs({1}, {0}, {1e6}), params(1, 0)),
               Error);
}

}  // namespace
}  // namespace megacut::simulator
