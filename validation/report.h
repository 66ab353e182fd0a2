// The cross-model report of `megacut report`: validations of several models (validation.json)
// brought together in one Markdown summary (report.md) and in the data scripts/plot.py draws from
// (report-data.json, "megacut.report-data/1"). Pure functions of the validations; the command
// does the reading and writing.
//
// A candidate's mk coverage is Evaluated::coverage: the share of its predicted time inside mk
// regions. validation.json keeps only the predicted totals, so the coverage comes from simulating
// each candidate again with the validation's profile, as predict_candidates did.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/profile.h"
#include "validation/validation.h"

namespace megacut::validation {

inline constexpr std::string_view kReportDataSchema = "megacut.report-data/1";

// A simulated next to a measured timeline of one batch's all-conventional run: the trace the
// profiler wrote of its conventional graphs (megacut profile --trace) and the simulator's
// Chrome trace of the same composition from the same profile, on the same time axis.
struct ReportTimeline {
  int64_t batch = 0;
  std::string composition;      // canonical text
  std::string measured_trace;   // path, as the report links it
  std::string simulated_trace;  // file name, written beside the report
};

// One validated model.
struct ReportModel {
  Validation validation;
  std::string source;  // where it was read from: ".../validation.json"
  // Per batch, per candidate, in validation order: the mk coverage, none where unknown.
  std::vector<std::vector<std::optional<double>>> coverage;
  std::vector<std::string> notes;  // why coverage is missing or how far to trust it
  std::optional<ReportTimeline> timeline;
};

// Fills model.coverage by simulating every predicted candidate with `profile` (its PDL setting,
// default options otherwise, as predict_candidates does). A candidate the profile cannot simulate
// keeps none, with a note; a note also says how far the new predictions moved from the recorded
// ones when the profile or the simulator changed since the validation.
void add_coverage(ReportModel& model, const model::Profile& profile);

// Leaves every candidate's coverage none, with a note saying why.
void skip_coverage(ReportModel& model, const std::string& why);

// The SVG files scripts/plot.py writes for a model, named in report-data.json and linked from
// report.md: "<model>-scatter.svg", "-candidates.svg", "-coverage.svg" and "-timeline.svg", with
// any character other than letters, digits, '.', '_' and '-' in the model's name replaced by '_'.
struct ReportPlots {
  std::string scatter;
  std::string candidates;
  std::string coverage;
  std::string timeline;  // "<model>-timeline.svg", drawn where the model has a ReportTimeline
};
ReportPlots report_plots(std::string_view model);
// The simulator's trace megacut report writes beside them: "<model>-simulated-trace-b<batch>.json".
std::string report_simulated_trace(std::string_view model, int64_t batch);

// Throws an Error naming both sources when two models would share plot files.
void check_distinct_models(const std::vector<ReportModel>& models);

// Per model, per batch, per candidate: label, TTFO predicted and measured (p50, p95) and decode
// step predicted and measured (p50), in ms (null where absent), whether it is the predicted or
// measured best, its mk coverage; per batch the scores, per model the category and plot files.
nlohmann::json report_data_json(const std::vector<ReportModel>& models);

// One table over every model and batch (predicted and measured best, hit, MAPEs, Kendall tau,
// category), the overall figures per model, links to the plots and the definitions.
std::string report_markdown(const std::vector<ReportModel>& models);

}  // namespace megacut::validation
