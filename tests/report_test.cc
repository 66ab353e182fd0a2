// The cross-model report (validation/report.h): the table rows, overall figures and plot data of
// hand-made validations whose expected values are worked out from their inputs, the mk coverage
// from simulating the candidates again, and the plot file names.
#include "validation/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/error.h"
#include "simulator/simulator.h"
#include "tests/support/candidate_results.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::validation {
namespace {

using model::RegionKind;

const std::vector<model::StageShape> kShapes = {{"prefill", 18}, {"decode", 14}};  // tiny-llama

model::LatencyStats stats(double p50, double p95, const std::string& unit = "ms") {
  return testing::run_stats(p50, p95, unit, 20);
}

// A candidate predicted at (ttfo, step) ms, measured with `m`; either may be absent.
CandidateResult result(const std::string& label, const std::string& composition,
                       std::optional<std::pair<double, double>> predicted_ms,
                       std::optional<Measured> m) {
  const model::Composition c = model::parse_composition(composition, kShapes);
  return testing::candidate_result({{label}, c, c.to_string()}, predicted_ms, m);
}

BatchValidation batch(int64_t size, std::vector<CandidateResult> candidates) {
  BatchValidation b{size, std::move(candidates)};
  b.metrics = score_batch(b.candidates);
  return b;
}

// tiny-llama: batch 1 a hit, batch 2 a miss with an unpredicted and an unmeasured candidate.
// qwen3: one batch, nothing measured.
std::vector<ReportModel> two_models() {
  ReportModel llama;
  llama.source = "in/llama/validation.json";
  llama.validation.model = "tiny-llama";
  llama.validation.device = "test GPU";
  llama.validation.category = "mixed";
  // Batch 1: top 1 predicted 10 ms, measured 10.1 (error 0.990%); conv predicted 12, measured
  // 10000 us = 10.0 ms (error 20%), p95 10.1: the measured best, tolerance max(2%, 1%) = 2%, and
  // top 1's regret (10.1 - 10) / 10 = 1%: a hit. TTFO MAPE 10.495%; decode steps predicted 2 and
  // 3, measured 2.5: 20% each; the two are ranked in reverse: tau -1.
  llama.validation.batches.push_back(batch(
      1,
      {result("top 1", "prefill: mk; decode: conv", {{10, 2}},
              Measured{stats(10.1, 10.2), stats(2.5, 2.6)}),
       result("conv", "conv", {{12, 3}}, Measured{stats(10000, 10100, "us"), stats(2.5, 2.6)})}));
  // Batch 2: top 1 predicted 10, measured 10.5 (error 4.762%; decode 1 against 1: 0%); mk not
  // predicted but the measured best at 10.0 (p95 10.1): regret 5% > 2%, a miss; random 1
  // predicted 11, not measured. One candidate scored: no tau.
  llama.validation.batches.push_back(
      batch(2, {result("top 1", "prefill: mk; decode: conv", {{10, 1}},
                       Measured{stats(10.5, 10.6), stats(1, 1)}),
                result("mk", "mk", std::nullopt, Measured{stats(10.0, 10.1), stats(1, 1)}),
                result("random 1", "decode: mk", {{11, 1}}, std::nullopt)}));
  llama.coverage = {{0.25, 0.0}, {0.25, std::nullopt, 0.5}};
  llama.notes = {"simulated again, the TTFO moved"};

  ReportModel qwen;
  qwen.source = "in/qwen/validation.json";
  qwen.validation.model = "qwen3-0.6b";
  qwen.validation.device = "test GPU";
  qwen.validation.category = "megakernel-averse";
  qwen.validation.batches.push_back(batch(4, {result("top 1", "conv", {{5, 1}}, std::nullopt)}));
  skip_coverage(qwen, "the profile p.json is not found");
  return {llama, qwen};
}

TEST(ReportTest, MarkdownTableOverallPlotsAndDefinitions) {
  const std::string md = report_markdown(two_models());
  for (const char* text :
       {"tiny-llama on test GPU (`in/llama/validation.json`), qwen3-0.6b on test GPU",
        "| model | batch | predicted best | measured best | hit | TTFO MAPE | decode MAPE | "
        "Kendall τ | category |",
        "| tiny-llama | 1 | top 1 | conv | yes | 10.5% | 20.0% | -1.000 | mixed |",
        "| tiny-llama | 2 | top 1 | mk | no | 4.8% | 0.0% | — | mixed |",
        "| qwen3-0.6b | 4 | top 1 | — | — | — | — | — | megakernel-averse |",
        // Over tiny-llama's three scored candidates: TTFO (0.990 + 20 + 4.762) / 3 = 8.584%,
        // decode (20 + 20 + 0) / 3 = 13.3%; worst batch 10.495%; lowest tau -1; 1 hit of 2.
        "| tiny-llama | test GPU | 3 | 8.6% | 10.5% | 13.3% | -1.000 | 1 of 2 |",
        "| qwen3-0.6b | test GPU | 0 | — | — | — | — | 0 of 0 |",
        "- [tiny-llama-scatter.svg](tiny-llama-scatter.svg): predicted against measured TTFO",
        "- [tiny-llama-candidates.svg](tiny-llama-candidates.svg): per batch size",
        "- [qwen3-0.6b-coverage.svg](qwen3-0.6b-coverage.svg): mk coverage of the predicted best",
        "Note: simulated again, the TTFO moved",
        "Note: mk coverage not computed: the profile p.json is not found", "## Definitions",
        "- hit: the predicted best's measured TTFO p50 exceeds the measured best's by at most "
        "max(2%, spread)",
        "- mk coverage: the share", "  - megakernel-averse: all-conventional at every batch size",
        "  - mixed: none of the above"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md;
  }
}

// A model with a timeline names both traces and its plot in the plot data and links the plot
// from report.md; one without has a null timeline and no link.
TEST(ReportTest, TimelineNamesBothTracesAndItsPlot) {
  std::vector<ReportModel> models = two_models();
  models[0].timeline =
      ReportTimeline{1, "prefill: conv[0:18]; decode: conv[0:14]", "../in/llama/trace-b1.json",
                     "tiny-llama-simulated-trace-b1.json"};
  const nlohmann::json j = report_data_json(models);
  EXPECT_EQ(j["models"][0]["timeline"],
            nlohmann::json({{"batch", 1},
                            {"composition", "prefill: conv[0:18]; decode: conv[0:14]"},
                            {"measured_trace", "../in/llama/trace-b1.json"},
                            {"simulated_trace", "tiny-llama-simulated-trace-b1.json"},
                            {"plot", "tiny-llama-timeline.svg"}}));
  EXPECT_TRUE(j["models"][1]["timeline"].is_null());
  const std::string md = report_markdown(models);
  EXPECT_NE(md.find("- [tiny-llama-timeline.svg](tiny-llama-timeline.svg): batch 1, "
                    "all-conventional: each stage's kernels as the profiler traced them "
                    "(`../in/llama/trace-b1.json`)"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("qwen3-0.6b-timeline.svg"), std::string::npos);
}

TEST(ReportTest, PlotDataInMillisecondsWithNullsForWhatIsMissing) {
  const nlohmann::json j = report_data_json(two_models());
  EXPECT_EQ(j["schema"], "megacut.report-data/1");
  ASSERT_EQ(j["models"].size(), 2u);
  const nlohmann::json& llama = j["models"][0];
  EXPECT_EQ(llama["model"], "tiny-llama");
  EXPECT_EQ(llama["category"], "mixed");
  EXPECT_EQ(llama["source"], "in/llama/validation.json");
  EXPECT_EQ(llama["plots"]["scatter"], "tiny-llama-scatter.svg");
  EXPECT_EQ(llama["plots"]["candidates"], "tiny-llama-candidates.svg");
  EXPECT_EQ(llama["plots"]["coverage"], "tiny-llama-coverage.svg");
  EXPECT_EQ(llama["notes"], nlohmann::json({"simulated again, the TTFO moved"}));
  ASSERT_EQ(llama["batches"].size(), 2u);

  const nlohmann::json& b1 = llama["batches"][0];
  EXPECT_EQ(b1["batch"], 1);
  EXPECT_EQ(b1["hit"], true);
  EXPECT_NEAR(b1["ttfo_mape_percent"].get<double>(), (0.1 / 10.1 + 0.2) / 2 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(b1["kendall_tau"].get<double>(), -1.0);
  const nlohmann::json& top = b1["candidates"][0];
  EXPECT_EQ(top["label"], "top 1");
  EXPECT_DOUBLE_EQ(top["predicted_ttfo_ms"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(top["measured_ttfo_p50_ms"].get<double>(), 10.1);
  EXPECT_DOUBLE_EQ(top["measured_ttfo_p95_ms"].get<double>(), 10.2);
  EXPECT_DOUBLE_EQ(top["predicted_decode_step_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(top["measured_decode_step_p50_ms"].get<double>(), 2.5);
  EXPECT_EQ(top["predicted_best"], true);
  EXPECT_EQ(top["measured_best"], false);
  EXPECT_DOUBLE_EQ(top["mk_coverage"].get<double>(), 0.25);
  const nlohmann::json& conv = b1["candidates"][1];  // measured in us: 10000 us = 10 ms
  EXPECT_NEAR(conv["measured_ttfo_p50_ms"].get<double>(), 10.0, 1e-12);
  EXPECT_NEAR(conv["measured_ttfo_p95_ms"].get<double>(), 10.1, 1e-12);
  EXPECT_EQ(conv["predicted_best"], false);
  EXPECT_EQ(conv["measured_best"], true);
  EXPECT_DOUBLE_EQ(conv["mk_coverage"].get<double>(), 0.0);

  const nlohmann::json& b2 = llama["batches"][1];
  EXPECT_EQ(b2["hit"], false);
  EXPECT_TRUE(b2["kendall_tau"].is_null());
  const nlohmann::json& mk = b2["candidates"][1];  // measured, not predicted
  EXPECT_TRUE(mk["predicted_ttfo_ms"].is_null());
  EXPECT_TRUE(mk["predicted_decode_step_ms"].is_null());
  EXPECT_DOUBLE_EQ(mk["measured_ttfo_p50_ms"].get<double>(), 10.0);
  EXPECT_EQ(mk["measured_best"], true);
  EXPECT_TRUE(mk["mk_coverage"].is_null());
  const nlohmann::json& random = b2["candidates"][2];  // predicted, not measured
  EXPECT_DOUBLE_EQ(random["predicted_ttfo_ms"].get<double>(), 11.0);
  EXPECT_TRUE(random["measured_ttfo_p50_ms"].is_null());
  EXPECT_TRUE(random["measured_ttfo_p95_ms"].is_null());
  EXPECT_TRUE(random["measured_decode_step_p50_ms"].is_null());
  EXPECT_DOUBLE_EQ(random["mk_coverage"].get<double>(), 0.5);

  const nlohmann::json& qwen = j["models"][1];
  EXPECT_TRUE(qwen["batches"][0]["hit"].is_null());
  EXPECT_TRUE(qwen["batches"][0]["ttfo_mape_percent"].is_null());
  EXPECT_EQ(qwen["batches"][0]["candidates"][0]["predicted_best"], true);
  EXPECT_TRUE(qwen["batches"][0]["candidates"][0]["mk_coverage"].is_null());
}

// A validation of tiny-llama at batch 1 whose predictions come from `profile`, as
// predict_candidates makes them: all conv, all mk, a mixed one with PDL, one unpredicted.
ReportModel predicted_model(const model::Profile& profile) {
  std::vector<Candidate> list;
  add_candidate(list, "conv", model::uniform_composition(kShapes, RegionKind::conv));
  add_candidate(list, "mk", model::uniform_composition(kShapes, RegionKind::mk));
  add_candidate(list, "mixed+pdl",
                model::parse_composition("prefill: conv[0:5] mk[5:]; decode: mk", kShapes), true);
  ReportModel m;
  m.validation.model = "tiny-llama";
  m.validation.profile = "tiny.json";
  m.validation.batches = {batch(1, predict_candidates(profile, {}, 1, list))};
  CandidateResult unpredicted = m.validation.batches[0].candidates[0];
  unpredicted.predicted.reset();
  m.validation.batches[0].candidates.push_back(unpredicted);
  return m;
}

TEST(ReportTest, CoverageFromSimulatingTheCandidatesAgain) {
  const model::Profile profile = testing::synthetic_profile("tiny-llama", {1}, 16);
  ReportModel m = predicted_model(profile);
  add_coverage(m, profile);
  EXPECT_TRUE(m.notes.empty()) << m.notes.front();
  ASSERT_EQ(m.coverage.size(), 1u);
  ASSERT_EQ(m.coverage[0].size(), 4u);
  // All conv: no time in mk regions. The others: as planner::evaluate counts them, with the
  // candidate's PDL setting.
  EXPECT_EQ(m.coverage[0][0], 0.0);
  simulator::Simulator plain(profile), pdl(profile, {.pdl = true});
  const model::Composition& mk = m.validation.batches[0].candidates[1].candidate.composition;
  const model::Composition& mixed = m.validation.batches[0].candidates[2].candidate.composition;
  EXPECT_EQ(m.coverage[0][1], planner::evaluate(plain.simulate(mk, 1), mk).coverage());
  EXPECT_EQ(m.coverage[0][2], planner::evaluate(pdl.simulate(mixed, 1), mixed).coverage());
  EXPECT_GT(*m.coverage[0][1], 0.5);
  EXPECT_LT(*m.coverage[0][2], *m.coverage[0][1]);
  EXPECT_FALSE(m.coverage[0][3]);  // no prediction, so no coverage
}

TEST(ReportTest, CoverageNotesAMovedPredictionAnotherModelAndAMissingBatch) {
  const model::Profile profile = testing::synthetic_profile("tiny-llama", {1}, 16);
  // The conv candidate recorded at 1.1 times what the profile now predicts: it moved by
  // 0.1 / 1.1 = 9.1% of the recorded value.
  ReportModel moved = predicted_model(profile);
  Predicted& conv = *moved.validation.batches[0].candidates[0].predicted;
  conv.ttfo_ns = conv.ttfo_ns * 11 / 10;
  add_coverage(moved, profile);
  ASSERT_EQ(moved.notes.size(), 1u);
  EXPECT_NE(moved.notes[0].find("moved by up to 9.1% from the recorded predictions"),
            std::string::npos)
      << moved.notes[0];
  EXPECT_EQ(moved.coverage[0][0], 0.0);

  model::Profile other = profile;
  other.model_name = "tiny-qwen3";
  ReportModel wrong = predicted_model(profile);
  add_coverage(wrong, other);
  EXPECT_TRUE(wrong.coverage.empty());
  ASSERT_EQ(wrong.notes.size(), 1u);
  EXPECT_EQ(wrong.notes[0],
            "mk coverage not computed: the profile tiny.json is of tiny-qwen3, not of tiny-llama");

  ReportModel missing = predicted_model(profile);
  missing.validation.batches[0].batch = 3;  // the profile measured batch 1 only
  add_coverage(missing, profile);
  ASSERT_EQ(missing.notes.size(), 1u);
  EXPECT_NE(missing.notes[0].find("mk coverage unknown for 3 candidates"), std::string::npos)
      << missing.notes[0];
  EXPECT_FALSE(missing.coverage[0][0]);
}

TEST(ReportTest, PlotFilesAndOneValidationPerModel) {
  const ReportPlots plots = report_plots("configs/models/tiny qwen3");
  EXPECT_EQ(plots.scatter, "configs_models_tiny_qwen3-scatter.svg");
  EXPECT_EQ(plots.candidates, "configs_models_tiny_qwen3-candidates.svg");
  EXPECT_EQ(plots.coverage, "configs_models_tiny_qwen3-coverage.svg");

  std::vector<ReportModel> models = two_models();
  EXPECT_NO_THROW(check_distinct_models(models));
  models[1].validation.model = "tiny-llama";
  try {
    check_distinct_models(models);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "in/llama/validation.json and in/qwen/validation.json both validate tiny-llama"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace megacut::validation
