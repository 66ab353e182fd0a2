// profile.json: round trip, and errors that name the file and the field.
#include "model/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <vector>

#include "model/error.h"
#include "model/stats.h"
#include "tests/support/error_of.h"
#include "tests/support/synthetic_profile.h"

namespace megacut::simulator {
namespace {

const model::Profile& tiny() {
  static const model::Profile p = testing::synthetic_profile("tiny-llama", {1, 4}, 16);
  return p;
}

std::string error_of(const nlohmann::json& j) {
  try {
    model::profile_from_json(j, "llama.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// An edit of a good profile's JSON and the error reading it must give.
struct ProfileEdit {
  std::function<void(nlohmann::json&)> edit;
  std::string message;
};

void expect_errors(const nlohmann::json& good, const std::vector<ProfileEdit>& edits) {
  for (const ProfileEdit& e : edits) {
    nlohmann::json j = good;
    e.edit(j);
    EXPECT_EQ(error_of(j), e.message);
  }
}

TEST(ProfileTest, JsonRoundTrip) {
  const nlohmann::json j = model::profile_to_json(tiny());
  EXPECT_EQ(j["schema"], "megacut.profile/1");
  const model::Profile back = model::profile_from_json(j, "tiny.json");
  EXPECT_TRUE(back.same_content(tiny()));
  EXPECT_EQ(back.source, "tiny.json");
  EXPECT_EQ(model::profile_to_json(back), j);
}

TEST(ProfileTest, FileRoundTrip) {
  const auto path = std::filesystem::temp_directory_path() / "megacut_profile_test.json";
  model::write_profile(tiny(), path);
  const model::Profile back = model::read_profile(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(back.same_content(tiny()));
  EXPECT_EQ(back.batch_sizes(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(back.batch(4)->stage("decode")->op(7)->name, "layers.1.attn.attention");
}

TEST(ProfileTest, StandaloneKernelTimesRoundTripAndMayBeAbsent) {
  model::Profile p = tiny();
  model::ConvKernel& conv = *p.batches[0].stages[1].ops[3].conv;
  EXPECT_FALSE(conv.standalone_cold_ns.has_value());
  conv.standalone_cold_ns = model::compute_stats(std::vector<double>{2500, 2600, 2550}, "ns");
  conv.standalone_warm_ns = conv.duration_ns;
  const nlohmann::json j = model::profile_to_json(p);
  EXPECT_TRUE(j["batches"][0]["stages"][1]["ops"][3]["conv"].contains("standalone_cold_ns"));
  EXPECT_FALSE(j["batches"][0]["stages"][1]["ops"][4]["conv"].contains("standalone_cold_ns"));
  EXPECT_TRUE(model::profile_from_json(j, "tiny.json").same_content(p));

  nlohmann::json bad = j;
  bad["batches"][0]["stages"][1]["ops"][3]["conv"]["standalone_warm_ns"].erase("p50");
  EXPECT_EQ(error_of(bad),
            "llama.json: field 'batches[0].stages[1].ops[3].conv.standalone_warm_ns.p50': missing");
}

// A kernel of ours may carry its step under PDL; a cuBLASLt kernel, never launched with PDL,
// may not.
TEST(ProfileTest, PdlStepsRoundTripAndAreOursOnly) {
  model::Profile p = tiny();
  model::ConvKernel& conv = *p.batches[0].stages[1].ops[3].conv;
  EXPECT_FALSE(conv.pdl_step_ns.has_value());
  conv.pdl_step_ns = model::compute_stats(std::vector<double>{700, 720, 710}, "ns");
  const nlohmann::json j = model::profile_to_json(p);
  EXPECT_TRUE(j["batches"][0]["stages"][1]["ops"][3]["conv"].contains("pdl_step_ns"));
  EXPECT_TRUE(model::profile_from_json(j, "tiny.json").same_content(p));

  nlohmann::json bad = j;
  bad["batches"][0]["stages"][1]["ops"][3]["conv"]["provider"] = "cublas";
  EXPECT_EQ(error_of(bad),
            "llama.json: field 'batches[0].stages[1].ops[3].conv.pdl_step_ns': only our kernels "
            "launch with PDL");
}

// The synthetic profile's task benchmarks carry a region startup; a profile without it reads
// back without it, and one in a unit other than ns names the field.
TEST(ProfileTest, SmLimitsAndDependentLaunchRoundTripAndMayBeAbsent) {
  model::Profile p = tiny();
  ASSERT_TRUE(p.device.sm_limits && p.micro.dependent_launch_ns);
  EXPECT_EQ(model::profile_from_json(model::profile_to_json(p), "x.json").device.sm_limits,
            p.device.sm_limits);
  p.device.sm_limits.reset();
  p.micro.dependent_launch_ns.reset();
  const nlohmann::json j = model::profile_to_json(p);
  EXPECT_FALSE(j["device"].contains("sm_limits"));
  EXPECT_FALSE(j["micro"].contains("dependent_launch_ns"));
  EXPECT_TRUE(model::profile_from_json(j, "x.json").same_content(p));
}

TEST(ProfileTest, RegionStartupRoundTripsAndMayBeAbsent) {
  model::Profile p = tiny();
  const model::TaskBenchmark& t = p.batches[0].stages[1].ops[3].tasks.at(0);
  ASSERT_TRUE(t.startup_ns.has_value());
  nlohmann::json j = model::profile_to_json(p);
  nlohmann::json& task = j["batches"][0]["stages"][1]["ops"][3]["tasks"][0];
  ASSERT_TRUE(task.contains("startup_ns"));
  EXPECT_TRUE(model::profile_from_json(j, "tiny.json").same_content(p));

  task.erase("startup_ns");
  const model::Profile without = model::profile_from_json(j, "tiny.json");
  EXPECT_FALSE(without.batches[0].stages[1].ops[3].tasks.at(0).startup_ns.has_value());
  EXPECT_TRUE(without.batches[0].stages[1].ops[3].tasks.at(1).startup_ns.has_value());

  nlohmann::json bad = model::profile_to_json(p);
  bad["batches"][0]["stages"][1]["ops"][3]["tasks"][0]["startup_ns"]["unit"] = "ms";
  EXPECT_EQ(error_of(bad),
            "llama.json: field 'batches[0].stages[1].ops[3].tasks[0].startup_ns.unit': expected "
            "\"ns\", got \"ms\"");
}

TEST(ProfileTest, WeightRingRoundTripsAndMayBeAbsent) {
  model::Profile p = tiny();
  p.batches[0].stages[1].ops[3].task_region->smem_bytes = 32768;
  p.batches[0].stages[1].ops[3].task_region->ring_bytes = 16384;
  nlohmann::json j = model::profile_to_json(p);
  nlohmann::json& region = j["batches"][0]["stages"][1]["ops"][3]["task_region"];
  EXPECT_EQ(region.at("ring_bytes"), 16384);
  EXPECT_TRUE(model::profile_from_json(j, "tiny.json").same_content(p));
  // Absent (no ring, or a profile from before it was recorded): 0, and not written.
  region.erase("ring_bytes");
  const model::Profile without = model::profile_from_json(j, "tiny.json");
  EXPECT_EQ(without.batches[0].stages[1].ops[3].task_region->ring_bytes, 0);
  EXPECT_FALSE(
      model::profile_to_json(without)["batches"][0]["stages"][1]["ops"][3]["task_region"].contains(
          "ring_bytes"));
}

// What a body can do with flagged words, and the word hop's micro-benchmark: written where known,
// absent from older profiles, and a value that is no boolean names the field.
TEST(ProfileTest, FlaggedWordsRoundTripAndMayBeAbsent) {
  model::Profile p = tiny();
  ASSERT_TRUE(p.micro.flagged_word_hop_ns && p.batches[0].stages[1].ops[3].flagged_words);
  EXPECT_TRUE(model::profile_to_json(p)["micro"].contains("flagged_word_hop_ns"));
  p.micro.flagged_word_hop_ns.reset();
  for (model::StageProfile& s : p.batches[0].stages) {
    for (model::OpProfile& op : s.ops) op.flagged_words.reset();
  }
  const nlohmann::json old = model::profile_to_json(p);
  EXPECT_FALSE(old["micro"].contains("flagged_word_hop_ns"));
  EXPECT_FALSE(old["batches"][0]["stages"][1]["ops"][3].contains("flagged_words"));
  EXPECT_TRUE(model::profile_from_json(old, "tiny.json").same_content(p));
  p.micro.flagged_word_hop_ns = model::compute_stats(std::vector<double>{310, 320, 330}, "ns");
  p.batches[0].stages[1].ops[3].flagged_words = model::FlaggedWordsSupport{true, false};
  p.batches[0].stages[1].ops[4].flagged_words = model::FlaggedWordsSupport{false, true};
  const nlohmann::json j = model::profile_to_json(p);
  const nlohmann::json& words = j["batches"][0]["stages"][1]["ops"][3]["flagged_words"];
  EXPECT_EQ(words, (nlohmann::json{{"takes_x", true}, {"gives_y", false}}));
  EXPECT_FALSE(j["batches"][0]["stages"][1]["ops"][5].contains("flagged_words"));
  const model::Profile back = model::profile_from_json(j, "tiny.json");
  EXPECT_TRUE(back.same_content(p));
  EXPECT_EQ(back.batches[0].stages[1].ops[4].flagged_words,
            (model::FlaggedWordsSupport{false, true}));

  expect_errors(j, {{[](nlohmann::json& b) {
                       b["batches"][0]["stages"][1]["ops"][3]["flagged_words"]["takes_x"] = 1;
                     },
                     "llama.json: field 'batches[0].stages[1].ops[3].flagged_words.takes_x': "
                     "expected true or false, got 1"},
                    {[](nlohmann::json& b) {
                       b["batches"][0]["stages"][1]["ops"][3]["flagged_words"].erase("gives_y");
                     },
                     "llama.json: field 'batches[0].stages[1].ops[3].flagged_words.gives_y': "
                     "missing"},
                    {[](nlohmann::json& b) { b["micro"]["flagged_word_hop_ns"]["unit"] = "us"; },
                     "llama.json: field 'micro.flagged_word_hop_ns.unit': expected \"ns\", got "
                     "\"us\""}});
}

TEST(ProfileTest, MissingStatisticNamesFileAndField) {
  nlohmann::json j = model::profile_to_json(tiny());
  j["batches"][1]["stages"][0]["ops"][17]["conv"]["duration_ns"].erase("p50");
  EXPECT_EQ(error_of(j),
            "llama.json: field 'batches[1].stages[0].ops[17].conv.duration_ns.p50': missing");
}

TEST(ProfileTest, BadFieldsNameFileAndField) {
  const nlohmann::json good = model::profile_to_json(tiny());
  const std::vector<ProfileEdit> cases{
      {[](auto& j) { j["schema"] = "megacut.profile/0"; },
       "llama.json: field 'schema': expected \"megacut.profile/1\", got \"megacut.profile/0\""},
      {[](auto& j) { j.erase("prompt_len"); }, "llama.json: field 'prompt_len': missing"},
      {[](auto& j) { j["device"]["sm_count"] = 0; },
       "llama.json: field 'device.sm_count': expected an integer in [1, 65536], got 0"},
      {[](auto& j) { j["device"]["copy_bandwidth_gb_per_s"] = -3; },
       "llama.json: field 'device.copy_bandwidth_gb_per_s': expected a positive number, got -3"},
      {[](auto& j) { j["device"]["sm_limits"]["ctas"] = 0; },
       "llama.json: field 'device.sm_limits.ctas': expected an integer in [1, 1048576], got 0"},
      {[](auto& j) { j["device"]["sm_limits"].erase("smem_bytes"); },
       "llama.json: field 'device.sm_limits.smem_bytes': missing"},
      {[](auto& j) { j["micro"]["dependent_launch_ns"]["unit"] = "us"; },
       "llama.json: field 'micro.dependent_launch_ns.unit': expected \"ns\", got \"us\""},
      {[](auto& j) { j["micro"]["region_drain_ns"]["unit"] = "us"; },
       "llama.json: field 'micro.region_drain_ns.unit': expected \"ns\", got \"us\""},
      {[](auto& j) { j["batches"][1]["batch"] = 1; },
       "llama.json: field 'batches[1].batch': batch sizes must increase"},
      {[](auto& j) { j["batches"][0]["stages"][1]["ops"][3]["index"] = 2; },
       "llama.json: field 'batches[0].stages[1].ops[3].index': op indices must increase"},
      {[](auto& j) { j["batches"][0]["stages"][1]["ops"][3]["tasks"][0]["ctas"] = 99; },
       "llama.json: field 'batches[0].stages[1].ops[3].tasks[0].ctas': expected an integer in "
       "[1, 8], got 99"},
      {[](auto& j) { j["batches"][0]["stages"][1]["ops"][3].erase("task_region"); },
       "llama.json: field 'batches[0].stages[1].ops[3].task_region': missing"},
      {[](auto& j) {
         auto& region = j["batches"][0]["stages"][1]["ops"][3]["task_region"];
         region["smem_bytes"] = 1000;
         region["ring_bytes"] = 1001;
       },
       "llama.json: field 'batches[0].stages[1].ops[3].task_region.ring_bytes': expected an "
       "integer in [0, 1000], got 1001"},
      {[](auto& j) {
         j["batches"][0]["stages"][0]["ops"][2]["conv"]["launch"]["grid"] = {1, 2};
       },
       "llama.json: field 'batches[0].stages[0].ops[2].conv.launch.grid': expected [x, y, z]"},
      {[](auto& j) { j["batches"][0]["stages"][0]["ops"][2]["conv"]["provider"] = "triton"; },
       "llama.json: field 'batches[0].stages[0].ops[2].conv.provider': expected \"ours\" or "
       "\"cublas\", got \"triton\""},
      {[](auto& j) { j["model"]["config"].erase("hidden_size"); },
       "llama.json (model.config): field 'hidden_size': missing"},
      {[](auto& j) { j["batches"] = 3; }, "llama.json: field 'batches': expected a list, got 3"},
      {[](auto& j) { j["device"]["sm_count"] = "132"; },
       "llama.json: field 'device.sm_count': expected an integer, got \"132\""},
      // Beyond int64_t: named as written, not as the negative it would wrap to.
      {[](auto& j) { j["prompt_len"] = std::numeric_limits<uint64_t>::max(); },
       "llama.json: field 'prompt_len': expected an integer in [1, 1024], got "
       "18446744073709551615"},
  };
  expect_errors(good, cases);
}

// Numbers a measurement cannot give, which the simulator would scale and sum into times that
// wrap or divide by: each names its field, as read, before any graph is built.
TEST(ProfileTest, ImplausibleNumbersNameTheField) {
  const nlohmann::json good = model::profile_to_json(tiny());
  const std::string op = "batches[0].stages[0].ops[2]";
  const auto at_op = [](nlohmann::json& j) -> nlohmann::json& {
    return j["batches"][0]["stages"][0]["ops"][2];
  };
  const std::vector<ProfileEdit> cases{
      {[&](auto& j) { at_op(j)["conv"]["duration_ns"]["max"] = 4e12; },
       "llama.json: field '" + op +
           ".conv.duration_ns.max': 4000000000000.0 ns is more than an hour: not a duration the "
           "profiler measures"},
      {[](auto& j) {
         j["micro"]["kernel_gap_ns"]["p99"] = 1e300;
         j["micro"]["kernel_gap_ns"]["max"] = 1e300;
       },
       "llama.json: field 'micro.kernel_gap_ns.p99': 1e+300 ns is more than an hour: not a "
       "duration the profiler measures"},
      {[&](auto& j) {
         for (const char* key : {"mean", "min", "p50", "p90", "p95", "p99", "max"}) {
           at_op(j)["conv"]["duration_ns"][key] = 0;
         }
       },
       "llama.json: field '" + op +
           ".conv.duration_ns.min': expected a duration above 0 ns (a kernel or task takes some "
           "time), got 0.0"},
      {[](auto& j) {
         j["batches"][0]["stages"][1]["ops"][3]["tasks"][0]["duration_ns"]["min"] = 0;
       },
       "llama.json: field 'batches[0].stages[1].ops[3].tasks[0].duration_ns.min': expected a "
       "duration above 0 ns (a kernel or task takes some time), got 0.0"},
      {[&](auto& j) {
         at_op(j)["conv"]["launch"]["grid"] = {1, 65536, 1};
       },
       "llama.json: field '" + op +
           ".conv.launch.grid[1]': expected an integer in [1, 65535], got 65536"},
      {[&](auto& j) {
         at_op(j)["conv"]["launch"]["block"] = {2048, 1, 1};
       },
       "llama.json: field '" + op +
           ".conv.launch.block[0]': expected an integer in [1, 1024], got 2048"},
      {[](auto& j) { j["device"]["copy_bandwidth_gb_per_s"] = 1e-9; },
       "llama.json: field 'device.copy_bandwidth_gb_per_s': expected a bandwidth in [0.001, "
       "1000000] GB/s, got 1e-09"},
      // tiny-llama's max_position_embeddings is 1024: no room for the decoded token.
      {[](auto& j) { j["prompt_len"] = 1024; },
       "llama.json: field 'prompt_len': 1024 plus 1 decoded token exceeds model.config "
       "max_position_embeddings 1024"},
      {[](auto& j) { j["frames"] = 5000; },
       "llama.json: field 'frames': expected an integer in [0, 4096], got 5000"},
      {[](auto& j) { j["batches"][1]["batch"] = 65537; },
       "llama.json: field 'batches[1].batch': expected an integer in [1, 65536], got 65537"},
      // 65536 sequences of 1001 positions: more than 2^24 tokens.
      {[](auto& j) {
         j["prompt_len"] = 1000;
         j["batches"][1]["batch"] = 65536;
       },
       "llama.json: field 'batches[1].batch': 65536 sequences of 1001 positions (prompt and "
       "decoded) are more tokens than megacut models (16777216)"},
  };
  expect_errors(good, cases);
}

model::Profile with_launch_sweep() {
  model::Profile p = tiny();
  p.micro.graph_launch_by_nodes = {{1, model::constant_stats(4000)},
                                   {64, model::constant_stats(9000)},
                                   {512, model::constant_stats(40000)}};
  p.batches[1].graph_launch_by_nodes = {{1, model::constant_stats(5000)},
                                        {512, model::constant_stats(90000)}};
  p.batches[1].graph_launch_by_nodes[1].span_ns = model::constant_stats(800000);
  p.batches[1].graph_launch_by_nodes[1].back_to_back_ns = model::constant_stats(600000);
  return p;
}

TEST(ProfileTest, GraphLaunchByNodesRoundTripsAndMayBeAbsent) {
  const nlohmann::json j = model::profile_to_json(with_launch_sweep());
  ASSERT_TRUE(j["micro"].contains("graph_launch_by_nodes"));
  EXPECT_EQ(j["micro"]["graph_launch_by_nodes"][1]["nodes"], 64);
  EXPECT_EQ(j["batches"][1]["graph_launch_by_nodes"][1]["nodes"], 512);
  EXPECT_FALSE(j["batches"][0].contains("graph_launch_by_nodes"));
  EXPECT_EQ(j["batches"][1]["graph_launch_by_nodes"][1]["back_to_back_ns"]["p50"], 600000);
  EXPECT_FALSE(j["batches"][1]["graph_launch_by_nodes"][0].contains("back_to_back_ns"));
  const model::Profile back = model::profile_from_json(j, "sweep.json");
  EXPECT_TRUE(back.same_content(with_launch_sweep()));
  EXPECT_EQ(back.micro.graph_launch_by_nodes, with_launch_sweep().micro.graph_launch_by_nodes);
  EXPECT_EQ(back.batches, with_launch_sweep().batches);
  // Profiles that predate it have no such field, and read back without points.
  const nlohmann::json old = model::profile_to_json(tiny());
  EXPECT_FALSE(old["micro"].contains("graph_launch_by_nodes"));
  const model::Profile old_back = model::profile_from_json(old, "old.json");
  EXPECT_TRUE(old_back.micro.graph_launch_by_nodes.empty());
  EXPECT_TRUE(old_back.batches[1].graph_launch_by_nodes.empty());
}

TEST(ProfileTest, BadGraphLaunchPointsNameTheField) {
  const nlohmann::json good = model::profile_to_json(with_launch_sweep());
  const std::vector<ProfileEdit> cases{
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"][2]["nodes"] = 64; },
       "llama.json: field 'micro.graph_launch_by_nodes[2].nodes': node counts must increase"},
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"][0]["nodes"] = 0; },
       "llama.json: field 'micro.graph_launch_by_nodes[0].nodes': expected an integer in [1, " +
           std::to_string(std::numeric_limits<int64_t>::max()) + "], got 0"},
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"][1].erase("launch_ns"); },
       "llama.json: field 'micro.graph_launch_by_nodes[1].launch_ns': missing"},
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"][1]["launch_ns"]["unit"] = "us"; },
       "llama.json: field 'micro.graph_launch_by_nodes[1].launch_ns.unit': expected \"ns\", got "
       "\"us\""},
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"] = nlohmann::json::array(); },
       "llama.json: field 'micro.graph_launch_by_nodes': expected at least one node count (or "
       "leave it out)"},
      {[](auto& j) { j["micro"]["graph_launch_by_nodes"] = 3; },
       "llama.json: field 'micro.graph_launch_by_nodes': expected a list, got 3"},
      {[](auto& j) { j["batches"][1]["graph_launch_by_nodes"][1]["nodes"] = 1; },
       "llama.json: field 'batches[1].graph_launch_by_nodes[1].nodes': node counts must increase"},
      {[](auto& j) { j["batches"][1]["graph_launch_by_nodes"][0]["launch_ns"]["p50"] = -1; },
       "llama.json: field 'batches[1].graph_launch_by_nodes[0].launch_ns.p50': expected a "
       "non-negative number, got -1"},
      {[](auto& j) { j["batches"][1]["graph_launch_by_nodes"][1]["back_to_back_ns"] = "fast"; },
       "llama.json: field 'batches[1].graph_launch_by_nodes[1].back_to_back_ns': expected "
       "latency statistics {unit, count, mean, ...}"},
  };
  expect_errors(good, cases);
}

// A tensor-parallel profile's collective benchmarks: kinds and message sizes round trip; a
// profile of one GPU has none and writes none.
TEST(ProfileTest, CollectiveBenchmarksRoundTripInTensorParallelProfilesOnly) {
  testing::SyntheticDevice d;
  d.tp = 2;
  const model::Profile tp2 = testing::synthetic_profile("tiny-llama", {1}, 16, d);
  ASSERT_EQ(tp2.micro.collectives.size(), 2u);
  const nlohmann::json j = model::profile_to_json(tp2);
  EXPECT_EQ(j["micro"]["collectives"][0]["kind"], "all-reduce");
  EXPECT_EQ(j["micro"]["collectives"][1]["points"][0]["bytes"], 4096);
  const model::Profile back = model::profile_from_json(j, "tp2.json");
  EXPECT_EQ(back.micro.collectives, tp2.micro.collectives);
  // An all-reduce-residual is timed as an all-reduce (its residual add is local).
  EXPECT_EQ(back.micro.collective("all-reduce-residual"), &back.micro.collectives[0]);
  EXPECT_EQ(back.micro.collective("linear"), nullptr);
  EXPECT_FALSE(model::profile_to_json(tiny())["micro"].contains("collectives"));
}

TEST(ProfileTest, BadCollectiveBenchmarksNameTheField) {
  testing::SyntheticDevice d;
  d.tp = 2;
  const nlohmann::json good =
      model::profile_to_json(testing::synthetic_profile("tiny-llama", {1}, 16, d));
  const std::vector<ProfileEdit> cases{
      {[](auto& j) { j.erase("tp"); },
       "llama.json: field 'micro.collectives': collectives are benchmarks of a tensor-parallel "
       "profile, and this one is of one GPU (no \"tp\" above 1)"},
      {[](auto& j) { j["micro"]["collectives"][1]["kind"] = "all-to-all"; },
       "llama.json: field 'micro.collectives[1].kind': expected \"all-reduce\" or "
       "\"all-gather\", got \"all-to-all\""},
      {[](auto& j) { j["micro"]["collectives"][1]["kind"] = "all-reduce"; },
       "llama.json: field 'micro.collectives[1].kind': \"all-reduce\" given twice"},
      {[](auto& j) { j["micro"]["collectives"][0]["points"][2]["bytes"] = 4096; },
       "llama.json: field 'micro.collectives[0].points[2].bytes': message sizes must increase"},
      {[](auto& j) { j["micro"]["collectives"][0]["points"][0]["bytes"] = 0; },
       "llama.json: field 'micro.collectives[0].points[0].bytes': expected an integer in [1, "
       "1099511627776], got 0"},
      {[](auto& j) { j["micro"]["collectives"][0]["points"] = nlohmann::json::array(); },
       "llama.json: field 'micro.collectives[0].points': expected at least one message size"},
      {[](auto& j) { j["micro"]["collectives"][0]["points"][1]["time_ns"]["max"] = 1e300; },
       "llama.json: field 'micro.collectives[0].points[1].time_ns.max': 1e+300 ns is more than "
       "an hour: not a duration the profiler measures"},
  };
  expect_errors(good, cases);
}

TEST(ProfileTest, ReadingAMissingFileSaysWhich) {
  EXPECT_THROW(model::read_profile("/nonexistent/llama.json"), Error);
}

// One check of a batch against the profile, made from the profile alone (no graph is built).
TEST(ProfileTest, CheckBatchSaysWhatTheProfileMeasured) {
  const auto error_of = [](int64_t batch, bool interpolate) {
    return testing::error_of([&] { model::check_batch(tiny(), batch, interpolate); });
  };
  EXPECT_EQ(error_of(1, false), "");
  EXPECT_EQ(error_of(2, true), "");
  EXPECT_EQ(error_of(2, false),
            "profile synthetic tiny-llama: no measurements at batch 2 (measured: 1, 4); profile "
            "that batch, or allow interpolation (--allow-interpolate)");
  EXPECT_EQ(error_of(7777, true),
            "profile synthetic tiny-llama: batch 7777 is outside the measured batches (1, 4); "
            "interpolation "
            "does not extrapolate");
}

}  // namespace
}  // namespace megacut::simulator
