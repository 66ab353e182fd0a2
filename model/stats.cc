#include "model/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "model/error.h"

namespace megacut::model {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 4> kUnits{
    {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}};

// Linear interpolation between the order statistics around rank q * (n - 1).
double percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

double unit_ns(std::string_view unit) {
  for (const auto& [name, ns] : kUnits) {
    if (name == unit) return ns;
  }
  return 0;
}

double LatencyStats::coefficient_of_variation() const { return mean > 0 ? stdev / mean : 0; }

LatencyStats LatencyStats::converted(std::string_view to_unit) const {
  const double from = unit_ns(unit);
  const double to = unit_ns(to_unit);
  if (from == 0 || to == 0) {
    throw Error("latency statistics: cannot convert from '" + unit + "' to '" +
                std::string(to_unit) + "'");
  }
  const double f = from / to;
  LatencyStats s = *this;
  s.unit = std::string(to_unit);
  for (double* v : {&s.mean, &s.stdev, &s.min, &s.p50, &s.p90, &s.p95, &s.p99, &s.max}) *v *= f;
  return s;
}

LatencyStats compute_stats(std::span<const double> samples, std::string_view unit) {
  if (samples.empty()) throw Error("latency statistics: no samples");
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  LatencyStats s;
  s.unit = std::string(unit);
  s.count = static_cast<int64_t>(sorted.size());
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(squares / static_cast<double>(s.count - 1));
  }
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile(sorted, 0.50);
  s.p90 = percentile(sorted, 0.90);
  s.p95 = percentile(sorted, 0.95);
  s.p99 = percentile(sorted, 0.99);
  return s;
}

LatencyStats constant_stats(double value, std::string_view unit) {
  const double one[] = {value};
  return compute_stats(one, unit);
}

nlohmann::json stats_to_json(const LatencyStats& s) {
  return {{"unit", s.unit}, {"count", s.count}, {"mean", s.mean}, {"stdev", s.stdev},
          {"min", s.min},   {"p50", s.p50},     {"p90", s.p90},   {"p95", s.p95},
          {"p99", s.p99},   {"max", s.max}};
}

LatencyStats stats_from_json(const nlohmann::json& json, std::string_view file,
                             std::string_view field) {
  const std::string prefix(field);
  if (!json.is_object()) {
    throw_field_error(file, prefix, "expected latency statistics {unit, count, mean, ...}");
  }
  auto get = [&](const char* key) -> const nlohmann::json& {
    if (!json.contains(key) || json[key].is_null()) {
      throw_field_error(file, prefix + "." + key, "missing");
    }
    return json[key];
  };
  LatencyStats s;
  const nlohmann::json& unit = get("unit");
  if (!unit.is_string() || unit_ns(unit.get<std::string>()) == 0) {
    throw_field_error(file, prefix + ".unit",
                      "expected \"ns\", \"us\", \"ms\" or \"s\", got " + unit.dump());
  }
  s.unit = unit.get<std::string>();
  const nlohmann::json& count = get("count");
  if (!count.is_number_integer() || count.get<int64_t>() < 1) {
    throw_field_error(file, prefix + ".count", "expected a positive integer, got " + count.dump());
  }
  s.count = count.get<int64_t>();
  const std::pair<const char*, double*> numbers[] = {
      {"mean", &s.mean}, {"stdev", &s.stdev}, {"min", &s.min}, {"p50", &s.p50},
      {"p90", &s.p90},   {"p95", &s.p95},     {"p99", &s.p99}, {"max", &s.max}};
  for (const auto& [key, out] : numbers) {
    const nlohmann::json& v = get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw_field_error(file, prefix + "." + key,
                        "expected a non-negative number, got " + v.dump());
    }
    *out = v.get<double>();
  }
  const std::pair<const char*, double> order[] = {{"min", s.min}, {"p50", s.p50}, {"p90", s.p90},
                                                  {"p95", s.p95}, {"p99", s.p99}, {"max", s.max}};
  for (size_t i = 1; i < std::size(order); ++i) {
    if (order[i].second < order[i - 1].second) {
      throw_field_error(file, prefix + "." + order[i].first,
                        "is below " + std::string(order[i - 1].first) + " (" +
                            nlohmann::json(order[i].second).dump() + " < " +
                            nlohmann::json(order[i - 1].second).dump() + ")");
    }
  }
  // Rounding in the writer may put the mean a hair outside [min, max].
  const double slack = 1e-9 * std::max(1.0, s.max);
  if (s.mean < s.min - slack || s.mean > s.max + slack) {
    throw_field_error(file, prefix + ".mean", "lies outside [min, max]");
  }
  return s;
}

}  // namespace megacut::model
