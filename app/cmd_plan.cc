// megacut plan: for each batch size, the best compositions of a model from its profile (exact
// search over every op boundary, the top K simulated end to end), the gain over the
// all-conventional graph and over one megakernel per stage, the TTFO-throughput Pareto front,
// the megakernel coverage curve and the model's category; --json writes plan.json. Given several
// profiles it plans each in turn and prints the category legend once, after a line per model.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/format.h"
#include "app/terminal.h"
#include "model/batch_list.h"
#include "model/error.h"
#include "model/output_file.h"
#include "model/profile.h"
#include "model/scenario.h"
#include "model/text.h"
#include "planner/plan.h"

namespace megacut::app {
namespace {

using planner::Evaluated;
using simulator::TimeNs;

struct PlanCommandOptions {
  std::vector<std::string> profiles;
  std::string batches;
  bool batch_given = false;
  int top_k = 1;
  std::string objective;
  std::string json_path;
  int threads = 0;
  bool allow_interpolate = false;
  std::string launch = "best";
  std::string provider = "fastest";
  double min_gain_percent = 5;
  int64_t tp = 0;  // 0: each profile's
};

// "1.184x": how many times longer the baseline takes.
std::string times(TimeNs baseline, TimeNs value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fx",
                value > 0 ? static_cast<double>(baseline) / static_cast<double>(value) : 0.0);
  return text;
}

// Prints `text` from column `indent`, wrapped at 100 columns between regions.
void print_wrapped(const std::string& text, size_t indent) {
  size_t column = indent, from = 0;
  while (from < text.size()) {
    size_t to = text.find(' ', from);
    if (to == std::string::npos) to = text.size();
    const std::string word = text.substr(from, to - from);
    if (column + word.size() + 1 > 100 && column > indent) {
      std::printf("\n%*s", static_cast<int>(indent), "");
      column = indent;
    }
    std::printf("%s%s", column > indent ? " " : "", word.c_str());
    column += word.size() + (column > indent ? 1 : 0);
    from = to + 1;
  }
  std::printf("\n");
}

// One line per stage: "conv", "mk", "tile", or how many mk and tile regions over how many ops.
std::string summary(const Evaluated& e) {
  std::string text;
  for (const model::StageRegions& s : e.composition.stages) {
    const int total = s.regions.back().end;
    text += (text.empty() ? "" : "; ") + s.stage + ": ";
    if (s.regions.size() == 1) {
      text += model::region_kind_name(s.regions.front().kind);
      continue;
    }
    std::string parts;
    for (model::RegionKind kind : {model::RegionKind::mk, model::RegionKind::tile}) {
      int regions = 0, ops = 0;
      for (const model::Region& r : s.regions) {
        if (r.kind != kind) continue;
        ++regions;
        ops += r.end - r.begin;
      }
      if (regions == 0) continue;
      parts += (parts.empty() ? "" : ", ") + std::to_string(regions) + " " +
               std::string(model::region_kind_name(kind)) + " over " + std::to_string(ops) + "/" +
               std::to_string(total) + " ops";
    }
    text += parts.empty() ? "conv" : parts;
  }
  return text;
}

// The figure --min-gain is judged on: the objective's first (TTFO without one).
const char* min_gain_figure(std::optional<planner::Objective> objective) {
  return objective == planner::Objective::throughput ? "decode step" : "TTFO";
}

void print_batch(const planner::Plan& plan, const planner::BatchPlan& b) {
  const Evaluated& best = b.best();
  std::printf("\nbatch %lld\n", static_cast<long long>(b.batch));
  for (const std::string& note : b.notes) std::printf("  note: %s\n", note.c_str());
  std::printf("  best:  ");
  print_wrapped(best.text, 9);
  std::printf("         predicted TTFO %s, decode step %s, %s outputs/s\n",
              format_ns(best.ttfo_ns).c_str(), format_ns(best.decode_step_ns).c_str(),
              format_rate(best.throughput_per_s).c_str());
  auto gain = [&](const char* label, const Evaluated& base) {
    std::printf("  vs %-20s TTFO %s (%s)   decode step %s (%s)\n", label,
                format_ns(base.ttfo_ns).c_str(), times(base.ttfo_ns, best.ttfo_ns).c_str(),
                format_ns(base.decode_step_ns).c_str(),
                times(base.decode_step_ns, best.decode_step_ns).c_str());
  };
  gain("all-conventional", b.all_conv);
  if (b.all_mk) {
    gain("one mk per stage", *b.all_mk);
  } else {
    std::printf("  vs one mk per stage: not possible (an op has no standalone task benchmark)\n");
  }
  std::printf("  %4s %12s %12s %11s %9s  %s\n", "rank", "TTFO", "decode step", "outputs/s",
              "mk share", "composition");
  for (size_t i = 0; i < b.ranked.size(); ++i) {
    const Evaluated& e = b.ranked[i];
    std::printf("  %4zu %s %s %11s %9s  %s\n", i + 1, right_align(format_ns(e.ttfo_ns), 12).c_str(),
                right_align(format_ns(e.decode_step_ns), 12).c_str(),
                format_rate(e.throughput_per_s).c_str(), model::percent_text(e.coverage()).c_str(),
                summary(e).c_str());
  }
  if (!planner::worth_building(b, plan.min_gain, plan.objective)) {
    std::printf(
        "  settles on all-conventional: the best gains less than %s in %s over it (--min-gain), "
        "within the simulator's error\n",
        model::percent_text(plan.min_gain).c_str(), min_gain_figure(plan.objective));
  }
  if (b.pdl) std::printf("  launch: with Programmatic Dependent Launch (megacut run --pdl)\n");
  const model::ProviderChoice runs =
      b.providers.in_conv_regions(planner::settled(b, plan.min_gain, plan.objective).composition);
  if (!runs.all_ours()) {
    std::printf("  linear providers in conv regions: %s\n", runs.describe().c_str());
  }
}

void print_search(const planner::Plan& plan) {
  int64_t regions = 0, simulated = 0, resumed = 0, tasks = 0;
  for (const planner::BatchPlan& b : plan.batches) {
    for (const planner::StageSearchStats& s : b.search) {
      regions += s.stats.mk_regions;
      simulated += s.stats.mk_simulated;
      resumed += s.stats.mk_resumed;
      tasks += s.stats.tasks_simulated;
    }
  }
  std::string ops;
  for (const model::StageShape& s : plan.stages) {
    ops += (ops.empty() ? "" : ", ") + s.name + " " + std::to_string(s.op_count);
  }
  std::printf(
      "search: exact DP over every op boundary (ops per stage: %s); %s mk regions possible, %s "
      "simulated (%s%s), %s of them continued from a longer region's run; %s tasks simulated; "
      "%.2f s on %d thread%s\n",
      ops.c_str(), format_count(regions).c_str(), format_count(simulated).c_str(),
      model::percent_text(
          regions > 0 ? static_cast<double>(simulated) / static_cast<double>(regions) : 0)
          .c_str(),
      simulated < regions ? "; the rest pruned by lower bounds" : "", format_count(resumed).c_str(),
      format_count(tasks).c_str(), plan.seconds, plan.threads, plan.threads == 1 ? "" : "s");
}

void print_pareto(const planner::Plan& plan) {
  std::printf(
      "\nPareto front, TTFO against throughput, over every batch's ranked compositions and "
      "baselines\n(within one batch each stage is at its own minimum, so rank 1 dominates the "
      "rest; the front trades across batch sizes)\n");
  std::printf("  %6s %-9s %12s %11s  %s\n", "batch", "candidate", "TTFO", "outputs/s",
              "composition");
  for (const planner::ParetoPoint& p : plan.pareto) {
    const Evaluated* e = nullptr;
    const planner::BatchPlan& b = plan.batch(p.batch);
    for (const Evaluated& r : b.ranked) {
      if (r.text == p.text) e = &r;
    }
    if (e == nullptr) e = p.candidate == "all-conv" ? &b.all_conv : &*b.all_mk;
    std::printf("  %6lld %-9s %s %11s  %s\n", static_cast<long long>(p.batch), p.candidate.c_str(),
                right_align(format_ns(p.ttfo_ns), 12).c_str(),
                format_rate(p.throughput_per_s).c_str(), summary(*e).c_str());
  }
}

void print_category(const planner::Plan& plan) {
  std::printf(
      "\nmegakernel coverage of the composition each batch settles on (share of predicted time "
      "inside mk regions)\n  %6s",
      "batch");
  for (const model::StageShape& s : plan.stages) std::printf(" %10s", s.name.c_str());
  std::printf(" %10s\n", "overall");
  for (const planner::BatchPlan& b : plan.batches) {
    const Evaluated& e = planner::settled(b, plan.min_gain, plan.objective);
    std::printf("  %6lld", static_cast<long long>(b.batch));
    for (const model::StageShape& s : plan.stages) {
      std::printf(" %10s", model::percent_text(e.coverage(s.name)).c_str());
    }
    std::printf(" %10s\n", model::percent_text(e.coverage()).c_str());
  }
  std::printf("\ncategory: %s: %s\n", std::string(planner::category_name(plan.category)).c_str(),
              std::string(planner::category_definition(plan.category)).c_str());
}

// What each category means, with the --min-gain every plan of this run shares.
void print_legend(double min_gain, std::optional<planner::Objective> objective) {
  std::printf(
      "categories (\"One Megakernel is Not Enough\"), from the composition each batch settles "
      "on: its best, or all-conventional where the best gains less than %s in %s "
      "(--min-gain):\n",
      model::percent_text(min_gain).c_str(), min_gain_figure(objective));
  for (planner::Category c : planner::kCategories) {
    std::printf("  %-21s %s\n", std::string(planner::category_name(c)).c_str(),
                std::string(planner::category_definition(c)).c_str());
  }
}

planner::PlanOptions plan_options(const PlanCommandOptions& o) {
  planner::PlanOptions options;
  // Given, even as '', it is parsed: only an absent --batch means every measured batch.
  if (o.batch_given) options.batches = model::parse_batch_list(o.batches);
  if (!o.objective.empty()) options.objective = planner::parse_objective(o.objective);
  if (o.top_k < 1) throw Error("--top: must be at least 1");
  if (o.threads < 0) throw Error("--threads: must not be negative");
  options.top_k = o.top_k;
  options.threads = o.threads;
  options.sim.allow_interpolate = o.allow_interpolate;
  options.sim.linear_provider = model::parse_policy(o.provider, "--provider");
  if (o.launch == "best") {
    options.choose_pdl = true;
  } else if (o.launch == "pdl" || o.launch == "plain") {
    options.sim.pdl = o.launch == "pdl";
  } else {
    throw Error("--launch: '" + o.launch + "' is not a launch (plain, pdl, best)");
  }
  if (!std::isfinite(o.min_gain_percent)) {
    throw Error("--min-gain: must be a finite percent, got " +
                std::string(std::isnan(o.min_gain_percent) ? "nan" : "inf"));
  }
  if (o.min_gain_percent < 0) throw Error("--min-gain: must not be negative");
  options.min_gain = o.min_gain_percent / 100;
  return options;
}

// Plans one profile and prints the plan, with the category legend where `legend`; returns the
// model's category.
planner::Category plan_profile(const model::Profile& profile, planner::PlanOptions options,
                               const std::string& json_path, bool legend) {
  planner::Plan plan;
  {
    Terminal progress(stderr);  // cleared when planning ends, or throws
    if (progress.live()) {      // else the searches need not build the line
      options.progress = [&progress](double f, const std::string& doing) {
        progress.progress("planning " + progress_bar(f) +
                          printf_string("  %.1f s  ", progress.elapsed_s()) + doing);
      };
    }
    plan = planner::make_plan(profile, options);
  }

  std::string batches;
  for (const planner::BatchPlan& b : plan.batches) {
    batches += (batches.empty() ? "" : ", ") + std::to_string(b.batch);
  }
  const std::string ranks =
      plan.tp > 1 ? " · tensor parallel over " + std::to_string(plan.tp) + " GPUs" : "";
  std::printf("megacut plan: %s on %s (%d SMs)%s · prompt %lld · batches %s · top %d\n",
              plan.model.c_str(), plan.device.c_str(), plan.sm_count, ranks.c_str(),
              static_cast<long long>(plan.prompt_len), batches.c_str(), plan.top_k);
  if (plan.objective) {
    std::printf("objective: %s\n", plan.objective == planner::Objective::ttfo
                                       ? "ttfo (TTFO first, then decode step)"
                                       : "throughput (decode step first, then TTFO)");
  } else {
    std::printf(
        "objective: none given (--objective ttfo|throughput): ranked by TTFO, then "
        "decode step, --min-gain judged on TTFO; Pareto front below\n");
  }
  if (plan.top_k > 1) {
    // Many floors: the first three and the last.
    const std::vector<double> shares = planner::coverage_floors(plan.top_k);
    std::string floors;
    for (size_t i = 0; i < shares.size(); ++i) {
      if (shares.size() > 6 && i >= 3 && i + 1 < shares.size()) {
        if (i == 3) floors += ", ...";
        continue;
      }
      floors += (floors.empty() ? "" : ", ") + model::percent_text(shares[i]);
    }
    std::printf(
        "ranked: the best composition, then the best with at least %s of each stage's ops (with "
        "a task benchmark) in mk regions, where distinct (--top %d)\n",
        floors.c_str(), plan.top_k);
  }
  if (plan.top_k < options.top_k) {
    std::printf(
        "--top %d: %d ranks a floor for every count of ops in mk regions (the largest stage has "
        "%d ops); more would rank the same compositions\n",
        options.top_k, plan.top_k, plan.top_k - 1);
  }
  if (profile.frames > 0) {
    std::printf(
        "TTS pipeline: TTFO is the time to first audio (a chunk of %lld frames); the decode step "
        "is the streaming step that makes the next chunk; outputs are seconds of audio\n",
        static_cast<long long>(profile.frames));
  }
  print_search(plan);
  for (const planner::BatchPlan& b : plan.batches) print_batch(plan, b);
  if (!plan.objective) print_pareto(plan);
  print_category(plan);
  if (legend) print_legend(plan.min_gain, plan.objective);
  if (!json_path.empty()) {
    model::write_text_file(json_path, planner::plan_to_json(plan).dump(1) + "\n");
    std::printf("\nplan written to %s (a batch's composition: batches[i].composition)\n",
                json_path.c_str());
  }
  return plan.category;
}

void run(const PlanCommandOptions& o) {
  const planner::PlanOptions options = plan_options(o);
  if (o.profiles.size() > 1 && !o.json_path.empty()) {
    throw Error("--json: writes the plan of one profile, and " + std::to_string(o.profiles.size()) +
                " profiles were given");
  }
  // Every profile is read, and checked for each --batch, before any is planned, so a bad one
  // fails at once, not minutes in.
  std::vector<model::Profile> profiles;
  for (const std::string& path : o.profiles) {
    profiles.push_back(model::read_profile(path));
    if (o.tp != 0) model::check_tp(profiles.back(), o.tp);
    for (int64_t batch : options.batches) {
      model::check_batch(profiles.back(), batch, options.sim.allow_interpolate);
    }
  }

  if (profiles.size() == 1) {
    plan_profile(profiles[0], options, o.json_path, true);
    return;
  }
  std::vector<planner::Category> categories;
  for (const model::Profile& profile : profiles) {
    if (!categories.empty()) std::printf("\n");
    categories.push_back(plan_profile(profile, options, o.json_path, false));
  }
  // A model profiled at several tensor-parallel degrees gets a category per degree.
  bool tensor_parallel = false;
  for (const model::Profile& profile : profiles) tensor_parallel |= profile.tp > 1;
  std::printf("\ncategory per %s:\n", tensor_parallel ? "model and GPU count" : "model");
  for (size_t i = 0; i < profiles.size(); ++i) {
    std::string name = profiles[i].model_name;
    if (tensor_parallel) name += ", " + model::gpu_count_text(profiles[i].tp);
    std::printf("  %-*s %s\n", tensor_parallel ? 28 : 21, name.c_str(),
                std::string(planner::category_name(categories[i])).c_str());
  }
  print_legend(options.min_gain, options.objective);
}

}  // namespace

void add_plan_command(CLI::App& root) {
  auto o = std::make_shared<PlanCommandOptions>();
  CLI::App* cmd = root.add_subcommand(
      "plan", "Find the best compositions per batch size from a profile, and the model's category");
  cmd->add_option("--profile", o->profiles,
                  "profile.json (megacut.profile/1); given more than once, each is planned in "
                  "turn and the category legend printed once, at the end")
      ->required();
  CLI::Option* batch =
      cmd->add_option("--batch,-b", o->batches,
                      "Batch sizes, e.g. 1,2,4,8 (default: every batch the profile measured)");
  cmd->add_option("--top,-k", o->top_k,
                  "Compositions ranked per batch: the best, then the best with at least "
                  "1/(K-1), 2/(K-1), ..., all of each stage's ops (with a task benchmark) in mk "
                  "regions (K > 1 simulates every mk region: several times slower)")
      ->capture_default_str();
  cmd->add_option("--objective", o->objective,
                  "ttfo or throughput (default: rank by TTFO and print the Pareto front)");
  cmd->add_option("--json", o->json_path,
                  "Write the plan (megacut.plan/1) here (one --profile only)");
  cmd->add_option("--threads", o->threads, "Search threads (default: one per hardware thread)");
  cmd->add_flag("--allow-interpolate", o->allow_interpolate,
                "Interpolate batch sizes between measured ones (linear in batch)");
  cmd->add_option("--tp", o->tp,
                  "Tensor-parallel degree every profile must hold (default: each profile's)");
  cmd->add_option("--min-gain", o->min_gain_percent,
                  "Percent a composition must gain over all-conventional to be worth building")
      ->capture_default_str();
  cmd->add_option("--launch", o->launch,
                  "How our kernels launch: plain, pdl (Programmatic Dependent Launch, as megacut "
                  "run --pdl) or best (each batch whichever is predicted faster)")
      ->capture_default_str();
  cmd->add_option("--provider", o->provider,
                  "Linear ops of conv regions run on: ours, cublaslt, or fastest (per op, the "
                  "kernel the profile measured faster)")
      ->capture_default_str();
  cmd->callback([o, batch] {
    o->batch_given = batch->count() > 0;
    run(*o);
  });
}

}  // namespace megacut::app
