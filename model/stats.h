// Latency statistics in the one form every output file uses: {unit, count, mean, stdev, min,
// p50, p90, p95, p99, max}. The profiler and the executor fill them from timed samples; the
// simulator reads them from profile.json; validation compares them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

namespace megacut::model {

struct LatencyStats {
  std::string unit = "ns";  // "ns", "us", "ms" or "s"
  int64_t count = 0;
  double mean = 0;
  double stdev = 0;  // sample standard deviation (n - 1); 0 for a single sample
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double max = 0;

  // stdev / mean, 0 when the mean is 0.
  double coefficient_of_variation() const;
  // Whether the spread is large enough that a report should warn about it.
  bool high_variation() const { return coefficient_of_variation() > kHighVariation; }
  // The same statistics in another unit.
  LatencyStats converted(std::string_view to_unit) const;

  static constexpr double kHighVariation = 0.1;
  friend bool operator==(const LatencyStats&, const LatencyStats&) = default;
};

// Nanoseconds per unit, or 0 for a unit this file does not know.
double unit_ns(std::string_view unit);

// Statistics of `samples` (in `unit`); percentiles interpolate linearly between order
// statistics (numpy's default). Throws Error when `samples` is empty.
LatencyStats compute_stats(std::span<const double> samples, std::string_view unit = "ns");

// Statistics of one value measured once: every field equal to it, count 1.
LatencyStats constant_stats(double value, std::string_view unit = "ns");

nlohmann::json stats_to_json(const LatencyStats& stats);
// Reads and validates {unit, count, mean, stdev, min, p50, p90, p95, p99, max}: every field
// present and finite, count >= 1, min <= p50 <= p90 <= p95 <= p99 <= max. Errors name `file`
// and the field under `field` (e.g. "ops[3].conv.duration_ns.p50").
LatencyStats stats_from_json(const nlohmann::json& json, std::string_view file,
                             std::string_view field);

}  // namespace megacut::model
