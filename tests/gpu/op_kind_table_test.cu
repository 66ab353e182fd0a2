// Host only (run everywhere): the op-kind table's list of every body it may pick (for_each_body,
// which prepare_kernels readies before a graph is captured) holds every body it picks for the
// ops of the bundled models, and each body once per row that may pick it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "executor/op_kind_table.cuh"
#include "executor/op_support.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/scenario.h"

namespace megacut::testing {
namespace {

TEST(OpKindTable, EveryBodyItPicksIsOneItListsForPreparation) {
  std::map<std::string, int> listed;
  executor::op_kind_table::for_each_body(
      [&]<class Body>() { ++listed[executor::op_kind_table::type_name<Body>()]; });
  std::set<std::string> picked;
  for (const std::string& name : model::bundled_models()) {
    const model::ModelSpec spec = model::load_model(name);
    for (int64_t batch : {1, 3, 8, 32, 100}) {
      const model::Scenario scenario = model::make_scenario(spec, batch, 128);
      for (const std::string& stage : scenario.stage_names()) {
        const model::Graph g = model::build_graph(spec, scenario, stage);
        for (int op = 0; op < g.op_count(); ++op) picked.insert(executor::tile_body_name(g, op));
      }
    }
  }
  for (const std::string& body : picked) EXPECT_TRUE(listed.count(body)) << body;
  // Four widths by four row blocks of the weight-streaming body, for each of bf16 plain, f32
  // plain, normed and normed_glu, and the tensor-core GEMM at four widths for bf16 and f32.
  int streamed = 0, gemm = 0;
  for (const auto& [body, rows] : listed) {
    streamed += body.find("LinearStreamTile<") != std::string::npos;
    gemm += body.find("LinearMmaTile<") != std::string::npos;
  }
  EXPECT_EQ(streamed, 64);
  EXPECT_EQ(gemm, 8);
  // The embedding body serves embedding and step-embedding; linear-residual shares its bodies
  // with linear's.
  EXPECT_EQ(listed.at("megacut::tiles::EmbeddingTile"), 2);
  EXPECT_EQ(listed.at("megacut::tiles::LinearStreamTile<16, 1, __nv_bfloat16, "
                      "(megacut::tiles::LinearFusion)0>"),
            2);
}

}  // namespace
}  // namespace megacut::testing
