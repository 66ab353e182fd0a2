// plan.json ("megacut.plan/1"): written by plan_to_json, validated field by field on read.
// Ratios (gains, coverage) are written for readers and recomputed, not read back.
#include <cmath>
#include <limits>
#include <optional>

#include "model/error.h"
#include "model/json_field.h"
#include "model/scenario.h"
#include "planner/plan.h"

namespace megacut::planner {
namespace {

using nlohmann::json;

json stats_to_json(const SearchStats& s) {
  return {{"ops", s.ops},
          {"mk_ops", s.mk_ops},
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

using Field = model::JsonField;

model::Composition composition(const Field& text, const std::vector<model::StageShape>& shapes) {
  const std::string value = text.string();
  try {
    return model::parse_composition(value, shapes);
  } catch (const Error& e) {
    text.fail(e.what());
  }
}

Evaluated evaluated(const Field& f, const std::vector<model::StageShape>& shapes) {
  Evaluated e;
  e.composition = composition(f.at("text"), shapes);
  e.text = f.at("text").string();
  if (e.composition.to_string() != e.text) {
    f.at("text").fail("not in canonical form ('" + e.composition.to_string() + "')");
  }
  e.ttfo_ns = f.at("ttfo_ns").integer(0);
  e.decode_step_ns = f.at("decode_step_ns").integer(0);
  e.throughput_per_s = f.at("throughput_per_s").non_negative_number();
  for (const Field& s : f.at("stages").list()) {
    e.stages.push_back(
        {s.at("stage").string(), s.at("time_ns").integer(0), s.at("mk_ns").integer(0)});
  }
  return e;
}

SearchStats search_stats(const Field& f) {
  SearchStats s;
  s.ops = f.at("ops").integer(0);
  // Plans written before coverage floors lack it: every op then counted as one.
  s.mk_ops = f.has("mk_ops") ? f.at("mk_ops").integer(0, s.ops) : s.ops;
  s.mk_regions = f.at("mk_regions").integer(0);
  s.mk_simulated = f.at("mk_simulated").integer(0);
  s.mk_resumed = f.at("mk_resumed").integer(0);
  s.tasks_simulated = f.at("tasks_simulated").integer(0);
  s.seconds = f.at("seconds").non_negative_number();
  return s;
}

// A batch's chosen composition (its JSON form), with errors naming the batch.
model::Composition chosen_composition(const Field& batch,
                                      const std::vector<model::StageShape>& shapes,
                                      std::string_view file) {
  const Field json_form = batch.at("composition");
  try {
    return model::composition_from_json(json_form.value(), shapes, file);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + batch.path() + ".composition)");
  }
}

// Absent in plans written before launches were planned: plain.
bool launches_with_pdl(const Field& batch) { return batch.has("pdl") && batch.at("pdl").boolean(); }

// Absent in plans written before linear providers were chosen: all ours.
model::ProviderChoice linear_providers(const Field& batch,
                                       const std::vector<model::StageShape>& shapes) {
  if (!batch.has("linear_providers")) return {};
  return model::provider_choice_from(batch.at("linear_providers"), shapes);
}

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

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
                       {"linear_providers", model::provider_choice_to_json(b.providers)},
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
          {"tp", plan.tp},
          {"profile", plan.profile},
          {"stages", stages},
          {"objective", plan.objective ? json(objective_name(*plan.objective)) : json(nullptr)},
          {"top_k", plan.top_k},
          {"linear_provider", model::policy_name(plan.linear_provider)},
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
  const Field root(j, "", file);
  Plan plan;
  plan.model = root.at("model").string();
  plan.device = root.at("device").string();
  plan.sm_count = static_cast<int>(root.at("sm_count").integer(1, kMaxInt));
  plan.prompt_len = root.at("prompt_len").integer(1);
  // Absent in plans written before tensor parallel: one GPU.
  if (const std::optional<Field> tp = root.optional("tp")) plan.tp = tp->integer(1, model::kMaxTp);
  plan.profile = root.at("profile").string();
  for (const Field& s : root.at("stages").list()) {
    plan.stages.push_back(
        {s.at("name").string(), static_cast<int>(s.at("op_count").integer(1, kMaxInt))});
  }
  if (const std::optional<Field> objective = root.optional("objective")) {
    try {
      plan.objective = parse_objective(objective->string());
    } catch (const Error& e) {
      if (!objective->value().is_string()) throw;
      objective->fail(e.what());
    }
  }
  plan.top_k = static_cast<int>(root.at("top_k").integer(1, kMaxInt));
  // Absent in plans written before linear providers were chosen: ours.
  if (const std::optional<Field> policy = root.optional("linear_provider")) {
    const std::string name = policy->string();
    const std::optional<model::ProviderPolicy> p = model::find_policy(name);
    if (!p) policy->fail("expected \"ours\", \"cublaslt\" or \"fastest\", got \"" + name + "\"");
    plan.linear_provider = *p;
  }
  plan.threads = static_cast<int>(root.at("threads").integer(1, kMaxInt));
  plan.seconds = root.at("seconds").non_negative_number();
  const Field category = root.at("category");
  plan.min_gain = category.at("min_gain").non_negative_number();

  for (const Field& b : root.at("batches").list()) {
    BatchPlan bp;
    bp.batch = b.at("batch").integer(1);
    if (!plan.batches.empty() && bp.batch <= plan.batches.back().batch) {
      b.at("batch").fail("batches must increase");
    }
    const std::vector<Field> ranked = b.at("ranked").list();
    if (ranked.empty()) b.at("ranked").fail("expected at least one composition");
    for (const Field& r : ranked) bp.ranked.push_back(evaluated(r, plan.stages));
    const model::Composition chosen = chosen_composition(b, plan.stages, file);
    bp.all_conv = evaluated(b.at("all_conv"), plan.stages);
    if (const std::optional<Field> mk = b.optional("all_mk")) {
      bp.all_mk = evaluated(*mk, plan.stages);
    }
    // The composition the batch settles on: its best, or all-conventional below the minimum gain.
    const Evaluated& settles = settled(bp, plan.min_gain, plan.objective);
    if (!(chosen == settles.composition)) {
      b.at("composition")
          .fail("differs from the composition the batch settles on ('" + settles.text + "')");
    }
    if (b.at("text").string() != settles.text) {
      b.at("text").fail("differs from the composition the batch settles on ('" + settles.text +
                        "')");
    }
    bp.pdl = launches_with_pdl(b);
    bp.providers = linear_providers(b, plan.stages);
    const Field search = b.at("search");
    for (const model::StageShape& s : plan.stages) {
      bp.search.push_back({s.name, search_stats(search.at(s.name))});
    }
    bp.notes = b.at("notes").strings();
    plan.batches.push_back(std::move(bp));
  }
  for (const Field& p : root.at("pareto").list()) {
    plan.pareto.push_back({p.at("batch").integer(1), p.at("candidate").string(),
                           p.at("text").string(), p.at("ttfo_ns").integer(0),
                           p.at("throughput_per_s").non_negative_number()});
  }
  const std::string name = category.at("name").string();
  bool known = false;
  for (Category c : kCategories) {
    if (category_name(c) == name) {
      plan.category = c;
      known = true;
    }
  }
  if (!known) category.at("name").fail("unknown category '" + name + "'");
  return plan;
}

PlannedRun plan_composition(const json& plan, int64_t batch,
                            const std::vector<model::StageShape>& shapes, std::string_view file,
                            int64_t tp) {
  check_schema(plan, file);
  // Absent in plans written before tensor parallel: one GPU.
  const std::optional<Field> tp_field = Field(plan, "", file).optional("tp");
  const int64_t planned_tp = tp_field ? tp_field->integer(1, model::kMaxTp) : int64_t{1};
  if (planned_tp != tp) {
    const std::string why = "the plan is for " + model::gpu_count_text(planned_tp) +
                            " (tensor parallel), this run for " + model::gpu_count_text(tp);
    if (tp_field) tp_field->fail(why);
    throw Error(std::string(file) + ": " + why);
  }
  std::string known;
  for (const Field& b : Field(plan, "", file).at("batches").list()) {
    const int64_t planned = b.at("batch").integer(1);
    if (planned == batch) {
      return {chosen_composition(b, shapes, file), launches_with_pdl(b),
              linear_providers(b, shapes)};
    }
    known += (known.empty() ? "" : ", ") + std::to_string(planned);
  }
  throw Error(std::string(file) + ": no plan for batch " + std::to_string(batch) +
              " (planned batches: " + known + ")");
}

}  // namespace megacut::planner
