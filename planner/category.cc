// The categories of "One Megakernel is Not Enough", from the best composition at each batch
// size of a sweep.
#include <algorithm>

#include "planner/plan.h"

namespace megacut::planner {

std::string_view category_name(Category category) {
  switch (category) {
    case Category::stable:
      return "megakernel-stable";
    case Category::receding:
      return "megakernel-receding";
    case Category::advancing:
      return "megakernel-advancing";
    case Category::averse:
      return "megakernel-averse";
    case Category::mixed:
      return "mixed";
    case Category::undetermined:
      return "undetermined";
  }
  return "?";
}

std::string_view category_definition(Category category) {
  switch (category) {
    case Category::stable:
      return "the same composition, with megakernels, at every batch size";
    case Category::receding:
      return "megakernel coverage falls as the batch grows: no stage's coverage rises by more "
             "than 0.5 points from one batch size to the next, and some stage ends lower than "
             "it starts";
    case Category::advancing:
      return "megakernel coverage rises as the batch grows: no stage's coverage falls by more "
             "than 0.5 points from one batch size to the next, and some stage ends higher than "
             "it starts";
    case Category::averse:
      return "all-conventional at every batch size";
    case Category::mixed:
      return "none of the above: coverage rises and falls, or stays flat while the composition "
             "changes";
    case Category::undetermined:
      return "no megakernel region could be predicted (the profile lacks standalone task "
             "benchmarks), so how megakernels fare with batch size is unknown";
  }
  return "?";
}

bool worth_building(const BatchPlan& b, double min_gain, std::optional<Objective> objective) {
  const Evaluated& best = b.best();
  const bool throughput = objective == Objective::throughput;
  const double conv =
      static_cast<double>(throughput ? b.all_conv.decode_step_ns : b.all_conv.ttfo_ns);
  const double mine = static_cast<double>(throughput ? best.decode_step_ns : best.ttfo_ns);
  return best.mk_regions() == 0 || conv >= mine * (1 + min_gain);
}

const Evaluated& settled(const BatchPlan& b, double min_gain, std::optional<Objective> objective) {
  return worth_building(b, min_gain, objective) ? b.best() : b.all_conv;
}

Category classify(const std::vector<BatchPlan>& raw_batches, double min_gain,
                  std::optional<Objective> objective) {
  if (raw_batches.empty()) return Category::mixed;
  // Each batch as it settles: what follows reads only best(), so a copy whose ranked list
  // starts with the settled composition stands in for it.
  std::vector<BatchPlan> batches;
  for (const BatchPlan& b : raw_batches) {
    BatchPlan s;
    s.batch = b.batch;
    s.all_conv = b.all_conv;
    s.all_mk = b.all_mk;
    s.ranked = {settled(b, min_gain, objective)};
    batches.push_back(std::move(s));
  }
  const auto has_mk = [](const BatchPlan& b) { return b.best().mk_regions() > 0; };
  if (std::none_of(batches.begin(), batches.end(), has_mk)) {
    const bool mk_predicted = std::all_of(batches.begin(), batches.end(),
                                          [](const BatchPlan& b) { return b.all_mk.has_value(); });
    return mk_predicted ? Category::averse : Category::undetermined;
  }
  const std::string& first = batches.front().best().text;
  if (std::all_of(batches.begin(), batches.end(),
                  [&](const BatchPlan& b) { return b.best().text == first; })) {
    return Category::stable;
  }
  // Stage by stage: a stage's coverage can move while the others (a long prefill, say) hide
  // it in the overall share.
  bool falls = true, rises = true, fell = false, rose = false;
  for (const StageTime& stage : batches.front().best().stages) {
    for (size_t i = 1; i < batches.size(); ++i) {
      const double step =
          batches[i].best().coverage(stage.stage) - batches[i - 1].best().coverage(stage.stage);
      falls = falls && step <= kCoverageTolerance;
      rises = rises && step >= -kCoverageTolerance;
    }
    const double change =
        batches.back().best().coverage(stage.stage) - batches.front().best().coverage(stage.stage);
    fell = fell || change < -kCoverageTolerance;
    rose = rose || change > kCoverageTolerance;
  }
  if (falls && fell && !rose) return Category::receding;
  if (rises && rose && !fell) return Category::advancing;
  return Category::mixed;
}

}  // namespace megacut::planner
