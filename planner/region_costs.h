// Exact makespans of many mk regions of one stage, for the planner's search.
//
// The search needs the makespan of mk[a:b] for up to n(n+1)/2 pairs per stage, and one region
// of a prefill can hold hundreds of thousands of tasks, so simulating each pair from scratch
// (what Simulator::simulate_region does) costs O(n^3) task events. Two facts make most of that
// work shareable without changing a single result:
//  - the static schedule places tasks in global order, so the schedule of [a, b) is the
//    schedule of [a, e) cut at b for every e > b: one schedule per start op serves every end;
//  - until the first task of op b starts, [a, b) runs exactly as [a, e) does, so one run of
//    [a, e) continues into each shorter region from a copy of its state at that moment
//    (simulator::simulate_megakernel_prefixes): each costs the tasks still unfinished then.
// The region configuration, and with it the task costs, changes with b at a few ends; ends
// are grouped by configuration, one run per group.
//
// Tests check every result against Simulator::simulate_region.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "simulator/megakernel.h"
#include "simulator/simulator.h"

namespace megacut::planner {

using simulator::TimeNs;

class MkRegionEvaluator {
 public:
  // The simulator must outlive the evaluator; it is used from one thread only.
  MkRegionEvaluator(simulator::Simulator& sim, std::string_view stage, int64_t batch);

  // Says, as a run reaches region end `end` (simulator::PrefixFilter: `now` and `floor`),
  // whether that region and the longer ones are still wanted.
  using Filter = std::function<simulator::PrefixChoice(int end, TimeNs now, TimeNs floor)>;

  // RegionResult::work_ns of mk[begin:end] for each end in `ends` (increasing, each > begin),
  // or -1 for the regions `filter` turned down. Every op of [begin, ends.back()) must have a
  // standalone task benchmark.
  std::vector<TimeNs> makespans(int begin, std::span<const int> ends, const Filter& filter = {});

  // With resume off, every region is simulated from its start (for tests and comparisons).
  void set_resume(bool resume) { resume_ = resume; }

  struct Stats {
    int64_t regions = 0;  // makespans returned (not -1)
    int64_t resumed = 0;  // of those, continued from a longer region's run
    int64_t tasks = 0;    // tasks simulated, all runs together
  };
  const Stats& stats() const { return stats_; }

 private:
  // makespans, whose megakernel runs throw simulator::TimeOverflow without saying where.
  std::vector<TimeNs> makespans_of(int begin, std::span<const int> ends, const Filter& filter);

  simulator::Simulator& sim_;
  std::string stage_;
  int64_t batch_;
  const model::Graph& graph_;
  int queues_;
  simulator::MegakernelParams params_;
  bool resume_ = true;
  Stats stats_;
};

}  // namespace megacut::planner
