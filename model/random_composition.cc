#include "model/random_composition.h"

#include <algorithm>
#include <string_view>

namespace megacut::model {

std::vector<int> random_cut_candidates(const Graph& graph) {
  std::vector<int> cuts;
  for (int op = 1; op < graph.op_count(); ++op) {
    const std::string_view kind = graph.op(op).kind->name();
    if (graph.op(op).layer != graph.op(op - 1).layer || kind == "attention" ||
        kind == "qkv-attention") {
      cuts.push_back(op);
    }
  }
  return cuts;
}

std::vector<Region> random_regions(const Graph& graph, std::mt19937& rng) {
  std::vector<int> cuts = random_cut_candidates(graph);
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(std::min<size_t>(cuts.size(), std::uniform_int_distribution<size_t>(0, 3)(rng)));
  cuts.push_back(0);
  cuts.push_back(graph.op_count());
  std::sort(cuts.begin(), cuts.end());
  std::vector<Region> regions;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const bool mk = std::bernoulli_distribution(0.6)(rng);
    regions.push_back({mk ? RegionKind::mk : RegionKind::conv, cuts[i], cuts[i + 1]});
  }
  return regions;
}

Composition random_composition(const std::vector<const Graph*>& stages, std::mt19937& rng) {
  Composition composition;
  for (const Graph* g : stages) composition.stages.push_back({g->stage(), random_regions(*g, rng)});
  return composition;
}

}  // namespace megacut::model
