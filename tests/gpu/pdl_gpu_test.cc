// Programmatic Dependent Launch changes when kernels start, never what they compute: with it the
// runner launches the same kernels in the same order, so logits must be bitwise equal to a run
// without it. Checked eagerly (greedy generation) and from captured CUDA graphs (programmatic
// edges) replayed several times, each replay reading the KV cache and token the one before
// left; all-conventional, one megakernel per stage and one megakernel per decoder layer; both
// linear providers (cuBLASLt's launches stay plain between ours). Tiny models first (short
// kernels, where a missing wait would show soonest), then Llama-3.2-1B. Host only: the launch
// configuration carries the attribute exactly when asked.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "executor/launch.h"
#include "executor/runner.h"
#include "model/config.h"
#include "model/decoder.h"
#include "tests/gpu/gpu_support.h"

namespace megacut::executor {
namespace {

// Every op outside the decoder layers conv; each layer one mk region.
model::Composition layer_regions(const model::ModelSpec& spec, const model::Scenario& scenario) {
  model::Composition comp;
  for (const std::string& stage : scenario.stage_names()) {
    const model::Graph g = model::build_graph(spec, scenario, stage);
    std::vector<model::Region> regions;
    for (int op = 0; op < g.op_count(); ++op) {
      const int layer = g.op(op).layer;
      const bool same = !regions.empty() && g.op(op - 1).layer == layer;
      if (same) {
        regions.back().end = op + 1;
      } else {
        regions.push_back(
            {layer < 0 ? model::RegionKind::conv : model::RegionKind::mk, op, op + 1});
      }
    }
    comp.stages.push_back({stage, regions});
  }
  return comp;
}

model::Composition whole_stages(const model::ModelSpec& spec, const model::Scenario& scenario,
                                model::RegionKind kind) {
  std::vector<model::StageShape> shapes;
  for (const std::string& stage : scenario.stage_names()) {
    shapes.push_back({stage, model::build_graph(spec, scenario, stage).op_count()});
  }
  return model::uniform_composition(shapes, kind);
}

void expect_bitwise(const std::vector<float>& on, const std::vector<float>& off,
                    const std::string& what) {
  ASSERT_EQ(on.size(), off.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < on.size(); ++i) {
    differ += std::memcmp(&on[i], &off[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << on.size()
                        << " logits differ with PDL";
}

struct Case {
  const char* model;
  int64_t batch;
  int64_t prompt_len;
};

// One model and batch: each composition and provider run with and without PDL.
void check_pdl(const Case& c, const std::vector<model::RegionKind>& whole,
               const std::vector<LinearProvider>& providers, bool layers) {
  constexpr int kSteps = 2;
  constexpr int kReplays = 3;
  const model::ModelSpec spec = model::load_model(c.model);
  const model::Scenario scenario = model::make_scenario(spec, c.batch, c.prompt_len);
  const HostWeights weights = HostWeights::random(spec, 7);
  std::vector<std::pair<std::string, model::Composition>> comps;
  for (model::RegionKind kind : whole) {
    comps.emplace_back(std::string(model::region_kind_name(kind)),
                       whole_stages(spec, scenario, kind));
  }
  if (layers) comps.emplace_back("layers", layer_regions(spec, scenario));
  for (LinearProvider provider : providers) {
    for (const auto& [name, comp] : comps) {
      const std::string what = std::string(c.model) + " batch " + std::to_string(c.batch) + ", " +
                               name + ", " + std::string(provider_name(provider));
      SCOPED_TRACE(what);
      RunOptions options;
      options.providers = model::ProviderChoice::uniform(provider);
      options.composition = comp;
      options.decode_steps = kSteps;
      ScenarioRunner off(spec, scenario, weights, options);
      options.pdl = true;
      ScenarioRunner on(spec, scenario, weights, options);

      off.generate(kSteps);
      on.generate(kSteps);
      expect_bitwise(on.prefill_logits(), off.prefill_logits(), "eager prefill");
      expect_bitwise(on.decode_logits(), off.decode_logits(), "eager decode");
      EXPECT_EQ(on.decode_tokens(), off.decode_tokens());

      off.set_composition(comp);  // state poisoned again and the prompt rewritten
      on.set_composition(comp);
      for (int replay = 0; replay < kReplays; ++replay) {
        for (int stage = 0; stage < on.stage_count(); ++stage) {
          off.time_replay_ms(stage);
          on.time_replay_ms(stage);
          expect_bitwise(
              on.stage_logits(stage), off.stage_logits(stage),
              "graph replay " + std::to_string(replay) + " of " + on.stage_graph(stage).stage());
        }
      }
    }
  }
}

using model::RegionKind;

// Host only: what a launch with and without PDL asks the runtime for.
TEST(PdlLaunch, AttributeOnlyWhenAsked) {
  const KernelLaunch with(dim3(7), dim3(256), 1024, nullptr, true);
  ASSERT_EQ(with.config()->numAttrs, 1u);
  EXPECT_EQ(with.config()->attrs[0].id, cudaLaunchAttributeProgrammaticStreamSerialization);
  EXPECT_EQ(with.config()->attrs[0].val.programmaticStreamSerializationAllowed, 1);
  EXPECT_EQ(with.config()->gridDim.x, 7u);
  EXPECT_EQ(with.config()->blockDim.x, 256u);
  EXPECT_EQ(with.config()->dynamicSmemBytes, 1024u);
  const KernelLaunch without(dim3(7), dim3(256), 1024, nullptr, false);
  EXPECT_EQ(without.config()->numAttrs, 0u);
  EXPECT_EQ(without.config()->attrs, nullptr);
}

TEST(PdlGpu, TinyModelsMatchWithoutPdl) {
  MEGACUT_REQUIRE_GPU();
  for (const Case& c : {Case{"tiny-llama", 1, 13}, Case{"tiny-qwen3", 8, 16}}) {
    check_pdl(c, {RegionKind::conv, RegionKind::mk},
              {LinearProvider::ours, LinearProvider::cublaslt}, true);
  }
}

TEST(PdlGpu, TinyMeasurementRecordsPdl) {
  MEGACUT_REQUIRE_GPU();
  const model::ModelSpec spec = model::load_model("tiny-qwen3");
  RunOptions options;
  options.runs = 3;
  options.warmup = 1;
  options.pdl = true;
  ScenarioRunner runner(spec, model::make_scenario(spec, 2, 16), HostWeights::random(spec, 1),
                        options);
  const Measurement m = runner.measure();
  EXPECT_TRUE(m.pdl);
  EXPECT_EQ(m.to_json().at("pdl"), true);
  EXPECT_EQ(m.ttfo.count, 3);
  options.pdl = false;
  ScenarioRunner plain(spec, model::make_scenario(spec, 2, 16), HostWeights::random(spec, 1),
                       options);
  EXPECT_EQ(plain.measure().to_json().at("pdl"), false);
}

TEST(PdlGpu, Llama1bStagesMatchWithoutPdl) {
  MEGACUT_REQUIRE_GPU();
  check_pdl({"llama-3.2-1b", 1, 32}, {RegionKind::conv},
            {LinearProvider::ours, LinearProvider::cublaslt}, true);
  check_pdl({"llama-3.2-1b", 8, 32}, {RegionKind::conv}, {LinearProvider::ours}, false);
}

}  // namespace
}  // namespace megacut::executor
