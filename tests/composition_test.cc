#include "model/composition.h"

#include <gtest/gtest.h>

#include <random>

#include "model/error.h"

namespace megacut::model {
namespace {

const std::vector<StageShape> kShapes = {{"prefill", 100}, {"decode", 50}};

std::string error_of(std::string_view text) {
  try {
    parse_composition(text, kShapes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CompositionTest, Shorthands) {
  EXPECT_EQ(parse_composition("conv", kShapes).to_string(),
            "prefill: conv[0:100]; decode: conv[0:50]");
  EXPECT_EQ(parse_composition(" mk ", kShapes).to_string(), "prefill: mk[0:100]; decode: mk[0:50]");
  EXPECT_EQ(parse_composition("decode: mk", kShapes).to_string(),
            "prefill: conv[0:100]; decode: mk[0:50]");
  EXPECT_EQ(parse_composition("tile", kShapes).to_string(),
            "prefill: tile[0:100]; decode: tile[0:50]");
}

TEST(CompositionTest, RangesWithOpenBounds) {
  const Composition c = parse_composition("prefill: conv; decode: mk[0:40] conv[40:]", kShapes);
  EXPECT_EQ(c.to_string(), "prefill: conv[0:100]; decode: mk[0:40] conv[40:50]");
  EXPECT_EQ(parse_composition("decode: mk[:10] conv[10:30] mk[30:]", kShapes).regions("decode"),
            (std::vector<Region>{
                {RegionKind::mk, 0, 10}, {RegionKind::conv, 10, 30}, {RegionKind::mk, 30, 50}}));
}

TEST(CompositionTest, CanonicalTextParsesBackToTheSameComposition) {
  const Composition c = parse_composition("decode: mk[0:7] conv[7:9] tile[9:20] mk[20:]", kShapes);
  EXPECT_EQ(c.regions("decode")[2], (Region{RegionKind::tile, 9, 20}));
  EXPECT_EQ(parse_composition(c.to_string(), kShapes), c);
}

TEST(CompositionTest, ErrorsNameTheRegionAndWhy) {
  EXPECT_NE(error_of("decode: mk[0:40] conv[45:]").find("ops 40..44 in no region"),
            std::string::npos);
  EXPECT_NE(error_of("decode: mk[0:40] conv[30:]").find("overlaps"), std::string::npos);
  EXPECT_NE(error_of("decode: mk[0:60]").find("runs past the stage's 50 ops"), std::string::npos);
  EXPECT_NE(error_of("decode: mk[0:40]").find("ops 40..49 are in no region"), std::string::npos);
  EXPECT_NE(error_of("verify: mk").find("unknown stage 'verify'"), std::string::npos);
  EXPECT_NE(error_of("decode: fused").find("unknown region kind 'fused' (conv, mk or tile;"),
            std::string::npos);
  // A name with a non-ASCII letter is quoted whole, not cut at the letter.
  EXPECT_NE(error_of("d\xc3\xa9code: mk").find("unknown stage 'd\xc3\xa9code'"), std::string::npos);
  EXPECT_NE(error_of("decode: m\xc3\xa9").find("unknown region kind 'm\xc3\xa9'"),
            std::string::npos);
  EXPECT_NE(error_of("decode: mk conv").find("needs a range"), std::string::npos);
  EXPECT_NE(error_of("decode: mk[5:2] conv[2:]").find("region 1 (mk[5:2]) is empty or reversed"),
            std::string::npos);
  EXPECT_NE(error_of("decode: mk[-1:3]").find("negative"), std::string::npos);
  EXPECT_NE(error_of("decode: mk; decode: conv").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("decode: mk[0:99999999999]").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("decode mk").find("a stage name needs ':'"), std::string::npos);
  EXPECT_NE(error_of("decode:").find("no regions"), std::string::npos);
}

TEST(CompositionTest, JsonRoundTrip) {
  const Composition c =
      parse_composition("prefill: mk[0:50] conv[50:]; decode: tile[:9] mk[9:]", kShapes);
  const nlohmann::json j = composition_to_json(c);
  EXPECT_EQ(j["schema"], "megacut.composition/1");
  EXPECT_EQ(composition_from_json(j, kShapes, "plan.json"), c);
}

TEST(CompositionTest, JsonErrorsNameFileAndField) {
  nlohmann::json j = composition_to_json(uniform_composition(kShapes, RegionKind::mk));
  j["stages"]["decode"][0]["kind"] = "megakernel";
  try {
    composition_from_json(j, kShapes, "plan.json");
    FAIL() << "accepted a bad region kind";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: field 'stages.decode[0].kind': expected one "
                                         "of conv, mk or tile, got \"megakernel\""),
              std::string::npos)
        << e.what();
  }
  j = composition_to_json(uniform_composition(kShapes, RegionKind::mk));
  j["stages"]["decode"][0]["end"] = 49;
  EXPECT_THROW(composition_from_json(j, kShapes, "plan.json"), Error);
  j = composition_to_json(uniform_composition(kShapes, RegionKind::mk));
  j["schema"] = "megacut.composition/9";
  EXPECT_THROW(composition_from_json(j, kShapes, "plan.json"), Error);
}

// Property: every random cut of every stage parses back from its canonical text and
// partitions the op sequence.
TEST(CompositionTest, RandomCompositionsPartitionTheOps) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    Composition c;
    for (const StageShape& s : kShapes) {
      StageRegions sr{s.name, {}};
      int begin = 0;
      while (begin < s.op_count) {
        const int end = std::min(s.op_count, begin + 1 + static_cast<int>(rng() % 30));
        sr.regions.push_back({rng() % 2 ? RegionKind::mk : RegionKind::conv, begin, end});
        begin = end;
      }
      c.stages.push_back(sr);
    }
    const Composition parsed = parse_composition(c.to_string(), kShapes);
    ASSERT_EQ(parsed, c);
    for (const StageRegions& s : parsed.stages) {
      int covered = 0;
      for (const Region& r : s.regions) {
        ASSERT_EQ(r.begin, covered);
        covered = r.end;
      }
      ASSERT_EQ(covered, s.stage == "prefill" ? 100 : 50);
    }
  }
}

}  // namespace
}  // namespace megacut::model
