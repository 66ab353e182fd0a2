// The model IR against published parameter counts and closed-form byte and FLOP totals, and
// the structural invariants of every tile graph.
#include <gtest/gtest.h>

#include <set>

#include "model/batch_list.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/stage_builder.h"
#include "tests/support/error_of.h"

namespace megacut::model {
namespace {

Graph stage_graph(const std::string& model, const std::string& stage, int64_t batch,
                  int64_t prompt_len = kDefaultPromptLen) {
  const ModelSpec spec = load_model(model);
  return build_graph(spec, make_scenario(spec, batch, prompt_len), stage);
}

TEST(ModelTest, LlamaParameterCountMatchesPublishedModel) {
  // Llama-3.2-1B with tied embeddings: 1,235,814,400 parameters, 2.47 GB in bf16.
  const Graph g = stage_graph("llama-3.2-1b", "decode", 1);
  EXPECT_EQ(g.parameter_count(), 1'235'814'400);
  EXPECT_NEAR(g.parameter_bytes() / 1e9, 2.47, 0.0247);
}

TEST(ModelTest, Qwen3ParameterCountMatchesPublishedModel) {
  // Qwen3-0.6B with tied embeddings: 596,049,920 parameters (q/k norms included).
  const Graph g = stage_graph("qwen3-0.6b", "decode", 1);
  EXPECT_EQ(g.parameter_count(), 596'049'920);
}

TEST(ModelTest, OpCountsPerLayer) {
  // Prefill: Llama 12 ops per layer, Qwen3 13 (qk-norm); decode fuses the norms, silu-mul and
  // residual adds into the linears, and qk-norm, rope and kv-append into attention: 5 for both.
  // Plus embedding, final norm, lm-head, argmax.
  EXPECT_EQ(stage_graph("llama-3.2-1b", "prefill", 1).op_count(), 16 * 12 + 4);
  EXPECT_EQ(stage_graph("llama-3.2-1b", "decode", 1).op_count(), 16 * 5 + 4);
  EXPECT_EQ(stage_graph("qwen3-0.6b", "prefill", 2).op_count(), 28 * 13 + 4);
  EXPECT_EQ(stage_graph("qwen3-0.6b", "decode", 2).op_count(), 28 * 5 + 4);
}

TEST(ModelTest, DecodeLayersFuseIntoTheirLinears) {
  const Graph g = stage_graph("llama-3.2-1b", "decode", 8);
  std::vector<std::string> layer0;
  for (const Op& op : g.ops()) {
    if (op.layer == 0) layer0.push_back(op.name + " " + std::string(op.kind->name()));
  }
  EXPECT_EQ(layer0, (std::vector<std::string>{
                        "layers.0.attn.qkv norm-linear", "layers.0.attn.attention qkv-attention",
                        "layers.0.attn.o linear-residual", "layers.0.mlp.gate_up norm-linear",
                        "layers.0.mlp.down linear-residual"}));
  for (const Op& op : g.ops()) {
    if (op.name == "layers.0.mlp.gate_up") {
      // silu(gate) * up: gate, up and the norm's scale; 8192 features, tiles of 64 (128 weight
      // rows each, as the unfused gate_up's).
      EXPECT_TRUE(norm_linear_glu(op));
      ASSERT_EQ(op.weights.size(), 3u);
      EXPECT_EQ(g.tensor(op.weights[1]).name, "model.layers.0.mlp.up_proj.weight");
      EXPECT_EQ(g.tensor(op.output).shape, (std::vector<int64_t>{8, 8192}));
      EXPECT_EQ(op.tiling.tile_cols, 64);
    }
    if (op.name == "layers.0.mlp.down") {
      EXPECT_EQ(g.tensor(op.inputs[0]).name, "layers.0.mlp_act");
      // The residual stream: the attention block's sum, added after the product.
      EXPECT_EQ(g.tensor(op.inputs[1]).name, "layers.0.attn_residual");
    }
    if (op.name == "layers.0.attn.qkv") {
      // q, k, v, then the norm's scale; eps from the config.
      ASSERT_EQ(op.weights.size(), 4u);
      EXPECT_EQ(g.tensor(op.weights.back()).name, "model.layers.0.input_layernorm.weight");
      EXPECT_TRUE(op.attrs.has("eps"));
    }
  }
}

// Closed forms for a decode step at batch B with context P + 1: every linear weight is read
// once (one row tile), linear FLOPs are 2 B per weight element, attention scores (P + 1) keys
// for each of B * heads queries at 4 head_dim FLOPs per key.
class DecodeClosedForm : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(DecodeClosedForm, LinearAndAttentionTotals) {
  const auto& [name, batch] = GetParam();
  const ModelSpec spec = load_model(name);
  const DecoderConfig& c = spec.decoder;
  const Graph g = build_graph(spec, make_scenario(spec, batch, 128), "decode");
  const int64_t per_layer_weights =
      c.hidden_size * (c.num_heads + 2 * c.num_kv_heads) * c.head_dim +
      c.num_heads * c.head_dim * c.hidden_size + 3 * c.hidden_size * c.intermediate_size;
  const int64_t linear_weights = c.num_layers * per_layer_weights + c.vocab_size * c.hidden_size;
  int64_t linear_flops = 0, linear_weight_bytes = 0, stream_bytes = 0, attention_flops = 0;
  for (const Op& op : g.ops()) {
    const TileCost cost = g.op_cost(op.index);
    stream_bytes += cost.stream_bytes;
    const std::string_view kind = op.kind->name();
    if (kind == "linear" || kind == "lm-head" || kind == "norm-linear" ||
        kind == "linear-residual") {
      const int64_t k = g.tensor(op.inputs[0]).shape.back();
      const int64_t tiles = op.tiling.col_tiles();
      // Reads: activations (rows x K per tile) plus the weight slice (cols x K per tile, glu
      // twice as many rows); the fused kinds also the norm's scale (K per tile) or the residual
      // (once), and their few FLOPs an element of x or of the output.
      int64_t other_reads = tiles * batch * k * 2, other_flops = 0;
      if (kind == "norm-linear") {
        other_reads += tiles * k * 2;
        other_flops = tiles * 3 * batch * k;
        if (norm_linear_glu(op)) other_flops += 5 * batch * op.tiling.cols;
      } else if (kind == "linear-residual") {
        other_reads += batch * op.tiling.cols * 2;
        other_flops = batch * op.tiling.cols;
      }
      linear_flops += cost.flops - other_flops;
      linear_weight_bytes += cost.bytes_read - other_reads;
    }
    // qkv-attention also normalizes and rotates: 20 FLOPs a query element.
    if (kind == "qkv-attention")
      attention_flops += cost.flops - 20 * op.tiling.rows * op.tiling.cols;
  }
  EXPECT_EQ(linear_flops, 2 * batch * linear_weights);
  EXPECT_EQ(linear_weight_bytes, 2 * linear_weights);
  // The weight matrices, and the 128 cached keys and values each query head reads, are what the
  // tiles may load ahead.
  const int64_t cached_bytes = c.num_layers * batch * c.num_heads * 2 * 128 * c.head_dim * 2;
  EXPECT_EQ(stream_bytes, 2 * linear_weights + cached_bytes);
  EXPECT_EQ(attention_flops, c.num_layers * 4 * batch * c.num_heads * c.head_dim * (128 + 1));
}

INSTANTIATE_TEST_SUITE_P(Models, DecodeClosedForm,
                         ::testing::Combine(::testing::Values("llama-3.2-1b", "qwen3-0.6b",
                                                              "tiny-llama", "tiny-qwen3"),
                                            ::testing::Values(1, 3, 8, 32)));

TEST(ModelTest, PrefillCausalAttentionFlops) {
  // Causal prefill of P tokens: query at position p scores p + 1 keys, so sum = P (P + 1) / 2
  // per head and sequence.
  const ModelSpec spec = load_model("tiny-qwen3");
  const DecoderConfig& c = spec.decoder;
  const int64_t batch = 3, p = 37;
  const Graph g = build_graph(spec, make_scenario(spec, batch, p), "prefill");
  int64_t flops = 0;
  for (const Op& op : g.ops()) {
    if (op.kind->name() == "attention") flops += g.op_cost(op.index).flops;
  }
  EXPECT_EQ(flops, c.num_layers * batch * c.num_heads * 4 * c.head_dim * p * (p + 1) / 2);
}

class GraphInvariants
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, int64_t>> {};

TEST_P(GraphInvariants, EdgesAreValidAndOrderIsTopological) {
  const auto& [name, stage, batch] = GetParam();
  const Graph g = stage_graph(name, stage, batch, 19);
  for (TaskId id = 0; id < g.task_count(); ++id) {
    const TaskRef self = g.task(id);
    ASSERT_LT(self.tile, g.op(self.op).tiling.count());
    for (TaskId dep : g.task_deps(id)) {
      ASSERT_GE(dep, 0);
      ASSERT_LT(dep, id) << "edge against execution order into " << g.op(self.op).name;
      ASSERT_LT(g.task(dep).op, self.op);
    }
  }
  // Every op that reads an activation produced in the stage has at least one edge per tile.
  for (const Op& op : g.ops()) {
    bool has_producer = false;
    for (int in : op.inputs) has_producer = has_producer || g.producer(in) >= 0;
    if (!has_producer) continue;
    for (int64_t t = 0; t < op.tiling.count(); ++t) {
      EXPECT_FALSE(g.task_deps(g.task_id(op.index, t)).empty()) << op.name << " tile " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, GraphInvariants,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3"),
                                            ::testing::Values("prefill", "decode"),
                                            ::testing::Values(1, 3, 8)));

TEST(ModelTest, AttentionPrefillDependsOnKeysOfItsSequenceUpToItself) {
  // Prefill of P = 128 at batch 2: an attention tile of query rows [r0, r1) in sequence
  // b = r0 / P reads new keys at rows [P b, r1) of kv-append's output, and nothing else of it.
  // (Qwen3-0.6B's kv-append tiles are 32 rows, its attention tiles 64: causality shows.)
  constexpr int64_t p = 128;
  const Graph g = stage_graph("qwen3-0.6b", "prefill", 2, p);
  for (const Op& op : g.ops()) {
    if (op.kind->name() != "attention") continue;
    const int kv_op = g.producer(op.inputs[1]);
    const int q_op = g.producer(op.inputs[0]);
    for (int64_t t = 0; t < op.tiling.count(); ++t) {
      const Box out = op.tiling.tile_box(t);
      const int64_t head_dim = op.attrs.i("head_dim");
      const int64_t kv_head =
          out.col_begin / (op.attrs.i("heads") / op.attrs.i("kv_heads")) / head_dim;
      const int64_t kv_cols = op.attrs.i("kv_heads") * head_dim;
      const int64_t first_row = out.row_begin / p * p;
      std::set<TaskId> expected;
      for (int64_t col : {kv_head * head_dim, kv_cols + kv_head * head_dim}) {
        for (int64_t tile : g.op(kv_op).tiling.tiles_overlapping(
                 Box{first_row, out.row_end, col, col + head_dim})) {
          expected.insert(g.task_id(kv_op, tile));
        }
      }
      for (int64_t tile : g.op(q_op).tiling.tiles_overlapping(out)) {
        expected.insert(g.task_id(q_op, tile));
      }
      const std::vector<TaskId> deps = g.task_deps(g.task_id(op.index, t));
      EXPECT_EQ(std::set<TaskId>(deps.begin(), deps.end()), expected) << op.name << " tile " << t;
    }
  }
}

TEST(ModelTest, PrefillAttentionTilesHoldAtMost128QueryVectors) {
  // Rows per tile: the largest divisor of P up to 64 and up to 128 / G, G the query heads per
  // KV head. Llama-3.2-1B (32 heads, 8 KV heads, G = 4): 32 rows, so 128 / 32 x 8 = 32 tiles
  // at batch 1; Qwen3-0.6B (16 and 8, G = 2): 64 rows, 16 tiles; P = 37 (prime): 1 row.
  EXPECT_EQ(build::attention_rows(128, 4), 32);
  EXPECT_EQ(build::attention_rows(128, 2), 64);
  EXPECT_EQ(build::attention_rows(128, 1), 64);
  EXPECT_EQ(build::attention_rows(128, 256), 1);
  EXPECT_EQ(build::attention_rows(37, 4), 1);
  EXPECT_EQ(build::attention_rows(48, 4), 24);
  const auto tiles = [](const char* model) {
    const Graph g = stage_graph(model, "prefill", 1, 128);
    for (const Op& op : g.ops()) {
      if (op.kind->name() == "attention") return std::pair{op.tiling.tile_rows, op.tiling.count()};
    }
    return std::pair<int64_t, int64_t>{0, 0};
  };
  EXPECT_EQ(tiles("llama-3.2-1b"), (std::pair<int64_t, int64_t>{32, 32}));
  EXPECT_EQ(tiles("qwen3-0.6b"), (std::pair<int64_t, int64_t>{64, 16}));
}

TEST(ModelTest, TaskLookupRoundTrips) {
  const Graph g = stage_graph("tiny-qwen3", "prefill", 2, 16);
  for (TaskId id = 0; id < g.task_count(); ++id) {
    const TaskRef ref = g.task(id);
    ASSERT_EQ(g.task_id(ref.op, ref.tile), id);
  }
}

TEST(ModelTest, OpKindRegistryKnowsEveryBuiltinKind) {
  for (const char* kind :
       {"embedding", "rmsnorm", "linear", "qk-norm", "rope", "kv-append", "attention",
        "qkv-attention", "silu-mul", "residual-add", "norm-linear", "linear-residual", "lm-head",
        "argmax", "embedding-shard", "all-reduce", "all-reduce-residual", "all-gather"}) {
    EXPECT_NE(find_op_kind(kind), nullptr) << kind;
  }
  EXPECT_EQ(find_op_kind("conv1d-but-not-registered"), nullptr);
  EXPECT_THROW(op_kind("nope"), Error);
}

Graph tp_graph(const std::string& model, const std::string& stage, int64_t batch, int64_t tp) {
  const ModelSpec spec = load_model(model);
  return build_graph(spec, make_scenario(spec, batch, kDefaultPromptLen, 0, tp), stage);
}

const Op& op_named(const Graph& g, const std::string& name) {
  for (const Op& op : g.ops()) {
    if (op.name == name) return op;
  }
  throw Error("no op " + name);
}

// Megatron slicing over 2 GPUs, one rank's decode graph: qkv and gate_up keep half the heads and
// features, o and down read half their inputs and all-reduce their partial sums with the
// residual (no linear-residual: the residual is added once, after the sum).
TEST(TensorParallelGraphTest, DecodeLayersSliceMegatronStyle) {
  const Graph g = tp_graph("llama-3.2-1b", "decode", 4, 2);
  std::vector<std::string> layer0;
  for (const Op& op : g.ops()) {
    if (op.layer == 0) layer0.push_back(op.name + " " + std::string(op.kind->name()));
  }
  EXPECT_EQ(layer0, (std::vector<std::string>{
                        "layers.0.attn.qkv norm-linear", "layers.0.attn.attention qkv-attention",
                        "layers.0.attn.o linear", "layers.0.attn.o_all_reduce all-reduce-residual",
                        "layers.0.mlp.gate_up norm-linear", "layers.0.mlp.down linear",
                        "layers.0.mlp.down_all_reduce all-reduce-residual"}));
  // 32 / 2 query heads and 8 / 2 KV heads of 64.
  EXPECT_EQ(g.tensor(op_named(g, "layers.0.attn.qkv").output).shape,
            (std::vector<int64_t>{4, (16 + 2 * 4) * 64}));
  EXPECT_EQ(op_named(g, "layers.0.attn.attention").attrs.i("heads"), 16);
  EXPECT_EQ(op_named(g, "layers.0.attn.attention").attrs.i("kv_heads"), 4);
  EXPECT_EQ(g.tensor(op_named(g, "layers.0.mlp.gate_up").output).shape,
            (std::vector<int64_t>{4, 4096}));
  const Op& down = op_named(g, "layers.0.mlp.down");
  EXPECT_EQ(g.tensor(down.weights[0]).shape, (std::vector<int64_t>{2048, 4096}));
  const Op& reduce = op_named(g, "layers.0.mlp.down_all_reduce");
  EXPECT_EQ(reduce.inputs[0], down.output);
  EXPECT_EQ(g.tensor(reduce.inputs[1]).name, "layers.0.attn_residual");
  EXPECT_EQ(reduce.attrs.i("ranks"), 2);
  // The vocabulary too: half the table (tied to the head), an all-reduce after the lookup and
  // an all-gather of the logits before the argmax.
  EXPECT_EQ(g.tensor(op_named(g, "embed").weights[0]).shape, (std::vector<int64_t>{64128, 2048}));
  EXPECT_EQ(std::string(op_named(g, "embed_all_reduce").kind->name()), "all-reduce");
  // Every rank runs this graph: the lookup learns its rank, and so its ids, from a stage input.
  const Op& embed = op_named(g, "embed");
  EXPECT_EQ(std::string(embed.kind->name()), "embedding-shard");
  EXPECT_EQ(g.tensor(embed.inputs.at(1)).name, "tp_rank");
  EXPECT_EQ(g.tensor(embed.inputs.at(1)).role, TensorRole::input);
  EXPECT_EQ(g.tensor(op_named(g, "lm_head").output).shape, (std::vector<int64_t>{4, 64128}));
  const Op& gather = op_named(g, "lm_head_all_gather");
  EXPECT_EQ(g.tensor(gather.output).shape, (std::vector<int64_t>{4, 128256}));
  EXPECT_EQ(op_named(g, "argmax").inputs[0], gather.output);
}

// A rank holds half of every matrix and table and all of the norms' scales (2 a layer and the
// final one, 2048 each): (1,235,814,400 - 33 * 2048) / 2 + 33 * 2048.
TEST(TensorParallelGraphTest, ARankHoldsHalfOfEveryMatrix) {
  const int64_t norms = 33 * 2048;
  EXPECT_EQ(tp_graph("llama-3.2-1b", "decode", 1, 2).parameter_count(),
            (1'235'814'400 - norms) / 2 + norms);
  EXPECT_EQ(tp_graph("llama-3.2-1b", "prefill", 1, 2).parameter_count(),
            (1'235'814'400 - norms) / 2 + norms);
}

// What a rank sends, as a ring collective does: an all-reduce of S bytes over N GPUs sends
// 2 S (N - 1) / N, an all-gather of S bytes S (N - 1) / N. Decode at batch 1 over 2 GPUs: 33
// all-reduces of 2048 bf16 (4096 bytes each, 4096 sent) and the gather of 128256 f32 logits
// (513,024 bytes, 256,512 sent). One GPU sends nothing.
TEST(TensorParallelGraphTest, LinkBytesAreARingCollectives) {
  EXPECT_EQ(tp_graph("llama-3.2-1b", "decode", 1, 2).total_cost().link_bytes, 33 * 4096 + 256'512);
  EXPECT_EQ(tp_graph("llama-3.2-1b", "decode", 1, 4).total_cost().link_bytes,
            33 * (2 * 4096 * 3 / 4) + 513'024 * 3 / 4);
  EXPECT_EQ(tp_graph("llama-3.2-1b", "decode", 1, 1).total_cost().link_bytes, 0);
}

// Every edge of a sliced graph still runs forward, prefill and decode.
TEST(TensorParallelGraphTest, SlicedGraphsKeepTheirInvariants) {
  for (const char* stage : {"prefill", "decode"}) {
    const Graph g = tp_graph("tiny-llama", stage, 3, 2);
    for (TaskId id = 0; id < g.task_count(); ++id) {
      for (TaskId dep : g.task_deps(id)) ASSERT_LT(g.task(dep).op, g.task(id).op) << stage;
    }
    // Per layer 7 ops in decode, 12 in prefill (each residual add an all-reduce's); the
    // embedding, final norm, head and argmax and the two collectives around them.
    const int layers = load_model("tiny-llama").decoder.num_layers;
    EXPECT_EQ(g.op_count(), layers * (std::string(stage) == "decode" ? 7 : 12) + 6) << stage;
  }
}

// What does not slice says so, naming the config and the field.
TEST(TensorParallelGraphTest, DegreesThatDoNotDivideAreRefused) {
  using testing::error_of;
  const ModelSpec llama = load_model("llama-3.2-1b");
  EXPECT_NE(error_of([&] {
              make_scenario(llama, 1, 128, 0, 3);
            }).find("num_attention_heads 32 does not divide by 3 GPUs"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              make_scenario(load_model("tiny-qwen3"), 1, 16, 0, 2);
            }).find("vocab_size 257 does not divide by 2 GPUs"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              make_scenario(llama, 1, 128, 0, 16);
            }).find("--tp: 16 is not a tensor-parallel degree megacut models (1 to 8)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { make_scenario(llama, 1, 128, 0, 0); }).find("--tp: 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              make_scenario(load_model("qwen3-tts-12hz-0.6b"), 1, 16, 0, 2);
            }).find("is a TTS pipeline; tensor parallel slices LLMs only"),
            std::string::npos);
}

// Every command reads --batch with this one parser, so each refuses the same lists.
TEST(BatchListTest, OneParserForEveryCommand) {
  using testing::error_of;
  EXPECT_EQ(parse_batch_list("8,1,4"), (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(parse_batch("32"), 32);
  EXPECT_EQ(parse_batch_list("65536"), (std::vector<int64_t>{kMaxBatch}));
  // An empty list is not "every batch": only a command given no --batch means that.
  EXPECT_EQ(error_of([] { parse_batch_list(""); }),
            "--batch: empty list (expected a list like 1,2,4,8)");
  // Listed twice is an error, never silently de-duplicated.
  EXPECT_EQ(error_of([] { parse_batch_list("1,1"); }), "--batch: 1 is listed twice in '1,1'");
  EXPECT_EQ(error_of([] { parse_batch_list("1,65537"); }),
            "--batch: 65537 in '1,65537' is larger than the largest batch megacut models (65536)");
  EXPECT_EQ(error_of([] { parse_batch("9223372036854775807"); }),
            "--batch: 9223372036854775807 in '9223372036854775807' is larger than the largest "
            "batch megacut models (65536)");
  EXPECT_EQ(error_of([] { parse_batch("99999999999999999999"); }),
            "--batch: 99999999999999999999 in '99999999999999999999' is larger than the largest "
            "batch megacut models (65536)");
  EXPECT_EQ(error_of([] { parse_batch("-2"); }),
            "--batch: '-2' in '-2' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(error_of([] { parse_batch(" 2"); }),
            "--batch: ' 2' in ' 2' is not a positive integer (expected a list like 1,2,4,8)");
  EXPECT_EQ(error_of([] { parse_batch("1,2"); }), "--batch: one batch size, not a list ('1,2')");
  EXPECT_EQ(error_of([] { parse_batch_list("x", "--sizes"); }),
            "--sizes: 'x' in 'x' is not a positive integer (expected a list like 1,2,4,8)");
}

// Each item of the list, whole, is a positive integer: an empty item (a stray comma), a sign, a
// space, a fraction or hex is refused, naming the item; a negative beyond 64 bits is not
// "too large".
TEST(BatchListTest, EveryItemIsAWholePositiveInteger) {
  using testing::error_of;
  EXPECT_EQ(parse_batch_list("1"), (std::vector<int64_t>{1}));
  EXPECT_EQ(parse_batch_list("32,1,2,16,4,8"), (std::vector<int64_t>{1, 2, 4, 8, 16, 32}));
  const auto refused = [](std::string_view text) {
    return error_of([&] { parse_batch_list(text); });
  };
  const auto not_positive = [](std::string_view item, std::string_view text) {
    return "--batch: '" + std::string(item) + "' in '" + std::string(text) +
           "' is not a positive integer (expected a list like 1,2,4,8)";
  };
  EXPECT_EQ(refused("1,2,"), not_positive("", "1,2,"));
  EXPECT_EQ(refused(",1"), not_positive("", ",1"));
  EXPECT_EQ(refused("1,,2"), not_positive("", "1,,2"));
  EXPECT_EQ(refused(","), not_positive("", ","));
  EXPECT_EQ(refused("0"), not_positive("0", "0"));
  EXPECT_EQ(refused("4,0"), not_positive("0", "4,0"));
  EXPECT_EQ(refused("-0"), not_positive("-0", "-0"));
  EXPECT_EQ(refused("+4"), not_positive("+4", "+4"));
  EXPECT_EQ(refused("4 "), not_positive("4 ", "4 "));
  EXPECT_EQ(refused("1, 2"), not_positive(" 2", "1, 2"));
  EXPECT_EQ(refused("1.5"), not_positive("1.5", "1.5"));
  EXPECT_EQ(refused("0x10"), not_positive("0x10", "0x10"));
  EXPECT_EQ(refused("8;16"), not_positive("8;16", "8;16"));
  EXPECT_EQ(refused("-99999999999999999999"),
            not_positive("-99999999999999999999", "-99999999999999999999"));
  EXPECT_EQ(refused("99999999999999999999x"),
            not_positive("99999999999999999999x", "99999999999999999999x"));
  // The first bad item is named, whatever follows.
  EXPECT_EQ(refused("2,x,2"), not_positive("x", "2,x,2"));
  EXPECT_EQ(refused("2,2,x"), "--batch: 2 is listed twice in '2,2,x'");
  EXPECT_EQ(error_of([] { parse_batch(""); }),
            "--batch: empty list (expected a list like 1,2,4,8)");
}

}  // namespace
}  // namespace megacut::model
