#include "simulator/cost.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cassert>

#include "model/error.h"

namespace megacut::simulator {

TaskFit fit_task_durations(std::span<const double> x, std::span<const double> d,
                           double prior_shared_ns) {
  assert(x.size() == d.size());
  if (x.empty()) throw Error("fit_task_durations: no points");
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::VectorXd xs(n), ds(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    xs(i) = x[i];
    ds(i) = d[i];
  }
  TaskFit fit;
  if (xs.maxCoeff() <= xs.minCoeff()) {
    fit.shared_ns = std::max(0.0, prior_shared_ns);
    fit.solo_ns = std::max(0.0, ds.mean() - fit.shared_ns * xs.mean());
    fit.from_prior = true;
    return fit;
  }
  Eigen::MatrixXd a(n, 2);
  a.col(0).setOnes();
  a.col(1) = xs;
  const Eigen::Vector2d coef = a.colPivHouseholderQr().solve(ds);
  fit.solo_ns = coef(0);
  fit.shared_ns = coef(1);
  if (fit.shared_ns < 0) {
    // Durations fall as more tasks run: noise, or caching; no bandwidth term.
    fit.shared_ns = 0;
    fit.solo_ns = ds.mean();
  } else if (fit.solo_ns < 0) {
    fit.solo_ns = 0;
    fit.shared_ns = xs.dot(ds) / xs.squaredNorm();
  }
  return fit;
}

RegionConfig predict_region_config(std::span<const RegionConfig> members,
                                   int64_t registers_per_sm) {
  if (members.empty()) throw Error("predict_region_config: a region has at least one op");
  RegionConfig c;
  for (const RegionConfig& m : members) {
    c.threads = std::max(c.threads, m.threads);
    c.registers = std::max(c.registers, m.registers);
    c.smem_bytes = std::max(c.smem_bytes, m.smem_bytes);
  }
  const int64_t fit = std::min<int64_t>(255, registers_per_sm / c.threads / 8 * 8);
  c.registers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(c.registers, fit)));
  return c;
}

double config_slowdown(const RegionConfig& standalone, const RegionConfig& region) {
  if (region.registers >= standalone.registers) return 1.0;
  return static_cast<double>(standalone.registers) / static_cast<double>(region.registers);
}

}  // namespace megacut::simulator
