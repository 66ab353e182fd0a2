// Tensor parallel from a profile: simulate and plan take one rank's graphs of tp GPUs as the
// profile holds them (synthetic profiles here, tests/support/synthetic_profile.h; the graphs'
// slicing is model_test's).
#include <gtest/gtest.h>

#include <string>

#include "model/error.h"
#include "model/profile.h"
#include "planner/plan.h"
#include "simulator/simulator.h"
#include "tests/support/error_of.h"
#include "tests/support/synthetic_profile.h"

namespace megacut {
namespace {

using testing::error_of;
using testing::synthetic_profile;
using testing::SyntheticDevice;

// A collective costs what the profile says. In the synthetic profile a collective of B link
// bytes takes the link latency and B / W at link bandwidth W beside its kernel overhead and
// local bytes; so doubling W takes sum(B) / (2 W) off an all-conventional step and nothing else.
// Llama-3.2-1B's decode at batch 1 over 2 GPUs sends 33 * 4096 + 256,512 = 391,680 bytes
// (model_test): at W = 100 bytes/ns, 391,680 / 200 = 1,958.4 ns, give or take the rounding of
// each of the 34 collectives' times to whole nanoseconds.
TEST(TensorParallelTest, ACollectiveCostsItsLinkBytesAtTheLinkBandwidth) {
  SyntheticDevice d;
  d.tp = 2;
  d.link_bytes_per_ns = 100;
  simulator::Simulator slow(synthetic_profile("llama-3.2-1b", {1}, 128, d));
  d.link_bytes_per_ns = 200;
  simulator::Simulator fast(synthetic_profile("llama-3.2-1b", {1}, 128, d));
  const model::Composition conv =
      model::uniform_composition(slow.stage_shapes(1), model::RegionKind::conv);
  const double saved = static_cast<double>(slow.simulate(conv, 1).decode_step_ns -
                                           fast.simulate(conv, 1).decode_step_ns);
  EXPECT_NEAR(saved, 391'680.0 / 200, 34);
  // The prediction says which degree it is for; one GPU's say nothing.
  EXPECT_EQ(simulator::prediction_to_json(fast.simulate(conv, 1)).at("tp"), 2);
  simulator::Simulator one(synthetic_profile("llama-3.2-1b", {1}, 128));
  const model::Composition one_conv =
      model::uniform_composition(one.stage_shapes(1), model::RegionKind::conv);
  EXPECT_FALSE(simulator::prediction_to_json(one.simulate(one_conv, 1)).contains("tp"));
}

// The ops of kind `kind` in a stage graph.
std::vector<int> ops_of_kind(const model::Graph& g, std::string_view kind) {
  std::vector<int> ops;
  for (const model::Op& op : g.ops()) {
    if (op.kind->name() == kind) ops.push_back(op.index);
  }
  return ops;
}

// In an mk region a collective runs as communication tasks, one a tile: each pays its kind's
// benchmark latency (the synthetic profile's link latency, 5 µs), moves its local bytes on the
// device and sends its tile's link bytes over links of the fitted bandwidth (100 bytes/ns).
TEST(TensorParallelTest, ACommunicationTaskCostsItsKindsLatencyAndItsLinkBytes) {
  SyntheticDevice d;
  d.tp = 2;
  simulator::Simulator sim(synthetic_profile("llama-3.2-1b", {1}, 128, d));
  EXPECT_NEAR(sim.megakernel_params().link_bytes_per_ns, 100, 1e-6);
  ASSERT_EQ(sim.collective_fits().size(), 2u);
  for (const auto& [kind, fit] : sim.collective_fits()) {
    EXPECT_NEAR(fit.latency_ns, 5000, 1e-3) << kind;
    EXPECT_NEAR(fit.link_bytes_per_ns, 100, 1e-6) << kind;
  }
  const model::Graph& g = sim.graph("decode", 1);
  for (std::string_view kind : {"all-reduce-residual", "all-reduce", "all-gather"}) {
    const std::vector<int> ops = ops_of_kind(g, kind);
    ASSERT_FALSE(ops.empty()) << kind;
    const int op = ops.front();
    const simulator::TaskCosts c =
        sim.region_task_costs("decode", 1, {model::RegionKind::mk, op, op + 1});
    ASSERT_EQ(c.link_bytes.size(), c.fixed_ns.size());
    for (size_t t = 0; t < c.fixed_ns.size(); ++t) {
      const model::TileCost cost = g.task_cost(g.task_id(op, static_cast<int64_t>(t)));
      ASSERT_GT(cost.link_bytes, 0);
      EXPECT_EQ(c.fixed_ns[t], 5000) << kind;
      EXPECT_NEAR(c.link_bytes[t], static_cast<double>(cost.link_bytes), 1e-3) << kind;
      EXPECT_EQ(c.bytes[t], static_cast<double>(cost.bytes_read + cost.bytes_written)) << kind;
    }
  }
  // Other ops' tasks send nothing: the row-parallel linear before an all-reduce-residual.
  const int o = ops_of_kind(g, "all-reduce-residual").front() - 1;
  ASSERT_FALSE(model::is_collective(g.op(o)));
  EXPECT_TRUE(
      sim.region_task_costs("decode", 1, {model::RegionKind::mk, o, o + 1}).link_bytes.empty());
}

// Without the benchmarks no mk region runs a collective, and saying so names what is missing.
TEST(TensorParallelTest, AnMkRegionOverACollectiveNeedsItsKindsBenchmark) {
  SyntheticDevice d;
  d.tp = 2;
  d.collective_benchmarks = false;
  simulator::Simulator sim(synthetic_profile("tiny-llama", {1}, 16, d));
  const int op = ops_of_kind(sim.graph("decode", 1), "all-reduce-residual").front();
  EXPECT_NE(error_of([&] {
              sim.simulate_region("decode", 1, {model::RegionKind::mk, op, op + 1},
                                  simulator::Boundary::after_conv);
            }).find(": no all-reduce benchmark in the profile (micro.collectives; needed by mk["),
            std::string::npos);
}

// With the benchmarks the planner's search runs collectives in mk regions, where the region
// saves the kernel boundaries on either side (the synthetic device's 2 µs a kernel and 0.8 µs a
// gap), and the plan's best at every batch holds one there.
TEST(TensorParallelTest, PlansRunCollectivesInMegakernelsWhereThatPays) {
  SyntheticDevice d;
  d.tp = 2;
  const model::Profile p = synthetic_profile("tiny-llama", {1, 4}, 16, d);
  const planner::Plan plan = planner::make_plan(p, {.top_k = 3});
  simulator::Simulator sim(p);
  for (const planner::BatchPlan& b : plan.batches) {
    const planner::Evaluated& best = b.ranked.front();
    int in_mk = 0;
    for (const model::StageRegions& s : best.composition.stages) {
      const model::Graph& g = sim.graph(s.stage, b.batch);
      for (const model::Region& r : s.regions) {
        for (int op = r.begin; op < r.end; ++op) {
          in_mk += r.kind == model::RegionKind::mk && model::is_collective(g.op(op)) ? 1 : 0;
        }
      }
    }
    EXPECT_GT(in_mk, 0) << "batch " << b.batch << ": " << best.composition.to_string();
    // Its prediction is the simulator's for that composition.
    EXPECT_EQ(best.ttfo_ns, sim.simulate(best.composition, b.batch).ttfo_ns);
  }
}

// Without collective benchmarks the planner keeps every collective in a conv region (it has no
// task benchmark, so no mk region runs one, and it signals no tile counters, so no tile region
// either) and plans the rest as on one GPU. plan.json records the degree; a run of another
// degree refuses it, naming the field.
TEST(TensorParallelTest, PlansKeepCollectivesConventionalWithoutTheirBenchmarks) {
  SyntheticDevice d;
  d.tp = 2;
  d.collective_benchmarks = false;
  const model::Profile p = synthetic_profile("tiny-llama", {1, 4}, 16, d);
  const planner::Plan plan = planner::make_plan(p, {.top_k = 3});
  EXPECT_EQ(plan.tp, 2);
  simulator::Simulator sim(p);
  int collectives = 0, in_mk = 0;  // in mk or tile regions
  for (const planner::BatchPlan& b : plan.batches) {
    for (const planner::Evaluated& e : b.ranked) {
      for (const model::StageRegions& s : e.composition.stages) {
        const model::Graph& g = sim.graph(s.stage, b.batch);
        for (const model::Region& r : s.regions) {
          for (int op = r.begin; op < r.end; ++op) {
            if (!model::is_collective(g.op(op))) continue;
            ++collectives;
            if (r.kind != model::RegionKind::conv) ++in_mk;
          }
        }
      }
    }
  }
  EXPECT_GT(collectives, 0);
  EXPECT_EQ(in_mk, 0);
  // Somewhere a megakernel covers the ops between two collectives.
  bool some_mk = false;
  for (const planner::BatchPlan& b : plan.batches) {
    for (const planner::Evaluated& e : b.ranked) some_mk = some_mk || e.mk_regions() > 0;
  }
  EXPECT_TRUE(some_mk);

  const nlohmann::json j = planner::plan_to_json(plan);
  EXPECT_EQ(j.at("tp"), 2);
  EXPECT_EQ(planner::plan_from_json(j, "plan.json").tp, 2);
  EXPECT_NO_THROW(planner::plan_composition(j, 1, sim.stage_shapes(1), "plan.json", 2));
  EXPECT_NE(error_of([&] { planner::plan_composition(j, 1, sim.stage_shapes(1), "plan.json", 1); })
                .find("plan.json: field 'tp': the plan is for 2 GPUs (tensor parallel), this run "
                      "for one GPU"),
            std::string::npos);
  // A plan written before tensor parallel is one GPU's.
  nlohmann::json old = j;
  old.erase("tp");
  EXPECT_EQ(
      error_of([&] { planner::plan_composition(old, 1, sim.stage_shapes(1), "old.json", 2); }),
      "old.json: the plan is for one GPU (tensor parallel), this run for 2 GPUs");
}

// A profile answers for its own degree: --tp of another is refused, its JSON keeps the degree,
// and a degree the model cannot be sliced by is refused naming the field.
TEST(TensorParallelTest, AProfileAnswersForItsOwnDegree) {
  SyntheticDevice d;
  d.tp = 2;
  const model::Profile p = synthetic_profile("tiny-llama", {1}, 16, d);
  EXPECT_NO_THROW(model::check_tp(p, 2));
  EXPECT_NE(error_of([&] {
              model::check_tp(p, 1);
            }).find("--tp: 1, but profile synthetic tiny-llama holds 2 GPUs"),
            std::string::npos);
  nlohmann::json j = model::profile_to_json(p);
  EXPECT_EQ(j.at("tp"), 2);
  EXPECT_TRUE(model::profile_from_json(j, "p.json").same_content(p));
  j["tp"] = 3;
  EXPECT_NE(error_of([&] { model::profile_from_json(j, "p.json"); }).find("p.json: field 'tp': "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model::profile_from_json(j, "p.json");
            }).find("num_attention_heads 4 does not divide by 3 GPUs"),
            std::string::npos);
  // One GPU's profiles say nothing of the degree, and are read as one.
  const model::Profile one = synthetic_profile("tiny-llama", {1}, 16);
  EXPECT_FALSE(model::profile_to_json(one).contains("tp"));
  EXPECT_EQ(model::profile_from_json(model::profile_to_json(one), "p.json").tp, 1);
}

}  // namespace
}  // namespace megacut
