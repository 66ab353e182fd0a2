#include "model/stats.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "model/error.h"

namespace megacut::model {
namespace {

TEST(StatsTest, OneToHundred) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  const LatencyStats s = compute_stats(v, "us");
  // Linear interpolation at rank q * 99: p50 = 50.5, p90 = 90.1, p95 = 95.05, p99 = 99.01.
  EXPECT_EQ(s.unit, "us");
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_DOUBLE_EQ(s.p90, 90.1);
  EXPECT_DOUBLE_EQ(s.p95, 95.05);
  EXPECT_DOUBLE_EQ(s.p99, 99.01);
  // Sample standard deviation of 1..100: sqrt(100 * 101 / 12) = 29.0115...
  EXPECT_NEAR(s.stdev, 29.011491975882016, 1e-12);
  EXPECT_FALSE(compute_stats(std::vector<double>{10, 10.1, 9.9}).high_variation());
  EXPECT_TRUE(s.high_variation());
}

TEST(StatsTest, OrderOfSamplesDoesNotMatter) {
  EXPECT_EQ(compute_stats(std::vector<double>{3, 1, 2}),
            compute_stats(std::vector<double>{1, 2, 3}));
}

TEST(StatsTest, SingleSampleAndEmpty) {
  const LatencyStats s = constant_stats(42);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.stdev, 0);
  EXPECT_EQ(s.p99, 42);
  EXPECT_THROW(compute_stats(std::vector<double>{}), Error);
}

TEST(StatsTest, ConvertsUnits) {
  const LatencyStats s = constant_stats(1.5, "ms").converted("us");
  EXPECT_EQ(s.unit, "us");
  EXPECT_DOUBLE_EQ(s.p50, 1500);
  EXPECT_THROW(s.converted("weeks"), Error);
}

TEST(StatsTest, JsonRoundTrip) {
  const LatencyStats s = compute_stats(std::vector<double>{5, 7, 11, 13});
  EXPECT_EQ(stats_from_json(stats_to_json(s), "f.json", "x"), s);
}

std::string error_of(const nlohmann::json& j) {
  try {
    stats_from_json(j, "f.json", "ops[2].duration_ns");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StatsTest, BadJsonNamesTheField) {
  nlohmann::json j = stats_to_json(compute_stats(std::vector<double>{1, 2, 3}));
  nlohmann::json missing = j;
  missing.erase("p95");
  EXPECT_EQ(error_of(missing), "f.json: field 'ops[2].duration_ns.p95': missing");
  nlohmann::json unordered = j;
  unordered["p90"] = 0.5;
  EXPECT_EQ(error_of(unordered),
            "f.json: field 'ops[2].duration_ns.p90': is below p50 (0.5 < 2.0)");
  nlohmann::json unit = j;
  unit["unit"] = "fortnights";
  EXPECT_EQ(error_of(unit),
            "f.json: field 'ops[2].duration_ns.unit': expected \"ns\", \"us\", \"ms\" or \"s\", "
            "got \"fortnights\"");
  nlohmann::json count = j;
  count["count"] = 0;
  EXPECT_EQ(error_of(count),
            "f.json: field 'ops[2].duration_ns.count': expected a positive integer, got 0");
  EXPECT_EQ(error_of(nlohmann::json::array()),
            "f.json: field 'ops[2].duration_ns': expected latency statistics {unit, count, mean, "
            "...}");
}

}  // namespace
}  // namespace megacut::model
