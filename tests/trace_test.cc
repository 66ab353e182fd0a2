// The Chrome trace of a small simulated run, against a golden file kept beside this test.
// After an intended change, regenerate it with scripts/regen-golden.sh and review the diff.
#include "simulator/trace.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "model/composition.h"
#include "model/error.h"
#include "model/trace_events.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::simulator {
namespace {

// tiny-llama at batch 1 with a 4-token prompt on a 4-SM synthetic device: small enough to
// read, and it holds every kind of span (conv kernels, an mk kernel, tasks on each SM).
nlohmann::json small_trace() {
  testing::SyntheticDevice device;
  device.sm_count = 4;
  Simulator sim(testing::synthetic_profile("tiny-llama", {1}, 4, device),
                SimOptions{.record_spans = true});
  const auto composition = model::parse_composition(
      "prefill: mk[0:13] conv[13:]; decode: conv[0:2] mk[2:]", sim.stage_shapes(1));
  return chrome_trace(sim.simulate(composition, 1), sim);
}

TEST(GoldenTraceTest, SmallTraceMatchesGolden) {
  const std::string path = std::string(MEGACUT_TEST_SOURCE_DIR) + "/golden/simulator_trace.json";
  const std::string text = model::trace_text(small_trace());
  if (const char* regen = std::getenv("MEGACUT_REGEN_GOLDEN"); regen && *regen == '1') {
    std::ofstream(path) << text;
    GTEST_SKIP() << "regenerated " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing: run scripts/regen-golden.sh";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "the simulated trace changed; if intended, run "
                                   "scripts/regen-golden.sh and commit the new golden file";
}

TEST(TraceTest, EventsAreCompleteSpansOnKnownThreads) {
  const nlohmann::json trace = small_trace();
  int kernels = 0, tasks = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X");
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    const int tid = e["tid"];
    if (e["cat"] == "kernel") {
      ++kernels;
      EXPECT_EQ(tid, 0);
      EXPECT_TRUE(e["args"].contains("grid"));
      EXPECT_TRUE(e["args"].contains("registers per thread"));
    }
    if (e["cat"] == "task") {
      ++tasks;
      EXPECT_GE(tid, 2);
      EXPECT_LT(tid, 2 + 4);
    }
  }
  // prefill (18 ops): one mk kernel + 5 conv kernels; decode: 2 conv kernels + one mk kernel.
  EXPECT_EQ(kernels, 1 + 5 + 2 + 1);
  EXPECT_GT(tasks, 0);
}

TEST(TraceTest, TextFormIsTheSameJson) {
  const nlohmann::json trace = small_trace();
  EXPECT_EQ(nlohmann::json::parse(model::trace_text(trace)), trace);
}

TEST(TraceTest, NeedsRecordedSpans) {
  Simulator sim(testing::synthetic_profile("tiny-llama", {1}, 4));
  const auto p = sim.simulate(model::parse_composition("mk", sim.stage_shapes(1)), 1);
  EXPECT_THROW(chrome_trace(p, sim), Error);
}

}  // namespace
}  // namespace megacut::simulator
