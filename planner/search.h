// The search for the best compositions of one stage: exact dynamic programming over op-level
// cut points, and an exhaustive enumerator that checks it on small graphs.
//
// A kernel boundary is a full barrier, so a stage's time is the sum of its regions' times, and
// a region's time depends only on its ops and on the kind of region before it
// (Simulator::simulate_region). The search counts each region at that time less the share of
// its launch that hides behind the run before (SearchOptions::hidden_launch_share: a TTS stage's
// runs replay back to back), a share that also depends only on the region. The DP's states are (cut
// position, kind of the region ending there); every op boundary is a candidate cut. A conv
// region costs the sum of its ops run one by one (the gap inside a conv region is the gap after
// a conv region), so conv regions are built from single-op steps, and two conv regions are never
// adjacent: each path of the DP is one composition in canonical form. An mk region's makespan
// depends on its whole op range, so there are n(n+1)/2 of them; the search simulates only those
// that can still matter:
//  1. every op alone, both ways, and every mk region of at most kShortRegionOps ops, exactly;
//     the K best compositions built from those give an upper bound U on the K-th best time;
//  2. for every longer mk region, an admissible lower bound: the launch overhead plus
//     max(bytes / bandwidth, (fixed work + bytes / bandwidth) / SMs, longest task), from the
//     ops' standalone task costs, which no region configuration makes cheaper (a region runs
//     each op with at most the registers it had alone);
//  3. lower bounds on the best prefix to every state and the best suffix from it (DP with the
//     exact costs where known and the bounds elsewhere); a region whose prefix bound plus its
//     own bound plus the suffix bound exceeds U lies on no composition within the K best, and
//     is never simulated (a composition within the K best costs at most U, and each of its
//     regions satisfies that inequality);
//  4. the remaining regions are simulated exactly (MkRegionEvaluator: one run per start op,
//     each shorter region continued from a copy of its state), start op by start op, keeping
//     the exact best prefix into every cut. As a run from a reaches end b at time t, a region
//     [a, b) is dropped when the best prefix into a plus its makespan's floor exceeds the K-th
//     best known prefix into b (ending in mk, or in conv plus the most a continuation can
//     cost more after conv); and the run stops when even the longer regions cannot make it:
//     their tasks past b all start after t, so they cost at least t plus a bound on those
//     tasks, against the K-th best prefix into b extended by conv;
//  5. the K-best DP runs over every exact cost. Pruning only removes regions no top-K
//     composition uses, so the K best times equal those of the unpruned DP and of the
//     exhaustive enumeration (tests check both on many random graphs).
// Coverage floors (SearchOptions::coverage_floors) ask also for the best composition with at
// least a given number of ops in mk regions: a DP whose states carry that count, capped at the
// floor, over every mk region (any region may be on such a composition, so none is pruned).
// What prunes well: prefill stages, where megakernels pay per-task overheads on many tiles.
// What does not: stages where long megakernels are near the best, since the bounds cannot see
// the bandwidth contention that makes them slower than they look; there the search simulates
// every region, at about n/2 full-stage runs of tasks per stage.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/composition.h"
#include "simulator/simulator.h"

namespace megacut::planner {

using simulator::TimeNs;

// Called with the fraction done, in [0, 1]; from the searching thread.
using ProgressFn = std::function<void(double fraction)>;

struct StageCandidate {
  std::vector<model::Region> regions;  // canonical: no two adjacent conv regions
  // The search's key: the stage's time, less the share of its launch that hides behind the
  // run before (SearchOptions::hidden_launch_share); the stage's time where that share is 0.
  TimeNs key_ns = 0;
  friend bool operator==(const StageCandidate&, const StageCandidate&) = default;
};

struct SearchStats {
  int64_t ops = 0;
  int64_t mk_ops = 0;        // ops that can run in an mk region (with a task benchmark)
  int64_t mk_regions = 0;    // mk regions the stage allows (every op with a task benchmark)
  int64_t mk_simulated = 0;  // of those, simulated; the others were pruned by their bound
  int64_t mk_resumed = 0;    // of those simulated, from a separating cut
  int64_t tasks_simulated = 0;
  double seconds = 0;
  friend bool operator==(const SearchStats&, const SearchStats&) = default;
};

struct StageSearch {
  std::string stage;
  int64_t batch = 0;
  std::vector<StageCandidate> best;  // at most top_k, by increasing key
  // One per SearchOptions::coverage_floors, in its order: the best composition with at least
  // min_mk_ops(floor, stats.mk_ops) ops in mk regions.
  std::vector<StageCandidate> at_coverage;
  SearchStats stats;
};

struct SearchOptions {
  int top_k = 5;
  bool prune = true;   // off: simulate every mk region (tests compare)
  bool resume = true;  // off: simulate every mk region from its start
  // The share of the stage's runs, in [0, 1], that follow another run at once: their graph
  // launch and trace excess hide behind it (Simulator::sequence_ns, while the host keeps ahead
  // of the GPU), so the search counts each region at its time less that share of both
  // (region_key_ns). 0 for a stage run alone. The planner takes it from the primary
  // objective's sequence; the other sequence's key is then approximate.
  double hidden_launch_share = 0;
  // Tile regions too (of two ops or more: one op alone is a conv region of our kernel). A
  // profile without what they need (Simulator::simulate_region says what) has none.
  bool tile = true;
  // Shares in (0, 1]: for each, also the best composition with at least that share of the ops
  // that can run in mk regions inside them (StageSearch::at_coverage). Turns pruning off.
  std::vector<double> coverage_floors;
  ProgressFn progress;
};

// The ops in mk regions a coverage floor asks for: `share` of `mk_ops`, rounded up.
inline int64_t min_mk_ops(double share, int64_t mk_ops) {
  return static_cast<int64_t>(std::ceil(share * static_cast<double>(mk_ops) - 1e-9));
}

// What the search counts a region at: its time, less `hidden_launch_share` of its share of the
// stage's graph launch and trace excess, rounded per graph node and once for the fixed part, so
// that a conv region counts what its ops count one by one.
inline TimeNs region_key_ns(const simulator::RegionResult& r, double hidden_launch_share) {
  if (hidden_launch_share == 0) return r.time_ns;
  const auto share = [&](TimeNs ns) {
    return static_cast<TimeNs>(std::llround(hidden_launch_share * static_cast<double>(ns)));
  };
  return r.time_ns - share(r.launch_fixed_ns) -
         r.graph_nodes * share(r.launch_node_ns + r.trace_excess_node_ns);
}

// mk regions of up to this many ops are always simulated (step 1 above).
inline constexpr int kShortRegionOps = 4;

StageSearch search_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                         const SearchOptions& options = {});

// Every composition of the stage, each region timed by Simulator::simulate_region and counted
// at region_key_ns; the K best of those with at least `least_mk_ops` ops in mk regions. Tile
// regions (with `tile`) have two ops or more, as the search makes them. `canonical_only` skips
// compositions with adjacent conv regions (which time the same as their merge). Refuses stages
// of more than kExhaustiveMaxOps ops: there are about 3 x 4^(n-1) with tile regions.
inline constexpr int kExhaustiveMaxOps = 18;
StageSearch exhaustive_stage(simulator::Simulator& sim, std::string_view stage, int64_t batch,
                             int top_k, bool canonical_only = true, double hidden_launch_share = 0,
                             int64_t least_mk_ops = 0, bool tile = true);

}  // namespace megacut::planner
