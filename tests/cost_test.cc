// The cost model's fits and configuration rules.
#include "simulator/cost.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/error.h"

namespace megacut::simulator {
namespace {

TEST(CostTest, FitRecoversSoloAndSharedTerms) {
  // d(x) = 800 + 25 x at x = 1, 33, 66, 132: solo 800 ns, 25 ns per task in flight.
  const std::vector<double> x{1, 33, 66, 132};
  std::vector<double> d;
  for (double v : x) d.push_back(800 + 25 * v);
  const TaskFit fit = fit_task_durations(x, d, 999);
  EXPECT_NEAR(fit.solo_ns, 800, 1e-9);
  EXPECT_NEAR(fit.shared_ns, 25, 1e-9);
  EXPECT_FALSE(fit.from_prior);
}

TEST(CostTest, FitWithOneConcurrencyUsesThePrior) {
  // One tile: every CTA count runs it alone (x = 1). With a prior of 300 ns of bytes, a
  // measured 1000 ns leaves 700 ns solo.
  const TaskFit fit =
      fit_task_durations(std::vector<double>{1, 1, 1}, std::vector<double>{1000, 1000, 1000}, 300);
  EXPECT_TRUE(fit.from_prior);
  EXPECT_DOUBLE_EQ(fit.shared_ns, 300);
  EXPECT_DOUBLE_EQ(fit.solo_ns, 700);
}

TEST(CostTest, FitKeepsBothTermsNonNegative) {
  // Durations that fall with concurrency: no bandwidth term, the mean is solo (1000 ns).
  const TaskFit falling =
      fit_task_durations(std::vector<double>{1, 2, 4}, std::vector<double>{1100, 1000, 900}, 0);
  EXPECT_EQ(falling.shared_ns, 0);
  EXPECT_DOUBLE_EQ(falling.solo_ns, 1000);
  // Durations through the origin and steeper: solo clamps at 0, the slope refits alone:
  // d = 10, 30, 50 at x = 1, 2, 3 gives an intercept of -10; through the origin the slope is
  // (10 + 60 + 150) / (1 + 4 + 9) = 220 / 14.
  const TaskFit steep =
      fit_task_durations(std::vector<double>{1, 2, 3}, std::vector<double>{10, 30, 50}, 0);
  EXPECT_EQ(steep.solo_ns, 0);
  EXPECT_DOUBLE_EQ(steep.shared_ns, 220.0 / 14.0);
}

TEST(CostTest, GraphLaunchFitRecoversFixedAndPerNodeTerms) {
  // launch(n) = 9000 + 60 n at 1, 16, 64, 256 and 512 nodes.
  const std::vector<double> nodes{1, 16, 64, 256, 512};
  std::vector<double> launch;
  for (double n : nodes) launch.push_back(9000 + 60 * n);
  const GraphLaunchFit fit = fit_graph_launch(nodes, launch);
  EXPECT_NEAR(fit.fixed_ns, 9000, 1e-6);
  EXPECT_NEAR(fit.per_node_ns, 60, 1e-9);
  EXPECT_NEAR(fit.at(368), 9000 + 60 * 368, 1e-6);
}

TEST(CostTest, GraphLaunchFitOfNoisyPointsIsTheLeastSquaresLine) {
  // Points 10, 30, 20 at n = 0, 1, 2: the line through their means (n 1, launch 20) with
  // slope sum((n - 1)(y - 20)) / sum((n - 1)^2) = (10 + 0 + 0) / 2 = 5, intercept 15.
  const GraphLaunchFit fit =
      fit_graph_launch(std::vector<double>{0, 1, 2}, std::vector<double>{10, 30, 20});
  EXPECT_NEAR(fit.fixed_ns, 15, 1e-9);
  EXPECT_NEAR(fit.per_node_ns, 5, 1e-9);
}

TEST(CostTest, GraphLaunchFitOfOneSizeIsAConstant) {
  // One graph size cannot tell the per-node term from the fixed one: a constant, the mean.
  const GraphLaunchFit one =
      fit_graph_launch(std::vector<double>{32, 32}, std::vector<double>{10000, 11000});
  EXPECT_EQ(one, (GraphLaunchFit{10500, 0}));
  // Launches that fall with size (noise): no per-node term, the mean is the constant.
  const GraphLaunchFit falling =
      fit_graph_launch(std::vector<double>{1, 64, 512}, std::vector<double>{9000, 8800, 8600});
  EXPECT_EQ(falling.per_node_ns, 0);
  EXPECT_DOUBLE_EQ(falling.fixed_ns, 8800);
  EXPECT_THROW(fit_graph_launch(std::vector<double>{}, std::vector<double>{}), Error);
}

TEST(CostTest, RegionConfigLargestMemberDecidesWithinTheRegisterFile) {
  // 512 threads and 168 registers would need 86,016 registers; 65,536 / 512 = 128 remain.
  const std::vector<model::RegionConfig> members{{512, 96, 48 * 1024}, {128, 168, 16 * 1024}};
  const model::RegionConfig c = predict_region_config(members, 65536);
  EXPECT_EQ(c, (model::RegionConfig{512, 128, 48 * 1024}));
  // The attention body had 168 registers, now 128: 168 / 128 = 1.3125 slower; the GEMM is not.
  EXPECT_DOUBLE_EQ(config_slowdown(members[1], c), 1.3125);
  EXPECT_DOUBLE_EQ(config_slowdown(members[0], c), 1.0);
  // Alone, a member keeps its own configuration.
  EXPECT_EQ(predict_region_config(std::vector<model::RegionConfig>{members[1]}, 65536), members[1]);
}

TEST(CostTest, ARegionsWeightRingIsWhatItsLargestScratchLeaves) {
  // Two streamed members with 8 KB and 72 KB of scratch (shared memory besides the ring), rings
  // of 192 KB and 128 KB, and one with 1 KB and no ring: the region's scratch is 72 KB, which
  // leaves the first member's ring 192 - 64 = 128 KB, the second's its own 128 KB.
  std::vector<model::RegionConfig> members{
      {384, 168, 200 * 1024, 192 * 1024}, {384, 168, 200 * 1024, 128 * 1024}, {256, 64, 1024, 0}};
  EXPECT_EQ(predict_region_config(members, 65536).ring_bytes, 128 * 1024);
  // A member that streams nothing but needs 168 KB of scratch leaves the rings 32 KB.
  members[2].smem_bytes = 168 * 1024;
  EXPECT_EQ(predict_region_config(members, 65536).ring_bytes, 32 * 1024);
  // Alone, a streamed member keeps its ring; without one a region has none.
  EXPECT_EQ(predict_region_config(std::span(members).first(1), 65536).ring_bytes, 192 * 1024);
  EXPECT_EQ(predict_region_config(std::span(members).last(1), 65536).ring_bytes, 0);
}

}  // namespace
}  // namespace megacut::simulator
