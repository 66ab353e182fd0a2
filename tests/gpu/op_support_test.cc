// Host-side checks of the kernel library that need no GPU (they run in CI): every op of the
// bundled models is implementable at the batch sizes studied, unsupported shapes are refused
// with a message naming the op and the value, and the body names the megakernel will
// instantiate are the expected ones.
#include "executor/op_support.h"

#include <gtest/gtest.h>

#include <string>

#include "executor/conventional.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/scenario.h"
#include "tests/gpu/op_cases.h"

namespace megacut::testing {
namespace {

TEST(CanImplement, EveryOpOfTheBundledModels) {
  for (const std::string& name : model::bundled_models()) {
    const model::ModelSpec spec = model::load_model(name);
    for (int64_t batch : {1, 3, 8, 32, 64, 100}) {
      const model::Scenario scenario = model::make_scenario(spec, batch, 128);
      for (const std::string& stage : scenario.stage_names()) {
        const model::Graph g = model::build_graph(spec, scenario, stage);
        for (int op = 0; op < g.op_count(); ++op) {
          const executor::Support s = executor::can_implement(g, op);
          EXPECT_TRUE(s.ok) << name << " " << stage << " batch " << batch << ": " << s.reason;
        }
      }
    }
  }
}

TEST(CanImplement, RefusesHeadDim80WithTheReason) {
  auto config = decoder("llama", 640, 8, 2, 80, 1024, 1000);
  const model::Graph g = model::build_decoder_stage(config, model::Stage{"decode", 1, 10, 1, 0}, 1);
  for (const model::Op& op : g.ops()) {
    if (op.kind->name() != "attention") continue;
    const executor::Support s = executor::can_implement(g, op.index);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("layers.0.attn.attention"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("head_dim = 80"), std::string::npos) << s.reason;
    // Refused before anything reaches the device.
    EXPECT_THROW(executor::launch_op(g, op.index, executor::StageBuffers{}, nullptr), Error);
  }
}

// The collectives of a tensor-parallel graph have no row in the op-kind table: refused by kind,
// before any body is looked for.
TEST(CanImplement, RefusesAKindWithoutARow) {
  const model::ModelSpec spec = model::load_model("llama-3.2-1b");
  const model::Scenario scenario = model::make_scenario(spec, 1, 128, 0, 2);
  const model::Graph g = model::build_graph(spec, scenario, "decode");
  int refused = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind->name() != "all-reduce-residual") continue;
    const executor::Support s = executor::can_implement(g, op.index);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(
        s.reason,
        "op " + op.name + " (all-reduce-residual): no tile body for op kind 'all-reduce-residual'");
    EXPECT_THROW(executor::tile_body_name(g, op.index), Error);
    ++refused;
  }
  EXPECT_EQ(refused, 32);  // o's and down's in each of 16 layers
}

TEST(TileBodyName, FollowsTheTileShape) {
  const std::string ns = "megacut::tiles::";
  const model::Graph decode = build_stage("llama1b", 1, 128, 1);
  const model::Graph prefill = build_stage("llama1b", 128, 0, 1);
  const model::Graph decode32 = build_stage("llama1b", 1, 128, 32);
  auto name = [](const model::Graph& g, const std::string& op) {
    for (const model::Op& o : g.ops()) {
      if (o.name == op) return executor::tile_body_name(g, o.index);
    }
    return std::string("?");
  };
  // The compiler's spelling of each type: LinearFusion plain, normed, normed_glu are 0, 1, 2.
  auto fusion = [&](int value) {
    return ", (" + ns + "LinearFusion)" + std::to_string(value) + ">";
  };
  EXPECT_EQ(name(decode, "layers.0.attn.qkv"),
            ns + "LinearStreamTile<32, 1, __nv_bfloat16" + fusion(1));
  EXPECT_EQ(name(decode32, "layers.0.attn.qkv"),
            ns + "LinearStreamTile<32, 4, __nv_bfloat16" + fusion(1));
  EXPECT_EQ(name(decode, "layers.0.mlp.gate_up"),
            ns + "LinearStreamTile<128, 1, __nv_bfloat16" + fusion(2));
  EXPECT_EQ(name(decode, "layers.0.attn.o"),
            ns + "LinearStreamTile<16, 1, __nv_bfloat16" + fusion(0));
  EXPECT_EQ(name(decode, "layers.0.mlp.down"),
            ns + "LinearStreamTile<16, 1, __nv_bfloat16" + fusion(0));
  EXPECT_EQ(name(prefill, "layers.0.attn.qkv"), ns + "LinearMmaTile<32, __nv_bfloat16>");
  EXPECT_EQ(name(decode, "lm_head"), ns + "LinearStreamTile<128, 1, float" + fusion(0));
  EXPECT_EQ(name(prefill, "layers.0.mlp.gate_up"), ns + "LinearMmaTile<128, __nv_bfloat16>");
  EXPECT_EQ(name(decode, "layers.0.attn.attention"), ns + "QkvAttentionDecodeTile<64>");
  EXPECT_EQ(name(prefill, "layers.0.attn.attention"), ns + "AttentionPrefillTile<64>");
  EXPECT_EQ(name(prefill, "final_norm"), ns + "RmsNormTile");
}

}  // namespace
}  // namespace megacut::testing
