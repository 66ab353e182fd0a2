// Random compositions, for tests that run many of them and for validation, which measures a few
// beside the planner's choices. Cuts fall on layer starts and attention ops, so regions split
// layers both at and inside layer boundaries while the number of distinct tile-body sets (region
// kernels to compile) stays small.
//
//   std::mt19937 rng(seed);
//   Composition c = random_composition({&prefill_graph, &decode_graph}, rng);
#pragma once

#include <random>
#include <vector>

#include "model/composition.h"
#include "model/graph.h"

namespace megacut::model {

// The ops a random region may start at: every op whose layer differs from the op before it, and
// every attention op, in increasing order (never op 0).
std::vector<int> random_cut_candidates(const Graph& graph);

// The stage cut at 0 to 3 distinct candidates drawn uniformly; each region mk with probability
// 0.6, else conv. Adjacent conv regions are left as drawn.
std::vector<Region> random_regions(const Graph& graph, std::mt19937& rng);

// One random_regions per stage, in the order given (scenario order).
Composition random_composition(const std::vector<const Graph*>& stages, std::mt19937& rng);

}  // namespace megacut::model
