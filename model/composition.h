// Compositions: how each stage's op sequence is cut into regions, each run one way.
//
// Text form, one clause per stage separated by ';':
//     prefill: conv; decode: mk[0:40] conv[40:]
// A region is `mk` (one persistent megakernel launch), `conv` (one kernel per op) or `tile`
// (one kernel per op, each starting while the one before runs and waiting on the tiles it
// reads, not on the whole kernel) over the half-open op range [a:b]; an omitted bound means the
// stage's start or end, and a region with no range covers the whole stage. The whole text may
// be just `conv`, `mk` or `tile`: every stage run that way. Stages left out run `conv`. Regions
// must cover their stage's ops in order, with no gap and no overlap.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace megacut::model {

enum class RegionKind { conv, mk, tile };
inline constexpr std::array<RegionKind, 3> kRegionKinds = {RegionKind::conv, RegionKind::mk,
                                                           RegionKind::tile};
inline constexpr std::string_view kRegionKindList = "conv, mk or tile";

std::string_view region_kind_name(RegionKind kind);
// The kind named `name` ("conv", "mk", "tile"), if any.
std::optional<RegionKind> find_region_kind(std::string_view name);

struct Region {
  RegionKind kind = RegionKind::conv;
  int begin = 0;  // first op index
  int end = 0;    // one past the last op index
  friend bool operator==(const Region&, const Region&) = default;
};

// The ops inside mk regions.
int mk_op_count(const std::vector<Region>& regions);

struct StageRegions {
  std::string stage;
  std::vector<Region> regions;
  friend bool operator==(const StageRegions&, const StageRegions&) = default;
};

// The stage names and op counts a composition is checked against.
struct StageShape {
  std::string name;
  int op_count = 0;
};

struct Composition {
  std::vector<StageRegions> stages;  // in scenario order, every stage present

  const std::vector<Region>& regions(std::string_view stage) const;
  // Canonical text: full ranges, every stage, e.g. "prefill: conv[0:196]; decode: mk[0:196]".
  std::string to_string() const;
  friend bool operator==(const Composition&, const Composition&) = default;
};

// Every stage one region of `kind`.
Composition uniform_composition(const std::vector<StageShape>& shapes, RegionKind kind);

// Parses the text form and checks it against the stages; errors say which region and why.
Composition parse_composition(std::string_view text, const std::vector<StageShape>& shapes);

// JSON form: {"schema": "megacut.composition/1", "stages": {"decode": [{"kind": "mk",
// "begin": 0, "end": 40}, ...], ...}}. `file` names the source in errors.
nlohmann::json composition_to_json(const Composition& composition);
Composition composition_from_json(const nlohmann::json& json, const std::vector<StageShape>& shapes,
                                  std::string_view file);

// Checks coverage and order; throws an Error naming the region otherwise.
void check_composition(const Composition& composition, const std::vector<StageShape>& shapes);

}  // namespace megacut::model
