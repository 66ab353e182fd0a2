#include "model/composition.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <optional>

#include "model/error.h"

namespace megacut::model {
namespace {

constexpr std::string_view kSchema = "megacut.composition/1";

std::string region_text(const Region& r) {
  return std::string(region_kind_name(r.kind)) + "[" + std::to_string(r.begin) + ":" +
         std::to_string(r.end) + "]";
}

const StageShape& find_shape(const std::vector<StageShape>& shapes, std::string_view stage,
                             std::string_view context) {
  for (const StageShape& s : shapes) {
    if (s.name == stage) return s;
  }
  std::string known;
  for (const StageShape& s : shapes) known += (known.empty() ? "" : ", ") + s.name;
  throw Error(std::string(context) + ": unknown stage '" + std::string(stage) +
              "' (stages: " + known + ")");
}

// A region as written: bounds may be omitted.
struct RegionText {
  RegionKind kind;
  std::optional<int> begin;
  std::optional<int> end;
  bool ranged = false;
  std::string text;
};

// A small recursive-descent reader over the composition text.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  bool done() {
    skip_space();
    return pos_ >= text_.size();
  }

  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string word() {
    skip_space();
    const size_t start = pos_;
    // Bytes of a UTF-8 character count as letters, so that a misspelt name is quoted whole.
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   static_cast<unsigned char>(text_[pos_]) >= 0x80 ||
                                   text_[pos_] == '_' || text_[pos_] == '-')) {
      ++pos_;
    }
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }

  std::optional<int> bound() {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '-') fail("negative op index");
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) return std::nullopt;
    int value = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec != std::errc()) fail("op index out of range");
    return value;
  }

  RegionText region() {
    const size_t start = (skip_space(), pos_);
    RegionText r;
    const std::string kind = word();
    if (const std::optional<RegionKind> k = find_region_kind(kind)) {
      r.kind = *k;
    } else {
      pos_ = start;
      fail("unknown region kind '" + kind + "' (" + std::string(kRegionKindList) +
           "; a stage name needs ':' after it)");
    }
    if (peek('[')) {
      ++pos_;
      r.ranged = true;
      r.begin = bound();
      expect(':');
      r.end = bound();
      expect(']');
    }
    r.text = std::string(text_.substr(start, pos_ - start));
    return r;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("composition '" + std::string(text_) + "': " + what + " at character " +
                std::to_string(pos_ + 1));
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

StageRegions resolve_stage(const std::string& stage, const std::vector<RegionText>& written,
                           const StageShape& shape, std::string_view text) {
  StageRegions out{stage, {}};
  const std::string where = "composition '" + std::string(text) + "', stage " + stage;
  if (written.size() > 1) {
    for (size_t i = 0; i < written.size(); ++i) {
      if (!written[i].ranged) {
        throw Error(where + ": region " + std::to_string(i + 1) + " (" + written[i].text +
                    ") needs a range when the stage has several regions");
      }
    }
  }
  int next = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    const RegionText& w = written[i];
    // An omitted start continues from the previous region; an omitted end runs to the end.
    Region r{w.kind, w.begin.value_or(next), w.end.value_or(shape.op_count)};
    if (i + 1 < written.size() && !w.end && written[i + 1].begin) r.end = *written[i + 1].begin;
    out.regions.push_back(r);
    next = r.end;
  }
  return out;
}

}  // namespace

std::string_view region_kind_name(RegionKind kind) {
  switch (kind) {
    case RegionKind::conv:
      return "conv";
    case RegionKind::mk:
      return "mk";
    case RegionKind::tile:
      return "tile";
  }
  return "?";
}

std::optional<RegionKind> find_region_kind(std::string_view name) {
  for (RegionKind kind : kRegionKinds) {
    if (region_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

const std::vector<Region>& Composition::regions(std::string_view stage) const {
  for (const StageRegions& s : stages) {
    if (s.stage == stage) return s.regions;
  }
  throw Error("composition has no stage '" + std::string(stage) + "'");
}

std::string Composition::to_string() const {
  std::string text;
  for (const StageRegions& s : stages) {
    if (!text.empty()) text += "; ";
    text += s.stage + ":";
    for (const Region& r : s.regions) {
      text += ' ';
      text += region_text(r);
    }
  }
  return text;
}

int mk_op_count(const std::vector<Region>& regions) {
  int ops = 0;
  for (const Region& r : regions) ops += r.kind == RegionKind::mk ? r.end - r.begin : 0;
  return ops;
}

Composition uniform_composition(const std::vector<StageShape>& shapes, RegionKind kind) {
  Composition c;
  for (const StageShape& s : shapes) c.stages.push_back({s.name, {Region{kind, 0, s.op_count}}});
  return c;
}

void check_composition(const Composition& composition, const std::vector<StageShape>& shapes) {
  for (const StageRegions& s : composition.stages) {
    const StageShape& shape = find_shape(shapes, s.stage, "composition");
    const std::string where = "composition, stage " + s.stage;
    if (s.regions.empty()) throw Error(where + ": no regions");
    int expected = 0;
    for (size_t i = 0; i < s.regions.size(); ++i) {
      const Region& r = s.regions[i];
      const std::string region =
          where + ": region " + std::to_string(i + 1) + " (" + region_text(r) + ")";
      if (r.end <= r.begin) throw Error(region + " is empty or reversed");
      if (r.begin > expected) {
        throw Error(region + " leaves ops " + std::to_string(expected) + ".." +
                    std::to_string(r.begin - 1) + " in no region");
      }
      if (r.begin < expected) {
        throw Error(region + " overlaps the previous region, which ends at " +
                    std::to_string(expected));
      }
      if (r.end > shape.op_count) {
        throw Error(region + " runs past the stage's " + std::to_string(shape.op_count) + " ops");
      }
      expected = r.end;
    }
    if (expected != shape.op_count) {
      throw Error(where + ": ops " + std::to_string(expected) + ".." +
                  std::to_string(shape.op_count - 1) + " are in no region");
    }
  }
  for (const StageShape& shape : shapes) {
    bool present = false;
    for (const StageRegions& s : composition.stages) present = present || s.stage == shape.name;
    if (!present) throw Error("composition: stage " + shape.name + " has no regions");
  }
}

Composition parse_composition(std::string_view text, const std::vector<StageShape>& shapes) {
  Parser p(text);
  if (p.done()) throw Error("composition: empty text (try 'conv', 'mk' or 'decode: mk')");
  // Read clauses: either one bare region list (applies to every stage) or "stage: regions".
  std::vector<std::pair<std::string, std::vector<RegionText>>> clauses;
  bool bare = false;
  while (!p.done()) {
    Parser lookahead = p;
    const std::string first = lookahead.word();
    std::string stage;
    if (lookahead.peek(':')) {
      stage = p.word();
      p.expect(':');
      find_shape(shapes, stage, "composition '" + std::string(text) + "'");
      for (const auto& [seen, regions] : clauses) {
        if (seen == stage) p.fail("stage " + stage + " is given twice");
      }
    } else {
      if (!clauses.empty()) p.fail("expected 'stage:' before the regions");
      bare = true;
    }
    std::vector<RegionText> regions;
    while (!p.done() && !p.peek(';')) regions.push_back(p.region());
    if (regions.empty()) p.fail("stage " + stage + " has no regions");
    clauses.emplace_back(stage, std::move(regions));
    if (!p.done()) {
      p.expect(';');
      if (bare) p.fail("a bare region list applies to every stage and takes no further clauses");
    }
  }

  Composition c;
  for (const StageShape& shape : shapes) {
    if (bare) {
      c.stages.push_back(resolve_stage(shape.name, clauses[0].second, shape, text));
      continue;
    }
    bool found = false;
    for (const auto& [stage, regions] : clauses) {
      if (stage == shape.name) {
        c.stages.push_back(resolve_stage(stage, regions, shape, text));
        found = true;
      }
    }
    if (!found) c.stages.push_back({shape.name, {Region{RegionKind::conv, 0, shape.op_count}}});
  }
  try {
    check_composition(c, shapes);
  } catch (const Error& e) {
    throw Error("composition '" + std::string(text) +
                "': " + std::string(e.what()).substr(std::string_view("composition, ").size()));
  }
  return c;
}

nlohmann::json composition_to_json(const Composition& composition) {
  nlohmann::json stages = nlohmann::json::object();
  for (const StageRegions& s : composition.stages) {
    nlohmann::json list = nlohmann::json::array();
    for (const Region& r : s.regions) {
      list.push_back({{"kind", region_kind_name(r.kind)}, {"begin", r.begin}, {"end", r.end}});
    }
    stages[s.stage] = list;
  }
  return {{"schema", kSchema}, {"text", composition.to_string()}, {"stages", stages}};
}

Composition composition_from_json(const nlohmann::json& json, const std::vector<StageShape>& shapes,
                                  std::string_view file) {
  if (!json.is_object()) throw_field_error(file, "(composition)", "expected a JSON object");
  if (!json.contains("schema") || json["schema"] != kSchema) {
    throw_field_error(file, "schema", "expected \"" + std::string(kSchema) + "\"");
  }
  if (!json.contains("stages") || !json["stages"].is_object()) {
    throw_field_error(file, "stages", "expected an object of stage name to region list");
  }
  Composition c;
  for (const StageShape& shape : shapes) {
    if (!json["stages"].contains(shape.name)) {
      throw_field_error(file, "stages." + shape.name, "missing");
    }
  }
  for (const auto& [stage, list] : json["stages"].items()) {
    const std::string field = "stages." + stage;
    find_shape(shapes, stage, std::string(file) + ": field '" + field + "'");
    if (!list.is_array()) throw_field_error(file, field, "expected a list of regions");
    StageRegions s{stage, {}};
    for (size_t i = 0; i < list.size(); ++i) {
      const auto& r = list[i];
      const std::string rf = field + "[" + std::to_string(i) + "]";
      const std::string expected = "expected one of " + std::string(kRegionKindList);
      if (!r.is_object() || !r.contains("kind") || !r["kind"].is_string()) {
        throw_field_error(file, rf + ".kind", expected);
      }
      const std::string kind = r["kind"];
      const std::optional<RegionKind> k = find_region_kind(kind);
      if (!k) throw_field_error(file, rf + ".kind", expected + ", got \"" + kind + "\"");
      for (const char* bound : {"begin", "end"}) {
        if (!r.contains(bound) || !r[bound].is_number_integer() || r[bound].get<int64_t>() < 0 ||
            r[bound].get<int64_t>() > std::numeric_limits<int>::max()) {
          throw_field_error(file, rf + "." + bound, "expected an op index");
        }
      }
      s.regions.push_back(Region{*k, r["begin"].get<int>(), r["end"].get<int>()});
    }
    c.stages.push_back(std::move(s));
  }
  // Keep scenario order whatever order the object listed.
  std::vector<StageRegions> ordered;
  for (const StageShape& shape : shapes) {
    for (StageRegions& s : c.stages) {
      if (s.stage == shape.name) ordered.push_back(std::move(s));
    }
  }
  c.stages = std::move(ordered);
  try {
    check_composition(c, shapes);
  } catch (const Error& e) {
    throw Error(std::string(file) + ": " + e.what());
  }
  return c;
}

}  // namespace megacut::model
