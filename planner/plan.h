// The plan: for each batch size of a sweep, the best compositions of a model, ranked, with
// their predicted TTFO and decode step, the baselines they beat, the TTFO-throughput Pareto
// front over the sweep, and the model's category. Plain data with a JSON form
// ("megacut.plan/1") that the executor reads: the planner decides, the executor obeys.
//
//   Plan plan = make_plan(read_profile("llama.json"), {.batches = {1, 8}, .top_k = 5});
//   write plan_to_json(plan); later, for batch 8:
//   PlannedRun r = plan_composition(read_json_file("plan.json"), 8, shapes, "plan.json");
//
// Each stage is searched on its own (search_stage), in parallel over (batch, stage) with one
// Simulator per thread (a Simulator is not thread-safe). A composition is one choice per
// stage. A batch's top K are its best composition, every stage at its best, and K - 1
// alternatives that cover more of the model with megakernels: every stage at its best with at
// least 1/(K-1), 2/(K-1), ..., all of its ops (of those with a task benchmark) in mk regions
// (SearchOptions::coverage_floors). Not the K best: those differ in where a few one-op mk
// regions sit, predicted within a few hundredths of a percent of each other, far below the
// simulator's error on real runs (reports/h200/README.md), so their order says nothing. Each is
// simulated end to end (Simulator::simulate), checked against the search and ranked by the
// objective.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/composition.h"
#include "model/linear_provider.h"
#include "model/profile.h"
#include "planner/search.h"
#include "simulator/simulator.h"

namespace megacut::planner {

inline constexpr std::string_view kPlanSchema = "megacut.plan/1";

// What "best" means. TTFO first (then the decode step), or throughput first (the shortest
// decode step at the batch, then TTFO). Without one, plans rank by TTFO and print the Pareto
// front.
enum class Objective { ttfo, throughput };
std::string_view objective_name(Objective objective);
// "ttfo" or "throughput"; throws an Error naming the value otherwise.
Objective parse_objective(std::string_view text);

struct StageTime {
  std::string stage;
  TimeNs time_ns = 0;
  TimeNs mk_ns = 0;  // inside mk regions: their whole time, launch gap included
  friend bool operator==(const StageTime&, const StageTime&) = default;
};

// One composition simulated end to end at one batch size.
struct Evaluated {
  model::Composition composition;
  std::string text;  // canonical
  TimeNs ttfo_ns = 0;
  TimeNs decode_step_ns = 0;
  double throughput_per_s = 0;
  std::vector<StageTime> stages;

  // Megakernel coverage: the share of predicted time inside mk regions, of one stage or of all
  // stages together.
  double coverage(std::string_view stage) const;
  double coverage() const;
  int mk_regions() const;
  friend bool operator==(const Evaluated&, const Evaluated&) = default;
};

// A prediction of `composition` with each stage's time in mk regions.
Evaluated evaluate(const simulator::Prediction& prediction, const model::Composition& composition);

struct StageSearchStats {
  std::string stage;
  SearchStats stats;
  friend bool operator==(const StageSearchStats&, const StageSearchStats&) = default;
};

struct BatchPlan {
  int64_t batch = 0;
  std::vector<Evaluated> ranked;  // best first, at most top K, distinct
  Evaluated all_conv;
  std::optional<Evaluated> all_mk;  // one megakernel per stage; absent if an op cannot be one
  std::vector<StageSearchStats> search;
  std::vector<std::string> notes;  // the simulator's, e.g. that the batch was interpolated
  // Every prediction of this batch assumes our kernels launch with Programmatic Dependent Launch
  // (megacut run --pdl).
  bool pdl = false;
  // Which linear ops run on cuBLASLt at this batch where they sit in a conv region, as the plan's
  // linear provider policy chose them from the profile (Simulator::provider_choice): every
  // stage's, whatever the composition; a composition runs those of its conv regions
  // (ProviderChoice::in_conv_regions).
  model::ProviderChoice providers;

  const Evaluated& best() const { return ranked.front(); }
  friend bool operator==(const BatchPlan&, const BatchPlan&) = default;
};

// How a model's best composition moves with batch size ("One Megakernel is Not Enough").
enum class Category { stable, receding, advancing, averse, mixed, undetermined };
inline constexpr std::array<Category, 6> kCategories = {
    Category::stable, Category::receding, Category::advancing,
    Category::averse, Category::mixed,    Category::undetermined};
std::string_view category_name(Category category);  // "megakernel-stable", ..., "mixed"
std::string_view category_definition(Category category);
// Coverage moves by less than this (0.5 points) between batch sizes count as flat.
inline constexpr double kCoverageTolerance = 0.005;
// Whether a batch's best composition is predicted to beat all-conventional by at least
// `min_gain` (a fraction) in the objective's first figure (the decode step under throughput,
// else TTFO). A smaller gain is within the simulator's own error on real runs
// (reports/h200/README.md): all-conventional, with nothing to build, is then the choice.
bool worth_building(const BatchPlan& b, double min_gain, std::optional<Objective> objective);
// The composition a batch settles on: its best if worth_building, else all-conventional.
const Evaluated& settled(const BatchPlan& b, double min_gain, std::optional<Objective> objective);

// From the composition each batch size settles on, in increasing batch order: undetermined if
// none has an mk region and some batch could not predict one (no task benchmarks), averse if
// none has an mk region, stable if all are the same, else receding or advancing by how each
// stage's coverage moves (category_definition), else mixed.
Category classify(const std::vector<BatchPlan>& batches, double min_gain = 0,
                  std::optional<Objective> objective = {});

struct ParetoPoint {
  int64_t batch = 0;
  std::string candidate;  // "rank 2", "all-conv" or "all-mk"
  std::string text;
  TimeNs ttfo_ns = 0;
  double throughput_per_s = 0;
  friend bool operator==(const ParetoPoint&, const ParetoPoint&) = default;
};

struct Plan {
  std::string model;
  std::string device;
  int sm_count = 0;
  int64_t prompt_len = 0;
  int64_t tp = 1;       // tensor-parallel degree of the profile's graphs
  std::string profile;  // where the profile came from
  std::vector<model::StageShape> stages;
  std::optional<Objective> objective;
  int top_k = 0;  // PlanOptions::top_k, at most one more than the largest stage's op count
  // How conv regions' linear ops chose their provider (PlanOptions::sim.linear_provider).
  model::ProviderPolicy linear_provider = model::ProviderPolicy::ours;
  std::vector<BatchPlan> batches;   // increasing batch
  std::vector<ParetoPoint> pareto;  // increasing TTFO, decreasing throughput
  Category category = Category::mixed;
  double min_gain = 0;  // PlanOptions::min_gain, as classified
  int threads = 0;
  double seconds = 0;

  const BatchPlan& batch(int64_t batch) const;
  // Field by field (model::StageShape has no operator==).
  friend bool operator==(const Plan&, const Plan&);
};

struct PlanOptions {
  std::vector<int64_t> batches;  // empty: every batch the profile measured
  // The best, and K - 1 coverage alternatives (above). Alternatives may take any mk region, so
  // a search that makes them simulates every one: several times slower.
  int top_k = 1;
  std::optional<Objective> objective;
  int threads = 0;  // 0: one per hardware thread
  // A best composition that beats all-conventional by less (a fraction) counts as
  // all-conventional for the category (worth_building).
  double min_gain = 0;
  simulator::SimOptions sim;
  // Plan each batch twice, launching our kernels plainly and with Programmatic Dependent Launch,
  // and keep for each the plan whose settled composition (settled, with min_gain) the objective
  // ranks first; sim.pdl is then ignored. PDL builds nothing, so no minimum gain applies.
  bool choose_pdl = false;
  // Fraction done in [0, 1] and what is being searched; called from worker threads, one at a
  // time.
  std::function<void(double fraction, const std::string& doing)> progress;
};

Plan make_plan(const model::Profile& profile, const PlanOptions& options);

// The coverage floors of a ranked list of `top_k`: 1/(K-1), 2/(K-1), ..., 1 (none for K = 1).
std::vector<double> coverage_floors(int top_k);

// JSON form. A batch's chosen composition, the one it settles on (settled, with the plan's
// min_gain), is at batches[i].composition (where batches[i].batch is the batch size), in
// model::composition_to_json form, with its canonical text beside it at batches[i].text and
// whether it launches with PDL at batches[i].pdl, and the linear ops the batch runs on cuBLASLt
// where a conv region holds them at batches[i].linear_providers (BatchPlan::providers, in
// model::provider_choice_to_json form); the ranked list is at batches[i].ranked.
nlohmann::json plan_to_json(const Plan& plan);
// Validates and reads a plan; `file` names the source in errors.
Plan plan_from_json(const nlohmann::json& json, std::string_view file);
// What a plan chose for one batch size: the composition it settles on, and how to launch it.
struct PlannedRun {
  model::Composition composition;
  bool pdl = false;
  model::ProviderChoice providers;  // BatchPlan::providers: run those in conv regions
};
// The chosen run for `batch`, its composition checked against the stages it will run on, whose
// graphs are one rank's of `tp` GPUs (the plan's own degree must be the same).
PlannedRun plan_composition(const nlohmann::json& plan, int64_t batch,
                            const std::vector<model::StageShape>& shapes, std::string_view file,
                            int64_t tp = 1);

}  // namespace megacut::planner
