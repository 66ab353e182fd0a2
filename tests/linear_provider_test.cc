// Linear providers: the per-op choice between our kernels and cuBLASLt's (model), the profile's
// cuBLASLt kernels, the simulator's choice by policy, the plan that records it and the
// validation candidates that run it, on synthetic profiles whose cuBLASLt kernels take a known
// multiple of ours.
#include "model/linear_provider.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "planner/plan.h"
#include "simulator/simulator.h"
#include "tests/support/synthetic_profile.h"
#include "validation/validation.h"

namespace megacut::model {
namespace {

// Prompts of 128 tokens: the prefill's linears are then plain linears (at 16 rows they are
// fused with their norm or residual, as every decode linear is, and only ours run those).
constexpr int64_t kPrompt = 128;

Profile tiny(double cublaslt_ratio, std::vector<int64_t> batches = {1, 2}) {
  testing::SyntheticDevice device;
  device.cublaslt_ratio = cublaslt_ratio;
  return testing::synthetic_profile("tiny-llama", batches, kPrompt, device);
}

// tiny-llama's stage graphs at `batch`, owned here.
struct TinyGraphs {
  explicit TinyGraphs(int64_t batch) {
    const ModelSpec spec = load_model("tiny-llama");
    const Scenario scenario = make_scenario(spec, batch, kPrompt);
    for (const Stage& s : scenario.stages) owned.push_back(build_graph(spec, scenario, s.name));
    for (const Graph& g : owned) {
      graphs.push_back(&g);
      shapes.push_back({g.stage(), g.op_count()});
    }
  }
  std::vector<Graph> owned;
  std::vector<const Graph*> graphs;
  std::vector<StageShape> shapes;
};

// The ops of `g` that cuBLASLt can run.
std::vector<int> gemm_ops(const Graph& g) {
  std::vector<int> ops;
  for (const Op& op : g.ops()) {
    if (cublaslt_can_run(op.kind->name())) ops.push_back(op.index);
  }
  return ops;
}

std::string error_reading(const nlohmann::json& json, const std::vector<StageShape>& shapes) {
  try {
    provider_choice_from(JsonField(json, "linear_providers", "plan.json"), shapes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ProviderChoiceTest, UniformAndListed) {
  EXPECT_EQ(ProviderChoice::uniform(LinearProvider::ours).of("decode", 3), LinearProvider::ours);
  EXPECT_TRUE(ProviderChoice::uniform(LinearProvider::ours).all_ours());
  EXPECT_EQ(ProviderChoice::uniform(LinearProvider::cublaslt).of("decode", 3),
            LinearProvider::cublaslt);
  ProviderChoice listed;
  listed.cublaslt_ops["decode"] = {2, 5};
  EXPECT_EQ(listed.of("decode", 2), LinearProvider::cublaslt);
  EXPECT_EQ(listed.of("decode", 3), LinearProvider::ours);
  EXPECT_EQ(listed.of("prefill", 2), LinearProvider::ours);
  EXPECT_EQ(listed.listed(), 2);
  EXPECT_EQ(listed.describe(), "cublaslt for 2 ops (decode 2), ours otherwise");
  EXPECT_EQ(ProviderChoice::uniform(LinearProvider::cublaslt).describe(), "cublaslt");
  EXPECT_EQ(ProviderChoice{}.describe(), "ours");
}

TEST(ProviderChoiceTest, EveryListsTheLinearAndLmHeadOps) {
  const TinyGraphs tiny_graphs(1);
  const ProviderChoice every = ProviderChoice::every(tiny_graphs.graphs);
  for (const Graph* g : tiny_graphs.graphs) {
    const std::vector<int> ops = gemm_ops(*g);
    ASSERT_FALSE(ops.empty()) << g->stage();
    EXPECT_EQ(every.cublaslt_ops.at(g->stage()), ops);
    // The lm-head is among them.
    EXPECT_EQ(g->op(ops.back()).kind->name(), "lm-head");
  }
}

TEST(ProviderChoiceTest, InConvRegionsKeepsTheListedOpsOfConvRegions) {
  const TinyGraphs g(1);
  ProviderChoice listed;
  listed.cublaslt_ops["decode"] = {1, 6, 9};
  listed.cublaslt_ops["prefill"] = {3};
  const Composition c = parse_composition("decode: mk[0:5] conv[5:]", g.shapes);
  const ProviderChoice kept = listed.in_conv_regions(c);
  EXPECT_EQ(kept.cublaslt_ops.at("decode"), (std::vector<int>{6, 9}));
  EXPECT_EQ(kept.cublaslt_ops.at("prefill"), (std::vector<int>{3}));
  // All mk: nothing left, the same as all ours.
  EXPECT_TRUE(listed.in_conv_regions(parse_composition("mk", g.shapes)).all_ours());
  // Every op on cuBLASLt stays so.
  EXPECT_TRUE(ProviderChoice::uniform(LinearProvider::cublaslt).in_conv_regions(c).all_cublaslt);
}

TEST(ProviderChoiceTest, JsonRoundTripsAndNamesTheFieldOnError) {
  const TinyGraphs g(1);
  ProviderChoice listed;
  listed.cublaslt_ops["decode"] = {1, 6};
  for (const ProviderChoice& c :
       {ProviderChoice{}, ProviderChoice::uniform(LinearProvider::cublaslt), listed}) {
    const nlohmann::json j = provider_choice_to_json(c);
    EXPECT_EQ(provider_choice_from(JsonField(j, "p", "f"), g.shapes), c) << j.dump();
  }
  EXPECT_EQ(provider_choice_to_json(listed).dump(), R"({"decode":[1,6]})");
  EXPECT_EQ(error_reading("all", g.shapes),
            "plan.json: field 'linear_providers': expected \"ours\", \"cublaslt\" or the ops on "
            "cuBLASLt by stage, got \"all\"");
  EXPECT_EQ(error_reading({{"verify", {1}}}, g.shapes),
            "plan.json: field 'linear_providers.verify': no stage of that name");
  EXPECT_EQ(error_reading({{"decode", {3, 1}}}, g.shapes),
            "plan.json: field 'linear_providers.decode[1]': op indices must increase");
  EXPECT_NE(error_reading({{"decode", {99}}}, g.shapes).find("expected an integer in [0, 13]"),
            std::string::npos);
}

TEST(ProviderChoiceTest, CheckRefusesOpsCublasLtCannotRun) {
  const TinyGraphs g(1);
  const Graph& prefill = *g.graphs.front();
  ProviderChoice choice = ProviderChoice::every(g.graphs);
  for (const Graph* graph : g.graphs) EXPECT_NO_THROW(choice.check(*graph));
  choice.cublaslt_ops["prefill"].insert(choice.cublaslt_ops["prefill"].begin(), 0);  // embed
  try {
    choice.check(prefill);
    FAIL() << "the embedding was accepted on cuBLASLt";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "linear providers: op 0 of stage prefill (embed, embedding) cannot run on "
                 "cuBLASLt: only linear and lm-head ops can");
  }
  // The simulator refuses such a choice before it predicts anything.
  simulator::Simulator sim(tiny(0.5), simulator::SimOptions{.provider_choice = choice});
  EXPECT_THROW(sim.simulate(parse_composition("mk", g.shapes), 1), Error);
}

TEST(ProviderChoiceTest, PolicyNamesParseAndBadOnesAreNamed) {
  for (ProviderPolicy p : kProviderPolicies) EXPECT_EQ(parse_policy(policy_name(p), "--x"), p);
  try {
    parse_policy("cublas", "--provider");
    FAIL() << "'cublas' parsed";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--provider: 'cublas' is not a linear provider (ours, cublaslt, fastest)");
  }
}

TEST(ProfileProvidersTest, CublasltKernelsRoundTripAndMustBeCublasLts) {
  const Profile p = tiny(0.5);
  const nlohmann::json j = profile_to_json(p);
  EXPECT_TRUE(profile_from_json(j, "p.json").same_content(p));
  nlohmann::json bad = j;
  for (nlohmann::json& op : bad["batches"][0]["stages"][0]["ops"]) {
    if (op.contains("conv_cublaslt")) {
      op["conv_cublaslt"]["provider"] = "ours";
      break;
    }
  }
  try {
    profile_from_json(bad, "p.json");
    FAIL() << "a cuBLASLt kernel of ours was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".conv_cublaslt.provider': expected \"cublas\""),
              std::string::npos)
        << e.what();
  }
}

using simulator::Prediction;
using simulator::SimOptions;
using simulator::Simulator;
using simulator::TimeNs;

// All conventional at batch 1: the prefill (TTFO), whose linears either provider runs.
TimeNs conv_ttfo(const Profile& p, SimOptions options) {
  Simulator sim(p, options);
  return sim.simulate(parse_composition("conv", sim.stage_shapes(1)), 1).ttfo_ns;
}

TEST(SimulatorProvidersTest, FastestTakesCublasLtWhereItIsFaster) {
  const TinyGraphs g(1);
  // cuBLASLt's kernels take half as long: the fastest choice is every linear op, and the
  // all-conventional decode step is shorter than with ours by the linears' saving.
  Simulator faster(tiny(0.5), SimOptions{.linear_provider = ProviderPolicy::fastest});
  EXPECT_EQ(faster.provider_choice(1), ProviderChoice::every(g.graphs));
  const Prediction conv = faster.simulate(parse_composition("conv", g.shapes), 1);
  EXPECT_EQ(conv.providers, ProviderChoice::every(g.graphs));
  EXPECT_LT(conv.ttfo_ns, conv_ttfo(tiny(0.5), {}));
  // No cuBLASLt op is left in an all-mk composition, and the replay check (of the graph the
  // profile timed, ours) is only made where every kernel is that graph's.
  EXPECT_TRUE(faster.simulate(parse_composition("mk", g.shapes), 1).providers.all_ours());
  EXPECT_FALSE(conv.stage("decode").measured_conv_graph_ns.has_value());
  Simulator ours(tiny(0.5));
  EXPECT_TRUE(ours.simulate(parse_composition("conv", g.shapes), 1)
                  .stage("decode")
                  .measured_conv_graph_ns.has_value());

  // Twice as long: ours everywhere, the same prediction as a profile without cuBLASLt kernels.
  Simulator slower(tiny(2), SimOptions{.linear_provider = ProviderPolicy::fastest});
  EXPECT_TRUE(slower.provider_choice(1).all_ours());
  EXPECT_EQ(conv_ttfo(tiny(2), {.linear_provider = ProviderPolicy::fastest}),
            conv_ttfo(tiny(0), {}));
}

TEST(SimulatorProvidersTest, FastestDecidesOpByOp) {
  Profile p = tiny(2);
  const TinyGraphs g(1);
  const int op = gemm_ops(*g.graphs.front()).front();  // the prefill's first linear
  for (BatchProfile& b : p.batches) {
    if (b.batch != 1) continue;
    for (StageProfile& s : b.stages) {
      if (s.stage != "prefill") continue;
      for (OpProfile& o : s.ops) {
        if (o.index == op) o.conv_cublaslt->duration_ns = constant_stats(10);
      }
    }
  }
  Simulator sim(p, SimOptions{.linear_provider = ProviderPolicy::fastest});
  ProviderChoice expected;
  expected.cublaslt_ops["prefill"] = {op};
  EXPECT_EQ(sim.provider_choice(1), expected);
  // At batch 2 the op was not made faster: ours.
  EXPECT_TRUE(sim.provider_choice(2).all_ours());
}

TEST(SimulatorProvidersTest, WithPdlFastestCountsWhatEachKernelAddsBetweenOurs) {
  // cuBLASLt's kernels 10% shorter, but ours, launched with PDL, add half their duration after
  // one of ours: plainly every linear goes to cuBLASLt, with PDL none does.
  Profile p = tiny(0.9);
  for (BatchProfile& b : p.batches) {
    for (StageProfile& s : b.stages) {
      for (OpProfile& op : s.ops) {
        if (op.index > 0) op.conv->pdl_step_ns = constant_stats(op.conv->duration_ns.mean / 2);
      }
    }
  }
  const TinyGraphs g(1);
  Simulator plain(p, SimOptions{.linear_provider = ProviderPolicy::fastest});
  EXPECT_EQ(plain.provider_choice(1), ProviderChoice::every(g.graphs));
  Simulator pdl(p, SimOptions{.pdl = true, .linear_provider = ProviderPolicy::fastest});
  EXPECT_TRUE(pdl.provider_choice(1).all_ours());
  // And the choice is the faster run: all ours with PDL beats all cuBLASLt with PDL.
  const Composition conv = parse_composition("conv", g.shapes);
  Simulator all_lt(p, SimOptions{.pdl = true, .linear_provider = ProviderPolicy::cublaslt});
  EXPECT_LT(pdl.simulate(conv, 1).ttfo_ns, all_lt.simulate(conv, 1).ttfo_ns);
}

TEST(SimulatorProvidersTest, ACublasLtKernelPaysTheBoundaryMeasuredBeforeIt) {
  // The prefill's first linear on cuBLASLt, 5 µs measured before it in the graph with cuBLASLt
  // linears: its boundary grows from the traced gap of the all-ours graph by the difference.
  Profile p = tiny(0.5);
  const TinyGraphs g(1);
  const int op = gemm_ops(*g.graphs.front()).front();
  double before_ns = 0;
  for (BatchProfile& b : p.batches) {
    for (StageProfile& s : b.stages) {
      if (s.stage != "prefill") continue;
      for (OpProfile& o : s.ops) {
        if (o.index == op - 1) before_ns = o.conv->gap_to_next_ns->mean;
        if (o.index == op) o.conv_cublaslt->gap_before_ns = constant_stats(5000);
      }
    }
  }
  ProviderChoice one;
  one.cublaslt_ops["prefill"] = {op};
  Simulator without(tiny(0.5), SimOptions{.provider_choice = one});
  Simulator with(p, SimOptions{.provider_choice = one});
  const Composition conv = parse_composition("conv", g.shapes);
  EXPECT_EQ(with.simulate(conv, 1).ttfo_ns - without.simulate(conv, 1).ttfo_ns,
            5000 - static_cast<TimeNs>(before_ns));
  // Only a cuBLASLt kernel has one.
  nlohmann::json j = profile_to_json(p);
  for (nlohmann::json& o : j["batches"][0]["stages"][0]["ops"]) {
    if (o["index"] == op) o["conv"]["gap_before_ns"] = o["conv_cublaslt"]["gap_before_ns"];
  }
  EXPECT_THROW(profile_from_json(j, "p.json"), Error);
}

TEST(SimulatorProvidersTest, AnExplicitChoiceOverridesThePolicy) {
  const TinyGraphs g(1);
  ProviderChoice one;
  one.cublaslt_ops["prefill"] = {gemm_ops(*g.graphs.front()).front()};
  Simulator sim(tiny(0.5),
                SimOptions{.linear_provider = ProviderPolicy::ours, .provider_choice = one});
  EXPECT_EQ(sim.provider_choice(1), one);
  const TimeNs all_ours = conv_ttfo(tiny(0.5), {});
  const TimeNs all_cublaslt = conv_ttfo(tiny(0.5), {.linear_provider = ProviderPolicy::cublaslt});
  const TimeNs mixed = sim.simulate(parse_composition("conv", g.shapes), 1).ttfo_ns;
  EXPECT_LT(mixed, all_ours);
  EXPECT_GT(mixed, all_cublaslt);
}

TEST(SimulatorProvidersTest, AProviderTheProfileDidNotMeasureIsAnErrorOnlyWhereNeeded) {
  const TinyGraphs g(1);
  Simulator sim(tiny(0), SimOptions{.linear_provider = ProviderPolicy::cublaslt});
  try {
    sim.simulate(parse_composition("conv", g.shapes), 1);
    FAIL() << "cuBLASLt kernels predicted from a profile without them";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "no kernel measured for its linear provider (cublaslt), needed by conv["),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("profile the model again"), std::string::npos);
  }
  // An mk region runs our bodies: nothing is missing.
  EXPECT_GT(sim.simulate(parse_composition("mk", g.shapes), 1).decode_step_ns, 0);
}

TEST(SimulatorProvidersTest, AProfileOfCublasLtOnlyIsPredictedOnCublasLtAndSaysSo) {
  // As the former `megacut profile --provider cublaslt` wrote them: the linears' conv kernels
  // cuBLASLt's, no kernel of ours beside them.
  Profile p = tiny(0);
  for (BatchProfile& b : p.batches) {
    for (StageProfile& s : b.stages) {
      for (OpProfile& op : s.ops) {
        if (cublaslt_can_run(op.kind)) op.conv->provider = "cublas";
      }
    }
  }
  const TinyGraphs g(1);
  Simulator fastest(p, SimOptions{.linear_provider = ProviderPolicy::fastest});
  EXPECT_EQ(fastest.provider_choice(1), ProviderChoice::every(g.graphs));
  Simulator ours(p);
  try {
    ours.simulate(parse_composition("conv", g.shapes), 1);
    FAIL() << "ours predicted from cuBLASLt's kernels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the profile measured it on cuBLASLt only"),
              std::string::npos)
        << e.what();
  }
}

TEST(SimulatorProvidersTest, InterpolatedBatchesChooseFromInterpolatedKernels) {
  Simulator sim(tiny(0.5, {1, 4}),
                SimOptions{.allow_interpolate = true, .linear_provider = ProviderPolicy::fastest});
  const TinyGraphs g(2);
  EXPECT_EQ(sim.provider_choice(2), ProviderChoice::every(g.graphs));
}

TEST(PlanProvidersTest, ThePlanRecordsTheFastestChoiceAndRunsIt) {
  const TinyGraphs g(1);
  planner::PlanOptions options;
  options.batches = {1, 2};
  options.threads = 1;
  options.sim.linear_provider = ProviderPolicy::fastest;
  const planner::Plan plan = planner::make_plan(tiny(0.5), options);
  EXPECT_EQ(plan.linear_provider, ProviderPolicy::fastest);
  EXPECT_EQ(plan.batch(1).providers, ProviderChoice::every(g.graphs));
  // The all-conventional baseline runs the choice too.
  EXPECT_LT(plan.batch(1).all_conv.ttfo_ns, conv_ttfo(tiny(0.5), {}));

  const nlohmann::json j = planner::plan_to_json(plan);
  EXPECT_EQ(j["linear_provider"], "fastest");
  EXPECT_EQ(planner::plan_from_json(j, "plan.json"), plan);
  const planner::PlannedRun run = planner::plan_composition(j, 1, g.shapes, "plan.json");
  EXPECT_EQ(run.providers, ProviderChoice::every(g.graphs));

  // Plans written before the choice read as all ours.
  nlohmann::json old = j;
  old.erase("linear_provider");
  for (nlohmann::json& b : old["batches"]) b.erase("linear_providers");
  const planner::Plan read = planner::plan_from_json(old, "old.json");
  EXPECT_EQ(read.linear_provider, ProviderPolicy::ours);
  EXPECT_TRUE(read.batch(1).providers.all_ours());
}

TEST(ValidationProvidersTest, CandidatesRunThePlansChoiceAndConvRunsCublasLtToo) {
  const TinyGraphs g(1);
  planner::PlanOptions options;
  options.batches = {1};
  options.threads = 1;
  options.sim.linear_provider = ProviderPolicy::fastest;
  const planner::Plan plan = planner::make_plan(tiny(0.5), options);
  const ProviderChoice every = ProviderChoice::every(g.graphs);
  const std::vector<validation::Candidate> list =
      validation::validation_candidates(plan.batch(1), g.shapes, {}, true, every);
  // The plan's ranked compositions run its choice in their conv regions; "conv" ours, "conv
  // cublaslt" cuBLASLt's wherever it can.
  for (const validation::Candidate& c : list) {
    if (c.label() == "top 1") {
      EXPECT_EQ(c.providers, plan.batch(1).providers.in_conv_regions(c.composition));
    }
    if (c.label() == "conv") EXPECT_TRUE(c.providers.all_ours());
    if (c.label() == "conv cublaslt") EXPECT_EQ(c.providers, every);
    if (c.label() == "tile") EXPECT_TRUE(c.providers.all_ours());
  }
  EXPECT_EQ(list[list.size() - 2].label(), "conv cublaslt");
  EXPECT_EQ(list.back().label(), "tile");
  // Candidates that run the same way are one: a choice outside conv regions changes nothing.
  std::vector<validation::Candidate> merged;
  validation::add_candidate(merged, "a", parse_composition("mk", g.shapes), false, every);
  validation::add_candidate(merged, "b", parse_composition("mk", g.shapes));
  validation::add_candidate(merged, "c", parse_composition("conv", g.shapes), false, every);
  validation::add_candidate(merged, "d", parse_composition("prefill: conv[0:3] conv[3:]", g.shapes),
                            false, every);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].label(), "a, b");
  EXPECT_EQ(merged[1].label(), "c, d");
  // Each predicted as it runs.
  const std::vector<validation::CandidateResult> r =
      validation::predict_candidates(tiny(0.5), {}, 1, list);
  for (const validation::CandidateResult& c : r) {
    ASSERT_TRUE(c.predicted.has_value()) << c.candidate.label() << ": " << c.prediction_error;
    if (c.candidate.label() == "conv") {
      EXPECT_EQ(c.predicted->ttfo_ns, conv_ttfo(tiny(0.5), {}));
    }
  }
  // Each candidate's choice goes into validation.json and back.
  validation::Validation v;
  v.model = "tiny-llama";
  v.device = v.profile_device = "synthetic GPU";
  v.profile = "p.json";
  v.prompt_len = kPrompt;
  v.provider = "fastest";
  validation::BatchValidation b;
  b.batch = 1;
  b.candidates = r;
  v.batches.push_back(b);
  const validation::Validation back =
      validation::validation_from_json(validation::validation_to_json(v), "v.json");
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(back.batches[0].candidates[i].candidate.providers, r[i].candidate.providers);
  }
}

}  // namespace
}  // namespace megacut::model
