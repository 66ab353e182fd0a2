#include "validation/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>

#include "model/error.h"
#include "model/json_field.h"
#include "model/text.h"

namespace megacut::validation {
namespace {

using nlohmann::json;

// The definitions of the file comment, as the outputs state them.
constexpr std::pair<const char*, const char*> kDefinitions[] = {
    {"ttfo_ape",
     "absolute percentage error of the predicted TTFO against the measured TTFO p50 (the "
     "simulator estimates the median): |predicted - measured| / measured"},
    {"decode_step_ape", "the same for the decode step"},
    {"mape",
     "mean of the candidates' absolute percentage errors, over the candidates with both "
     "a prediction and a measurement"},
    {"kendall_tau",
     "Kendall's tau-b between predicted TTFO and measured TTFO p50 over those candidates: "
     "(concordant - discordant) / sqrt((n0 - n1)(n0 - n2)), n0 = n(n-1)/2 pairs, n1 and n2 the "
     "pairs tied in the prediction and in the measurement"},
    {"predicted_best", "the least predicted TTFO (the first in list order among equals)"},
    {"measured_best", "the least measured TTFO p50 over every measured candidate"},
    {"spread", "the measured best's run-to-run spread of TTFO: (p95 - p50) / p50"},
    {"hit",
     "the predicted best's measured TTFO p50 exceeds the measured best's by at most max(2%, "
     "spread) of the measured best's"},
    {"regret",
     "(measured TTFO p50 of the predicted best - that of the measured best) / that of the "
     "measured best"}};

double to_ns(double value, const model::LatencyStats& stats) {
  const double scale = model::unit_ns(stats.unit);
  if (scale <= 0) throw Error("validation: unknown time unit '" + stats.unit + "'");
  return value * scale;
}

std::optional<double> mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

json percent_json(const std::optional<double>& fraction) { return optional_json(fraction, 100); }

std::string ms_text(const std::optional<double>& ns) {
  return ns ? model::printf_string("%.3f", *ns / 1e6) : "—";
}

json candidate_json(const CandidateResult& c, size_t index, const BatchMetrics& m) {
  json predicted = nullptr;
  if (c.predicted) {
    predicted = {{"ttfo_ns", c.predicted->ttfo_ns},
                 {"decode_step_ns", c.predicted->decode_step_ns}};
  }
  json measured = nullptr;
  if (c.measured) {
    measured = {{"ttfo", model::stats_to_json(c.measured->ttfo)},
                {"decode_step", model::stats_to_json(c.measured->decode_step)}};
  }
  json out = {{"labels", c.candidate.labels},
              {"composition", c.candidate.text},
              {"pdl", c.candidate.pdl},
              {"linear_providers", model::provider_choice_to_json(c.candidate.providers)},
              {"predicted", predicted},
              {"measured", measured},
              {"ttfo_ape_percent", percent_json(c.ttfo_ape)},
              {"decode_step_ape_percent", percent_json(c.decode_step_ape)},
              {"predicted_best", m.predicted_best == index},
              {"measured_best", m.measured_best == index}};
  if (!c.prediction_error.empty()) out["prediction_error"] = c.prediction_error;
  if (!c.measurement_error.empty()) out["measurement_error"] = c.measurement_error;
  return out;
}

json metrics_json(const BatchMetrics& m) {
  return {{"scored", m.scored},
          {"ttfo_mape_percent", percent_json(m.ttfo_mape)},
          {"decode_step_mape_percent", percent_json(m.decode_step_mape)},
          {"kendall_tau", optional_json(m.kendall_tau)},
          {"predicted_best", m.predicted_best ? json(*m.predicted_best) : json(nullptr)},
          {"measured_best", m.measured_best ? json(*m.measured_best) : json(nullptr)},
          {"spread_percent", percent_json(m.spread)},
          {"tolerance_percent", percent_json(m.tolerance)},
          {"regret_percent", percent_json(m.regret)},
          {"hit", m.hit ? json(*m.hit) : json(nullptr)}};
}

// Measured statistics of a candidate in ns, or none.
std::optional<double> measured_ns(const CandidateResult& c, double model::LatencyStats::*field,
                                  bool decode = false) {
  if (!c.measured) return std::nullopt;
  const model::LatencyStats& s = decode ? c.measured->decode_step : c.measured->ttfo;
  return to_ns(s.*field, s);
}

std::optional<double> predicted_ns(const CandidateResult& c, bool decode = false) {
  if (!c.predicted) return std::nullopt;
  return static_cast<double>(decode ? c.predicted->decode_step_ns : c.predicted->ttfo_ns);
}

using Field = model::JsonField;

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// A candidate's composition from its canonical text ("prefill: conv[0:196]; decode: mk[0:40]
// conv[40:196]"): every stage present, each as long as its last region reaches.
model::Composition canonical_composition(const Field& f) {
  const std::string text = f.string();
  std::vector<model::StageShape> shapes;
  for (size_t from = 0; from < text.size();) {
    size_t to = text.find(';', from);
    if (to == std::string::npos) to = text.size();
    const std::string clause = text.substr(from, to - from);
    const size_t first = clause.find_first_not_of(' '), colon = clause.find(':');
    const size_t open = clause.rfind('['), last_colon = clause.rfind(':');
    if (colon == std::string::npos || open == std::string::npos || last_colon < open ||
        first >= colon) {
      f.fail("'" + clause + "' is not a stage in canonical form (\"stage: kind[a:b] ...\")");
    }
    shapes.push_back({clause.substr(first, colon - first), std::atoi(&clause[last_colon + 1])});
    from = to + 1;
  }
  model::Composition c;
  try {
    c = model::parse_composition(text, shapes);
  } catch (const Error& e) {
    f.fail(e.what());
  }
  if (c.to_string() != text) f.fail("not in canonical form ('" + c.to_string() + "')");
  return c;
}

CandidateResult candidate_from_json(const Field& f) {
  CandidateResult c;
  c.candidate.labels = f.at("labels").strings();
  if (c.candidate.labels.empty()) f.at("labels").fail("expected at least one label");
  c.candidate.composition = canonical_composition(f.at("composition"));
  c.candidate.text = c.candidate.composition.to_string();
  c.candidate.pdl = f.at("pdl").boolean();
  // Absent in validations written before linear providers were chosen: ours.
  if (const std::optional<Field> p = f.optional("linear_providers")) {
    std::vector<model::StageShape> shapes;
    for (const model::StageRegions& s : c.candidate.composition.stages) {
      shapes.push_back({s.stage, s.regions.back().end});
    }
    c.candidate.providers = model::provider_choice_from(*p, shapes);
  }
  if (const std::optional<Field> p = f.optional("predicted")) {
    c.predicted = Predicted{p->at("ttfo_ns").integer(0), p->at("decode_step_ns").integer(0)};
  }
  if (const std::optional<Field> m = f.optional("measured")) {
    c.measured = Measured{m->at("ttfo").stats(), m->at("decode_step").stats()};
  }
  if (const std::optional<Field> e = f.optional("prediction_error")) {
    c.prediction_error = e->string();
  }
  if (const std::optional<Field> e = f.optional("measurement_error")) {
    c.measurement_error = e->string();
  }
  return c;
}

void batch_markdown(std::string& md, const BatchValidation& b) {
  const BatchMetrics& m = b.metrics;
  md += "\n## Batch " + std::to_string(b.batch) + "\n\n";
  for (const std::string& note : b.notes) md += "Note: " + note + "\n\n";
  md +=
      "| # | candidate | best | TTFO predicted (ms) | TTFO p50 (ms) | TTFO p95 (ms) | TTFO error "
      "| decode predicted (ms) | decode p50 (ms) | decode error | composition |\n"
      "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  std::string problems;
  for (size_t i = 0; i < b.candidates.size(); ++i) {
    const CandidateResult& c = b.candidates[i];
    const bool pb = m.predicted_best == i, mb = m.measured_best == i;
    const char* best = pb && mb ? "predicted, measured" : pb ? "predicted" : mb ? "measured" : "";
    md += "| " + std::to_string(i + 1) + " | " + c.candidate.label() + " | " + best + " | " +
          ms_text(predicted_ns(c)) + " | " + ms_text(measured_ns(c, &model::LatencyStats::p50)) +
          " | " + ms_text(measured_ns(c, &model::LatencyStats::p95)) + " | " +
          percent_cell(c.ttfo_ape) + " | " + ms_text(predicted_ns(c, true)) + " | " +
          ms_text(measured_ns(c, &model::LatencyStats::p50, true)) + " | " +
          percent_cell(c.decode_step_ape) + " | `" + c.candidate.text + "`" +
          (c.candidate.pdl ? " with PDL" : "") +
          (c.candidate.providers.all_ours()
               ? ""
               : "; linear providers: " + c.candidate.providers.describe()) +
          " |\n";
    if (!c.prediction_error.empty()) {
      problems += "- " + std::to_string(i + 1) + " (" + c.candidate.label() +
                  "): no prediction: " + c.prediction_error + "\n";
    }
    if (!c.measurement_error.empty()) {
      problems += "- " + std::to_string(i + 1) + " (" + c.candidate.label() +
                  "): not measured: " + c.measurement_error + "\n";
    }
  }
  if (!problems.empty()) md += "\n" + problems;
  md += "\nTTFO MAPE " + percent_cell(m.ttfo_mape) + ", decode step MAPE " +
        percent_cell(m.decode_step_mape) + ", Kendall τ " + tau_cell(m.kendall_tau) + " over " +
        std::to_string(m.scored) + " candidates; hit: " + hit_cell(m.hit) + " (regret " +
        percent_cell(m.regret) + ", tolerance " + percent_cell(m.tolerance) + ").\n";
}

}  // namespace

json optional_json(const std::optional<double>& value, double scale) {
  return value ? json(*value * scale) : json(nullptr);
}

std::string Candidate::label() const { return model::comma_list(labels); }

std::span<const std::pair<const char*, const char*>> validation_definitions() {
  return kDefinitions;
}

std::string percent_cell(const std::optional<double>& fraction) {
  return fraction ? model::percent_text(*fraction) : "—";
}

std::string tau_cell(const std::optional<double>& tau) {
  return tau ? model::printf_string("%.3f", *tau) : "—";
}

std::string hit_cell(const std::optional<bool>& hit) { return hit ? (*hit ? "yes" : "no") : "—"; }

std::string candidate_cell(const BatchValidation& batch, const std::optional<size_t>& index) {
  return index ? batch.candidates[*index].candidate.label() : "—";
}

model::Composition merge_conv_regions(model::Composition composition) {
  for (model::StageRegions& s : composition.stages) {
    std::vector<model::Region> merged;
    for (const model::Region& r : s.regions) {
      if (!merged.empty() && r.kind == model::RegionKind::conv &&
          merged.back().kind == model::RegionKind::conv && merged.back().end == r.begin) {
        merged.back().end = r.end;
      } else {
        merged.push_back(r);
      }
    }
    s.regions = std::move(merged);
  }
  return composition;
}

void add_candidate(std::vector<Candidate>& list, std::string label,
                   const model::Composition& composition, bool pdl,
                   const model::ProviderChoice& providers) {
  model::Composition merged = merge_conv_regions(composition);
  std::string text = merged.to_string();
  model::ProviderChoice in_conv = providers.in_conv_regions(merged);
  for (Candidate& c : list) {
    if (c.text == text && c.pdl == pdl && c.providers == in_conv) {
      if (std::find(c.labels.begin(), c.labels.end(), label) == c.labels.end()) {
        c.labels.push_back(std::move(label));
      }
      return;
    }
  }
  list.push_back({{std::move(label)}, std::move(merged), std::move(text), pdl, std::move(in_conv)});
}

std::vector<Candidate> validation_candidates(const planner::BatchPlan& plan,
                                             const std::vector<model::StageShape>& shapes,
                                             const std::vector<model::Composition>& random,
                                             bool with_pdl,
                                             const std::optional<model::ProviderChoice>& cublaslt) {
  std::vector<Candidate> list;
  for (size_t i = 0; i < plan.ranked.size(); ++i) {
    add_candidate(list, "top " + std::to_string(i + 1), plan.ranked[i].composition, false,
                  plan.providers);
  }
  add_candidate(list, "mk", model::uniform_composition(shapes, model::RegionKind::mk));
  const model::Composition conv = model::uniform_composition(shapes, model::RegionKind::conv);
  add_candidate(list, "conv", conv);
  if (with_pdl) add_candidate(list, "conv+pdl", conv, true);
  if (cublaslt) add_candidate(list, "conv cublaslt", conv, false, *cublaslt);
  add_candidate(list, "tile", model::uniform_composition(shapes, model::RegionKind::tile));
  for (size_t i = 0; i < random.size(); ++i) {
    add_candidate(list, "random " + std::to_string(i + 1), random[i], false, plan.providers);
  }
  return list;
}

CandidateSimulators::CandidateSimulators(const model::Profile& profile,
                                         simulator::SimOptions options)
    : profile_(profile), options_(std::move(options)) {}

CandidateSimulators::~CandidateSimulators() = default;

simulator::Simulator& CandidateSimulators::of(const Candidate& candidate) {
  const std::pair<bool, model::ProviderChoice> key{candidate.pdl, candidate.providers};
  for (auto& [k, sim] : made_) {
    if (k == key) return *sim;
  }
  simulator::SimOptions options = options_;
  options.pdl = candidate.pdl;
  options.provider_choice = candidate.providers;
  made_.emplace_back(key, std::make_unique<simulator::Simulator>(profile_, options));
  return *made_.back().second;
}

std::vector<CandidateResult> predict_candidates(const model::Profile& profile,
                                                simulator::SimOptions options, int64_t batch,
                                                const std::vector<Candidate>& candidates) {
  CandidateSimulators sims(profile, std::move(options));
  std::vector<CandidateResult> out;
  for (const Candidate& c : candidates) {
    CandidateResult r;
    r.candidate = c;
    try {
      const simulator::Prediction p = sims.of(c).simulate(c.composition, batch);
      r.predicted = Predicted{p.ttfo_ns, p.decode_step_ns};
    } catch (const Error& e) {
      r.prediction_error = e.what();
    }
    out.push_back(std::move(r));
  }
  return out;
}

double absolute_percentage_error(double predicted, double measured) {
  if (!(measured > 0)) {
    throw Error("validation: a measured time of " + std::to_string(measured) +
                " cannot score a prediction");
  }
  return std::abs(predicted - measured) / measured;
}

std::optional<double> kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw Error("kendall_tau_b: lists of different lengths");
  int64_t concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      const int sx = (x[i] < x[j]) - (x[j] < x[i]);
      const int sy = (y[i] < y[j]) - (y[j] < y[i]);
      tied_x += sx == 0;
      tied_y += sy == 0;
      if (sx != 0 && sy != 0) (sx == sy ? concordant : discordant) += 1;
    }
  }
  const int64_t n = static_cast<int64_t>(x.size()), pairs = n * (n - 1) / 2;
  const double denominator =
      std::sqrt(static_cast<double>(pairs - tied_x) * static_cast<double>(pairs - tied_y));
  if (!(denominator > 0)) return std::nullopt;
  return static_cast<double>(concordant - discordant) / denominator;
}

BatchMetrics score_batch(std::vector<CandidateResult>& candidates) {
  BatchMetrics m;
  std::vector<double> ttfo_errors, step_errors, predicted, measured;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateResult& c = candidates[i];
    c.ttfo_ape.reset();
    c.decode_step_ape.reset();
    const std::optional<double> p = predicted_ns(c), ms = measured_ns(c, &model::LatencyStats::p50);
    if (p && (!m.predicted_best || *p < *predicted_ns(candidates[*m.predicted_best]))) {
      m.predicted_best = i;
    }
    if (ms && (!m.measured_best ||
               *ms < *measured_ns(candidates[*m.measured_best], &model::LatencyStats::p50))) {
      m.measured_best = i;
    }
    if (!p || !ms) continue;
    c.ttfo_ape = absolute_percentage_error(*p, *ms);
    c.decode_step_ape = absolute_percentage_error(*predicted_ns(c, true),
                                                  *measured_ns(c, &model::LatencyStats::p50, true));
    ttfo_errors.push_back(*c.ttfo_ape);
    step_errors.push_back(*c.decode_step_ape);
    predicted.push_back(*p);
    measured.push_back(*ms);
  }
  m.scored = static_cast<int>(ttfo_errors.size());
  m.ttfo_mape = mean(ttfo_errors);
  m.decode_step_mape = mean(step_errors);
  m.kendall_tau = kendall_tau_b(predicted, measured);
  if (m.measured_best) {
    const CandidateResult& best = candidates[*m.measured_best];
    const double p50 = *measured_ns(best, &model::LatencyStats::p50);
    m.spread = (*measured_ns(best, &model::LatencyStats::p95) - p50) / p50;
    m.tolerance = std::max(kHitTolerance, *m.spread);
    if (m.predicted_best) {
      if (const std::optional<double> chosen =
              measured_ns(candidates[*m.predicted_best], &model::LatencyStats::p50)) {
        m.regret = (*chosen - p50) / p50;
        m.hit = *m.regret <= *m.tolerance;
      }
    }
  }
  return m;
}

OverallMetrics score_overall(const std::vector<BatchValidation>& batches) {
  OverallMetrics o;
  std::vector<double> ttfo_errors, step_errors;
  for (const BatchValidation& b : batches) {
    for (const CandidateResult& c : b.candidates) {
      if (c.ttfo_ape) ttfo_errors.push_back(*c.ttfo_ape);
      if (c.decode_step_ape) step_errors.push_back(*c.decode_step_ape);
    }
    const BatchMetrics& m = b.metrics;
    if (m.ttfo_mape)
      o.worst_batch_ttfo_mape = std::max(o.worst_batch_ttfo_mape.value_or(0), *m.ttfo_mape);
    if (m.kendall_tau) {
      o.min_kendall_tau = std::min(o.min_kendall_tau.value_or(1), *m.kendall_tau);
    }
    if (m.hit) {
      o.hits += *m.hit;
      ++o.judged;
    }
  }
  o.scored = static_cast<int>(ttfo_errors.size());
  o.ttfo_mape = mean(ttfo_errors);
  o.decode_step_mape = mean(step_errors);
  return o;
}

json validation_to_json(const Validation& v) {
  json definitions = json::object();
  for (const auto& [name, text] : kDefinitions) definitions[name] = text;
  definitions["hit_tolerance_percent"] = 100 * kHitTolerance;
  json batches = json::array();
  for (const BatchValidation& b : v.batches) {
    json candidates = json::array();
    for (size_t i = 0; i < b.candidates.size(); ++i) {
      candidates.push_back(candidate_json(b.candidates[i], i, b.metrics));
    }
    batches.push_back({{"batch", b.batch},
                       {"notes", b.notes},
                       {"candidates", candidates},
                       {"metrics", metrics_json(b.metrics)}});
  }
  const OverallMetrics o = score_overall(v.batches);
  return {{"schema", kValidationSchema},
          {"model", v.model},
          {"device", v.device},
          {"profile", v.profile},
          {"profile_device", v.profile_device},
          {"prompt_len", v.prompt_len},
          {"provider", v.provider},
          {"runs", v.runs},
          {"warmup_runs", v.warmup},
          {"seed", v.seed},
          {"top_k", v.top_k},
          {"random", v.random},
          {"category", v.category},
          {"definitions", definitions},
          {"batches", batches},
          {"overall",
           {{"scored", o.scored},
            {"ttfo_mape_percent", percent_json(o.ttfo_mape)},
            {"decode_step_mape_percent", percent_json(o.decode_step_mape)},
            {"worst_batch_ttfo_mape_percent", percent_json(o.worst_batch_ttfo_mape)},
            {"min_kendall_tau", optional_json(o.min_kendall_tau)},
            {"hits", o.hits},
            {"judged", o.judged}}}};
}

Validation validation_from_json(const json& j, std::string_view file) {
  const Field root(j, "", file);
  if (!j.is_object()) root.fail("expected a JSON object");
  if (!j.contains("schema") || j["schema"] != kValidationSchema) {
    throw_field_error(file, "schema", "expected \"" + std::string(kValidationSchema) + "\"");
  }
  Validation v;
  v.model = root.at("model").string();
  v.device = root.at("device").string();
  v.profile = root.at("profile").string();
  v.profile_device = root.at("profile_device").string();
  v.prompt_len = root.at("prompt_len").integer(1);
  v.provider = root.at("provider").string();
  v.runs = static_cast<int>(root.at("runs").integer(0, kMaxInt));
  v.warmup = static_cast<int>(root.at("warmup_runs").integer(0, kMaxInt));
  v.seed = root.at("seed").unsigned_integer();
  v.top_k = static_cast<int>(root.at("top_k").integer(0, kMaxInt));
  v.random = static_cast<int>(root.at("random").integer(0, kMaxInt));
  v.category = root.at("category").string();
  for (const Field& b : root.at("batches").list()) {
    BatchValidation batch;
    batch.batch = b.at("batch").integer(1);
    if (!v.batches.empty() && batch.batch <= v.batches.back().batch) {
      b.at("batch").fail("batches must be listed in increasing order");
    }
    batch.notes = b.at("notes").strings();
    for (const Field& c : b.at("candidates").list()) {
      batch.candidates.push_back(candidate_from_json(c));
    }
    try {
      batch.metrics = score_batch(batch.candidates);
    } catch (const Error& e) {  // a measured time of 0
      b.fail(e.what());
    }
    v.batches.push_back(std::move(batch));
  }
  if (v.batches.empty()) root.at("batches").fail("no batch: a validation measures at least one");
  return v;
}

std::string validation_markdown(const Validation& v) {
  std::string md = "# Validation: " + v.model + " on " + v.device + "\n\n";
  md += "Profile `" + v.profile + "` (measured on " + v.profile_device + "); prompt " +
        std::to_string(v.prompt_len) + " tokens; linear provider " + v.provider +
        "; each "
        "candidate " +
        std::to_string(v.warmup) + " warm-up and " + std::to_string(v.runs) +
        " timed runs; planner's top " + std::to_string(v.top_k) + ", " + std::to_string(v.random) +
        " random compositions (seed " + std::to_string(v.seed) + "); category " + v.category +
        ".\n";
  md +=
      "\n## Summary\n\n"
      "| batch | predicted best | measured best | hit | regret | spread | TTFO MAPE | decode MAPE "
      "| τ | candidates |\n"
      "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const BatchValidation& b : v.batches) {
    const BatchMetrics& m = b.metrics;
    md += "| " + std::to_string(b.batch) + " | " + candidate_cell(b, m.predicted_best) + " | " +
          candidate_cell(b, m.measured_best) + " | " + hit_cell(m.hit) + " | " +
          percent_cell(m.regret) + " | " + percent_cell(m.spread) + " | " +
          percent_cell(m.ttfo_mape) + " | " + percent_cell(m.decode_step_mape) + " | " +
          tau_cell(m.kendall_tau) + " | " + std::to_string(m.scored) + " of " +
          std::to_string(b.candidates.size()) + " |\n";
  }
  const OverallMetrics o = score_overall(v.batches);
  md += "\nOverall: TTFO MAPE " + percent_cell(o.ttfo_mape) + " (worst batch " +
        percent_cell(o.worst_batch_ttfo_mape) + "), decode step MAPE " +
        percent_cell(o.decode_step_mape) + " over " + std::to_string(o.scored) +
        " candidates; hits " + std::to_string(o.hits) + " of " + std::to_string(o.judged) +
        "; lowest τ " + tau_cell(o.min_kendall_tau) + ".\n";
  for (const BatchValidation& b : v.batches) batch_markdown(md, b);
  md += "\n## Definitions\n\n";
  for (const auto& [name, text] : kDefinitions) md += "- " + std::string(name) + ": " + text + "\n";
  return md;
}

}  // namespace megacut::validation
