// How fast the simulator runs one mk region on one core: Llama-3.2-1B prefill at batch 32
// (prompt 128) as a single megakernel on a 132-SM synthetic device, the largest region the
// planner meets. Prints simulated task events per second (goal: 5 million or more); asserts
// nothing about time.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "model/schedule.h"
#include "simulator/megakernel.h"
#include "simulator/simulator.h"
#include "tests/support/synthetic_profile.h"

using namespace megacut;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main() {
  testing::SyntheticDevice device;
  device.name = "synthetic 132-SM GPU";
  device.sm_count = 132;
  device.bytes_per_ns = 4000;
  device.flops_per_ns_per_sm = 7000;
  const int64_t batch = 32;
  auto start = Clock::now();
  simulator::Simulator sim(testing::synthetic_profile("llama-3.2-1b", {batch}, 128, device));
  const model::Graph& g = sim.graph("prefill", batch);
  const model::Region region{model::RegionKind::mk, 0, g.op_count()};
  const simulator::TaskCosts costs = sim.region_task_costs("prefill", batch, region);
  std::printf("set-up (profile, graph, task costs): %.2f s\n", seconds_since(start));

  start = Clock::now();
  const model::Schedule schedule = model::make_schedule(g, 0, g.op_count(), device.sm_count);
  const double schedule_s = seconds_since(start);

  simulator::MegakernelParams params;
  params.bandwidth_bytes_per_ns = device.bytes_per_ns;
  params.signal_latency_ns = device.signal_latency_ns;
  double best_s = 1e30;
  simulator::MegakernelRun run;
  for (int rep = 0; rep < 5; ++rep) {
    start = Clock::now();
    run = simulator::simulate_megakernel(g, schedule, costs, params);
    best_s = std::min(best_s, seconds_since(start));
  }
  const double tasks = static_cast<double>(schedule.task_count());
  std::printf(
      "llama-3.2-1b prefill batch 32, mk[0:%d] on %d SMs: %.0f tasks, %lld events, "
      "simulated %.3f ms\n",
      g.op_count(), device.sm_count, tasks, static_cast<long long>(run.events),
      static_cast<double>(run.makespan_ns) / 1e6);
  std::printf("engine (best of 5): %.1f ms = %.2f M task events/s, %.2f M tasks/s\n", best_s * 1e3,
              static_cast<double>(run.events) / best_s / 1e6, tasks / best_s / 1e6);
  std::printf("static schedule (model::make_schedule): %.1f ms\n", schedule_s * 1e3);

  start = Clock::now();
  sim.simulate_region("prefill", batch, region, simulator::Boundary::stage_start);
  std::printf("simulate_region, first call (schedule + costs + engine): %.1f ms\n",
              seconds_since(start) * 1e3);
  start = Clock::now();
  sim.simulate_region("prefill", batch, region, simulator::Boundary::stage_start);
  std::printf("simulate_region, cached: %.3f ms\n", seconds_since(start) * 1e3);
  return 0;
}
