// Validation (validation/validation.h): the candidate list and its merging of duplicates,
// predictions from the profile alone, Kendall's tau-b, the errors, MAPE and the hit rule on
// measurements whose expected scores are worked out by hand, and the two outputs.
#include "validation/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "model/error.h"
#include "tests/support/candidate_results.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::validation {
namespace {

using model::Region;
using model::RegionKind;

const std::vector<model::StageShape> kShapes = {{"prefill", 30}, {"decode", 30}};

model::Composition parse(const std::string& text) {
  return model::parse_composition(text, kShapes);
}

// TTFO and decode step statistics in ms with the given p50 and p95 (a valid ordering).
Measured measured(double ttfo_p50, double ttfo_p95, double step_p50 = 1, double step_p95 = 1) {
  return {testing::run_stats(ttfo_p50, ttfo_p95, "ms", 50),
          testing::run_stats(step_p50, step_p95, "ms", 50)};
}

// A candidate named `label` predicted at (ttfo, step) ms and measured with `m`; either may be
// absent.
CandidateResult result(const std::string& label, std::optional<double> ttfo_ms,
                       std::optional<Measured> m, double step_ms = 1) {
  std::optional<std::pair<double, double>> predicted;
  if (ttfo_ms) predicted = std::pair{*ttfo_ms, step_ms};
  return testing::candidate_result({{label}, {}, label}, predicted, m);
}

TEST(ValidationTest, MergeConvRegionsJoinsOnlyAdjacentConv) {
  EXPECT_EQ(merge_conv_regions(parse("prefill: conv[0:5] conv[5:9] mk[9:20] conv[20:25] conv[25:]; "
                                     "decode: mk[0:10] mk[10:]"))
                .to_string(),
            "prefill: conv[0:9] mk[9:20] conv[20:30]; decode: mk[0:10] mk[10:30]");
}

TEST(ValidationTest, CandidatesInOrderWithDuplicatesMergedUnderEveryLabel) {
  planner::BatchPlan plan;
  plan.batch = 4;
  plan.ranked.resize(3);
  plan.ranked[0].composition = parse("conv");
  plan.ranked[1].composition = parse("prefill: conv[0:10] mk[10:]");
  plan.ranked[2].composition = parse("decode: mk");
  const std::vector<model::Composition> random = {
      parse("prefill: conv[0:12] conv[12:]"),  // all conv once merged
      parse("prefill: mk[0:3] mk[3:]"),        // new
      parse("decode: mk[0:30]")};              // the same as top 3
  const std::vector<Candidate> list = validation_candidates(plan, kShapes, random, true);
  ASSERT_EQ(list.size(), 7u);
  EXPECT_EQ(list[0].label(), "top 1, conv, random 1");
  EXPECT_EQ(list[0].text, "prefill: conv[0:30]; decode: conv[0:30]");
  EXPECT_FALSE(list[0].pdl);
  EXPECT_EQ(list[1].label(), "top 2");
  EXPECT_EQ(list[2].label(), "top 3, random 3");
  EXPECT_EQ(list[3].label(), "mk");
  EXPECT_EQ(list[3].text, "prefill: mk[0:30]; decode: mk[0:30]");
  EXPECT_EQ(list[4].label(), "conv+pdl");  // same composition, another run
  EXPECT_TRUE(list[4].pdl);
  EXPECT_EQ(list[4].text, list[0].text);
  EXPECT_EQ(list[5].label(), "tile");
  EXPECT_EQ(list[5].text, "prefill: tile[0:30]; decode: tile[0:30]");
  EXPECT_EQ(list[6].label(), "random 2");
  EXPECT_EQ(list[6].text, "prefill: mk[0:3] mk[3:30]; decode: conv[0:30]");

  EXPECT_EQ(validation_candidates(plan, kShapes, {}, false).size(), 5u);  // no conv+pdl
}

TEST(ValidationTest, PredictionsComeFromTheProfileWithTheCandidatesPdl) {
  const model::Profile profile = testing::synthetic_profile("tiny-llama", {2}, 16);
  simulator::Simulator plain(profile), pdl(profile, {.pdl = true});
  const std::vector<model::StageShape> shapes = plain.stage_shapes(2);
  const model::Composition mixed = model::parse_composition("prefill: conv[0:5] mk[5:]", shapes);
  std::vector<Candidate> list;
  add_candidate(list, "mixed", mixed);
  add_candidate(list, "mixed+pdl", mixed, true);
  add_candidate(list, "conv", model::uniform_composition(shapes, RegionKind::conv));
  const std::vector<CandidateResult> r = predict_candidates(profile, {}, 2, list);
  ASSERT_EQ(r.size(), 3u);
  for (const CandidateResult& c : r) {
    ASSERT_TRUE(c.predicted) << c.prediction_error;
    EXPECT_FALSE(c.measured);
  }
  EXPECT_EQ(r[0].predicted->ttfo_ns, plain.simulate(mixed, 2).ttfo_ns);
  EXPECT_EQ(r[0].predicted->decode_step_ns, plain.simulate(mixed, 2).decode_step_ns);
  // With PDL, the prefill's four boundaries inside conv[0:5] and the one into mk[5:] pay the
  // PDL gap (300 ns) instead of the plain one (800 ns): 5 x 500 ns less.
  EXPECT_EQ(r[1].predicted->ttfo_ns, pdl.simulate(mixed, 2).ttfo_ns);
  EXPECT_EQ(r[0].predicted->ttfo_ns - r[1].predicted->ttfo_ns, 2500);
  EXPECT_EQ(r[2].predicted->ttfo_ns,
            plain.simulate(model::uniform_composition(shapes, RegionKind::conv), 2).ttfo_ns);
}

TEST(ValidationTest, ACandidateTheProfileCannotPredictKeepsTheReason) {
  model::Profile profile = testing::synthetic_profile("tiny-llama", {1}, 16);
  for (model::BatchProfile& b : profile.batches) {
    for (model::StageProfile& s : b.stages) {
      for (model::OpProfile& op : s.ops) op.tasks.clear();
    }
  }
  simulator::Simulator sim(profile);
  const std::vector<model::StageShape> shapes = sim.stage_shapes(1);
  std::vector<Candidate> list;
  add_candidate(list, "mk", model::uniform_composition(shapes, RegionKind::mk));
  add_candidate(list, "conv", model::uniform_composition(shapes, RegionKind::conv));
  const std::vector<CandidateResult> r = predict_candidates(profile, {}, 1, list);
  EXPECT_FALSE(r[0].predicted);
  EXPECT_NE(r[0].prediction_error.find("no standalone task benchmark"), std::string::npos)
      << r[0].prediction_error;
  EXPECT_TRUE(r[1].predicted);
  EXPECT_EQ(r[1].prediction_error, "");
}

TEST(ValidationTest, KendallTauB) {
  // Same order: 3 concordant pairs of 3, tau 1. Reversed: 3 discordant, tau -1.
  EXPECT_DOUBLE_EQ(*kendall_tau_b({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(*kendall_tau_b({1, 2, 3}, {30, 20, 10}), -1.0);
  // One swap among four: pairs (1,2) (1,3) (1,4) (2,4) (3,4) concordant, (2,3) discordant:
  // (5 - 1) / 6 = 2/3.
  EXPECT_NEAR(*kendall_tau_b({1, 2, 3, 4}, {1, 3, 2, 4}), 2.0 / 3.0, 1e-12);
  // A tie in the prediction: pair (0,1) tied in x only (n1 = 1, n2 = 0), the other 5 concordant:
  // 5 / sqrt((6 - 1)(6 - 0)) = 5 / sqrt(30) = 0.912871.
  EXPECT_NEAR(*kendall_tau_b({1, 1, 2, 3}, {1, 2, 3, 4}), 5.0 / std::sqrt(30.0), 1e-12);
  // A pair tied on both sides (n1 = n2 = 1), the other 2 concordant: 2 / sqrt(2 * 2) = 1.
  EXPECT_DOUBLE_EQ(*kendall_tau_b({1, 1, 2}, {5, 5, 6}), 1.0);
  // Ties on both sides in different pairs: x = (1, 1, 2, 3), y = (1, 2, 2, 3). Pairs: (0,1) tied
  // in x; (1,2) tied in y; (0,2) (0,3) (1,3) (2,3) concordant: 4 / sqrt((6 - 1)(6 - 1)) = 0.8.
  EXPECT_NEAR(*kendall_tau_b({1, 1, 2, 3}, {1, 2, 2, 3}), 0.8, 1e-12);
  // Two candidates: one pair, concordant (1) or discordant (-1).
  EXPECT_DOUBLE_EQ(*kendall_tau_b({1, 2}, {3, 4}), 1.0);
  EXPECT_DOUBLE_EQ(*kendall_tau_b({1, 2}, {4, 3}), -1.0);
  // Undefined: fewer than two, or one side all tied (n0 - n1 = 0).
  EXPECT_FALSE(kendall_tau_b({}, {}));
  EXPECT_FALSE(kendall_tau_b({1}, {1}));
  EXPECT_FALSE(kendall_tau_b({1, 1}, {1, 2}));
  EXPECT_FALSE(kendall_tau_b({1, 2, 3}, {5, 5, 5}));
  EXPECT_THROW(kendall_tau_b({1, 2}, {1}), Error);
}

TEST(ValidationTest, AbsolutePercentageError) {
  // |9.5 - 10| / 10 = 5%; |10.5 - 10| / 10 = 5%.
  EXPECT_NEAR(absolute_percentage_error(9.5, 10), 0.05, 1e-12);
  EXPECT_NEAR(absolute_percentage_error(10.5, 10), 0.05, 1e-12);
  EXPECT_THROW(absolute_percentage_error(1, 0), Error);
}

TEST(ValidationTest, TwoCandidatesHitWithinTwoPercent) {
  // A predicted 10 ms, B 12 ms: A is the predicted best. Measured p50: A 10.1, B 10.0 (p95
  // 10.1): B is the measured best, spread (10.1 - 10.0) / 10.0 = 1%, tolerance max(2%, 1%) = 2%;
  // A's regret (10.1 - 10.0) / 10.0 = 1% <= 2%: a hit. Errors: A |10 - 10.1| / 10.1 = 0.990%, B
  // |12 - 10| / 10 = 20%, MAPE 10.495%. Decode steps: A predicted 2 ms, measured 2.5 (20%); B
  // predicted 3, measured 2.5 (20%): MAPE 20%. The order is reversed: tau -1.
  std::vector<CandidateResult> c = {result("A", 10, measured(10.1, 10.2, 2.5, 2.6), 2),
                                    result("B", 12, measured(10.0, 10.1, 2.5, 2.6), 3)};
  const BatchMetrics m = score_batch(c);
  EXPECT_EQ(m.scored, 2);
  EXPECT_NEAR(*c[0].ttfo_ape, 0.1 / 10.1, 1e-9);
  EXPECT_NEAR(*c[1].ttfo_ape, 0.2, 1e-9);
  EXPECT_NEAR(*m.ttfo_mape, (0.1 / 10.1 + 0.2) / 2, 1e-9);
  EXPECT_NEAR(*m.decode_step_mape, 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(*m.kendall_tau, -1.0);
  EXPECT_EQ(m.predicted_best, 0u);
  EXPECT_EQ(m.measured_best, 1u);
  EXPECT_NEAR(*m.spread, 0.01, 1e-9);
  EXPECT_NEAR(*m.tolerance, 0.02, 1e-12);
  EXPECT_NEAR(*m.regret, 0.01, 1e-9);
  EXPECT_EQ(m.hit, true);
}

TEST(ValidationTest, MissBeyondTwoPercentUnlessTheSpreadIsLarger) {
  // A measured 10.5, B (the best) 10.0: regret 5%. With B's p95 at 10.1 the spread is 1%, the
  // tolerance 2%: a miss. With B's p95 at 10.8 the spread is 8%, the tolerance 8%: a hit.
  std::vector<CandidateResult> tight = {result("A", 10, measured(10.5, 10.6)),
                                        result("B", 12, measured(10.0, 10.1))};
  const BatchMetrics miss = score_batch(tight);
  EXPECT_NEAR(*miss.regret, 0.05, 1e-9);
  EXPECT_NEAR(*miss.tolerance, 0.02, 1e-12);
  EXPECT_EQ(miss.hit, false);

  std::vector<CandidateResult> noisy = {result("A", 10, measured(10.5, 10.6)),
                                        result("B", 12, measured(10.0, 10.8))};
  const BatchMetrics hit = score_batch(noisy);
  EXPECT_NEAR(*hit.spread, 0.08, 1e-9);
  EXPECT_NEAR(*hit.tolerance, 0.08, 1e-9);
  EXPECT_EQ(hit.hit, true);
}

TEST(ValidationTest, TiesUnpredictedAndUnmeasuredCandidates) {
  // A and B predicted equal (10 ms); C has no prediction but the least measured TTFO (9.0 ms),
  // so it is the measured best; D is predicted at 8 ms, the predicted best, but was not
  // measured: no regret and no verdict. Scored: A and B only. Errors: A |10 - 10| / 10 = 0, B
  // |10 - 12.5| / 12.5 = 20%: MAPE 10%. The prediction ties A and B (n1 = 1 of n0 = 1 pairs):
  // tau undefined.
  std::vector<CandidateResult> c = {
      result("A", 10, measured(10, 10.1)), result("B", 10, measured(12.5, 12.6)),
      result("C", std::nullopt, measured(9.0, 9.09)), result("D", 8, std::nullopt)};
  BatchMetrics m = score_batch(c);
  EXPECT_EQ(m.scored, 2);
  EXPECT_EQ(m.predicted_best, 3u);
  EXPECT_EQ(m.measured_best, 2u);
  EXPECT_FALSE(m.regret);
  EXPECT_FALSE(m.hit);
  EXPECT_NEAR(*m.ttfo_mape, 0.1, 1e-9);
  EXPECT_FALSE(m.kendall_tau);
  EXPECT_FALSE(c[2].ttfo_ape);
  EXPECT_FALSE(c[3].ttfo_ape);

  // Without D, A (the first of the tie) is the predicted best: regret (10 - 9) / 9 = 11.1%
  // against a tolerance of max(2%, C's spread (9.09 - 9) / 9 = 1%) = 2%: a miss.
  c.pop_back();
  m = score_batch(c);
  EXPECT_EQ(m.predicted_best, 0u);
  EXPECT_NEAR(*m.regret, 1.0 / 9.0, 1e-9);
  EXPECT_NEAR(*m.tolerance, 0.02, 1e-12);
  EXPECT_EQ(m.hit, false);
}

TEST(ValidationTest, NothingMeasuredOrPredicted) {
  std::vector<CandidateResult> c = {result("A", std::nullopt, std::nullopt)};
  const BatchMetrics m = score_batch(c);
  EXPECT_EQ(m, BatchMetrics{});
  EXPECT_EQ(score_overall({}), OverallMetrics{});
}

Validation two_batches() {
  Validation v;
  v.model = "tiny-llama";
  v.device = "test GPU";
  v.profile = "profile.json";
  v.profile_device = "test GPU";
  v.prompt_len = 16;
  v.provider = "ours";
  v.runs = 50;
  v.warmup = 5;
  v.seed = 7;
  v.top_k = 5;
  v.random = 5;
  v.category = "mixed";
  BatchValidation one{1,
                      {result("top 1", 10, measured(10.1, 10.2, 2.5, 2.6), 2),
                       result("conv", 12, measured(10.0, 10.1, 2.5, 2.6), 3)}};
  one.candidates[0].candidate.text = "prefill: mk[0:28]; decode: conv[0:28]";
  one.metrics = score_batch(one.candidates);
  BatchValidation two{2,
                      {result("top 1", 10, measured(10.5, 10.6)),
                       result("mk", std::nullopt, measured(10.0, 10.1))}};
  two.metrics = score_batch(two.candidates);
  v.batches = {one, two};
  return v;
}

TEST(ValidationTest, OverallAcrossBatches) {
  // Batch 1 as in TwoCandidatesHitWithinTwoPercent (a hit, errors 0.990% and 20%). Batch 2: top 1
  // predicted 10, measured 10.5 (4.762%); mk unpredicted but measured best (10.0): regret 5%,
  // tolerance 2%, a miss; tau undefined (one scored). Overall MAPE over 3 candidates:
  // (0.990 + 20 + 4.762) / 3 = 8.584%; worst batch 10.495%; lowest tau -1; 1 hit of 2.
  const OverallMetrics o = score_overall(two_batches().batches);
  EXPECT_EQ(o.scored, 3);
  EXPECT_NEAR(*o.ttfo_mape, (0.1 / 10.1 + 0.2 + 0.5 / 10.5) / 3, 1e-9);
  EXPECT_NEAR(*o.worst_batch_ttfo_mape, (0.1 / 10.1 + 0.2) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(*o.min_kendall_tau, -1.0);
  EXPECT_EQ(o.hits, 1);
  EXPECT_EQ(o.judged, 2);
}

TEST(ValidationTest, JsonAndMarkdown) {
  const nlohmann::json j = validation_to_json(two_batches());
  EXPECT_EQ(j["schema"], "megacut.validation/1");
  EXPECT_EQ(j["model"], "tiny-llama");
  EXPECT_EQ(j["device"], "test GPU");
  EXPECT_EQ(j["profile"], "profile.json");
  EXPECT_EQ(j["definitions"]["hit_tolerance_percent"], 2.0);
  EXPECT_NE(j["definitions"]["spread"].get<std::string>().find("(p95 - p50) / p50"),
            std::string::npos);
  ASSERT_EQ(j["batches"].size(), 2u);
  const nlohmann::json& b1 = j["batches"][0];
  EXPECT_EQ(b1["batch"], 1);
  EXPECT_EQ(b1["candidates"][0]["labels"], nlohmann::json({"top 1"}));
  EXPECT_EQ(b1["candidates"][0]["composition"], "prefill: mk[0:28]; decode: conv[0:28]");
  EXPECT_EQ(b1["candidates"][0]["predicted"]["ttfo_ns"], 10'000'000);
  EXPECT_EQ(b1["candidates"][0]["measured"]["ttfo"]["p50"], 10.1);
  EXPECT_EQ(b1["candidates"][0]["measured"]["ttfo"]["unit"], "ms");
  EXPECT_NEAR(b1["candidates"][1]["ttfo_ape_percent"].get<double>(), 20.0, 1e-9);
  EXPECT_EQ(b1["candidates"][0]["predicted_best"], true);
  EXPECT_EQ(b1["candidates"][1]["measured_best"], true);
  EXPECT_EQ(b1["metrics"]["hit"], true);
  EXPECT_NEAR(b1["metrics"]["spread_percent"].get<double>(), 1.0, 1e-9);
  const nlohmann::json& mk = j["batches"][1]["candidates"][1];
  EXPECT_TRUE(mk["predicted"].is_null());
  EXPECT_EQ(mk["prediction_error"], "no task benchmark");
  EXPECT_TRUE(mk["ttfo_ape_percent"].is_null());
  EXPECT_TRUE(j["batches"][1]["metrics"]["kendall_tau"].is_null());
  EXPECT_EQ(j["batches"][1]["metrics"]["hit"], false);
  EXPECT_EQ(j["overall"]["hits"], 1);
  EXPECT_EQ(j["overall"]["judged"], 2);
  EXPECT_EQ(j["overall"]["scored"], 3);

  const std::string md = validation_markdown(two_batches());
  for (const char* text :
       {"# Validation: tiny-llama on test GPU", "| batch | predicted best | measured best | hit",
        "| 1 | top 1 | conv | yes | 1.0% | 1.0% | 10.5% | 20.0% | -1.000 | 2 of 2 |",
        "| 2 | top 1 | mk | no | 5.0% | 1.0% | 4.8% | 0.0% | — | 1 of 2 |", "## Batch 1",
        "`prefill: mk[0:28]; decode: conv[0:28]`", "2 (mk): no prediction: no task benchmark",
        "hits 1 of 2", "## Definitions", "max(2%, spread)"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md;
  }
}

// two_batches() with compositions of 28-op stages in place of the labels' placeholder texts.
Validation two_batches_with_compositions() {
  const std::vector<model::StageShape> shapes = {{"prefill", 28}, {"decode", 28}};
  const char* texts[] = {"prefill: mk[0:28]; decode: conv[0:28]", "conv",
                         "decode: conv[0:7] mk[7:]", "mk"};
  Validation v = two_batches();
  int n = 0;
  for (BatchValidation& b : v.batches) {
    for (CandidateResult& c : b.candidates) {
      c.candidate.composition = model::parse_composition(texts[n++], shapes);
      c.candidate.text = c.candidate.composition.to_string();
    }
  }
  v.batches[0].candidates[1].candidate.pdl = true;
  v.seed = uint64_t{1} << 63;
  return v;
}

TEST(ValidationTest, JsonRoundTrip) {
  const Validation v = two_batches_with_compositions();
  const nlohmann::json j = validation_to_json(v);
  const Validation back = validation_from_json(j, "validation.json");
  EXPECT_EQ(validation_to_json(back), j);
  EXPECT_EQ(back.model, v.model);
  EXPECT_EQ(back.seed, v.seed);
  EXPECT_EQ(back.warmup, v.warmup);
  ASSERT_EQ(back.batches.size(), 2u);
  for (size_t b = 0; b < 2; ++b) {
    EXPECT_EQ(back.batches[b].batch, v.batches[b].batch);
    EXPECT_EQ(back.batches[b].metrics, v.batches[b].metrics);
    ASSERT_EQ(back.batches[b].candidates.size(), v.batches[b].candidates.size());
    for (size_t i = 0; i < v.batches[b].candidates.size(); ++i) {
      const CandidateResult &got = back.batches[b].candidates[i],
                            &want = v.batches[b].candidates[i];
      EXPECT_EQ(got.candidate.labels, want.candidate.labels);
      EXPECT_EQ(got.candidate.composition, want.candidate.composition);
      EXPECT_EQ(got.candidate.text, want.candidate.text);
      EXPECT_EQ(got.candidate.pdl, want.candidate.pdl);
      EXPECT_EQ(got.predicted, want.predicted);
      EXPECT_EQ(got.measured, want.measured);
      EXPECT_EQ(got.prediction_error, want.prediction_error);
      EXPECT_EQ(got.measurement_error, want.measurement_error);
    }
  }
  EXPECT_EQ(back.batches[0].candidates[1].candidate.text,
            "prefill: conv[0:28]; decode: conv[0:28]");
  EXPECT_EQ(back.batches[1].candidates[1].prediction_error, "no task benchmark");
}

TEST(ValidationTest, JsonErrorsNameTheFileAndField) {
  const nlohmann::json good = validation_to_json(two_batches_with_compositions());
  auto error = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json j = good;
    spoil(j);
    try {
      validation_from_json(j, "v.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto candidate = [](nlohmann::json& j) -> nlohmann::json& {
    return j["batches"][1]["candidates"][0];
  };
  EXPECT_EQ(error([](nlohmann::json&) {}), "no error");
  EXPECT_EQ(error([](nlohmann::json& j) { j["schema"] = "megacut.plan/1"; }),
            "v.json: field 'schema': expected \"megacut.validation/1\"");
  EXPECT_EQ(error([](nlohmann::json& j) { j.erase("model"); }), "v.json: field 'model': missing");
  EXPECT_EQ(error([](nlohmann::json& j) { j["seed"] = -1; }),
            "v.json: field 'seed': expected a non-negative integer, got -1");
  EXPECT_EQ(error([](nlohmann::json& j) { j["batches"] = {}; }),
            "v.json: field 'batches': missing");
  EXPECT_EQ(error([](nlohmann::json& j) { j["batches"] = 3; }),
            "v.json: field 'batches': expected a list, got 3");
  EXPECT_EQ(error([](nlohmann::json& j) { j["batches"] = nlohmann::json::array(); }),
            "v.json: field 'batches': no batch: a validation measures at least one");
  EXPECT_EQ(error([](nlohmann::json& j) { j["runs"] = int64_t{1} << 40; }),
            "v.json: field 'runs': expected an integer in [0, 2147483647], got 1099511627776");
  EXPECT_EQ(error([](nlohmann::json& j) { j["batches"][1]["batch"] = 1; }),
            "v.json: field 'batches[1].batch': batches must be listed in increasing order");
  EXPECT_EQ(error([&](nlohmann::json& j) { candidate(j)["labels"] = nlohmann::json::array(); }),
            "v.json: field 'batches[1].candidates[0].labels': expected at least one label");
  EXPECT_EQ(error([&](nlohmann::json& j) { candidate(j)["predicted"]["ttfo_ns"] = 1.5; }),
            "v.json: field 'batches[1].candidates[0].predicted.ttfo_ns': expected an integer, got "
            "1.5");
  EXPECT_EQ(error([&](nlohmann::json& j) { candidate(j)["measured"]["ttfo"].erase("p95"); }),
            "v.json: field 'batches[1].candidates[0].measured.ttfo.p95': missing");
  EXPECT_EQ(error([&](nlohmann::json& j) { candidate(j)["composition"] = "mk"; }),
            "v.json: field 'batches[1].candidates[0].composition': 'mk' is not a stage in "
            "canonical form (\"stage: kind[a:b] ...\")");
  EXPECT_EQ(error([&](nlohmann::json& j) {
              candidate(j)["composition"] = "prefill: mk[0:28]; decode: conv[0:9] conv[10:28]";
            }).find("v.json: field 'batches[1].candidates[0].composition': "),
            0u);
  EXPECT_EQ(error([&](nlohmann::json& j) {
              candidate(j)["measured"]["ttfo"] = model::stats_to_json(model::constant_stats(0));
            }),
            "v.json: field 'batches[1]': validation: a measured time of 0.000000 cannot score a "
            "prediction");
}

}  // namespace
}  // namespace megacut::validation
