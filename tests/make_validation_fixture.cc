// Writes a validation.json of tiny-llama for command-line tests of megacut report, without a
// GPU: make_validation_fixture PROFILE.json OUT_DIR. Each batch's candidates are predicted from
// the profile as megacut validate predicts them; their "measurements" are those predictions
// moved by -3%, 0% or +4% in turn, and the last candidate of each batch is left unmeasured. The
// validation names PROFILE.json as given, so megacut report finds it from the same directory.
// Beside the profile it also writes trace-b1.json, standing in for the profiler's trace of the
// all-conventional run: the simulator's trace of it, so that the report draws a timeline.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/error.h"
#include "model/profile.h"
#include "model/stats.h"
#include "model/trace_events.h"
#include "planner/plan.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "validation/validation.h"

namespace mp = megacut::planner;
namespace mv = megacut::validation;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PROFILE.json OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const megacut::model::Profile profile = megacut::model::read_profile(argv[1]);
    const mp::Plan plan = mp::make_plan(profile, {.batches = {1, 2}, .top_k = 2, .threads = 1});
    mv::Validation v;
    v.model = profile.model_name;
    v.device = "test GPU";
    v.profile = argv[1];
    v.profile_device = profile.device.name;
    v.prompt_len = profile.prompt_len;
    v.provider = "ours";
    v.runs = 20;
    v.warmup = 2;
    v.top_k = plan.top_k;
    v.category = std::string(mp::category_name(plan.category));
    const double moves[] = {0.97, 1.0, 1.04};
    for (const mp::BatchPlan& b : plan.batches) {
      mv::BatchValidation bv;
      bv.batch = b.batch;
      const auto candidates = mv::validation_candidates(b, plan.stages, {}, true);
      bv.candidates = mv::predict_candidates(profile, {}, b.batch, candidates);
      for (size_t i = 0; i + 1 < bv.candidates.size(); ++i) {
        mv::CandidateResult& c = bv.candidates[i];
        if (!c.predicted) continue;
        const double move = moves[i % 3];
        c.measured = mv::Measured{
            megacut::model::constant_stats(c.predicted->ttfo_ns * move / 1e6, "ms"),
            megacut::model::constant_stats(c.predicted->decode_step_ns * move / 1e6, "ms")};
      }
      bv.candidates.back().measurement_error = "not measured (fixture)";
      bv.metrics = mv::score_batch(bv.candidates);
      v.batches.push_back(std::move(bv));
    }
    megacut::simulator::Simulator sim(profile, {.record_spans = true});
    const auto conv =
        megacut::model::uniform_composition(sim.stage_shapes(1), megacut::model::RegionKind::conv);
    const std::filesystem::path trace =
        std::filesystem::path(argv[1]).parent_path() / "trace-b1.json";
    std::ofstream(trace) << megacut::model::trace_text(
        megacut::simulator::chrome_trace(sim.simulate(conv, 1), sim));
    std::filesystem::create_directories(argv[2]);
    const std::filesystem::path out = std::filesystem::path(argv[2]) / "validation.json";
    std::ofstream file(out);
    if (!file || !(file << mv::validation_to_json(v).dump(1) << "\n")) {
      throw megacut::Error(out.string() + ": cannot write file");
    }
  } catch (const std::exception& e) {
    std::cerr << "make_validation_fixture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
