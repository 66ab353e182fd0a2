#include "planner/region_costs.h"

#include <algorithm>

#include "model/error.h"
#include "model/schedule.h"
#include "simulator/megakernel.h"

namespace megacut::planner {

using model::TaskId;

MkRegionEvaluator::MkRegionEvaluator(simulator::Simulator& sim, std::string_view stage,
                                     int64_t batch)
    : sim_(sim),
      stage_(stage),
      batch_(batch),
      graph_(sim.graph(stage, batch)),
      queues_(sim.profile().device.sm_count),
      params_(sim.megakernel_params()) {}

std::vector<TimeNs> MkRegionEvaluator::makespans(int begin, std::span<const int> ends,
                                                 const Filter& filter) {
  if (ends.empty()) return {};
  try {
    return makespans_of(begin, ends, filter);
  } catch (const simulator::TimeOverflow& e) {
    throw Error(sim_.where(stage_, batch_, {model::RegionKind::mk, begin, ends.back()}) + ": " +
                e.what());
  }
}

std::vector<TimeNs> MkRegionEvaluator::makespans_of(int begin, std::span<const int> ends,
                                                    const Filter& filter) {
  std::vector<TimeNs> out;
  const model::Schedule whole = model::make_schedule(graph_, begin, ends.back(), queues_);
  // The schedule of [begin, end): the whole one cut at `end`.
  auto cut = [&](int end) {
    model::Schedule s;
    s.op_begin = begin;
    s.op_end = end;
    s.queues.resize(queues_);
    const TaskId hi = graph_.first_task(end - 1) + graph_.op(end - 1).tiling.count();
    for (int q = 0; q < queues_; ++q) {
      const std::vector<TaskId>& tasks = whole.queues[q];
      s.queues[q].assign(tasks.begin(), std::lower_bound(tasks.begin(), tasks.end(), hi));
    }
    return s;
  };

  std::vector<model::RegionConfig> configs;
  for (int end : ends) {
    configs.push_back(sim_.region_config(stage_, batch_, {model::RegionKind::mk, begin, end}));
  }
  // Ends i..j share a configuration, so their tasks cost the same: one run covers them.
  for (size_t i = 0; i < ends.size();) {
    size_t j = i;
    while (j + 1 < ends.size() && configs[j + 1] == configs[i]) ++j;
    const int last = ends[j];
    const model::Schedule schedule = last == ends.back() ? whole : cut(last);
    // A prefix's tasks wait for what they wait for in the whole: a task's waits follow from the
    // tasks before it in its queue.
    const simulator::TaskCosts costs =
        sim_.region_task_costs(stage_, batch_, {model::RegionKind::mk, begin, last}, schedule);
    if (resume_) {
      simulator::PrefixFilter local;
      if (filter) {
        local = [&, i](size_t k, TimeNs now, TimeNs floor) {
          return filter(ends[i + k], now, floor);
        };
      }
      const simulator::PrefixMakespans runs = simulator::simulate_megakernel_prefixes(
          graph_, schedule, costs, params_, ends.subspan(i, j - i + 1), local);
      for (size_t k = 0; k < runs.makespan_ns.size(); ++k) {
        out.push_back(runs.makespan_ns[k]);
        if (runs.makespan_ns[k] < 0) continue;
        ++stats_.regions;
        if (k + 1 < runs.makespan_ns.size()) ++stats_.resumed;
      }
      stats_.tasks += runs.tasks;
    } else {
      for (size_t k = i; k <= j; ++k) {
        const model::Schedule s = ends[k] == last ? schedule : cut(ends[k]);
        simulator::TaskCosts c = costs;
        c.fixed_ns.resize(static_cast<size_t>(s.task_count()));
        c.bytes.resize(static_cast<size_t>(s.task_count()));
        if (!c.link_bytes.empty()) c.link_bytes.resize(static_cast<size_t>(s.task_count()));
        if (!c.ahead_bytes.empty()) c.ahead_bytes.resize(static_cast<size_t>(s.task_count()));
        out.push_back(simulator::simulate_megakernel(graph_, s, c, params_).makespan_ns);
        stats_.tasks += s.task_count();
        ++stats_.regions;
      }
    }
    i = j + 1;
  }
  return out;
}

}  // namespace megacut::planner
