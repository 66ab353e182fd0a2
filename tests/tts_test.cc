// TTS pipelines: the bundled configs, their scenario (time to first audio and the streaming
// step), every stage's graph, config errors that name the file and field, and the simulator
// and planner over a synthetic profile of each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "planner/plan.h"
#include "simulator/simulator.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;

std::map<std::string, int> kind_counts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const Op& op : g.ops()) ++counts[std::string(op.kind->name())];
  return counts;
}

const Op& last_op(const Graph& g) { return g.op(g.op_count() - 1); }

TEST(TtsConfigTest, QwenTtsMatchesThePublishedShapes) {
  const ModelSpec m = load_model("qwen3-tts-12hz-0.6b");
  ASSERT_TRUE(m.tts);
  const TtsConfig& t = *m.tts;
  EXPECT_EQ(m.decoder.architecture, "qwen3");
  EXPECT_EQ(m.decoder.hidden_size, 1024);
  EXPECT_EQ(m.decoder.num_layers, 28);
  EXPECT_EQ(m.decoder.vocab_size, 3072);
  EXPECT_EQ(t.text_vocab_size, 151936);
  EXPECT_EQ(t.text_hidden_size, 2048);
  ASSERT_TRUE(t.code_predictor && t.codec);
  EXPECT_EQ(t.code_predictor->decoder.num_layers, 5);
  EXPECT_EQ(t.code_predictor->steps(), 15);
  EXPECT_EQ(t.codec->codebooks, 16);
  EXPECT_EQ(t.codec->transformer.num_layers, 8);
  EXPECT_EQ(t.codec->sliding_window, 72);
  // 2 x 2 x 8 x 5 x 4 x 3 = 1920 samples per 12.5 Hz frame at 24 kHz.
  EXPECT_EQ(t.samples_per_frame, 1920);
  EXPECT_EQ(t.sample_rate, 24000);
}

TEST(TtsConfigTest, LlamaHifiganIsALlamaTalkerAndAV1Vocoder) {
  const ModelSpec m = load_model("llama-hifigan-tts");
  ASSERT_TRUE(m.tts && m.tts->vocoder);
  EXPECT_EQ(m.decoder.architecture, "llama");
  EXPECT_EQ(m.decoder.hidden_size, 2048);
  EXPECT_EQ(m.decoder.rope_scaling.type, "llama3");
  EXPECT_EQ(m.tts->frame_dim, 80);
  EXPECT_EQ(m.tts->vocoder->upsample_rates, (std::vector<int64_t>{8, 8, 2, 2}));
  EXPECT_EQ(m.tts->samples_per_frame, 256);
  EXPECT_EQ(m.tts->sample_rate, 22050);
}

TEST(TtsScenarioTest, FirstAudioRunsEachStageAsOftenAsTheChunkNeeds) {
  const ModelSpec m = load_model("qwen3-tts-12hz-0.6b");
  const Scenario s = make_scenario(m, 2, 32);
  EXPECT_EQ(s.frames, kDefaultFrames);
  ASSERT_EQ(s.stage_names(),
            (std::vector<std::string>{"prefill", "decode", "code-predictor", "codec"}));
  // Prefill gives frame 1's first code; frames 2..4 take a talker step each; every frame
  // takes 15 code predictor steps; the codec decodes the 4 frames once.
  EXPECT_EQ(s.stage("prefill").runs_to_first_output, 1);
  EXPECT_EQ(s.stage("decode").runs_to_first_output, 3);
  EXPECT_EQ(s.stage("code-predictor").runs_to_first_output, 60);
  EXPECT_EQ(s.stage("codec").runs_to_first_output, 1);
  // The next chunk: 4 talker steps, 60 code predictor steps, one codec run.
  EXPECT_EQ(s.stage("prefill").runs_per_step, 0);
  EXPECT_EQ(s.stage("decode").runs_per_step, 4);
  EXPECT_EQ(s.stage("code-predictor").runs_per_step, 60);
  EXPECT_EQ(s.stage("codec").runs_per_step, 1);
  EXPECT_EQ(s.stage("codec").seq_len, 4);
  EXPECT_DOUBLE_EQ(s.outputs_per_step, 4 * 1920 / 24000.0);
  EXPECT_EQ(s.output_unit, "audio seconds");

  const Scenario one = make_scenario(m, 1, 32, 1);
  EXPECT_EQ(one.stage("decode").runs_to_first_output, 0);
  EXPECT_EQ(one.stage("code-predictor").runs_to_first_output, 15);
}

TEST(TtsScenarioTest, StagesRunFrameByFrame) {
  const ModelSpec m = load_model("tiny-qwen3-tts");  // 3 code predictor steps per frame
  const Scenario s = make_scenario(m, 1, 8, 2);
  using V = std::vector<std::string>;
  const std::string cp = "code-predictor";
  EXPECT_EQ(stage_sequence(s, Sequence::first_output),
            (V{"prefill", cp, cp, cp, "decode", cp, cp, cp, "codec"}));
  EXPECT_EQ(stage_sequence(s, Sequence::step),
            (V{"decode", cp, cp, cp, "decode", cp, cp, cp, "codec"}));
  const ModelSpec h = load_model("tiny-llama-hifigan-tts");
  EXPECT_EQ(stage_sequence(make_scenario(h, 1, 8, 3), Sequence::first_output),
            (V{"prefill", "decode", "decode", "vocoder"}));
  const ModelSpec llm = load_model("tiny-llama");
  EXPECT_EQ(stage_sequence(make_scenario(llm, 1, 8), Sequence::first_output), V{"prefill"});
  EXPECT_EQ(stage_sequence(make_scenario(llm, 1, 8), Sequence::step), V{"decode"});
}

TEST(TtsScenarioTest, FramesAreRejectedForAnLlm) {
  const ModelSpec m = load_model("tiny-llama");
  try {
    make_scenario(m, 1, 8, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--frames: tiny-llama is not a TTS pipeline (frames count audio frames)");
  }
  const Scenario s = make_scenario(m, 1, 8);
  EXPECT_EQ(s.frames, 0);
  EXPECT_EQ(s.stage("decode").runs_per_step, 1);
  EXPECT_DOUBLE_EQ(s.outputs_per_step, 1);
}

TEST(TtsGraphTest, QwenCodecEndsInOneChannelOfSamplesPerFrame) {
  const ModelSpec m = load_model("qwen3-tts-12hz-0.6b");
  for (int64_t batch : {1, 3}) {
    const Scenario s = make_scenario(m, batch, 16, 4);
    const Graph g = build_graph(m, s, "codec");
    // codebook sum, pre-conv, input projection; 8 layers of 7 ops (no qk-norm; 4 frames a
    // sequence are few rows, so the norms, silu-mul and residual adds run inside the linears);
    // norm and output projection; 2 upsampling steps of 7 ops; input conv; 4 decoder blocks of
    // snake, transposed conv and 3 residual units of 5 ops; snake and the last conv.
    EXPECT_EQ(g.op_count(), 3 + 8 * 7 + 2 + 2 * 7 + 1 + 4 * 17 + 2);
    const Tensor& audio = g.tensor(last_op(g).output);
    EXPECT_EQ(audio.shape, (std::vector<int64_t>{batch * 4 * 1920, 1}));
    std::map<std::string, int> kinds = kind_counts(g);
    EXPECT_EQ(kinds["conv-transpose1d"], 6);
    EXPECT_EQ(kinds["snake-beta"], 4 * 7 + 1);
    EXPECT_EQ(kinds["codebook-sum"], 1);
    for (const Op& op : g.ops()) {
      if (op.kind->name() == "attention") {
        EXPECT_EQ(op.attrs.i("window"), 72) << op.name;
      }
      if (op.kind->name() == "conv1d" && op.attrs.i("groups") == 1) {
        EXPECT_EQ(op.attrs.i("lookahead"), 0) << op.name << ": the codec is causal";
      }
    }
  }
}

TEST(TtsGraphTest, HifiganVocoderIsCentredAndEndsInTanh) {
  const ModelSpec m = load_model("llama-hifigan-tts");
  const Scenario s = make_scenario(m, 2, 16, 4);
  const Graph g = build_graph(m, s, "vocoder");
  EXPECT_EQ(last_op(g).kind->name(), "tanh");
  EXPECT_EQ(g.tensor(last_op(g).output).shape, (std::vector<int64_t>{2 * 4 * 256, 1}));
  std::map<std::string, int> kinds = kind_counts(g);
  // Per upsampling: 3 kernels x 3 dilations x 2 convs; plus conv_pre and conv_post.
  EXPECT_EQ(kinds["conv1d"], 4 * 3 * 3 * 2 + 2);
  EXPECT_EQ(kinds["conv-transpose1d"], 4);
  EXPECT_EQ(kinds["add-scaled"], 4 * 2);
  for (const Op& op : g.ops()) {
    if (op.kind->name() != "conv1d") continue;
    EXPECT_EQ(op.attrs.i("lookahead"), (op.attrs.i("kernel") - 1) * op.attrs.i("dilation") / 2)
        << op.name;
  }
  // Channels halve per upsampling: 512 -> 32 before conv_post.
  EXPECT_EQ(g.tensor(g.op(g.op_count() - 3).output).shape.back(), 32);
}

TEST(TtsGraphTest, TalkerStagesEmitOneFramePerSequence) {
  const ModelSpec q = load_model("qwen3-tts-12hz-0.6b");
  const Scenario sq = make_scenario(q, 3, 16);
  const Graph prefill = build_graph(q, sq, "prefill");
  EXPECT_EQ(prefill.op(0).name, "text_embed");
  EXPECT_EQ(prefill.op(1).kind->name(), "linear");  // text projection 2048 -> 1024
  EXPECT_EQ(last_op(prefill).kind->name(), "argmax");
  EXPECT_EQ(prefill.tensor(last_op(prefill).output).shape, (std::vector<int64_t>{3, 1}));
  const Graph decode = build_graph(q, sq, "decode");
  EXPECT_EQ(decode.op(0).kind->name(), "codebook-sum");
  EXPECT_EQ(decode.op(0).attrs.i("past_len"), 16 + 1);
  const Graph cp = build_graph(q, sq, "code-predictor");
  EXPECT_EQ(cp.op(0).kind->name(), "step-embedding");
  EXPECT_EQ(cp.op(cp.op_count() - 2).kind->name(), "step-head");
  // One head of 2048 entries per step, stacked.
  EXPECT_EQ(cp.tensor(cp.op(cp.op_count() - 2).weights[0]).shape,
            (std::vector<int64_t>{15 * 2048, 1024}));
  EXPECT_EQ(cp.op(0).attrs.i("past_len"), 8);
  // The code predictor's KV caches are its own.
  std::set<std::string> talker_state;
  for (const Tensor& t : decode.tensors()) {
    if (t.role == TensorRole::state) talker_state.insert(t.name);
  }
  for (const Tensor& t : cp.tensors()) {
    if (t.role == TensorRole::state) {
      EXPECT_FALSE(talker_state.contains(t.name)) << t.name;
    }
  }

  const ModelSpec h = load_model("llama-hifigan-tts");
  const Graph hd = build_graph(h, make_scenario(h, 2, 16), "decode");
  EXPECT_EQ(hd.op(0).name, "frame_embed");
  EXPECT_EQ(hd.tensor(last_op(hd).output).shape, (std::vector<int64_t>{2, 80}));
}

TEST(TtsGraphTest, EveryStageOfEveryPipelineBuilds) {
  for (const char* name :
       {"tiny-qwen3-tts", "tiny-llama-hifigan-tts", "qwen3-tts-12hz-0.6b", "llama-hifigan-tts"}) {
    const ModelSpec m = load_model(name);
    for (int64_t batch : {1, 4}) {
      const Scenario s = make_scenario(m, batch, 16, 3);
      for (const std::string& stage : s.stage_names()) {
        const Graph g = build_graph(m, s, stage);
        EXPECT_GT(g.task_count(), 0) << name << " " << stage;
        std::set<std::string> names;
        for (const Op& op : g.ops()) {
          EXPECT_TRUE(names.insert(op.name).second) << name << " " << stage << ": " << op.name;
        }
      }
    }
  }
}

class TtsConfigErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("megacut-tts-config-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string error_for(const nlohmann::json& config) {
    std::ofstream(dir_ / "config.json") << config.dump();
    try {
      load_model(dir_.string());
    } catch (const Error& e) {
      return std::string(e.what()).substr((dir_ / "config.json").string().size());
    }
    return "";
  }

  static nlohmann::json base(const char* name) {
    return read_json_file(configs_dir() / "models" / name / "config.json");
  }

  fs::path dir_;
};

TEST_F(TtsConfigErrorTest, NamesTheNestedField) {
  nlohmann::json c = base("tiny-qwen3-tts");
  c["speech_tokenizer_config"]["decoder_config"]["num_quantizers"] = 8;
  EXPECT_EQ(error_for(c),
            ": field 'speech_tokenizer_config.decoder_config.num_quantizers': 8 differs from "
            "talker_config.num_code_groups 4");

  c = base("tiny-qwen3-tts");
  c["speech_tokenizer_config"]["decode_upsample_rate"] = 25;
  EXPECT_EQ(
      error_for(c),
      ": field 'speech_tokenizer_config.decode_upsample_rate': 25 differs from the product of "
      "upsampling_ratios and upsample_rates, 24");

  c = base("tiny-qwen3-tts");
  c.erase("speech_tokenizer_config");
  EXPECT_EQ(error_for(c), ": field 'speech_tokenizer_config': missing");

  c = base("tiny-llama-hifigan-tts");
  c["vocoder_config"]["resblock_kernel_sizes"] = {3, 4};
  EXPECT_EQ(
      error_for(c),
      ": field 'vocoder_config.resblock_kernel_sizes': kernel 4 is even; centred convolutions "
      "need odd");

  c = base("tiny-llama-hifigan-tts");
  c["vocoder_config"]["upsample_kernel_sizes"] = {4};
  EXPECT_EQ(error_for(c),
            ": field 'vocoder_config.upsample_kernel_sizes': has 1 entries, upsample_rates 2");

  c = base("tiny-llama-hifigan-tts");
  c["vocoder_config"]["resblock_dilation_sizes"] = {{1, 3}, {0}};
  EXPECT_EQ(error_for(c),
            ": field 'vocoder_config.resblock_dilation_sizes[1]': expected positive integers, got "
            "[0]");

  c = base("tiny-qwen3-tts");
  c["talker_config"]["code_predictor_config"]["num_key_value_heads"] = 3;
  EXPECT_EQ(error_for(c),
            ": field 'talker_config.code_predictor_config.num_key_value_heads': 3 does not divide "
            "num_attention_heads 4");
}

}  // namespace
}  // namespace megacut::model

namespace megacut::simulator {
namespace {

// Stage runs replay back to back: while the GPU runs one stage's graph, the host launches the
// next, so each run after the first costs its time less its graph launch, plus one kernel gap;
// unless the host falls behind.
TEST(TtsSimulatorTest, BackToBackRunsHideTheirGraphLaunches) {
  for (const char* name : {"tiny-qwen3-tts", "tiny-llama-hifigan-tts"}) {
    const model::Profile profile = testing::synthetic_profile(name, {1, 2}, 16);
    EXPECT_EQ(profile.frames, model::kDefaultFrames);
    Simulator sim(profile, {});
    const model::Scenario sc = sim.scenario(2);
    const Prediction p =
        sim.simulate(model::uniform_composition(sim.stage_shapes(2), model::RegionKind::conv), 2);
    // The synthetic graphs launch in 4 µs and the GPU work of every stage takes longer, so
    // the host is always ahead: the first run pays its launch, each later one a kernel gap
    // (800 ns) in its place.
    auto expected = [&](model::Sequence which) {
      const std::vector<std::string> runs = model::stage_sequence(sc, which);
      TimeNs total = p.stage(runs.front()).graph_launch_ns();
      for (const std::string& stage : runs) {
        EXPECT_EQ(p.stage(stage).graph_launch_ns(), 4000) << stage;  // conv: the fixed part only
        total += p.stage(stage).time_ns - p.stage(stage).graph_launch_ns();
      }
      return total + 800 * static_cast<TimeNs>(runs.size() - 1);
    };
    EXPECT_EQ(p.ttfo_ns, expected(model::Sequence::first_output)) << name;
    EXPECT_EQ(p.decode_step_ns, expected(model::Sequence::step)) << name;
    EXPECT_EQ(p.frames, model::kDefaultFrames);
    EXPECT_EQ(p.output_unit, "audio seconds");
    EXPECT_DOUBLE_EQ(p.throughput_per_s, 2 * sc.outputs_per_step * 1e9 / double(p.decode_step_ns));
  }
}

// What tracing adds to the profile's kernels and gaps (a long chain's traced span beyond the
// same graph replayed back to back, untraced) is a launch's, which the profile's launch left
// out: a run alone still takes its stage's time, and each run that follows another at once
// takes that much less. A traced span shorter than the replay (noise) moves nothing.
TEST(TtsSimulatorTest, TracingsExcessMovesFromTheGpuToTheLaunch) {
  const model::Profile plain = testing::synthetic_profile("tiny-qwen3-tts", {1}, 16);
  auto with_chain = [&](double span_ns, double back_to_back_ns) {
    model::Profile p = plain;
    model::GraphLaunchPoint chain{512, model::constant_stats(4000)};
    chain.span_ns = model::constant_stats(span_ns);
    chain.back_to_back_ns = model::constant_stats(back_to_back_ns);
    p.batches[0].graph_launch_by_nodes = {{1, model::constant_stats(4000)}, chain};
    return p;
  };
  Simulator base(plain, {});
  Simulator traced(with_chain(512 * 1500, 512 * 1200), {});     // 300 ns a node
  Simulator no_excess(with_chain(512 * 1500, 512 * 1600), {});  // the replay the longer
  const auto conv = model::uniform_composition(base.stage_shapes(1), model::RegionKind::conv);
  const Prediction a = base.simulate(conv, 1), b = traced.simulate(conv, 1),
                   c = no_excess.simulate(conv, 1);
  const model::Scenario sc = base.scenario(1);
  for (const model::Stage& stage : sc.stages) {
    EXPECT_EQ(b.stage(stage.name).time_ns, a.stage(stage.name).time_ns) << stage.name;
    EXPECT_EQ(a.stage(stage.name).trace_excess_ns(), 0) << stage.name;
    EXPECT_EQ(c.stage(stage.name).trace_excess_ns(), 0) << stage.name;
    EXPECT_EQ(b.stage(stage.name).trace_excess_ns(), 300 * base.graph(stage.name, 1).op_count())
        << stage.name;
  }
  for (model::Sequence which : {model::Sequence::first_output, model::Sequence::step}) {
    const std::vector<std::string> runs = model::stage_sequence(sc, which);
    TimeNs saved = 0;
    for (size_t i = 1; i < runs.size(); ++i) saved += b.stage(runs[i]).trace_excess_ns();
    const TimeNs before = which == model::Sequence::step ? a.decode_step_ns : a.ttfo_ns;
    const TimeNs after = which == model::Sequence::step ? b.decode_step_ns : b.ttfo_ns;
    EXPECT_GT(saved, 0);
    EXPECT_EQ(after, before - saved);
  }
  EXPECT_EQ(c.ttfo_ns, a.ttfo_ns);
}

// A host slower than the GPU: with 1 ms graph launches every run waits for its launch, and the
// first output comes one launch per run in, plus the last run's work.
TEST(TtsSimulatorTest, ASlowHostBoundsBackToBackRuns) {
  testing::SyntheticDevice slow;
  slow.graph_launch_ns = 1'000'000;
  const model::Profile profile =
      testing::synthetic_profile("tiny-llama-hifigan-tts", {1}, 16, slow);
  Simulator sim(profile, {});
  const model::Scenario sc = sim.scenario(1);
  const Prediction p =
      sim.simulate(model::uniform_composition(sim.stage_shapes(1), model::RegionKind::conv), 1);
  const std::vector<std::string> runs = model::stage_sequence(sc, model::Sequence::first_output);
  const StagePrediction& last = p.stage(runs.back());
  EXPECT_EQ(p.ttfo_ns,
            1'000'000 * static_cast<TimeNs>(runs.size()) + last.time_ns - last.graph_launch_ns());
}

// An LLM's first output and step are one run each: the stage's time, launch included.
TEST(TtsSimulatorTest, OneRunTakesItsStagesTime) {
  Simulator sim(testing::synthetic_profile("tiny-llama", {1}, 16), {});
  const Prediction p =
      sim.simulate(model::uniform_composition(sim.stage_shapes(1), model::RegionKind::mk), 1);
  EXPECT_EQ(p.ttfo_ns, p.stage("prefill").time_ns);
  EXPECT_EQ(p.decode_step_ns, p.stage("decode").time_ns);
}

TEST(TtsSimulatorTest, ProfileKeepsItsFrameCount) {
  model::Profile profile = testing::synthetic_profile("tiny-llama-hifigan-tts", {1}, 16);
  profile.frames = 6;
  const model::Profile back =
      model::profile_from_json(model::profile_to_json(profile), "round trip");
  EXPECT_EQ(back.frames, 6);
  EXPECT_EQ(Simulator(back, {}).scenario(1).stage("vocoder").seq_len, 6);

  nlohmann::json llm = model::profile_to_json(testing::synthetic_profile("tiny-llama", {1}, 16));
  EXPECT_FALSE(llm.contains("frames"));
  llm["frames"] = 4;
  try {
    model::profile_from_json(llm, "p.json");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("frames"), std::string::npos) << e.what();
  }
}

TEST(TtsPlannerTest, PlansEveryStageOfAPipeline) {
  const model::Profile profile = testing::synthetic_profile("tiny-qwen3-tts", {1, 4}, 16);
  planner::PlanOptions options;
  options.top_k = 2;
  const planner::Plan plan = planner::make_plan(profile, options);
  ASSERT_EQ(plan.batches.size(), 2u);
  for (const planner::BatchPlan& b : plan.batches) {
    EXPECT_LE(b.best().ttfo_ns, b.all_conv.ttfo_ns);
    std::vector<std::string> stages;
    for (const model::StageRegions& s : b.best().composition.stages) stages.push_back(s.stage);
    EXPECT_EQ(stages, (std::vector<std::string>{"prefill", "decode", "code-predictor", "codec"}));
  }
}

}  // namespace
}  // namespace megacut::simulator
