// --composition of `simulate` and `run`: the one reader of what a user names as a composition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/composition.h"
#include "planner/plan.h"

namespace megacut::app {

// The text form, or a file: plan.json (the composition batch `batch` settles on, whether it
// launches with PDL and its linear providers) or a composition in its JSON form
// ("megacut.composition/1", with the ops of its conv regions on cuBLASLt at "linear_providers"
// where given, as model::provider_choice_to_json writes them), checked against the stages it
// will run on: one rank's graphs of `tp` GPUs, as a plan.json's must be.
planner::PlannedRun read_composition(const std::string& arg, int64_t batch, int64_t tp,
                                     const std::vector<model::StageShape>& shapes);

}  // namespace megacut::app
