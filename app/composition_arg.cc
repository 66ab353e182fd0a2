#include "app/composition_arg.h"

#include <filesystem>

#include "model/config.h"
#include "model/json_field.h"
#include "model/linear_provider.h"

namespace megacut::app {

planner::PlannedRun read_composition(const std::string& arg, int64_t batch, int64_t tp,
                                     const std::vector<model::StageShape>& shapes) {
  if (!arg.ends_with(".json")) return {model::parse_composition(arg, shapes), false};
  // A name ending in .json is a file, never composition text (whose names have no '.').
  if (!std::filesystem::exists(arg)) {
    throw Error(arg + ": no such file (a composition file: a plan.json or a composition's " +
                "JSON form; or give the text form, e.g. 'prefill: conv; decode: mk')");
  }
  const nlohmann::json json = model::read_json_file(arg);
  if (json.contains("schema") && json["schema"] == planner::kPlanSchema) {
    return planner::plan_composition(json, batch, shapes, arg, tp);
  }
  planner::PlannedRun run{model::composition_from_json(json, shapes, arg), false, {}};
  // Beside the regions, the ops of conv regions on cuBLASLt, as a plan or a validation lists them.
  if (json.is_object() && json.contains("linear_providers")) {
    run.providers =
        model::provider_choice_from(model::JsonField(json, "", arg).at("linear_providers"), shapes);
  }
  return run;
}

}  // namespace megacut::app
