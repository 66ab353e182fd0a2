#include "validation/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

#include "model/error.h"
#include "model/text.h"
#include "simulator/simulator.h"

namespace megacut::validation {
namespace {

using nlohmann::json;

json candidate_json(const CandidateResult& c, size_t index, const BatchMetrics& m,
                    const std::optional<double>& coverage) {
  std::optional<double> predicted_ttfo, predicted_step, ttfo_p50, ttfo_p95, step_p50;
  if (c.predicted) {
    predicted_ttfo = static_cast<double>(c.predicted->ttfo_ns) / 1e6;
    predicted_step = static_cast<double>(c.predicted->decode_step_ns) / 1e6;
  }
  if (c.measured) {
    const model::LatencyStats ttfo = c.measured->ttfo.converted("ms");
    ttfo_p50 = ttfo.p50;
    ttfo_p95 = ttfo.p95;
    step_p50 = c.measured->decode_step.converted("ms").p50;
  }
  return {{"label", c.candidate.label()},
          {"predicted_ttfo_ms", optional_json(predicted_ttfo)},
          {"measured_ttfo_p50_ms", optional_json(ttfo_p50)},
          {"measured_ttfo_p95_ms", optional_json(ttfo_p95)},
          {"predicted_decode_step_ms", optional_json(predicted_step)},
          {"measured_decode_step_p50_ms", optional_json(step_p50)},
          {"predicted_best", m.predicted_best == index},
          {"measured_best", m.measured_best == index},
          {"mk_coverage", optional_json(coverage)}};
}

// The coverage of candidate `index` of batch `batch`, none where it was not computed.
std::optional<double> coverage_of(const ReportModel& m, size_t batch, size_t index) {
  if (batch >= m.coverage.size() || index >= m.coverage[batch].size()) return std::nullopt;
  return m.coverage[batch][index];
}

}  // namespace

void add_coverage(ReportModel& m, const model::Profile& profile) {
  const Validation& v = m.validation;
  if (profile.model_name != v.model) {
    skip_coverage(
        m, "the profile " + v.profile + " is of " + profile.model_name + ", not of " + v.model);
    return;
  }
  CandidateSimulators sims(profile, {});
  double moved = 0;  // the largest |new - recorded| / recorded predicted TTFO
  int failed = 0;
  std::string first_error;
  m.coverage.clear();
  for (const BatchValidation& b : v.batches) {
    std::vector<std::optional<double>> row;
    for (const CandidateResult& c : b.candidates) {
      std::optional<double> share;
      if (c.predicted) {
        try {
          const planner::Evaluated e =
              planner::evaluate(sims.of(c.candidate).simulate(c.candidate.composition, b.batch),
                                c.candidate.composition);
          share = e.coverage();
          if (c.predicted->ttfo_ns > 0) {
            moved =
                std::max(moved, std::abs(static_cast<double>(e.ttfo_ns - c.predicted->ttfo_ns)) /
                                    static_cast<double>(c.predicted->ttfo_ns));
          }
        } catch (const Error& e) {
          if (failed++ == 0) first_error = e.what();
        }
      }
      row.push_back(share);
    }
    m.coverage.push_back(std::move(row));
  }
  if (failed > 0) {
    m.notes.push_back("mk coverage unknown for " + std::to_string(failed) +
                      (failed == 1 ? " candidate" : " candidates") + " that the profile " +
                      v.profile + " no longer simulates, e.g.: " + first_error);
  }
  if (moved > 0) {
    m.notes.push_back("simulated again with " + v.profile +
                      ", the candidates' TTFO moved by up to " + model::percent_text(moved) +
                      " from the recorded predictions (the profile or the simulator changed "
                      "since the validation); the mk coverage is that of the new simulation");
  }
}

void skip_coverage(ReportModel& m, const std::string& why) {
  m.coverage.clear();
  m.notes.push_back("mk coverage not computed: " + why);
}

namespace {

// The model's name as the start of a file name.
std::string file_stem(std::string_view model) {
  std::string stem(model);
  for (char& c : stem) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return stem;
}

}  // namespace

ReportPlots report_plots(std::string_view model) {
  const std::string stem = file_stem(model);
  return {stem + "-scatter.svg", stem + "-candidates.svg", stem + "-coverage.svg",
          stem + "-timeline.svg"};
}

std::string report_simulated_trace(std::string_view model, int64_t batch) {
  return file_stem(model) + "-simulated-trace-b" + std::to_string(batch) + ".json";
}

void check_distinct_models(const std::vector<ReportModel>& models) {
  for (size_t i = 0; i < models.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (report_plots(models[i].validation.model).scatter ==
          report_plots(models[j].validation.model).scatter) {
        const std::string& a = models[j].validation.model;
        const std::string& b = models[i].validation.model;
        throw Error("report: " + models[j].source + " and " + models[i].source +
                    (a == b ? " both validate " + a + " (one validation per model"
                            : " validate " + a + " and " + b + " (different names") +
                    ": their plots would share files, such as " + report_plots(a).scatter + ")");
      }
    }
  }
}

json report_data_json(const std::vector<ReportModel>& models) {
  json out = json::array();
  for (const ReportModel& m : models) {
    const Validation& v = m.validation;
    json batches = json::array();
    for (size_t b = 0; b < v.batches.size(); ++b) {
      const BatchValidation& batch = v.batches[b];
      json candidates = json::array();
      for (size_t i = 0; i < batch.candidates.size(); ++i) {
        candidates.push_back(
            candidate_json(batch.candidates[i], i, batch.metrics, coverage_of(m, b, i)));
      }
      const BatchMetrics& s = batch.metrics;
      batches.push_back({{"batch", batch.batch},
                         {"hit", s.hit ? json(*s.hit) : json(nullptr)},
                         {"ttfo_mape_percent", optional_json(s.ttfo_mape, 100)},
                         {"decode_step_mape_percent", optional_json(s.decode_step_mape, 100)},
                         {"kendall_tau", optional_json(s.kendall_tau)},
                         {"candidates", candidates}});
    }
    const ReportPlots plots = report_plots(v.model);
    json timeline = nullptr;
    if (m.timeline) {
      timeline = {{"batch", m.timeline->batch},
                  {"composition", m.timeline->composition},
                  {"measured_trace", m.timeline->measured_trace},
                  {"simulated_trace", m.timeline->simulated_trace},
                  {"plot", plots.timeline}};
    }
    out.push_back({{"model", v.model},
                   {"device", v.device},
                   {"source", m.source},
                   {"profile", v.profile},
                   {"category", v.category},
                   {"notes", m.notes},
                   {"plots",
                    {{"scatter", plots.scatter},
                     {"candidates", plots.candidates},
                     {"coverage", plots.coverage}}},
                   {"timeline", timeline},
                   {"batches", batches}});
  }
  return {{"schema", kReportDataSchema}, {"models", out}};
}

std::string report_markdown(const std::vector<ReportModel>& models) {
  std::string md = "# Validation report\n\n";
  md += "Predicted against measured time to first output (TTFO) of the same compositions, from ";
  std::vector<std::string> sources;
  for (const ReportModel& m : models) {
    sources.push_back(m.validation.model + " on " + m.validation.device + " (`" + m.source + "`)");
  }
  md += model::comma_list(sources) + ".\n";

  md +=
      "\n## Per batch size\n\n"
      "| model | batch | predicted best | measured best | hit | TTFO MAPE | decode MAPE | Kendall "
      "τ | category |\n"
      "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | --- |\n";
  for (const ReportModel& m : models) {
    for (const BatchValidation& b : m.validation.batches) {
      const BatchMetrics& s = b.metrics;
      md += "| " + m.validation.model + " | " + std::to_string(b.batch) + " | " +
            candidate_cell(b, s.predicted_best) + " | " + candidate_cell(b, s.measured_best) +
            " | " + hit_cell(s.hit) + " | " + percent_cell(s.ttfo_mape) + " | " +
            percent_cell(s.decode_step_mape) + " | " + tau_cell(s.kendall_tau) + " | " +
            m.validation.category + " |\n";
    }
  }

  md +=
      "\n## Overall per model\n\n"
      "| model | device | candidates scored | TTFO MAPE | worst batch TTFO MAPE | decode MAPE | "
      "lowest τ | hits |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ReportModel& m : models) {
    const OverallMetrics o = score_overall(m.validation.batches);
    md += "| " + m.validation.model + " | " + m.validation.device + " | " +
          std::to_string(o.scored) + " | " + percent_cell(o.ttfo_mape) + " | " +
          percent_cell(o.worst_batch_ttfo_mape) + " | " + percent_cell(o.decode_step_mape) + " | " +
          tau_cell(o.min_kendall_tau) + " | " + std::to_string(o.hits) + " of " +
          std::to_string(o.judged) + " |\n";
  }

  md +=
      "\n## Plots\n\n"
      "`python3 scripts/plot.py DIR` draws them from DIR/report-data.json.\n";
  for (const ReportModel& m : models) {
    const ReportPlots plots = report_plots(m.validation.model);
    md += "\n### " + m.validation.model + "\n\n";
    md += "- [" + plots.scatter + "](" + plots.scatter +
          "): predicted against measured TTFO (p50) of every candidate at every batch size, "
          "coloured by batch, with the line y = x and a ±5% band around it.\n";
    md += "- [" + plots.candidates + "](" + plots.candidates +
          "): per batch size, each candidate's predicted TTFO beside its measured p50 (whisker to "
          "p95), with the predicted and the measured best marked.\n";
    md += "- [" + plots.coverage + "](" + plots.coverage +
          "): mk coverage of the predicted best at each batch size (the coverage curve), beside "
          "that of the measured best and of the planner's top 1 (which the category follows), "
          "with the model's category.\n";
    if (m.timeline) {
      md += "- [" + plots.timeline + "](" + plots.timeline + "): batch " +
            std::to_string(m.timeline->batch) +
            ", all-conventional: each stage's kernels as the profiler traced them (`" +
            m.timeline->measured_trace + "`) above the simulator's prediction of the same run (`" +
            m.timeline->simulated_trace +
            "`, a Chrome trace like the measured one), on one time axis. The profile traces only "
            "the all-conventional run, so that is the composition shown.\n";
    }
    for (const std::string& note : m.notes) md += "\nNote: " + note + "\n";
  }

  md += "\n## Definitions\n\n";
  for (const auto& [name, text] : validation_definitions()) {
    md += "- " + std::string(name) + ": " + text + "\n";
  }
  md +=
      "- mk coverage: the share of a candidate's predicted time (its stages' times summed) spent "
      "in mk regions, from simulating it again with the validation's profile\n";
  md +=
      "- category: the planner's, over the validated batch sizes: how its best composition (top "
      "1) moves with batch size\n";
  for (planner::Category c : planner::kCategories) {
    md += "  - " + std::string(planner::category_name(c)) + ": " +
          std::string(planner::category_definition(c)) + "\n";
  }
  return md;
}

}  // namespace megacut::validation
