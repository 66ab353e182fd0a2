// plan.json ("megacut.plan/1"): written by plan_to_json, validated field by field on read.
// Ratios (gains, coverage) are written for readers and recomputed, not read back.
#include <cmath>

#include "model/error.h"
#include "planner/plan.h"

namespace megacut::planner {
namespace {

using nlohmann::json;

json stats_to_json(const SearchStats& s) {
  return {{"ops", s.ops},
          {"mk_regions", s.mk_regions},
          {"mk_simulated", s.mk_simulated},
          {"mk_resumed", s.mk_resumed},
          {"tasks_simulated", s.tasks_simulated},
          {"seconds", s.seconds}};
}

json evaluated_to_json(const Evaluated& e) {
  json stages = json::array();
  for (const StageTime& s : e.stages) {
    stages.push_back({{"stage", s.stage},
                      {"time_ns", s.time_ns},
                      {"mk_ns", s.mk_ns},
                      {"coverage", e.coverage(s.stage)}});
  }
  return {{"text", e.text},
          {"ttfo_ns", e.ttfo_ns},
          {"decode_step_ns", e.decode_step_ns},
          {"throughput_per_s", e.throughput_per_s},
          {"mk_regions", e.mk_regions()},
          {"coverage", e.coverage()},
          {"stages", stages}};
}

double ratio(TimeNs baseline, TimeNs value) {
  return value > 0 ? static_cast<double>(baseline) / static_cast<double>(value) : 0.0;
}

// Reads fields of one document, naming the file and the field's path in every error.
class Reader {
 public:
  Reader(std::string_view file, std::vector<model::StageShape> shapes = {})
      : file_(file), shapes_(std::move(shapes)) {}
  void set_shapes(std::vector<model::StageShape> shapes) { shapes_ = std::move(shapes); }

  const json& need(const json& j, const std::string& path, const char* key) const {
    if (!j.is_object() || !j.contains(key)) throw_field_error(file_, join(path, key), "missing");
    return j[key];
  }
  int64_t integer(const json& j, const std::string& path, const char* key, int64_t min) const {
    const json& v = need(j, path, key);
    if (!v.is_number_integer() || v.get<int64_t>() < min) {
      throw_field_error(file_, join(path, key),
                        "expected an integer of at least " + std::to_string(min));
    }
    return v.get<int64_t>();
  }
  double number(const json& j, const std::string& path, const char* key) const {
    const json& v = need(j, path, key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw_field_error(file_, join(path, key), "expected a non-negative number");
    }
    return v.get<double>();
  }
  std::string text(const json& j, const std::string& path, const char* key) const {
    const json& v = need(j, path, key);
    if (!v.is_string()) throw_field_error(file_, join(path, key), "expected a string");
    return v.get<std::string>();
  }
  // Absent: `absent` (fields newer than some plans).
  bool boolean(const json& j, const std::string& path, const char* key, bool absent) const {
    if (!j.is_object() || !j.contains(key)) return absent;
    const json& v = j[key];
    if (!v.is_boolean()) throw_field_error(file_, join(path, key), "expected true or false");
    return v.get<bool>();
  }
  const json& array(const json& j, const std::string& path, const char* key) const {
    const json& v = need(j, path, key);
    if (!v.is_array()) throw_field_error(file_, join(path, key), "expected a list");
    return v;
  }

  model::Composition composition(const std::string& text, const std::string& field) const {
    try {
      return model::parse_composition(text, shapes_);
    } catch (const Error& e) {
      throw_field_error(file_, field, e.what());
    }
  }

  Evaluated evaluated(const json& j, const std::string& path) const {
    Evaluated e;
    e.text = text(j, path, "text");
    e.composition = composition(e.text, join(path, "text"));
    if (e.composition.to_string() != e.text) {
      throw_field_error(file_, join(path, "text"),
                        "not in canonical form ('" + e.composition.to_string() + "')");
    }
    e.ttfo_ns = integer(j, path, "ttfo_ns", 0);
    e.decode_step_ns = integer(j, path, "decode_step_ns", 0);
    e.throughput_per_s = number(j, path, "throughput_per_s");
    const json& stages = array(j, path, "stages");
    for (size_t i = 0; i < stages.size(); ++i) {
      const std::string at = join(path, "stages") + "[" + std::to_string(i) + "]";
      e.stages.push_back({text(stages[i], at, "stage"), integer(stages[i], at, "time_ns", 0),
                          integer(stages[i], at, "mk_ns", 0)});
    }
    return e;
  }

  SearchStats stats(const json& j, const std::string& path) const {
    SearchStats s;
    s.ops = integer(j, path, "ops", 0);
    s.mk_regions = integer(j, path, "mk_regions", 0);
    s.mk_simulated = integer(j, path, "mk_simulated", 0);
    s.mk_resumed = integer(j, path, "mk_resumed", 0);
    s.tasks_simulated = integer(j, path, "tasks_simulated", 0);
    s.seconds = number(j, path, "seconds");
    return s;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw_field_error(file_, field, what);
  }

 private:
  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }

  std::string file_;
  std::vector<model::StageShape> shapes_;
};

void check_schema(const json& j, std::string_view file) {
  if (!j.is_object()) throw_field_error(file, "(plan)", "expected a JSON object");
  if (!j.contains("schema") || j["schema"] != kPlanSchema) {
    throw_field_error(file, "schema", "expected \"" + std::string(kPlanSchema) + "\"");
  }
}

}  // namespace

json plan_to_json(const Plan& plan) {
  json stages = json::array();
  for (const model::StageShape& s : plan.stages) {
    stages.push_back({{"name", s.name}, {"op_count", s.op_count}});
  }
  json batches = json::array();
  for (const BatchPlan& b : plan.batches) {
    const Evaluated& chosen = settled(b, plan.min_gain, plan.objective);
    json coverage = json::object();
    for (const StageTime& s : chosen.stages) coverage[s.stage] = chosen.coverage(s.stage);
    coverage["overall"] = chosen.coverage();
    json gain = {
        {"ttfo_vs_all_conv", ratio(b.all_conv.ttfo_ns, chosen.ttfo_ns)},
        {"decode_step_vs_all_conv", ratio(b.all_conv.decode_step_ns, chosen.decode_step_ns)}};
    if (b.all_mk) {
      gain["ttfo_vs_all_mk"] = ratio(b.all_mk->ttfo_ns, chosen.ttfo_ns);
      gain["decode_step_vs_all_mk"] = ratio(b.all_mk->decode_step_ns, chosen.decode_step_ns);
    }
    json ranked = json::array();
    for (const Evaluated& e : b.ranked) ranked.push_back(evaluated_to_json(e));
    json search = json::object();
    for (const StageSearchStats& s : b.search) search[s.stage] = stats_to_json(s.stats);
    batches.push_back({{"batch", b.batch},
                       {"composition", model::composition_to_json(chosen.composition)},
                       {"text", chosen.text},
                       {"pdl", b.pdl},
                       {"ttfo_ns", chosen.ttfo_ns},
                       {"decode_step_ns", chosen.decode_step_ns},
                       {"throughput_per_s", chosen.throughput_per_s},
                       {"coverage", coverage},
                       {"gain", gain},
                       {"ranked", ranked},
                       {"all_conv", evaluated_to_json(b.all_conv)},
                       {"all_mk", b.all_mk ? evaluated_to_json(*b.all_mk) : json(nullptr)},
                       {"search", search},
                       {"notes", b.notes}});
  }
  json pareto = json::array();
  for (const ParetoPoint& p : plan.pareto) {
    pareto.push_back({{"batch", p.batch},
                      {"candidate", p.candidate},
                      {"text", p.text},
                      {"ttfo_ns", p.ttfo_ns},
                      {"throughput_per_s", p.throughput_per_s}});
  }
  json definitions = json::object();
  for (Category c : kCategories) {
    definitions[std::string(category_name(c))] = category_definition(c);
  }
  return {{"schema", kPlanSchema},
          {"model", plan.model},
          {"device", plan.device},
          {"sm_count", plan.sm_count},
          {"prompt_len", plan.prompt_len},
          {"profile", plan.profile},
          {"stages", stages},
          {"objective", plan.objective ? json(objective_name(*plan.objective)) : json(nullptr)},
          {"top_k", plan.top_k},
          {"threads", plan.threads},
          {"seconds", plan.seconds},
          {"batches", batches},
          {"pareto", pareto},
          {"category",
           {{"name", category_name(plan.category)},
            {"definition", category_definition(plan.category)},
            {"min_gain", plan.min_gain}}},
          {"category_definitions", definitions}};
}

Plan plan_from_json(const json& j, std::string_view file) {
  check_schema(j, file);
  Reader in(file);
  Plan plan;
  plan.model = in.text(j, "", "model");
  plan.device = in.text(j, "", "device");
  plan.sm_count = static_cast<int>(in.integer(j, "", "sm_count", 1));
  plan.prompt_len = in.integer(j, "", "prompt_len", 1);
  plan.profile = in.text(j, "", "profile");
  const json& stages = in.array(j, "", "stages");
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string at = "stages[" + std::to_string(i) + "]";
    plan.stages.push_back({in.text(stages[i], at, "name"),
                           static_cast<int>(in.integer(stages[i], at, "op_count", 1))});
  }
  in.set_shapes(plan.stages);
  const json& objective = in.need(j, "", "objective");
  if (!objective.is_null()) {
    if (!objective.is_string()) in.fail("objective", "expected \"ttfo\", \"throughput\" or null");
    try {
      plan.objective = parse_objective(objective.get<std::string>());
    } catch (const Error& e) {
      in.fail("objective", e.what());
    }
  }
  plan.top_k = static_cast<int>(in.integer(j, "", "top_k", 1));
  plan.threads = static_cast<int>(in.integer(j, "", "threads", 1));
  plan.seconds = in.number(j, "", "seconds");

  plan.min_gain = in.number(in.need(j, "", "category"), "category", "min_gain");
  const json& batches = in.array(j, "", "batches");
  for (size_t i = 0; i < batches.size(); ++i) {
    const json& b = batches[i];
    const std::string at = "batches[" + std::to_string(i) + "]";
    BatchPlan bp;
    bp.batch = in.integer(b, at, "batch", 1);
    if (!plan.batches.empty() && bp.batch <= plan.batches.back().batch) {
      in.fail(at + ".batch", "batches must increase");
    }
    const json& ranked = in.array(b, at, "ranked");
    if (ranked.empty()) in.fail(at + ".ranked", "expected at least one composition");
    for (size_t r = 0; r < ranked.size(); ++r) {
      bp.ranked.push_back(in.evaluated(ranked[r], at + ".ranked[" + std::to_string(r) + "]"));
    }
    model::Composition chosen;
    try {
      chosen = model::composition_from_json(in.need(b, at, "composition"), plan.stages, file);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (in " + at + ".composition)");
    }
    bp.all_conv = in.evaluated(in.need(b, at, "all_conv"), at + ".all_conv");
    if (const json& mk = in.need(b, at, "all_mk"); !mk.is_null()) {
      bp.all_mk = in.evaluated(mk, at + ".all_mk");
    }
    // The composition the batch settles on: its best, or all-conventional below the minimum gain.
    const Evaluated& settles = settled(bp, plan.min_gain, plan.objective);
    if (!(chosen == settles.composition)) {
      in.fail(at + ".composition",
              "differs from the composition the batch settles on ('" + settles.text + "')");
    }
    if (in.text(b, at, "text") != settles.text) {
      in.fail(at + ".text",
              "differs from the composition the batch settles on ('" + settles.text + "')");
    }
    bp.pdl = in.boolean(b, at, "pdl", false);
    const json& search = in.need(b, at, "search");
    for (const model::StageShape& s : plan.stages) {
      bp.search.push_back({s.name, in.stats(in.need(search, at + ".search", s.name.c_str()),
                                            at + ".search." + s.name)});
    }
    const json& notes = in.array(b, at, "notes");
    for (size_t n = 0; n < notes.size(); ++n) {
      if (!notes[n].is_string())
        in.fail(at + ".notes[" + std::to_string(n) + "]", "expected a string");
      bp.notes.push_back(notes[n].get<std::string>());
    }
    plan.batches.push_back(std::move(bp));
  }
  const json& pareto = in.array(j, "", "pareto");
  for (size_t i = 0; i < pareto.size(); ++i) {
    const std::string at = "pareto[" + std::to_string(i) + "]";
    plan.pareto.push_back({in.integer(pareto[i], at, "batch", 1),
                           in.text(pareto[i], at, "candidate"), in.text(pareto[i], at, "text"),
                           in.integer(pareto[i], at, "ttfo_ns", 0),
                           in.number(pareto[i], at, "throughput_per_s")});
  }
  const std::string category = in.text(in.need(j, "", "category"), "category", "name");
  bool known = false;
  for (Category c : kCategories) {
    if (category_name(c) == category) {
      plan.category = c;
      known = true;
    }
  }
  if (!known) in.fail("category.name", "unknown category '" + category + "'");
  return plan;
}

PlannedRun plan_composition(const json& plan, int64_t batch,
                            const std::vector<model::StageShape>& shapes, std::string_view file) {
  check_schema(plan, file);
  Reader in(file);
  const json& batches = in.array(plan, "", "batches");
  std::string known;
  for (size_t i = 0; i < batches.size(); ++i) {
    const std::string at = "batches[" + std::to_string(i) + "]";
    const int64_t b = in.integer(batches[i], at, "batch", 1);
    if (b == batch) {
      PlannedRun run;
      try {
        run.composition =
            model::composition_from_json(in.need(batches[i], at, "composition"), shapes, file);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (in " + at + ".composition)");
      }
      run.pdl = in.boolean(batches[i], at, "pdl", false);
      return run;
    }
    known += (known.empty() ? "" : ", ") + std::to_string(b);
  }
  throw Error(std::string(file) + ": no plan for batch " + std::to_string(batch) +
              " (planned batches: " + known + ")");
}

}  // namespace megacut::planner
