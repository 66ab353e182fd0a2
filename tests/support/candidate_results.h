// Hand-made validation candidates for the validation tests: a candidate with or without a
// prediction and a measurement, and constant run statistics to measure it with.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "model/stats.h"
#include "validation/validation.h"

namespace megacut::testing {

// `count` runs all at `p50` up to the median and at `p95` above it, in `unit`.
inline model::LatencyStats run_stats(double p50, double p95, const std::string& unit,
                                     int64_t count) {
  model::LatencyStats s;
  s.unit = unit;
  s.count = count;
  s.mean = s.min = s.p50 = p50;
  s.p90 = s.p95 = s.p99 = s.max = p95;
  return s;
}

// `candidate` predicted at (TTFO, decode step) ms and measured with `measured`; where either is
// absent, the reason is "no task benchmark" or "watchdog".
inline validation::CandidateResult candidate_result(
    validation::Candidate candidate, std::optional<std::pair<double, double>> predicted_ms,
    std::optional<validation::Measured> measured) {
  validation::CandidateResult r;
  r.candidate = std::move(candidate);
  if (predicted_ms) {
    r.predicted = validation::Predicted{
        static_cast<simulator::TimeNs>(std::llround(predicted_ms->first * 1e6)),
        static_cast<simulator::TimeNs>(std::llround(predicted_ms->second * 1e6))};
  } else {
    r.prediction_error = "no task benchmark";
  }
  if (measured) {
    r.measured = *measured;
  } else {
    r.measurement_error = "watchdog";
  }
  return r;
}

}  // namespace megacut::testing
