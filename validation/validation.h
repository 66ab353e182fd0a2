// Validation: predictions against measurements of the same compositions. `megacut validate`
// builds and times each candidate on the GPU; this file holds everything else, which needs no
// GPU: the candidate list, the predictions (from the profile alone, never from a measurement of
// the candidate), the scores, validation.json ("megacut.validation/1") and the Markdown summary.
//
// Definitions, per (model, batch); they are written into both outputs:
//  - a candidate's TTFO error is the absolute percentage error (APE) of its predicted TTFO
//    against its measured TTFO p50 (the simulator estimates the median): |p - m| / m; the
//    decode step's likewise;
//  - MAPE: the mean APE over the candidates with both a prediction and a measurement;
//  - Kendall's tau-b between predicted TTFO and measured TTFO p50 over those candidates:
//    (concordant - discordant) / sqrt((n0 - n1) (n0 - n2)), with n0 = n (n - 1) / 2 pairs and
//    n1, n2 the pairs tied in the prediction, in the measurement (a tied pair is neither
//    concordant nor discordant); none with fewer than two candidates or all of one side tied;
//  - the predicted best: the least predicted TTFO (the first in list order among equals); the
//    measured best: the least measured TTFO p50 over every measured candidate, predicted or not;
//  - the spread: the measured best's run-to-run spread of TTFO, (p95 - p50) / p50;
//  - a hit: the predicted best's measured TTFO p50 exceeds the measured best's by at most
//    max(2%, spread) of the measured best's.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/composition.h"
#include "model/linear_provider.h"
#include "model/profile.h"
#include "model/stats.h"
#include "planner/plan.h"
#include "simulator/simulator.h"

namespace megacut::validation {

inline constexpr std::string_view kValidationSchema = "megacut.validation/1";

// A hit is within this fraction of the measured best, or within its spread if larger.
inline constexpr double kHitTolerance = 0.02;

struct Candidate {
  std::vector<std::string> labels;  // every name it was added under: "top 1", "mk", "conv", ...
  model::Composition composition;   // adjacent conv regions merged
  std::string text;                 // composition.to_string()
  bool pdl = false;                 // region boundaries use Programmatic Dependent Launch
  // The ops of its conv regions that run on cuBLASLt (ProviderChoice::in_conv_regions).
  model::ProviderChoice providers;

  std::string label() const;  // the labels joined by ", "
};

// The composition with adjacent conv regions merged: the same kernels, gaps and graph either way.
model::Composition merge_conv_regions(model::Composition composition);

// Adds a candidate, or only its label where one with the same merged text, PDL and providers in
// its conv regions is listed.
void add_candidate(std::vector<Candidate>& list, std::string label,
                   const model::Composition& composition, bool pdl = false,
                   const model::ProviderChoice& providers = {});

// The candidates of one batch, in this order: the plan's ranked compositions ("top 1" .. "top
// K"), one megakernel per stage ("mk"), all conventional ("conv"), all conventional with PDL
// ("conv+pdl", when `with_pdl`), all conventional with `cublaslt`'s ops on cuBLASLt ("conv
// cublaslt", when given: every op that can), one tile region per stage ("tile"), then `random`
// ("random 1" ..); duplicates merged. The plan's compositions and the random ones run the
// plan's linear providers in their conv regions; "mk", "conv", "conv+pdl" and "tile" our
// kernels only.
std::vector<Candidate> validation_candidates(
    const planner::BatchPlan& plan, const std::vector<model::StageShape>& shapes,
    const std::vector<model::Composition>& random, bool with_pdl,
    const std::optional<model::ProviderChoice>& cublaslt = {});

// The simulators candidates are predicted with: one per launch (PDL or not) and linear
// provider choice, made from `options` when first needed.
class CandidateSimulators {
 public:
  CandidateSimulators(const model::Profile& profile, simulator::SimOptions options);
  ~CandidateSimulators();
  simulator::Simulator& of(const Candidate& candidate);

 private:
  const model::Profile& profile_;
  simulator::SimOptions options_;
  std::vector<
      std::pair<std::pair<bool, model::ProviderChoice>, std::unique_ptr<simulator::Simulator>>>
      made_;
};

struct Predicted {
  simulator::TimeNs ttfo_ns = 0;
  simulator::TimeNs decode_step_ns = 0;
  friend bool operator==(const Predicted&, const Predicted&) = default;
};

struct Measured {
  model::LatencyStats ttfo;  // any unit; the runner reports ms
  model::LatencyStats decode_step;
  friend bool operator==(const Measured&, const Measured&) = default;
};

struct CandidateResult {
  Candidate candidate;
  std::optional<Predicted> predicted;
  std::string prediction_error;  // why there is no prediction
  std::optional<Measured> measured;
  std::string measurement_error;  // why there is no measurement
  // Filled by score_batch: fractions (0.05 is 5%), where both sides are present.
  std::optional<double> ttfo_ape;
  std::optional<double> decode_step_ape;
};

// Every candidate predicted from the profile alone, by a Simulator with options.pdl and the
// linear providers set as the candidate asks (CandidateSimulators). One the profile cannot predict
// (an mk region over an op without task benchmarks) keeps the simulator's message in
// prediction_error instead.
std::vector<CandidateResult> predict_candidates(const model::Profile& profile,
                                                simulator::SimOptions options, int64_t batch,
                                                const std::vector<Candidate>& candidates);

// |predicted - measured| / measured.
double absolute_percentage_error(double predicted, double measured);

// Kendall's tau-b of two equally long lists (see the file comment); none when undefined.
std::optional<double> kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y);

struct BatchMetrics {
  int scored = 0;  // candidates with both a prediction and a measurement
  std::optional<double> ttfo_mape;
  std::optional<double> decode_step_mape;
  std::optional<double> kendall_tau;
  std::optional<size_t> predicted_best;  // index into the candidates
  std::optional<size_t> measured_best;
  std::optional<double> spread;     // the measured best's (TTFO p95 - p50) / p50
  std::optional<double> tolerance;  // max(kHitTolerance, spread)
  // (measured TTFO p50 of the predicted best - the measured best's) / the measured best's.
  std::optional<double> regret;
  std::optional<bool> hit;  // none when the predicted best was not measured
  friend bool operator==(const BatchMetrics&, const BatchMetrics&) = default;
};

// Fills each candidate's errors and returns the batch's metrics.
BatchMetrics score_batch(std::vector<CandidateResult>& candidates);

struct BatchValidation {
  int64_t batch = 0;
  std::vector<CandidateResult> candidates;
  BatchMetrics metrics;
  std::vector<std::string> notes;
};

struct OverallMetrics {
  int scored = 0;  // candidates over all batches
  std::optional<double> ttfo_mape;
  std::optional<double> decode_step_mape;
  std::optional<double> worst_batch_ttfo_mape;
  std::optional<double> min_kendall_tau;
  int hits = 0;
  int judged = 0;  // batches with a hit or a miss
  friend bool operator==(const OverallMetrics&, const OverallMetrics&) = default;
};

OverallMetrics score_overall(const std::vector<BatchValidation>& batches);

struct Validation {
  std::string model;
  std::string device;          // where the candidates were measured
  std::string profile;         // the profile's path
  std::string profile_device;  // where the profile was measured
  int64_t prompt_len = 0;
  std::string provider;
  int runs = 0;
  int warmup = 0;
  uint64_t seed = 0;  // of the random compositions and weights
  int top_k = 0;
  int random = 0;
  std::string category;                  // the planner's, over the validated batches
  std::vector<BatchValidation> batches;  // increasing batch, those done so far
};

// With the overall metrics and the definitions above; times in ns (predicted) and in the
// measurement's unit (measured), errors in percent.
nlohmann::json validation_to_json(const Validation& validation);
// Validates and reads validation_to_json's form; `file` names the source in errors. Each
// candidate's composition is parsed from its canonical text, each stage's op count taken from
// its last region. The scores are recomputed (score_batch), not read back.
Validation validation_from_json(const nlohmann::json& json, std::string_view file);
// A table per batch and a summary table (batch, predicted best, measured best, hit, MAPE, tau).
std::string validation_markdown(const Validation& validation);

// The definitions of the file comment as both outputs state them: (name, text).
std::span<const std::pair<const char*, const char*>> validation_definitions();

// `value` times `scale` as JSON, or null without one.
nlohmann::json optional_json(const std::optional<double>& value, double scale = 1);

// Markdown table cells, "—" where there is no value: "12.5%", "0.585" (tau), "yes" or "no" (hit),
// the label of candidate `index` of `batch`.
std::string percent_cell(const std::optional<double>& fraction);
std::string tau_cell(const std::optional<double>& tau);
std::string hit_cell(const std::optional<bool>& hit);
std::string candidate_cell(const BatchValidation& batch, const std::optional<size_t>& index);

}  // namespace megacut::validation
