// Random compositions (model/random_composition.h): where they may cut, that every draw is a
// valid composition within the drawing rules, and that a seed replays the same draws.
#include "model/random_composition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "model/decoder.h"

namespace megacut::model {
namespace {

std::vector<Graph> tiny_llama_stages(int64_t batch) {
  const ModelSpec spec = load_model("tiny-llama");
  const Scenario scenario = make_scenario(spec, batch, 16);
  std::vector<Graph> graphs;
  for (const std::string& s : scenario.stage_names())
    graphs.push_back(build_graph(spec, scenario, s));
  return graphs;
}

std::vector<const Graph*> pointers(const std::vector<Graph>& graphs) {
  std::vector<const Graph*> out;
  for (const Graph& g : graphs) out.push_back(&g);
  return out;
}

TEST(RandomCompositionTest, CutsFallOnLayerStartsAndAttention) {
  // tiny-llama's decode stage (megacut graph --model tiny-llama --stage decode): 0 embed, layer
  // 0 at ops 1-5 with its attention at 2, layer 1 at 6-10 with its attention at 7, then 11
  // final_norm (outside the layers), 12 lm_head, 13 argmax.
  const std::vector<Graph> stages = tiny_llama_stages(1);
  EXPECT_EQ(random_cut_candidates(stages[1]), (std::vector<int>{1, 2, 6, 7, 11}));
}

TEST(RandomCompositionTest, DrawsAreValidAndFollowTheRules) {
  const std::vector<Graph> stages = tiny_llama_stages(2);
  std::vector<StageShape> shapes;
  for (const Graph& g : stages) shapes.push_back({g.stage(), g.op_count()});
  std::mt19937 rng(3);
  std::set<size_t> region_counts;
  std::set<RegionKind> kinds;
  for (int draw = 0; draw < 300; ++draw) {
    const Composition c = random_composition(pointers(stages), rng);
    ASSERT_NO_THROW(check_composition(c, shapes)) << c.to_string();
    ASSERT_EQ(c.stages.size(), stages.size());
    for (size_t s = 0; s < stages.size(); ++s) {
      ASSERT_EQ(c.stages[s].stage, stages[s].stage());
      const std::vector<Region>& regions = c.stages[s].regions;
      ASSERT_GE(regions.size(), 1u);
      ASSERT_LE(regions.size(), 4u);  // at most 3 cuts
      const std::vector<int> allowed = random_cut_candidates(stages[s]);
      for (size_t r = 1; r < regions.size(); ++r) {
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), regions[r].begin), allowed.end())
            << c.to_string();
      }
      region_counts.insert(regions.size());
      for (const Region& r : regions) kinds.insert(r.kind);
    }
  }
  // 600 stage draws: each count of cuts (1 in 4) and each kind turns up.
  EXPECT_EQ(region_counts, (std::set<size_t>{1, 2, 3, 4}));
  EXPECT_EQ(kinds, (std::set<RegionKind>{RegionKind::conv, RegionKind::mk}));
}

TEST(RandomCompositionTest, ASeedReplaysTheSameDraws) {
  const std::vector<Graph> stages = tiny_llama_stages(1);
  std::mt19937 a(11), b(11), c(12);
  std::vector<std::string> first, second, other;
  for (int i = 0; i < 20; ++i) {
    first.push_back(random_composition(pointers(stages), a).to_string());
    second.push_back(random_composition(pointers(stages), b).to_string());
    other.push_back(random_composition(pointers(stages), c).to_string());
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
}

}  // namespace
}  // namespace megacut::model
