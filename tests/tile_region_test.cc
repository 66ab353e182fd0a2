// Tile regions: the boundary model (simulator/tile_region.h) on cases worked out by hand, and
// the simulator's tile regions on synthetic profiles.
#include "simulator/tile_region.h"

#include <gtest/gtest.h>

#include "model/composition.h"
#include "model/error.h"
#include "simulator/simulator.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::simulator {
namespace {

// Eight SMs of a Hopper GPU: 2048 threads, 32 CTAs, 228 KB of shared memory (1 KB of it per
// CTA for the system), 64 K registers. Launch 0.6 µs, counter 0.4 µs, check round 0.2 µs.
TileDevice device() {
  TileDevice d;
  d.sm_count = 8;
  d.registers_per_sm = 65536;
  d.limits = model::SmLimits{2048, 32, 233472, 1024};
  d.dependent_launch_ns = 600;
  d.signal_latency_ns = 400;
  d.check_round_ns = 200;
  return d;
}

// A kernel of 128 threads at 40 registers, no shared memory: 4 warps of 1280 registers, so 12
// fit on an SM by registers (16 by threads).
TileKernel small(int64_t ctas, int64_t tiles, double duration_ns) {
  return TileKernel{ctas, 128, 40, 0, model::Tiling{tiles, 1, 1, 1}, false, duration_ns};
}

// A kernel that takes an SM's shared memory: one CTA per SM.
TileKernel wide(int64_t ctas, int64_t tiles, double duration_ns) {
  return TileKernel{ctas, 256, 128, 200 * 1024, model::Tiling{tiles, 1, 1, 1}, false, duration_ns};
}

TileReadsFn same_tile() {
  return [](int64_t tile, TileReads& r) { r.tiles.push_back(tile); };
}

TEST(TileStepTest, CtasPerSmFollowTheTightestLimit) {
  EXPECT_EQ(ctas_per_sm(small(1, 1, 0), device()), 12);  // registers: 65536 / 5120
  EXPECT_EQ(ctas_per_sm(wide(1, 1, 0), device()), 1);    // shared memory
  // 32 threads at 16 registers: 512 registers each, 128 by registers, 64 by threads, 32 CTAs.
  EXPECT_EQ(ctas_per_sm(TileKernel{1, 32, 16, 0, {1, 1, 1, 1}, false, 0}, device()), 32);
  // 1024 threads: 2 by threads; 64 registers each: 65536 a CTA, 1 by registers.
  EXPECT_EQ(ctas_per_sm(TileKernel{1, 1024, 64, 0, {1, 1, 1, 1}, false, 0}, device()), 1);
}

TEST(TileStepTest, AConsumerTileStartsWhenTheProducerTilesItReadsAreDone) {
  // Producer: 8 CTAs on 8 SMs walking 16 tiles, 10 µs: tiles 0-7 end at 5 µs, 8-15 at 10 µs.
  // Consumer: 16 CTAs of one tile each, 3 µs (one wave: 12 fit per SM), launched at 0.6 µs,
  // placed at once beside the producer's. Tile j reads producer tile j: tiles 0-7 start at
  // 5 + 0.4 latency + 0.2 check and end at 8.6 µs; tiles 8-15 at 10 + 0.6 + 3 = 13.6 µs. The
  // consumer ends 3.6 µs after the producer, where a kernel boundary would cost 3 µs and a gap.
  const TileStep s =
      simulate_tile_step(small(8, 16, 10000), small(16, 16, 3000), same_tile(), device());
  EXPECT_EQ(s.producer_end_ns, 10000);
  EXPECT_EQ(s.consumer_end_ns, 13600);
  EXPECT_EQ(s.step_ns, 3600);
}

TEST(TileStepTest, AConsumerThatReadsEveryTileWaitsForTheWholeProducer) {
  // The same consumer reading all 16 producer tiles, which it waits for as one count: each
  // starts at 10 µs + 0.4 µs latency + 1 check round and ends 3 µs later: step 3.6 µs.
  const auto all = [](int64_t, TileReads& r) { r.all = true; };
  const TileStep s = simulate_tile_step(small(8, 16, 10000), small(16, 16, 3000), all, device());
  EXPECT_EQ(s.step_ns, 3600);
}

TEST(TileStepTest, AWholeProducerReadIsOneDependencyToCheck) {
  // A consumer of 32 threads that reads all 64 producer tiles waits for one count (the
  // executor's op count): one check round, not two. Producer: 8 CTAs of 8 tiles, 10 us.
  TileKernel consumer = small(8, 8, 3000);
  consumer.threads = 32;
  const auto all = [](int64_t, TileReads& r) { r.all = true; };
  EXPECT_EQ(simulate_tile_step(small(8, 64, 10000), consumer, all, device()).step_ns,
            400 + 200 + 3000);
}

TEST(TileStepTest, AConsumerWithoutRoomWaitsForTheProducersCtasToEnd) {
  // Both kernels take an SM's shared memory. Producer: 16 CTAs, two waves of 5 µs over 10 µs.
  // The consumer launches once the second wave is placed (5 µs) + 0.6 µs, but finds room only as
  // the producer's CTAs end at 10 µs: its 8 CTAs, 4 µs each, read producer tile j (ended at 5
  // µs), so each starts at 10 µs + 0.2 µs check and ends at 14.2 µs.
  const TileStep s =
      simulate_tile_step(wide(16, 16, 10000), wide(8, 8, 4000), same_tile(), device());
  EXPECT_EQ(s.producer_end_ns, 10000);
  EXPECT_EQ(s.consumer_end_ns, 14200);
  EXPECT_EQ(s.step_ns, 4200);
}

TEST(TileStepTest, AConsumerCtaKeepsItsSmUntilTheProducerEnds) {
  // Producer: 8 small CTAs of 10 µs. Consumer: 16 CTAs taking an SM's shared memory each (they
  // fit beside a small one), two waves of its 1 µs, reading nothing: the first 8 are placed at
  // 0.6 µs and done at 1.1 µs, but hold their SMs until the producer ends at 10 µs, so the
  // other 8 run from 10 to 10.5 µs: step 0.5 µs, not 0.
  const auto none = [](int64_t, TileReads&) {};
  const TileStep s = simulate_tile_step(small(8, 8, 10000), wide(16, 16, 1000), none, device());
  EXPECT_EQ(s.consumer_end_ns, 10500);
  EXPECT_EQ(s.step_ns, 500);
}

TEST(TileStepTest, AKernelThatReadsThroughTensorMapsTakesItsTilesGrouped) {
  // Producer: 32 tiles, 16 row tiles of 2 columns, one CTA each, an SM apiece: 4 waves of 2 µs.
  // Its last CTA is placed at 6 µs, so the consumer launches at 6.6 µs: 8 small CTAs of 1 µs,
  // each reading producer tile 24 (row 12, column 0). In CTA order that tile is CTA 24's, in the
  // last wave, done at 8 µs: the consumer ends at 8.4 + 0.2 + 1 = 9.6 µs, step 1.6 µs. Grouped
  // 8 rows at a time, column by column, CTA 20 takes it in the third wave, done at 6 µs: the
  // consumer starts at once and ends at 7.8 µs, before the producer: step 0.
  TileKernel producer = wide(32, 32, 8000);
  producer.tiling = model::Tiling{16, 2, 1, 1};
  const auto tile_24 = [](int64_t, TileReads& r) { r.tiles.push_back(24); };
  EXPECT_EQ(simulate_tile_step(producer, small(8, 8, 1000), tile_24, device()).step_ns, 1600);
  producer.grouped = true;
  EXPECT_EQ(model::grouped_tile(producer.tiling, 20), 24);
  EXPECT_EQ(simulate_tile_step(producer, small(8, 8, 1000), tile_24, device()).step_ns, 0);
}

TEST(TileStepTest, AStepIsNeverNegative) {
  // A short consumer that reads nothing of a long producer ends first: it adds nothing.
  const auto none = [](int64_t, TileReads&) {};
  const TileStep s = simulate_tile_step(small(8, 8, 10000), small(8, 8, 1000), none, device());
  EXPECT_EQ(s.consumer_end_ns, 600 + 1000);
  EXPECT_EQ(s.step_ns, 0);
}

TEST(TileStepTest, ReadsOutsideTheProducerAreRefused) {
  const auto bad = [](int64_t, TileReads& r) { r.tiles.push_back(99); };
  try {
    simulate_tile_step(small(8, 8, 1000), small(8, 8, 1000), bad, device());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads producer tile 99 of 8"), std::string::npos);
  }
}

// ---- the simulator's tile regions
// ----------------------------------------------------------------

constexpr int64_t kPrompt = 16;

model::Composition parse(Simulator& sim, const std::string& text, int64_t batch) {
  return model::parse_composition(text, sim.stage_shapes(batch));
}

TEST(TileRegionTest, ARegionAddsItsFirstKernelAndOneStepPerOp) {
  Simulator sim(testing::synthetic_profile("tiny-llama", {1, 2}, kPrompt));
  const int n = static_cast<int>(sim.graph("decode", 1).op_count());
  // One op alone is a conv region of our kernel.
  for (int op = 1; op < n; ++op) {
    const auto one = sim.simulate_region("decode", 1, {model::RegionKind::tile, op, op + 1},
                                         Boundary::after_conv);
    const auto conv = sim.simulate_region("decode", 1, {model::RegionKind::conv, op, op + 1},
                                          Boundary::after_conv);
    EXPECT_EQ(one->time_ns, conv->time_ns) << "op " << op;
  }
  // Longer regions add one step per op, each depending on the op and the one before only:
  // tile[a:c] - tile[a:b] = tile[b-1:c] - tile[b-1:b] for every a < b < c.
  auto time = [&](int a, int b) {
    return sim
        .simulate_region("decode", 1, {model::RegionKind::tile, a, b},
                         a == 0 ? Boundary::stage_start : Boundary::after_mk)
        ->time_ns;
  };
  for (int a = 0; a + 2 <= n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      for (int c = b + 1; c <= n; ++c) {
        if (b - 1 == a) continue;
        EXPECT_EQ(time(a, c) - time(a, b), time(b - 1, c) - time(b - 1, b))
            << "tile[" << a << ":" << c << "] at " << b;
      }
    }
  }
  // Each step is at most the kernel boundary it replaces: a tile region never loses to conv on
  // this profile, whose kernels take a whole wave of SMs for their full duration.
  const Prediction tile = sim.simulate(parse(sim, "decode: tile", 1), 1);
  const Prediction conv = sim.simulate(parse(sim, "conv", 1), 1);
  EXPECT_LT(tile.decode_step_ns, conv.decode_step_ns);
  EXPECT_EQ(tile.stage("decode").regions[0]->kernels, n);
  EXPECT_TRUE(tile.notes.empty()) << tile.notes.front();
}

TEST(TileRegionTest, TheyRunOurKernelsWhateverTheProviderChoice) {
  testing::SyntheticDevice d;
  d.cublaslt_ratio = 0.5;  // cuBLASLt twice as fast: the fastest policy takes it in conv regions
  const model::Profile p = testing::synthetic_profile("tiny-llama", {1}, kPrompt, d);
  Simulator sim(p, SimOptions{.linear_provider = model::ProviderPolicy::fastest});
  Simulator ours(p);
  const int n = static_cast<int>(sim.graph("decode", 1).op_count());
  EXPECT_EQ(sim.simulate(parse(sim, "decode: tile", 1), 1).decode_step_ns,
            ours.simulate(parse(ours, "decode: tile", 1), 1).decode_step_ns);
  EXPECT_LT(sim.simulate(parse(sim, "conv", 1), 1).decode_step_ns,
            ours.simulate(parse(ours, "conv", 1), 1).decode_step_ns);
  EXPECT_GT(n, 2);
}

TEST(TileRegionTest, WhatFollowsOneFollowsOurKernel) {
  // tiny-llama's decode: op 12 is the lm-head, op 13 the argmax. With cuBLASLt twice as fast,
  // the fastest policy runs the lm-head on it in conv regions, but a tile region ending there
  // ran ours: with PDL, the argmax after it adds its measured PDL step (5 us), as after our
  // kernel, not the PDL gap and its duration, as after cuBLASLt's.
  testing::SyntheticDevice d;
  d.cublaslt_ratio = 0.5;
  model::Profile p = testing::synthetic_profile("tiny-llama", {1}, kPrompt, d);
  model::ConvKernel* argmax = nullptr;
  for (model::StageProfile& s : p.batches[0].stages) {
    if (s.stage == "decode") argmax = &*s.ops.at(13).conv;
  }
  ASSERT_NE(argmax, nullptr);
  argmax->pdl_step_ns = model::constant_stats(5000);
  const TimeNs duration = static_cast<TimeNs>(argmax->duration_ns.mean);
  ASSERT_LT(duration, 5000);
  Simulator sim(p, SimOptions{.pdl = true, .linear_provider = model::ProviderPolicy::fastest});
  ASSERT_EQ(sim.provider_choice(1).of("decode", 12), model::LinearProvider::cublaslt);
  const model::Region last{model::RegionKind::conv, 13, 14};
  const auto after_tile = sim.simulate_region("decode", 1, last, Boundary::after_tile);
  const auto after_conv = sim.simulate_region("decode", 1, last, Boundary::after_conv);
  EXPECT_EQ(after_tile->time_ns - after_conv->time_ns, 5000 - (300 + duration));
  // And the simulator hands that boundary to what follows a tile region.
  const Prediction q = sim.simulate(parse(sim, "decode: tile[0:13] conv[13:]", 1), 1);
  EXPECT_EQ(q.stage("decode").regions[1]->before, Boundary::after_tile);
}

TEST(TileRegionTest, OlderProfilesSayWhatTheyLack) {
  testing::SyntheticDevice d;
  d.sm_limits = false;
  Simulator sim(testing::synthetic_profile("tiny-llama", {1}, kPrompt, d));
  try {
    sim.simulate(parse(sim, "decode: tile", 1), 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device.sm_limits missing, needed by tile[0:"),
              std::string::npos)
        << e.what();
  }
  d.sm_limits = true;
  d.dependent_launch_ns = 0;
  Simulator older(testing::synthetic_profile("tiny-llama", {1}, kPrompt, d));
  const Prediction p = older.simulate(parse(older, "decode: tile", 1), 1);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("micro.dependent_launch_ns"), std::string::npos);
}

}  // namespace
}  // namespace megacut::simulator
