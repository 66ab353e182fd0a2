// The wall time of a full plan (`megacut plan` without output) for Llama-3.2-1B and Qwen3-0.6B
// at batch sizes 1-32, prompt 128, on synthetic profiles (tests/support): the default
// synthetic device (8 SMs, what make_synthetic_profile writes) and a 132-SM one shaped like an
// H200, where megakernels win more often and fewer regions are pruned. Every hardware thread.
// Prints times and search statistics; asserts nothing about time.
#include <chrono>
#include <cstdio>
#include <thread>

#include "planner/plan.h"
#include "tests/support/synthetic_profile.h"

using namespace megacut;

namespace {

void bench(const char* model, const testing::SyntheticDevice& device) {
  const std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32};
  const model::Profile profile = testing::synthetic_profile(model, batches, 128, device);
  const auto start = std::chrono::steady_clock::now();
  const planner::Plan plan = planner::make_plan(profile, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t regions = 0, simulated = 0, tasks = 0;
  double search_s = 0;
  for (const planner::BatchPlan& b : plan.batches) {
    for (const planner::StageSearchStats& s : b.search) {
      regions += s.stats.mk_regions;
      simulated += s.stats.mk_simulated;
      tasks += s.stats.tasks_simulated;
      search_s += s.stats.seconds;
    }
  }
  std::printf(
      "%-13s %3d SMs, %3d ops/stage: %6.2f s wall (stage searches %6.2f s on %d threads); mk "
      "regions %lld, simulated %lld; %.1f M tasks; %s\n",
      model, device.sm_count, plan.stages.front().op_count, seconds, search_s, plan.threads,
      static_cast<long long>(regions), static_cast<long long>(simulated),
      static_cast<double>(tasks) / 1e6, std::string(planner::category_name(plan.category)).c_str());
}

}  // namespace

int main() {
  std::printf("full plan, batches 1,2,4,8,16,32, prompt 128, top 1, %u hardware threads\n",
              std::thread::hardware_concurrency());
  testing::SyntheticDevice h200_like;
  h200_like.name = "synthetic 132-SM GPU";
  h200_like.sm_count = 132;
  h200_like.bytes_per_ns = 4000;
  h200_like.flops_per_ns_per_sm = 7000;
  for (const testing::SyntheticDevice& device : {testing::SyntheticDevice{}, h200_like}) {
    for (const char* model : {"llama-3.2-1b", "qwen3-0.6b"}) bench(model, device);
  }
  return 0;
}
