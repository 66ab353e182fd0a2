#include "simulator/cost.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cassert>
#include <utility>

#include "model/error.h"

namespace megacut::simulator {
namespace {

struct Line {
  double intercept = 0;
  double slope = 0;
};

// y = intercept + slope * x by least squares, both terms non-negative: a negative slope is set
// to 0 (the intercept is then the mean), a negative intercept to 0 (the slope refitted alone).
// Needs at least two distinct x.
Line nonnegative_line(const Eigen::VectorXd& xs, const Eigen::VectorXd& ys) {
  Eigen::MatrixXd a(xs.size(), 2);
  a.col(0).setOnes();
  a.col(1) = xs;
  const Eigen::Vector2d coef = a.colPivHouseholderQr().solve(ys);
  Line line{coef(0), coef(1)};
  if (line.slope < 0) {
    line = {ys.mean(), 0};
  } else if (line.intercept < 0) {
    line = {0, xs.dot(ys) / xs.squaredNorm()};
  }
  return line;
}

std::pair<Eigen::VectorXd, Eigen::VectorXd> vectors(std::span<const double> x,
                                                    std::span<const double> y) {
  assert(x.size() == y.size());
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::VectorXd xs(n), ys(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    xs(i) = x[i];
    ys(i) = y[i];
  }
  return {xs, ys};
}

}  // namespace

TaskFit fit_task_durations(std::span<const double> x, std::span<const double> d,
                           double prior_shared_ns) {
  if (x.empty()) throw Error("fit_task_durations: no points");
  const auto [xs, ds] = vectors(x, d);
  TaskFit fit;
  if (xs.maxCoeff() <= xs.minCoeff()) {
    fit.shared_ns = std::max(0.0, prior_shared_ns);
    fit.solo_ns = std::max(0.0, ds.mean() - fit.shared_ns * xs.mean());
    fit.from_prior = true;
    return fit;
  }
  // A negative slope: durations fall as more tasks run (noise, or caching); no bandwidth term.
  const Line line = nonnegative_line(xs, ds);
  fit.solo_ns = line.intercept;
  fit.shared_ns = line.slope;
  return fit;
}

GraphLaunchFit fit_graph_launch(std::span<const double> nodes, std::span<const double> launch_ns) {
  if (nodes.empty()) throw Error("fit_graph_launch: no points");
  const auto [xs, ys] = vectors(nodes, launch_ns);
  if (xs.maxCoeff() <= xs.minCoeff()) return {std::max(0.0, ys.mean()), 0};
  const Line line = nonnegative_line(xs, ys);
  return {line.intercept, line.slope};
}

CollectiveFit fit_collective(std::span<const double> link_bytes, std::span<const double> time_ns) {
  if (link_bytes.empty()) throw Error("fit_collective: no points");
  const auto [xs, ys] = vectors(link_bytes, time_ns);
  if (xs.maxCoeff() <= xs.minCoeff()) return {std::max(0.0, ys.mean()), 0};
  const Line line = nonnegative_line(xs, ys);
  return {line.intercept, line.slope > 0 ? 1 / line.slope : 0};
}

model::RegionConfig predict_region_config(std::span<const model::RegionConfig> members,
                                          int64_t registers_per_sm) {
  if (members.empty()) throw Error("predict_region_config: a region has at least one op");
  model::RegionConfig c;
  int64_t scratch = 0;  // the most shared memory a member has besides its ring
  for (const model::RegionConfig& m : members) {
    c.threads = std::max(c.threads, m.threads);
    c.registers = std::max(c.registers, m.registers);
    c.smem_bytes = std::max(c.smem_bytes, m.smem_bytes);
    scratch = std::max(scratch, m.smem_bytes - m.ring_bytes);
  }
  // The ring takes what the largest scratch, streamed body's or not, leaves: each streamed
  // member's ring less what that scratch exceeds its own by, the least of them.
  for (const model::RegionConfig& m : members) {
    if (m.ring_bytes <= 0) continue;
    const int64_t ring =
        std::max<int64_t>(0, m.ring_bytes - (scratch - (m.smem_bytes - m.ring_bytes)));
    c.ring_bytes = c.ring_bytes > 0 ? std::min(c.ring_bytes, ring) : ring;
  }
  const int64_t fit = std::min<int64_t>(255, registers_per_sm / c.threads / 8 * 8);
  c.registers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(c.registers, fit)));
  return c;
}

double config_slowdown(const model::RegionConfig& standalone, const model::RegionConfig& region) {
  if (region.registers >= standalone.registers) return 1.0;
  return static_cast<double>(standalone.registers) / static_cast<double>(region.registers);
}

}  // namespace megacut::simulator
